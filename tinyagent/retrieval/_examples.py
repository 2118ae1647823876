"""Tool dependencies learned from example plans; few-shot example selection (re-exported from core).

:class:`ExampleSelector` is implemented once, in :mod:`tinyagent._examples`. ``_HASH_DIM`` is re-exported for
``train_classifier``, which builds the selector's hashed vectors offline.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from .._examples import _HASH_DIM as _HASH_DIM  # train_classifier imports it from here
from .._examples import ExampleSelector
from .._plan import Plan

__all__ = ["DependencyGraph", "ExampleSelector"]


@dataclass(frozen=True)
class DependencyGraph:
    """Which tools a tool tends to need, learned from example plans (no tool names are hard-coded).

    Tool ``B`` is a dependency of ``A`` when plans that call ``A`` pass it ``B``'s result often enough
    (``A``'s arguments reference a ``B`` step), or call ``B`` alongside ``A`` very often (co-occurrence).

    Attributes:
        needs: ``{A: {B: strength}}``, strength being the fraction of ``A``'s plans with that link.
    """

    needs: Mapping[str, Mapping[str, float]] = field(default_factory=dict)

    @classmethod
    def from_plans(
        cls,
        plans: Iterable[Plan | Collection[str]],
        min_ref_ratio: float = 0.2,
        min_cooccur_ratio: float = 0.6,
        min_count: int = 2,
    ) -> DependencyGraph:
        """Learn the graph from plans.

        Args:
            plans: example plans, or bare sets of tool names (which give co-occurrence only).
            min_ref_ratio: keep ``A → B`` when at least this fraction of ``A``'s plans feed ``B``'s result into ``A``.
            min_cooccur_ratio: or when at least this fraction of ``A``'s plans also call ``B``.
            min_count: and when the link was seen at least this many times.

        Returns:
            The graph.
        """
        uses: Counter[str] = Counter()
        refs: Counter[tuple[str, str]] = Counter()
        cooccur: Counter[tuple[str, str]] = Counter()
        for plan in plans:
            if not isinstance(plan, Plan):
                names = set(plan)
                uses.update(names)
                cooccur.update((a, b) for a in names for b in names if a != b)
                continue
            by_id = {c.id: c.name for c in plan.calls}
            names = set(by_id.values())
            uses.update(names)
            linked: set[tuple[str, str]] = set()
            for call in plan.calls:
                for dep in call.deps:
                    if dep in by_id and by_id[dep] != call.name:
                        linked.add((call.name, by_id[dep]))
            refs.update(linked)
            cooccur.update((a, b) for a in names for b in names if a != b)
        needs: dict[str, dict[str, float]] = {}
        for (a, b), n in cooccur.items():
            ref_ratio = refs[(a, b)] / uses[a]
            co_ratio = n / uses[a]
            if (refs[(a, b)] >= min_count and ref_ratio >= min_ref_ratio) or (
                n >= min_count and co_ratio >= min_cooccur_ratio
            ):
                needs.setdefault(a, {})[b] = round(max(ref_ratio, co_ratio), 4)
        return cls(needs)

    def merged(self, other: DependencyGraph) -> DependencyGraph:
        """The union of two graphs (the stronger link wins)."""
        out: dict[str, dict[str, float]] = {a: dict(bs) for a, bs in self.needs.items()}
        for a, bs in other.needs.items():
            for b, s in bs.items():
                out.setdefault(a, {})[b] = max(s, out.get(a, {}).get(b, 0.0))
        return DependencyGraph(out)

    def expand(self, tools: Sequence[str], known: Collection[str]) -> tuple[str, ...]:
        """``tools`` followed by their dependencies (transitively) that are in ``known``, each once."""
        out = list(dict.fromkeys(tools))
        seen = set(out)
        i = 0
        while i < len(out):
            for dep in sorted(self.needs.get(out[i], {}), key=lambda b: -self.needs[out[i]][b]):
                if dep not in seen and dep in known:
                    seen.add(dep)
                    out.append(dep)
            i += 1
        return tuple(out)

    def to_json(self) -> dict[str, dict[str, float]]:
        """A JSON-ready copy."""
        return {a: dict(bs) for a, bs in self.needs.items()}
