"""Text helpers shared by the retrievers: the document a tool is indexed by, word splitting, hashed features."""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable, Mapping
from typing import Any

from .._tools import Tool

__all__ = ["tool_document", "words", "terms", "hashed_features", "HASH_DIM"]

HASH_DIM = 4096
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD = re.compile(r"[a-z0-9]+")
# Small on purpose: words that say nothing about which tool is meant. "me", "my" and "to" stay out of the index
# but not out of the classifier's features, which learns its own weights.
_STOPWORD_TEXT = (
    "a an and are as at be but by can could do does for from had has have i if in into is it its of on "
    "or please so than that the their them then there these they this those to was were what when which "
    "who will with would you your me my we our us"
)
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def _split_identifier(name: str) -> str:
    return _CAMEL.sub(" ", name).replace("_", " ").replace(".", " ").replace("-", " ")


def tool_document(tool: Tool, max_chars: int = 1000) -> str:
    """The text a tool is indexed by: its name split into words, its description, its parameters.

    Args:
        tool: the tool.
        max_chars: the document is cut to this length (long BFCL descriptions would dominate otherwise).

    Returns:
        One line of plain text.
    """
    parts = [_split_identifier(tool.name) + ".", tool.description.strip()]
    props: Mapping[str, Any] = tool.parameters.get("properties", {})
    for pname, schema in props.items():
        desc = schema.get("description", "") if isinstance(schema, Mapping) else ""
        parts.append(f"{_split_identifier(pname)}: {desc}".strip().rstrip(":"))
    text = " ".join(p for p in parts if p)
    return " ".join(text.split())[:max_chars]


def _stem(word: str) -> str:
    # Plurals only: "emails"/"email", "meetings"/"meeting", "replies"/"reply". Stripping "-ed"/"-ing" as well
    # splits "create"/"created" apart, so it costs more matches than it wins.
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def words(text: str) -> list[str]:
    """Lower-case words of ``text`` (identifiers split on ``_``, ``.`` and camelCase), stemmed, stopwords kept."""
    return [_stem(w) for w in _WORD.findall(_split_identifier(text).lower())]


def terms(text: str) -> list[str]:
    """The index terms of ``text``: :func:`words` without stopwords."""
    return [w for w in words(text) if w not in _STOPWORDS]


def _bucket(token: str, dim: int) -> int:
    return zlib.crc32(token.encode("utf-8")) % dim


def hashed_features(texts: Iterable[str], dim: int = HASH_DIM) -> Any:
    """Hashed, L2-normalised bag of word unigrams and bigrams, as a float32 array of shape ``(n, dim)``.

    The hash is crc32, so features are stable across processes and machines (Python's ``hash`` is salted).
    """
    import numpy as np

    rows = list(texts)
    out = np.zeros((len(rows), dim), dtype=np.float32)
    for i, text in enumerate(rows):
        ws = words(text)
        grams = ws + [f"{a} {b}" for a, b in zip(ws, ws[1:], strict=False)]
        for g in grams:
            out[i, _bucket(g, dim)] += 1.0
        np.log1p(out[i], out=out[i])
        norm = float(np.linalg.norm(out[i]))
        if norm > 0:
            out[i] /= norm
    return out
