"""Text helpers shared by the retrievers: the document a tool is indexed by, index terms.

Word splitting and hashed features live in :mod:`tinyagent._examples` (core); they are re-exported here.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from .._examples import HASH_DIM, _split_identifier, hashed_features, words
from .._tools import Tool

__all__ = ["tool_document", "words", "terms", "index_terms", "hashed_features", "HASH_DIM"]

# Small on purpose: words that say nothing about which tool is meant. "me", "my" and "to" stay out of the index
# but not out of the classifier's features, which learns its own weights.
_STOPWORD_TEXT = (
    "a an and are as at be but by can could do does for from had has have i if in into is it its of on "
    "or please so than that the their them then there these they this those to was were what when which "
    "who will with would you your me my we our us"
)
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def tool_document(tool: Tool, max_chars: int = 1000, description: str | None = None) -> str:
    """The text a tool is indexed by: its name split into words, its description, its parameters (names,
    descriptions and allowed values).

    Args:
        tool: the tool.
        max_chars: the document is cut to this length (long BFCL descriptions would dominate otherwise).
        description: the description to use instead of the tool's own (e.g. without a toolkit's boilerplate).

    Returns:
        One line of plain text.
    """
    text = tool.description if description is None else description
    parts = [_split_identifier(tool.name) + ".", text.strip()]
    props: Mapping[str, Any] = tool.parameters.get("properties", {})
    for pname, schema in props.items():
        desc = schema.get("description", "") if isinstance(schema, Mapping) else ""
        parts.append(f"{_split_identifier(pname)}: {desc}".strip().rstrip(":"))
        values = _enum_values(schema)
        if values and not all(v in desc for v in values):  # BFCL writes "[Enum]: [...]" into the description
            parts.append("(" + ", ".join(values) + ")")
    text = " ".join(p for p in parts if p)
    return " ".join(text.split())[:max_chars]


def _enum_values(schema: Any, limit: int = 12) -> list[str]:
    """The allowed values of a parameter (``enum``, also inside ``items``), as text: users name them."""
    if not isinstance(schema, Mapping):
        return []
    values = schema.get("enum")
    if values is None and isinstance(schema.get("items"), Mapping):
        values = schema["items"].get("enum")
    if not isinstance(values, list):
        return []
    return [str(v) for v in values[:limit] if isinstance(v, str | int | float) and not isinstance(v, bool)]


def terms(text: str) -> list[str]:
    """The index terms of ``text``: :func:`words` without stopwords."""
    return [w for w in words(text) if w not in _STOPWORDS]


def index_terms(text: str) -> list[str]:
    """The BM25 terms of ``text``: :func:`terms` reduced to their Snowball (Porter2) stems, so "locked" meets
    "Locks the doors" and "converting" meets "convert" (:func:`words` strips plurals only, because the hashed
    classifier features were trained on that). Without ``snowballstemmer`` installed, :func:`terms` as they are."""
    return [_snowball(t) for t in terms(text)]


@functools.lru_cache(maxsize=65536)
def _snowball(word: str) -> str:
    stemmer = _stemmer()
    return stemmer.stemWord(word) if stemmer is not None else word


@functools.cache
def _stemmer() -> Any:
    try:
        import snowballstemmer
    except ImportError:
        return None
    return snowballstemmer.stemmer("english")
