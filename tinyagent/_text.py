"""Small text helpers shared by the core and the packages built on it."""

from __future__ import annotations

import json
import unicodedata
from typing import Any

__all__ = ["as_text", "folded", "strip_accents"]


def as_text(value: Any) -> str:
    """``value`` as text: a string as it is, anything else as JSON (``repr`` where JSON cannot hold it)."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def folded(text: str) -> str:
    """``text`` with its runs of white space made one space, case folded: the same words written alike."""
    return " ".join(text.split()).casefold()


def strip_accents(text: str) -> str:
    """``text`` without combining marks (``"Zoë Müller"`` -> ``"Zoe Muller"``); letters like ``ß`` are kept."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))
