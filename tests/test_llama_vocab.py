"""llguidance's token list, cached on disk per model file: the same tokenizer as llguidance builds itself, read back
instead of rebuilt, and rebuilt when the file does not fit the model (real GGUF)."""

from __future__ import annotations

import struct
import warnings
from pathlib import Path

import pytest

pytest.importorskip("llama_cpp")
pytest.importorskip("llguidance")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def smol(smollm2_path: Path):  # type: ignore[no-untyped-def]
    from tinyagent.models.llama import LlamaCppModel

    model = LlamaCppModel(path=smollm2_path, n_threads=1, prefix_cache_dir=None)
    assert model._grammar_engine is not None  # built from the start, in the background
    model._grammar_engine.wait()
    return model


def test_the_cached_list_gives_llguidances_own_tokenizer(smol, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from llguidance.llamacpp import lltokenizer_from_vocab

    from tinyagent.models.llama import _vocab

    vocab = smol._llm._model.vocab
    with warnings.catch_warnings():  # llguidance calls a llama-cpp-python alias marked deprecated
        warnings.simplefilter("ignore", DeprecationWarning)
        reference = lltokenizer_from_vocab(vocab)
    cache = tmp_path / "m.vocab"
    built = _vocab.lltokenizer(vocab, cache)
    assert cache.is_file()
    calls: list[int] = []
    monkeypatch.setattr(_vocab, "_from_llama", lambda v, n: calls.append(n) or [])
    cached = _vocab.lltokenizer(vocab, cache)
    assert calls == []  # read back, not rebuilt
    for tok in (built, cached):
        assert tok.vocab_size == reference.vocab_size
        assert all(tok.decode_bytes([i]) == reference.decode_bytes([i]) and
                   tok.is_special_token(i) == reference.is_special_token(i) for i in range(reference.vocab_size))
        assert tok.tokenize_str('1. send_email(to=[$1], subject="Hi")') == \
            reference.tokenize_str('1. send_email(to=[$1], subject="Hi")')


@pytest.mark.parametrize("damage", ["truncated", "other_model", "garbage"])
def test_a_file_that_does_not_fit_is_rebuilt(smol, tmp_path: Path, damage: str) -> None:  # type: ignore[no-untyped-def]
    from tinyagent.models.llama import _vocab

    vocab = smol._llm._model.vocab
    cache = tmp_path / "m.vocab"
    good = _vocab.token_bytes(vocab, cache)
    data = cache.read_bytes()
    if damage == "truncated":
        cache.write_bytes(data[:-7])
    elif damage == "other_model":
        cache.write_bytes(_vocab._MAGIC + struct.pack("<II", 1, 1) + b"x")
    else:
        cache.write_bytes(b"\x00" * 64)
    assert _vocab.token_bytes(vocab, cache) == good
    assert cache.read_bytes() == data  # and written again whole


def test_the_cache_is_named_by_the_model_file(tmp_path: Path) -> None:
    from tinyagent.models.llama._vocab import cache_file

    a, b = tmp_path / "a.gguf", tmp_path / "b.gguf"
    a.write_bytes(b"GGUF1")
    b.write_bytes(b"GGUF2")
    assert cache_file(tmp_path, a, "0.3") != cache_file(tmp_path, b, "0.3")
    assert cache_file(tmp_path, a, "0.3") != cache_file(tmp_path, a, "0.4")
    assert cache_file(tmp_path, a, "0.3") == cache_file(tmp_path, a, "0.3")
