"""Speech to text: pocketsphinx (bundled en-US model, JSGF grammars) and a user-supplied whisper.cpp model."""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ...errors import ConfigurationError, MissingDependencyError, VoiceError
from ._audio import STT_RATE, Audio, _np

if TYPE_CHECKING:
    pass

logger = logging.getLogger("tinyagent.apps.voice")

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


