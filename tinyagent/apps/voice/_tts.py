"""Text to speech with the espeak-ng program."""

from __future__ import annotations

import logging
import shutil
import subprocess
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ...errors import MissingDependencyError, VoiceError
from ._audio import Audio

if TYPE_CHECKING:
    pass

logger = logging.getLogger("tinyagent.apps.voice")

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


