"""The voice assistant: audio in, speech to text, the agent, the answer spoken back.

Offline end to end:

* speech to text with pocketsphinx (its wheel bundles an en-US model); a JSGF grammar of the commands you expect
  makes it far more accurate (see :func:`command_grammar`). A user-supplied whisper.cpp model is the better engine
  where one is available (:class:`WhisperCppSTT`, needs ``pywhispercpp`` and a model file you provide).
* voice activity detection by frame energy (:class:`EnergyVAD`), or push-to-talk;
* text to speech with the ``espeak-ng`` program (Debian package ``espeak-ng``);
* microphone capture with sounddevice (optional); WAV files work everywhere.

Extra: ``tinyagent[voice]`` (pocketsphinx, numpy, sounddevice, soundfile). numpy and the engines are imported lazily.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import io
import logging
import os
import re
import shutil
import subprocess
import threading
import time
import wave
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from ..errors import ConfigurationError, MissingDependencyError, TinyAgentError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "Audio",
    "EnergyVAD",
    "EspeakTTS",
    "Microphone",
    "PocketSphinxSTT",
    "SpeechToText",
    "TextToSpeech",
    "VoiceAssistant",
    "VoiceError",
    "VoiceTurn",
    "WhisperCppSTT",
    "command_grammar",
    "grammar_words",
    "read_pronunciations",
    "word_error_rate",
]

logger = logging.getLogger(__name__)

STT_RATE = 16_000


class VoiceError(TinyAgentError):
    """Audio could not be read, recognised, synthesised or played (the message says which and why)."""


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


# -- speech to text -------------------------------------------------------------------------------------------------


@runtime_checkable
class SpeechToText(Protocol):
    """Turns one utterance into text."""

    def transcribe(self, audio: Audio) -> str:
        """The words in ``audio``, lower-case, or ``""`` when nothing was recognised."""
        ...


def command_grammar(phrases: Iterable[str], slots: Mapping[str, Iterable[str]] | None = None,
                    name: str = "commands") -> str:
    """A JSGF grammar accepting ``phrases``; ``<slot>`` in a phrase stands for any of ``slots[slot]``.

    ``[words]`` marks optional words and ``a | b`` alternatives, as in JSGF. Example::

        command_grammar(["send an email to <name> [about <topic>]", "what is on my calendar <day>"],
                        {"name": ["sid", "kate"], "topic": ["lunch", "the report"], "day": ["today", "tomorrow"]})

    Raises:
        ConfigurationError: no phrases, or a phrase names a slot that has no values.
    """
    slots = {k: [str(v).lower() for v in vs] for k, vs in (slots or {}).items()}
    lines = []
    rules = []
    for i, phrase in enumerate(phrases):
        text = " ".join(phrase.lower().split())
        for slot in re.findall(r"<([a-z_][a-z0-9_]*)>", text):
            if not slots.get(slot):
                raise ConfigurationError(f"phrase {phrase!r} uses <{slot}>, which has no values in slots")
        text = re.sub(r"<([a-z_][a-z0-9_]*)>", r"<slot_\1>", text)
        rules.append(f"<p{i}> = {text};")
        lines.append(f"<p{i}>")
    if not lines:
        raise ConfigurationError("a command grammar needs at least one phrase")
    slot_rules = [f"<slot_{k}> = {' | '.join(vs)};" for k, vs in slots.items() if vs]
    return "\n".join(["#JSGF V1.0;", f"grammar {name};", f"public <command> = {' | '.join(lines)};",
                      *rules, *slot_rules]) + "\n"


def grammar_words(grammar: str) -> list[str]:
    """The words a JSGF grammar can produce (rule names, operators and the header left out)."""
    body = "\n".join(line for line in grammar.splitlines()
                     if not line.strip().startswith(("#", "grammar ", "import ")))
    body = re.sub(r"<[^>]*>", " ", body)
    body = re.sub(r"\bpublic\b", " ", body)
    words = re.findall(r"[A-Za-z][A-Za-z'\-]*", body)
    return list(dict.fromkeys(w.lower() for w in words))


def read_pronunciations(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read ``word PH ON ES`` lines (CMU dictionary format) into a mapping.

    Raises:
        ConfigurationError: the file cannot be read or a line has no phones.
    """
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigurationError(f"cannot read pronunciations from {path}: {exc}") from exc
    out: dict[str, str] = {}
    for number, line in enumerate(lines, 1):
        parts = line.split()
        if not parts or line.lstrip().startswith("#"):
            continue
        if len(parts) < 2:
            raise ConfigurationError(f"{path}:{number}: expected 'word PH ON ES', got {line!r}")
        out[parts[0].lower()] = " ".join(parts[1:]).upper()
    return out


class PocketSphinxSTT:
    """Offline speech to text with pocketsphinx and its bundled en-US model.

    Args:
        grammar: a JSGF grammar (see :func:`command_grammar`); recognition is then limited to it, which is far more
            accurate for a known command set. None uses the general language model.
        words: extra pronunciations, ``{"lutfi": "L UH T F IY"}`` (CMU phone set), for names the dictionary lacks.
        hmm, lm, dictionary: paths overriding the bundled acoustic model, language model and pronunciation dictionary.
        dither: standard deviation (in 16-bit steps) of the low-level noise added before decoding; 0 turns it off.
            pocketsphinx's feature extraction misbehaves on digital silence (synthetic or gated audio): on espeak-ng
            speech, 4 steps (-78 dBFS) cut the word error rate from 0.64 to 0.08 with a grammar (default voice).

    Raises:
        MissingDependencyError: pocketsphinx is not installed.
        VoiceError: the decoder could not be set up (bad grammar, unknown word, bad model path).
    """

    def __init__(
        self,
        *,
        grammar: str | None = None,
        words: Mapping[str, str] | None = None,
        hmm: str | None = None,
        lm: str | None = None,
        dictionary: str | None = None,
        dither: float = 4.0,
    ) -> None:
        try:
            import pocketsphinx
        except ImportError as exc:
            raise MissingDependencyError("pocketsphinx", "voice") from exc
        options: dict[str, Any] = {"samprate": STT_RATE, "loglevel": "FATAL"}
        for key, value in (("hmm", hmm), ("lm", lm), ("dict", dictionary)):
            if value is not None:
                options[key] = value
        self._lock = threading.Lock()
        try:
            self._decoder = pocketsphinx.Decoder(**options)
            for word, phones in (words or {}).items():
                self._decoder.add_word(word.lower(), phones, True)
            if grammar is not None:
                unknown = [w for w in grammar_words(grammar) if self._decoder.lookup_word(w) is None]
                if unknown:
                    raise VoiceError(
                        f"the grammar uses word(s) the pronunciation dictionary lacks: {unknown}; add them with "
                        "words={'word': 'PH ON ES'} (CMU phones), or --words FILE on the command line"
                    )
                self._decoder.add_jsgf_string("grammar", grammar)
                self._decoder.activate_search("grammar")
        except (RuntimeError, ValueError, KeyError) as exc:
            raise VoiceError(f"pocketsphinx could not be set up: {exc}; check the grammar's words and the "
                             "model paths") from exc
        self.grammar = grammar
        self.dither = dither

    def transcribe(self, audio: Audio) -> str:
        """The words in ``audio`` (any rate; resampled to 16 kHz), lower-case; ``""`` if nothing was recognised."""
        samples = audio.resample(STT_RATE).samples
        if self.dither > 0:
            np = _np()
            noise = np.random.default_rng(0).normal(0.0, self.dither, len(samples))  # seeded: same audio, same text
            samples = np.clip(np.round(samples + noise), -32768, 32767).astype(np.int16)
        pcm = samples.astype("<i2").tobytes()
        with self._lock:  # one decoder, one utterance at a time
            try:
                self._decoder.start_utt()
                self._decoder.process_raw(pcm, full_utt=True)
                self._decoder.end_utt()
            except RuntimeError as exc:
                raise VoiceError(f"pocketsphinx failed: {exc}") from exc
            hyp = self._decoder.hyp()
        return " ".join(hyp.hypstr.lower().split()) if hyp is not None else ""


class WhisperCppSTT:
    """Speech to text with whisper.cpp, through ``pywhispercpp`` and a ggml model file you supply.

    No model ships with tinyagent and none is downloaded: pass the path of a whisper.cpp ``ggml-*.bin`` model.

    Args:
        model_path: the ggml model file.
        n_threads: CPU threads.

    Raises:
        ConfigurationError: the model file does not exist.
        MissingDependencyError: pywhispercpp is not installed (``pip install pywhispercpp``).
    """

    def __init__(self, model_path: str | os.PathLike[str], n_threads: int = 2) -> None:
        path = Path(model_path).expanduser()
        if not path.is_file():
            raise ConfigurationError(f"whisper model {path} does not exist; pass the path of a ggml-*.bin model")
        try:
            from pywhispercpp.model import Model
        except ImportError as exc:
            raise MissingDependencyError("pywhispercpp", "voice") from exc
        self._model = Model(str(path), n_threads=n_threads, print_progress=False, print_realtime=False)
        self._lock = threading.Lock()

    def transcribe(self, audio: Audio) -> str:
        """The words in ``audio``, lower-case."""
        np = _np()
        samples = audio.resample(STT_RATE).samples.astype(np.float32) / 32768.0
        with self._lock:
            try:
                segments = self._model.transcribe(samples)
            except Exception as exc:  # noqa: BLE001 - the binding raises plain exceptions
                raise VoiceError(f"whisper.cpp failed: {exc}") from exc
        text = " ".join(str(getattr(s, "text", s)) for s in segments)
        return " ".join(re.sub(r"[^\w\s']", " ", text.lower()).split())


# -- text to speech -------------------------------------------------------------------------------------------------


@runtime_checkable
class TextToSpeech(Protocol):
    """Turns text into audio."""

    def synthesize(self, text: str) -> Audio:
        """``text`` as speech."""
        ...


class EspeakTTS:
    """Text to speech with the ``espeak-ng`` program.

    Args:
        voice: an espeak-ng voice; ``en-us+klatt3`` is clear, and pocketsphinx recognises it well.
        rate: words per minute.
        binary: the program (``espeak-ng``, or ``espeak``).

    Raises:
        MissingDependencyError: the program is not on PATH (Debian/Ubuntu: ``apt-get install espeak-ng``).
    """

    def __init__(self, voice: str = "en-us+klatt3", rate: int = 165, binary: str = "espeak-ng") -> None:
        found = shutil.which(binary)
        if found is None:
            raise MissingDependencyError(f"{binary} (system package: apt-get install espeak-ng)", "voice")
        self.binary = found
        self.voice = voice
        self.rate = rate

    def synthesize(self, text: str) -> Audio:
        """``text`` as speech (22.05 kHz mono).

        Raises:
            VoiceError: espeak-ng failed.
        """
        if not text.strip():
            raise VoiceError("nothing to say: the text is empty")
        try:
            proc = subprocess.run(
                [self.binary, "-v", self.voice, "-s", str(self.rate), "--stdout", "--", text],
                capture_output=True, check=True, timeout=60,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            stderr = getattr(exc, "stderr", b"") or b""
            raise VoiceError(f"espeak-ng failed: {exc} {stderr.decode(errors='replace')[:200]}") from exc
        return Audio.from_wav(proc.stdout)


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


# -- the assistant --------------------------------------------------------------------------------------------------


@dataclass
class VoiceTurn:
    """One spoken request and its handling.

    Attributes:
        transcript: what the recogniser heard (``""``: nothing; the agent was not run).
        answer: the agent's answer (or the error message).
        result: the agent's run result, or None.
        error: a short error description when the run failed.
        reply: the synthesised answer, when a TTS engine is set.
        timings: seconds spent in ``stt``, ``agent`` and ``tts``.
    """

    transcript: str
    answer: str = ""
    result: Any = None
    error: str | None = None
    reply: Audio | None = None
    timings: dict[str, float] = field(default_factory=dict)


class VoiceAssistant:
    """Speech in, agent, speech out.

    Args:
        agent: a :class:`tinyagent.Agent`.
        stt: the recogniser (default: :class:`PocketSphinxSTT` with its general language model).
        tts: the synthesiser, or None for text-only answers.
        vad: the utterance detector for long recordings and the microphone.
        today: the date requests resolve against (default: the real date).
        keep_history: pass earlier turns to the agent, so follow-ups keep their context.
    """

    def __init__(
        self,
        agent: Any,
        stt: SpeechToText | None = None,
        tts: TextToSpeech | None = None,
        *,
        vad: EnergyVAD | None = None,
        today: dt.date | None = None,
        keep_history: bool = True,
    ) -> None:
        self.agent = agent
        self.stt: SpeechToText = stt if stt is not None else PocketSphinxSTT()
        self.tts = tts
        self.vad = vad or EnergyVAD()
        self.today = today
        self.keep_history = keep_history
        self.history: list[dict[str, str]] = []

    async def respond(self, audio: Audio) -> VoiceTurn:
        """Handle one utterance: transcribe, run the agent, synthesise the answer."""
        start = time.perf_counter()
        transcript = await asyncio.to_thread(self.stt.transcribe, audio)
        turn = VoiceTurn(transcript=transcript, timings={"stt": time.perf_counter() - start})
        if not transcript:
            turn.answer = "Sorry, I did not catch that."
            turn.error = "nothing recognised"
        else:
            start = time.perf_counter()
            kwargs: dict[str, Any] = {}
            if self.today is not None:
                kwargs["today"] = self.today
            if self.keep_history and self.history:
                kwargs["history"] = list(self.history)
            try:
                turn.result = await self.agent.run(transcript, **kwargs)
                turn.answer = str(getattr(turn.result, "answer", "") or "")
            except TinyAgentError as exc:
                turn.error = f"{type(exc).__name__}: {exc}"
                turn.answer = f"Sorry, that failed: {exc}"
            turn.timings["agent"] = time.perf_counter() - start
            if self.keep_history and turn.error is None:
                self.history += [{"role": "user", "content": transcript}, {"role": "assistant", "content": turn.answer}]
        if self.tts is not None and turn.answer:
            start = time.perf_counter()
            turn.reply = await asyncio.to_thread(self.tts.synthesize, turn.answer)
            turn.timings["tts"] = time.perf_counter() - start
        return turn

    async def respond_to_recording(self, audio: Audio) -> list[VoiceTurn]:
        """Split a recording into utterances with the VAD and handle each in turn."""
        return [await self.respond(segment) for segment in self.vad.segments(audio)]

    async def respond_to_wav(self, path: str | os.PathLike[str], *, segment: bool = True) -> list[VoiceTurn]:
        """Handle a WAV file: each utterance in it (``segment=True``) or the whole file as one."""
        audio = await asyncio.to_thread(Audio.from_wav, path)
        if not segment:
            return [await self.respond(audio)]
        return await self.respond_to_recording(audio)

    def listen(
        self,
        on_turn: Callable[[VoiceTurn], None],
        *,
        mode: Literal["vad", "ptt"] = "vad",
        stop: threading.Event | None = None,
        wait_for_key: Callable[[], bool] | None = None,
        microphone: Microphone | None = None,
        speak: bool = True,
    ) -> None:
        """Run the microphone loop until ``stop`` is set (blocking).

        Args:
            on_turn: called with every handled turn (the app shows it).
            mode: ``"vad"`` (voice activity detection) or ``"ptt"`` (push-to-talk).
            stop: set it to end the loop.
            wait_for_key: for push-to-talk: blocks until the user presses the key, returns False to quit; it is
                called once to start and once to stop each recording.
            microphone: the capture device (default: the system default at 16 kHz).
            speak: play each answer (needs an output device).

        Raises:
            ConfigurationError: push-to-talk without ``wait_for_key``.
            MissingDependencyError: sounddevice is not installed.
        """
        stop = stop or threading.Event()
        mic = microphone or Microphone()
        if mode == "ptt" and wait_for_key is None:
            raise ConfigurationError("push-to-talk needs wait_for_key (a function that waits for the key)")

        def handle(audio: Audio) -> None:
            turn = asyncio.run(self.respond(audio))
            on_turn(turn)
            if speak and turn.reply is not None:
                try:
                    play(turn.reply)
                except (VoiceError, MissingDependencyError) as exc:
                    logger.warning("cannot play the answer: %s", exc)

        if mode == "vad":
            for utterance in mic.utterances(self.vad, stop):
                handle(utterance)
            return
        assert wait_for_key is not None  # checked above
        while not stop.is_set():
            if not wait_for_key():
                return
            recording = threading.Event()
            result: list[Audio] = []

            def capture(done: threading.Event = recording, into: list[Audio] = result) -> None:
                into.append(mic.record(done))

            worker = threading.Thread(target=capture, daemon=True)
            worker.start()
            keep_going = wait_for_key()
            recording.set()
            worker.join()
            if result:
                handle(result[0])
            if not keep_going:
                return


def word_error_rate(reference: str, hypothesis: str) -> float:
    """Word error rate: (substitutions + insertions + deletions) / words in ``reference``."""
    ref, hyp = reference.lower().split(), hypothesis.lower().split()
    if not ref:
        return 0.0 if not hyp else 1.0
    prev = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        cur = [i] + [0] * len(hyp)
        for j, h in enumerate(hyp, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r != h))
        prev = cur
    return prev[-1] / len(ref)
