"""Small text helpers shared by the core and the packages built on it."""

from __future__ import annotations

import unicodedata

__all__ = ["strip_accents"]


def strip_accents(text: str) -> str:
    """``text`` without combining marks (``"Zoë Müller"`` -> ``"Zoe Muller"``); letters like ``ß`` are kept."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))
