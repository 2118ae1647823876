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

from ...errors import VoiceError
from ._assistant import VoiceAssistant, VoiceTurn
from ._audio import STT_RATE, Audio, Microphone, play
from ._stt import PocketSphinxSTT, SpeechToText, WhisperCppSTT, command_grammar, grammar_words, read_pronunciations
from ._tts import EspeakTTS, TextToSpeech
from ._vad import EnergyVAD
from ._wer import word_error_rate

__all__ = [
    "STT_RATE",
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
    "play",
    "read_pronunciations",
    "word_error_rate",
]
