"""Audio I/O: mono 16-bit PCM (WAV in and out, resampling), playback and microphone capture."""

from __future__ import annotations

import io
import logging
import os
import threading
import wave
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import MissingDependencyError, VoiceError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from ._vad import EnergyVAD

logger = logging.getLogger("tinyagent.apps.voice")

STT_RATE = 16_000


def _np() -> Any:
    try:
        import numpy
    except ImportError as exc:
        raise MissingDependencyError("numpy", "voice") from exc
    return numpy


# -- audio ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Audio:
    """Mono 16-bit PCM audio.

    Attributes:
        samples: int16 samples.
        sample_rate: samples per second.
    """

    samples: npt.NDArray[np.int16]
    sample_rate: int

    @property
    def duration_s(self) -> float:
        """Length in seconds."""
        return len(self.samples) / float(self.sample_rate)

    @classmethod
    def from_wav(cls, source: str | os.PathLike[str] | bytes) -> Audio:
        """Read a PCM WAV file (path or bytes); several channels are averaged to mono.

        Raises:
            VoiceError: the file cannot be read or is not PCM WAV.
        """
        np = _np()
        try:
            with wave.open(io.BytesIO(source) if isinstance(source, bytes) else str(source), "rb") as handle:
                channels, width, rate = handle.getnchannels(), handle.getsampwidth(), handle.getframerate()
                frames = handle.readframes(handle.getnframes())
        except (OSError, EOFError, wave.Error) as exc:
            return cls._from_soundfile(source, exc)
        if width == 2:
            data = np.frombuffer(frames, dtype="<i2").astype(np.float64)
        elif width == 1:
            data = (np.frombuffer(frames, dtype=np.uint8).astype(np.float64) - 128.0) * 256.0
        elif width == 4:
            data = np.frombuffer(frames, dtype="<i4").astype(np.float64) / 65536.0
        else:
            raise VoiceError(f"unsupported WAV sample width {width * 8} bits; convert to 16-bit PCM")
        if channels > 1:
            data = data[: len(data) - len(data) % channels].reshape(-1, channels).mean(axis=1)
        return cls(np.clip(np.round(data), -32768, 32767).astype(np.int16), rate)

    @classmethod
    def _from_soundfile(cls, source: str | os.PathLike[str] | bytes, cause: Exception) -> Audio:
        np = _np()
        try:
            import soundfile
        except ImportError as exc:
            raise VoiceError(f"not a PCM WAV file ({cause}); install soundfile to read other formats") from exc
        try:
            data, rate = soundfile.read(io.BytesIO(source) if isinstance(source, bytes) else str(source),
                                        dtype="int16", always_2d=True)
        except Exception as exc:  # noqa: BLE001 - soundfile raises its own error types
            raise VoiceError(f"cannot read audio: {exc}") from exc
        mono = data.astype(np.float64).mean(axis=1)
        return cls(np.round(mono).astype(np.int16), int(rate))

    def to_wav(self, path: str | os.PathLike[str] | None = None) -> bytes:
        """The audio as WAV bytes (written to ``path`` too when given)."""
        buffer = io.BytesIO()
        with wave.open(buffer, "wb") as out:
            out.setnchannels(1)
            out.setsampwidth(2)
            out.setframerate(self.sample_rate)
            out.writeframes(self.samples.astype("<i2").tobytes())
        data = buffer.getvalue()
        if path is not None:
            Path(path).write_bytes(data)
        return data

    def resample(self, rate: int) -> Audio:
        """This audio at ``rate`` Hz (windowed-sinc low-pass, then linear interpolation)."""
        if rate == self.sample_rate or len(self.samples) == 0:
            return self if rate == self.sample_rate else Audio(self.samples, rate)
        np = _np()
        x = self.samples.astype(np.float64)
        if rate < self.sample_rate:  # remove what the new rate cannot hold, or it aliases into the speech band
            cutoff = 0.5 * rate / self.sample_rate * 0.95
            taps = np.arange(-64, 65)
            kernel = 2 * cutoff * np.sinc(2 * cutoff * taps) * np.hamming(len(taps))
            x = np.convolve(x, kernel / kernel.sum(), mode="same")
        n_out = int(round(len(x) * rate / self.sample_rate))
        positions = np.arange(n_out) * (self.sample_rate / rate)
        y = np.interp(positions, np.arange(len(x)), x)
        return Audio(np.clip(np.round(y), -32768, 32767).astype(np.int16), rate)

    def slice(self, start: int, end: int) -> Audio:
        """Samples ``start:end``."""
        return Audio(self.samples[start:end], self.sample_rate)

    @classmethod
    def concat(cls, parts: Sequence[Audio], gap_s: float = 0.0) -> Audio:
        """Join clips of the same rate, with ``gap_s`` seconds of silence between them.

        Raises:
            VoiceError: no clips, or rates differ.
        """
        if not parts:
            raise VoiceError("nothing to concatenate")
        np = _np()
        rate = parts[0].sample_rate
        if any(p.sample_rate != rate for p in parts):
            raise VoiceError("clips have different sample rates; resample them first")
        gap = np.zeros(int(gap_s * rate), dtype=np.int16)
        pieces: list[Any] = []
        for i, p in enumerate(parts):
            if i:
                pieces.append(gap)
            pieces.append(p.samples)
        return cls(np.concatenate(pieces).astype(np.int16), rate)



def play(audio: Audio) -> None:
    """Play ``audio`` on the default output device (needs sounddevice and an audio device).

    Raises:
        MissingDependencyError: sounddevice is not installed.
        VoiceError: no device, or playback failed.
    """
    try:
        import sounddevice
    except (ImportError, OSError) as exc:  # OSError: PortAudio library missing
        raise MissingDependencyError("sounddevice", "voice") from exc
    try:
        sounddevice.play(audio.samples, audio.sample_rate)
        sounddevice.wait()
    except Exception as exc:  # noqa: BLE001 - PortAudio errors
        raise VoiceError(f"cannot play audio: {exc}") from exc


class Microphone:
    """Captures 16 kHz mono audio with sounddevice.

    Args:
        sample_rate: capture rate.
        device: a sounddevice input device (index or name); None is the default.
        block_ms: the size of captured blocks.

    Raises:
        MissingDependencyError: sounddevice (or PortAudio) is not installed.
    """

    def __init__(self, sample_rate: int = STT_RATE, device: int | str | None = None, block_ms: int = 30) -> None:
        try:
            import sounddevice
        except (ImportError, OSError) as exc:
            raise MissingDependencyError("sounddevice", "voice") from exc
        self._sd = sounddevice
        self.sample_rate = sample_rate
        self.device = device
        self.block = sample_rate * block_ms // 1000

    def blocks(self, stop: threading.Event) -> Iterator[Any]:
        """Yield int16 sample blocks until ``stop`` is set.

        Raises:
            VoiceError: the device could not be opened.
        """
        try:
            stream = self._sd.InputStream(samplerate=self.sample_rate, channels=1, dtype="int16",
                                          blocksize=self.block, device=self.device)
        except Exception as exc:  # noqa: BLE001 - PortAudio errors
            raise VoiceError(f"cannot open the microphone: {exc}") from exc
        with stream:
            while not stop.is_set():
                data, _overflowed = stream.read(self.block)
                yield data[:, 0].copy()

    def record(self, stop: threading.Event) -> Audio:
        """Record until ``stop`` is set (push-to-talk)."""
        np = _np()
        chunks = list(self.blocks(stop))
        samples = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int16)
        return Audio(samples.astype(np.int16), self.sample_rate)

    def utterances(self, vad: EnergyVAD, stop: threading.Event, calibrate_s: float = 1.0) -> Iterator[Audio]:
        """Yield utterances as the VAD closes them, until ``stop`` is set.

        The first ``calibrate_s`` seconds measure the room's noise floor; stay quiet then.
        """
        np = _np()
        levels: list[float] = []
        current: list[Any] = []
        silent = voiced = 0
        hang = max(1, vad.hangover_ms // vad.frame_ms)
        shortest = max(1, vad.min_speech_ms // vad.frame_ms)
        preroll: list[Any] = []
        floor: float | None = None
        for block in self.blocks(stop):
            rms = float(np.sqrt(np.mean((block.astype(np.float64) / 32768.0) ** 2)))
            level = 20.0 * np.log10(max(rms, 1e-6))
            if floor is None:
                levels.append(level)
                if len(levels) * vad.frame_ms >= calibrate_s * 1000:
                    floor = float(np.percentile(levels, 50))
                continue
            is_speech = level > max(floor + vad.margin_db, vad.min_db)
            if current:
                current.append(block)
                if is_speech:
                    silent, voiced = 0, voiced + 1
                else:
                    silent += 1
                    if silent >= hang:
                        if voiced >= shortest:
                            yield Audio(np.concatenate(current).astype(np.int16), self.sample_rate)
                        current, silent, voiced = [], 0, 0
            elif is_speech:
                current = [*preroll, block]
                voiced, silent = 1, 0
            else:
                preroll = (preroll + [block])[-max(1, vad.pad_ms // vad.frame_ms) :]


