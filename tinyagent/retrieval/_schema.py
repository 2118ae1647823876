"""Signals read from the registry's own schemas, for registries that come with no examples (issue 15).

* :func:`producer_graph`: a tool whose parameter asks for a thing another tool's name says it produces
  (``estimate_distance(cityA: "The zipcode of the first city")`` and ``get_zipcode_based_on_city``) needs that tool.
* :func:`reciprocal_rank_fusion`: combines rankings whose scores are on different scales (BM25, cosine, votes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._tools import ToolRegistry
from ._deps import require
from ._text import terms, words

__all__ = ["object_phrase", "producer_graph", "reciprocal_rank_fusion"]

# Words that end a name's object phrase: ``get_zipcode_based_on_city`` produces a "zipcode", ``get_user_id`` a
# "user id". English function words, not tool names.
_PHRASE_END = frozenset(["based", "by", "on", "for", "from", "of", "in", "with", "to", "at", "via", "using", "per"])


def object_phrase(name: str) -> tuple[str, ...]:
    """What a tool's name says it acts on: the words after the first (the verb) up to a preposition.

    ``get_zipcode_based_on_city`` -> ``("zipcode",)``, ``get_user_id`` -> ``("user", "id")``, ``lockDoors`` ->
    ``("door",)``; a one-word name has none.
    """
    out: list[str] = []
    for word in words(name)[1:]:
        if word in _PHRASE_END:
            break
        out.append(word)
    return tuple(out)


def _param_texts(registry: ToolRegistry, name: str) -> list[list[str]]:
    params: Mapping[str, Any] = registry[name].parameters.get("properties", {}) or {}
    return [words(f"{p} {s.get('description', '') if isinstance(s, Mapping) else ''}") for p, s in params.items()]


def _contains(haystack: Sequence[str], phrase: Sequence[str]) -> bool:
    n = len(phrase)
    return n > 0 and any(tuple(haystack[i : i + n]) == tuple(phrase) for i in range(len(haystack) - n + 1))


def producer_graph(
    registry: ToolRegistry,
    max_producers: int = 2,
    max_sharing: int = 2,
    kits: Sequence[int] | None = None,
    max_df: float = 0.02,
) -> dict[str, dict[str, float]]:
    """Which tools each tool needs, read from the schemas: ``{tool: {producer: strength}}``.

    Tool ``t`` needs ``p`` when the object phrase of ``p``'s name (see :func:`object_phrase`) occurs in the name or
    description of one of ``t``'s parameters, and ``t``'s own name does not already contain it. A phrase that more
    than ``max_sharing`` tools' names produce says nothing about which one is meant and is skipped; longer phrases
    win, at most ``max_producers`` per tool. A phrase found in the parameters of more than ``max_df`` of the tools
    (and more than 3) is a generic word ("date", "user") and links nothing. When ``kits`` are given (see
    :func:`toolkits`), a tool in a toolkit only needs tools of the same toolkit.

    Args:
        registry: the tools.
        max_producers: the most producers kept per tool.
        max_sharing: the most tools one phrase may name.
        kits: the toolkit of each tool, in registry order (-1 for none), or None.
        max_df: the largest share of tools whose parameters may mention a phrase.

    Returns:
        A mapping ready for :class:`~tinyagent.retrieval.DependencyGraph` (strength = phrase length / 4, at most 1).
    """
    phrases: dict[tuple[str, ...], list[str]] = {}
    for name in registry:
        phrase = object_phrase(name)
        if phrase and any(terms(" ".join(phrase))):
            phrases.setdefault(phrase, []).append(name)
    usable = {p: names for p, names in phrases.items() if len(names) <= max_sharing}
    by_first: dict[str, list[tuple[str, ...]]] = {}
    for phrase in usable:
        by_first.setdefault(phrase[0], []).append(phrase)
    names = list(registry)
    kit = dict(zip(names, kits, strict=True)) if kits is not None else {}
    param_texts = {n: _param_texts(registry, n) for n in names}
    df: dict[tuple[str, ...], int] = {}
    for texts in param_texts.values():
        for phrase in {p for t in texts for w in t for p in by_first.get(w, ()) if _contains(t, p)}:
            df[phrase] = df.get(phrase, 0) + 1
    limit = max(3.0, max_df * len(names))
    out: dict[str, dict[str, float]] = {}
    for name in names:
        own = words(name)
        texts = param_texts[name]
        present = {w for t in texts for w in t}
        found: list[tuple[int, str]] = []
        for phrase in (p for w in present for p in by_first.get(w, ())):
            if df.get(phrase, 0) > limit or _contains(own, phrase) or not any(_contains(t, phrase) for t in texts):
                continue
            mine = kit.get(name, -1)
            found.extend(
                (len(phrase), p) for p in usable[phrase] if p != name and (mine < 0 or kit.get(p, -1) == mine)
            )
        found.sort(key=lambda x: -x[0])
        picked = list(dict.fromkeys(p for _, p in found))[:max_producers]
        if picked:
            strength = {p: min(1.0, n / 4) for n, p in found}
            out[name] = {p: strength[p] for p in picked}
    return out


def reciprocal_rank_fusion(scores: Sequence[Any], constant: float = 60.0) -> Any:
    """Reciprocal-rank fusion of score arrays over the same items: ``sum 1 / (constant + rank)``.

    Items scoring 0 or less in one array get no share from it (no evidence is not a rank).

    Args:
        scores: float arrays of the same length, higher is better.
        constant: RRF's damping constant (60 in Cormack et al.).

    Returns:
        A float32 array; the best fused item scores highest.
    """
    np = require("numpy")
    if not scores:
        return np.zeros(0, dtype=np.float32)
    total = np.zeros(len(scores[0]), dtype=np.float64)
    for s in scores:
        arr = np.asarray(s, dtype=np.float64)
        values, inverse, counts = np.unique(-arr, return_inverse=True, return_counts=True)
        first = np.concatenate(([0], np.cumsum(counts)[:-1]))
        ranks = (first + (counts + 1) / 2.0)[inverse.reshape(-1)]
        total += np.where(arr > 0, 1.0 / (constant + ranks), 0.0)
    return total.astype(np.float32)


def toolkits(
    descriptions: Sequence[str], min_prefix: int = 40, min_size: int = 3
) -> tuple[list[int], list[str], list[str]]:
    """Tools that came as one toolkit: descriptions that open with the same boilerplate (an MCP server's or an
    API's "This tool belongs to the vehicle control system, which ..."), at least ``min_size`` of them.

    Args:
        descriptions: one per tool.
        min_prefix: the shortest shared opening (characters) that makes a toolkit.
        min_size: the fewest tools in a toolkit.

    Returns:
        The toolkit of each tool (-1 for none) and each tool's description without the shared opening (the
        boilerplate matches every tool of the toolkit equally, so it only blurs the ranking within it), and the
        shared opening of each toolkit.
    """
    groups: dict[str, list[int]] = {}
    for i, d in enumerate(descriptions):
        key = " ".join(d.split())[:min_prefix]
        if len(key) == min_prefix:
            groups.setdefault(key, []).append(i)
    kit = [-1] * len(descriptions)
    stripped = [" ".join(d.split()) for d in descriptions]
    openings: list[str] = []
    for number, members in enumerate(m for m in groups.values() if len(m) >= min_size):
        texts = [stripped[i] for i in members]
        shared = len(_common_prefix(texts))
        cut = texts[0].rfind(" ", 0, shared + 1) if shared < min(len(t) for t in texts) else shared
        openings.append(texts[0][: max(cut, 0)])
        for i in members:
            kit[i] = number
            stripped[i] = stripped[i][max(cut, 0) :].strip() or stripped[i]
    return kit, stripped, openings


def _common_prefix(texts: Sequence[str]) -> str:
    first, last = min(texts), max(texts)
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    return first[:n]
