"""The assistant loop: speech in, the agent, speech out (one turn, a recording, a WAV file, the microphone)."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from ...errors import ConfigurationError, MissingDependencyError, TinyAgentError, VoiceError
from ._audio import Audio, Microphone, play
from ._stt import PocketSphinxSTT, SpeechToText
from ._tts import TextToSpeech
from ._vad import EnergyVAD

logger = logging.getLogger("tinyagent.apps.voice")

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


