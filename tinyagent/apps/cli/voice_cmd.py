"""``tinyagent voice``: speech in (microphone or WAV files), the agent, the answer spoken back."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from .. import _runtime as rt
from .._render import answer_panel, plan_tree
from ._app import AppState, app, state

if TYPE_CHECKING:
    from .. import voice as v

__all__ = ["voice"]


def _recogniser(st: AppState, grammar: Path | None, words: Path | None, whisper_model: Path | None) -> Any:
    from .. import voice as v

    if whisper_model is not None:
        return v.WhisperCppSTT(whisper_model, n_threads=st.threads or 2)
    from .._files import read_text

    jsgf = read_text(grammar) if grammar is not None else None
    return v.PocketSphinxSTT(grammar=jsgf, words=v.read_pronunciations(words) if words else None)


class _Shower:
    """Prints each turn and saves its spoken reply."""

    def __init__(self, st: AppState, save_replies: Path | None) -> None:
        self.st, self.save_replies, self.count = st, save_replies, 0

    def __call__(self, turn: v.VoiceTurn) -> None:
        st = self.st
        self.count += 1
        if st.json:
            st.emit_json({"transcript": turn.transcript, "answer": turn.answer, "error": turn.error,
                          "timings": turn.timings,
                          "result": rt.result_to_dict(turn.result) if turn.result is not None else None})
        else:
            st.console.print(Text.assemble(("heard: ", "bold"), (turn.transcript or "(nothing)", "cyan")))
            if turn.result is not None and turn.result.plans:
                st.console.print(plan_tree(turn.result.plans[-1]))
            st.console.print(answer_panel(turn.answer))
            st.console.print(Text(" · ".join(f"{k} {s:.2f} s" for k, s in turn.timings.items()), style="dim"))
        if self.save_replies is not None and turn.reply is not None:
            self.save_replies.mkdir(parents=True, exist_ok=True)
            turn.reply.to_wav(self.save_replies / f"reply-{self.count}.wav")


async def _answer_files(assistant: Any, paths: list[Path], show: _Shower) -> None:
    from .. import voice as v

    for path in paths:
        turns = await assistant.respond_to_wav(path)
        if not turns:
            raise v.VoiceError(f"no speech found in {path}: the voice-activity detector found no utterance "
                               "(is it a recording of speech, loud enough and at least half a second long?)")
        for turn in turns:
            show(turn)
        if not any(turn.transcript for turn in turns):
            raise v.VoiceError(f"nothing was recognised in {path}: the recogniser heard no words "
                               "(pass --grammar with the commands you expect, or --whisper-model)")


@app.command()
def voice(
    ctx: typer.Context,
    wav: Annotated[list[Path] | None, typer.Option("--wav", help="WAV file(s) instead of the microphone.")] = None,
    ptt: Annotated[bool, typer.Option("--ptt", help="Push-to-talk (Enter starts and stops) instead of VAD.")]
    = False,
    grammar: Annotated[Path | None, typer.Option(help="A JSGF grammar of the expected commands (more accurate).")]
    = None,
    words: Annotated[Path | None, typer.Option(help="Extra pronunciations, 'word PH ON ES' per line (CMU phones).")]
    = None,
    whisper_model: Annotated[Path | None, typer.Option(help="A whisper.cpp ggml model (needs pywhispercpp).")]
    = None,
    speak: Annotated[bool, typer.Option(help="Speak the answers (espeak-ng).")] = True,
    save_replies: Annotated[Path | None, typer.Option(help="Write each spoken answer to DIR/reply-N.wav.")] = None,
) -> None:
    """The voice assistant: speech in (microphone or WAV), the agent, the answer spoken back.

    Exits 1 when a WAV file holds no recognisable speech.
    """
    from .. import voice as v

    st = state(ctx)
    stt = _recogniser(st, grammar, words, whisper_model)
    tts = v.EspeakTTS() if (speak or save_replies) else None
    assistant = v.VoiceAssistant(st.agent(), stt, tts, today=st.today)
    show = _Shower(st, save_replies)
    if wav:
        asyncio.run(_answer_files(assistant, list(wav), show))
        return

    def wait_for_enter() -> bool:
        try:
            st.console.input("[dim]press Enter to talk/stop, Ctrl-D to quit[/] ")
        except (EOFError, KeyboardInterrupt):
            return False
        return True

    st.console.print(Text.assemble(("listening", "bold"), " (Ctrl-C to stop)", (
        " — push-to-talk" if ptt else " — stay quiet for a second while the noise level is measured, then speak")))
    with contextlib.suppress(KeyboardInterrupt):
        assistant.listen(show, mode="ptt" if ptt else "vad", wait_for_key=wait_for_enter if ptt else None,
                         speak=speak)
