"""The vocabulary as llguidance takes it (each token's bytes, control tokens marked), cached on disk per model.

llguidance needs every token's bytes. Reading them from llama.cpp is one ctypes call pair per token, 151,936 for the
Qwen models: about 0.7 s of the first plan in every new process. The list depends only on the model file, so it is
written once next to the KV prefixes and read back in a few milliseconds; a file that does not match the model's
vocabulary size is rebuilt.
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import struct
from pathlib import Path
from typing import Any

log = logging.getLogger("tinyagent.models.llama")

__all__ = ["cache_file", "lltokenizer", "token_bytes"]

_MAGIC = b"TAVOCAB1"
_PIECE_BUFFER = 16 * 1024
_SPECIAL_MARK = b"\xff"  # llguidance's prefix for tokens that only the grammar's special-token syntax may produce


def cache_file(root: Path, model_path: Path, llama_version: str) -> Path:
    """Where the token list of ``model_path`` is kept (its path, size and modification time name the file)."""
    st = model_path.stat()
    key = f"{model_path.resolve()}\0{st.st_size}\0{st.st_mtime_ns}\0{llama_version}".encode()
    return root / f"{hashlib.sha256(key).hexdigest()[:24]}.vocab"


def _from_llama(vocab: Any, n_tokens: int) -> list[bytes]:
    import llama_cpp

    buffer = ctypes.create_string_buffer(_PIECE_BUFFER + 1)
    control = llama_cpp.LLAMA_TOKEN_ATTR_CONTROL
    user = llama_cpp.LLAMA_TOKEN_ATTR_USER_DEFINED
    tokens = []
    for token in range(n_tokens):
        n = llama_cpp.llama_token_to_piece(vocab, token, buffer, _PIECE_BUFFER, 0, True)
        if n < 0:
            raise ValueError(f"token {token} does not fit a {_PIECE_BUFFER}-byte buffer")
        piece = ctypes.string_at(buffer, n)
        attr = llama_cpp.llama_vocab_get_attr(vocab, token)
        if attr & control or (attr & user and piece.startswith(b"<") and piece.endswith(b">")):
            piece = _SPECIAL_MARK + piece
        tokens.append(piece)
    return tokens


def _read(path: Path, n_tokens: int) -> list[bytes] | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if not data.startswith(_MAGIC) or len(data) < len(_MAGIC) + 4:
        return None
    at = len(_MAGIC)
    (count,) = struct.unpack_from("<I", data, at)
    if count != n_tokens:
        return None
    at += 4
    lengths = struct.unpack_from(f"<{count}I", data, at)
    at += 4 * count
    tokens = []
    for length in lengths:
        tokens.append(data[at:at + length])
        at += length
    return tokens if at == len(data) else None


def _write(path: Path, tokens: list[bytes]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(b"".join([_MAGIC, struct.pack(f"<I{len(tokens)}I", len(tokens), *map(len, tokens)),
                                  *tokens]))
        os.replace(tmp, path)
    except OSError as exc:  # a read-only cache only costs the next process the slow read
        log.debug("could not cache the vocabulary at %s: %s", path, exc)


def token_bytes(vocab: Any, cache: Path | None) -> list[bytes]:
    """Every token's bytes (control tokens prefixed with ``0xff``), from ``cache`` when it matches the model."""
    import llama_cpp

    n_tokens = int(llama_cpp.llama_vocab_n_tokens(vocab))
    if cache is not None and (cached := _read(cache, n_tokens)) is not None:
        return cached
    tokens = _from_llama(vocab, n_tokens)
    if cache is not None:
        _write(cache, tokens)
    return tokens


def lltokenizer(vocab: Any, cache: Path | None) -> Any:
    """llguidance's tokenizer for a llama.cpp vocabulary (its token list read from ``cache`` where possible)."""
    import llama_cpp
    import llguidance

    tokenize = ctypes.cast(llama_cpp.llama_cpp._lib.llama_tokenize, ctypes.c_void_p).value
    return llguidance.LLTokenizer.from_llamacpp(  # type: ignore[attr-defined]  # not in its stubs
        tokens=token_bytes(vocab, cache), vocab_ptr=vocab, tokenize_fptr=tokenize,
        eos_token=llama_cpp.llama_vocab_eos(vocab), slices=None)
