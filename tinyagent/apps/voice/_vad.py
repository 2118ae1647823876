"""Voice activity detection by frame energy: cut a recording into utterances."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._audio import Audio, _np

if TYPE_CHECKING:
    pass

logger = logging.getLogger("tinyagent.apps.voice")

# -- voice activity detection ---------------------------------------------------------------------------------------


@dataclass
class EnergyVAD:
    """Finds utterances by frame energy: speech is louder than the noise floor by ``margin_db``.

    Args:
        frame_ms: analysis frame length.
        margin_db: how far above the noise floor a frame must be to count as speech.
        min_db: frames quieter than this (dBFS) are never speech.
        min_speech_ms: shorter bursts are dropped (clicks, coughs).
        hangover_ms: silence that ends an utterance.
        pad_ms: audio kept before and after each utterance.
    """

    frame_ms: int = 30
    margin_db: float = 12.0
    min_db: float = -50.0
    min_speech_ms: int = 200
    hangover_ms: int = 500
    pad_ms: int = 150

    def frame_levels(self, audio: Audio) -> Any:
        """The level of each frame in dBFS (a float numpy array)."""
        np = _np()
        n = max(1, audio.sample_rate * self.frame_ms // 1000)
        count = len(audio.samples) // n
        if count == 0:
            return np.zeros(0)
        frames = audio.samples[: count * n].astype(np.float64).reshape(count, n) / 32768.0
        rms = np.sqrt(np.mean(frames**2, axis=1))
        levels = 20.0 * np.log10(np.maximum(rms, 1e-6))
        return levels

    def segments(self, audio: Audio) -> list[Audio]:
        """The utterances in ``audio``, in order (an offline pass over the whole clip)."""
        np = _np()
        levels = self.frame_levels(audio)
        if len(levels) == 0:
            return []
        floor = float(np.percentile(levels, 10))
        threshold = max(floor + self.margin_db, self.min_db)
        return self._cut(audio, levels > threshold)

    def _cut(self, audio: Audio, speech: Any) -> list[Audio]:
        n = max(1, audio.sample_rate * self.frame_ms // 1000)
        hang = max(1, self.hangover_ms // self.frame_ms)
        shortest = max(1, self.min_speech_ms // self.frame_ms)
        pad = self.pad_ms * audio.sample_rate // 1000
        out: list[Audio] = []
        start: int | None = None
        silent = 0
        voiced = 0
        for i, is_speech in enumerate(list(speech) + [False] * hang):
            if is_speech:
                if start is None:
                    start, voiced = i, 0
                silent = 0
                voiced += 1
            elif start is not None:
                silent += 1
                if silent >= hang:
                    end = i - silent + 1
                    if voiced >= shortest:
                        a = max(0, start * n - pad)
                        b = min(len(audio.samples), end * n + pad)
                        out.append(audio.slice(a, b))
                    start = None
        return out


