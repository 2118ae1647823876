"""Unit tests of LlamaCppModel's logits processors (no GGUF needed: a stand-in vocabulary of byte strings)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from tinyagent.models import Preference
from tinyagent.models.llama._processors import _LogprobTracker, _Preferences

VOCAB = [b"1. ", b"join", b"()", b"\xc3", b"\xa9", b" ", b"x"]  # ids 3+4 are the two bytes of "é"


class _Vocab:
    def detokenize(self, ids: list[int]) -> bytes:
        return b"".join(VOCAB[i] for i in ids)


class _Model:
    llama = _Vocab()

    def opening_tokens(self, text: str) -> tuple[frozenset[int], frozenset[int]]:
        ids = frozenset(i for i, piece in enumerate(VOCAB) if piece.strip() and text.encode().startswith(piece.strip()))
        return ids, ids


def _step(procs: list[Any], ids: list[int], scores: Any) -> Any:
    for p in procs:
        scores = p(np.array(ids), scores)
    return scores


def test_preference_probability_matches_softmax_with_and_without_the_shared_tracker() -> None:
    scores = np.array([0.5, 2.0, 0.1, -1.0, -1.0, 0.0, 1.0], dtype=np.float32)
    expected = math.exp(2.0) / float(np.sum(np.exp(scores.astype(np.float64))))
    pref = Preference("stop", r"\A\Z", "join", min_prob=2.0)  # measured, never taken
    alone = _Preferences(_Model(), [pref])  # type: ignore[arg-type]
    tracker = _LogprobTracker()
    shared = _Preferences(_Model(), [pref], tracker)  # type: ignore[arg-type]
    _step([alone], [9, 9], scores.copy())
    _step([tracker, shared], [9, 9], scores.copy())
    assert alone.seen[0][1] == pytest.approx(expected, rel=1e-5)
    assert shared.seen[0][1] == pytest.approx(expected, rel=1e-5)


def test_text_is_decoded_incrementally_across_a_split_utf8_character() -> None:
    pref = Preference("after_e", r"é \Z", "join", min_prob=0.0)  # taken as soon as the text ends in "é "
    proc = _Preferences(_Model(), [pref])  # type: ignore[arg-type]
    prompt = [9, 9]
    scores = np.zeros(len(VOCAB), dtype=np.float32)
    for generated in ([], [0], [0, 3], [0, 3, 4]):
        out = proc(np.array(prompt + generated), scores)
        assert proc.seen == [] and out is scores
    out = proc(np.array(prompt + [0, 3, 4, 5]), scores)
    assert proc._text(np.array(prompt + [0, 3, 4, 5])) == "1. é "
    assert proc.seen and proc.seen[0][2] is True
    assert int(np.argmax(out)) == 1  # the floor forced "join"


def test_a_ceiling_rules_the_continuation_out_below_it_and_keeps_it_above() -> None:
    # "join" is the single likeliest token (p ~0.35) though the other tokens share the rest between them.
    scores = np.array([1.2, 2.0, 1.2, -9.0, -9.0, 1.2, 1.2], dtype=np.float32)
    below = _Preferences(_Model(), [Preference("no_tool", r"\A\Z", "join", max_prob=0.5)])  # type: ignore[arg-type]
    out = _step([below], [9, 9], scores.copy())
    assert below.seen[0][1] < 0.5 and below.seen[0][2] is False
    assert out[1] == -np.inf and int(np.argmax(out)) != 1
    above = _Preferences(_Model(), [Preference("no_tool", r"\A\Z", "join", max_prob=0.2)])  # type: ignore[arg-type]
    kept = _step([above], [9, 9], scores.copy())
    assert int(np.argmax(kept)) == 1
