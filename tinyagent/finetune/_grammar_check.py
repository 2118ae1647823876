"""Does a text parse under a GBNF grammar? Asked of llama.cpp's own grammar engine, so the answer is exactly what
constrained decoding would allow.

Only a model's vocabulary is loaded (``vocab_only``: milliseconds, a few MB), to cut the text into tokens; the
grammar sampler then checks each token in turn and is never fed one it rejects.
"""

from __future__ import annotations

import ctypes
import logging
import math
import threading
from pathlib import Path
from typing import Any

from ..errors import MissingDependencyError, ModelError

__all__ = ["GrammarChecker"]

log = logging.getLogger(__name__)


class GrammarChecker:
    """Checks texts against GBNF grammars with llama.cpp.

    Args:
        gguf: any GGUF whose vocabulary to tokenize with (the student's or the teacher's).

    Raises:
        MissingDependencyError: llama-cpp-python is not installed.
        ModelError: the file's vocabulary could not be loaded.
    """

    def __init__(self, gguf: str | Path) -> None:
        try:
            import llama_cpp
        except ImportError as exc:
            raise MissingDependencyError("llama-cpp-python", "llama") from exc
        self._l = llama_cpp
        self._lock = threading.Lock()
        llama_cpp.llama_backend_init()
        from llama_cpp._utils import suppress_stdout_stderr

        params = llama_cpp.llama_model_default_params()
        params.vocab_only = True
        with suppress_stdout_stderr(disable=False):  # llama.cpp logs every metadata key while loading
            self._model = llama_cpp.llama_model_load_from_file(str(gguf).encode(), params)
        if not self._model:
            raise ModelError(f"llama.cpp could not load the vocabulary of {gguf}")
        self._vocab = llama_cpp.llama_model_get_vocab(self._model)
        self.path = Path(gguf)

    def tokenize(self, text: str) -> list[int]:
        """``text`` as token ids (no BOS; special-token text is matched)."""
        data = text.encode("utf-8")
        capacity = len(data) + 8
        buffer = (self._l.llama_token * capacity)()
        n = self._l.llama_tokenize(self._vocab, data, len(data), buffer, capacity, False, True)
        if n < 0:
            raise ModelError(f"tokenizing {len(data)} bytes needed {-n} tokens")
        return list(buffer[:n])

    def problem(self, grammar: str, text: str) -> str:
        """Why ``grammar`` rejects ``text`` ("" when it accepts it).

        The text must be a complete derivation of the grammar's prefix; it is checked token by token.
        """
        tokens = self.tokenize(text)
        with self._lock:
            sampler = self._l.llama_sampler_init_grammar(self._vocab, grammar.encode("utf-8"), b"root")
            if not sampler:
                return "the plan grammar did not compile"
            try:
                consumed = 0
                for token in tokens:
                    cell = (self._l.llama_token_data * 1)(self._l.llama_token_data(token, 0.0, 0.0))
                    array = self._l.llama_token_data_array(cell, 1, -1, False)
                    self._l.llama_sampler_apply(sampler, ctypes.byref(array))
                    if math.isinf(cell[0].logit) and cell[0].logit < 0:
                        piece = self._piece(token)
                        context = text[max(0, consumed - 40): consumed]
                        return f"the plan grammar rejects {piece!r} after {context!r}"
                    self._l.llama_sampler_accept(sampler, token)
                    consumed += len(self._piece(token))
                return ""
            finally:
                self._l.llama_sampler_free(sampler)

    def _piece(self, token: int) -> str:
        buffer = ctypes.create_string_buffer(64)
        n = self._l.llama_token_to_piece(self._vocab, token, buffer, len(buffer), 0, True)
        return buffer.raw[: max(0, n)].decode("utf-8", errors="replace")

    def close(self) -> None:
        """Free the vocabulary."""
        model: Any = getattr(self, "_model", None)
        if model:
            self._l.llama_model_free(model)
            self._model = None

    def __del__(self) -> None:
        self.close()
