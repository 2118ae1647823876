"""Few-shot example selection and tool dependencies, both learned from example plans."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._plan import Example, Plan
from ._text import hashed_features

__all__ = ["DependencyGraph", "ExampleSelector"]

Embed = Callable[[Sequence[str]], Any]
_HASH_DIM = 1024  # enough for a pool of short requests; keeps the similarity product small


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


class ExampleSelector:
    """Chooses the few-shot examples for a request: the most similar ones whose tools are all offered.

    Args:
        examples: the pool.
        embed: a function from texts to L2-normalised row vectors (an embedder); without one, similarity is the
            cosine of hashed word features.
    """

    def __init__(self, examples: Sequence[Example], embed: Embed | None = None) -> None:
        import numpy as np

        self.examples = tuple(examples)
        self._embed = embed
        self._tool_sets = [e.tool_names for e in self.examples]
        texts = [e.query for e in self.examples]
        if not texts:
            self._vectors = np.zeros((0, 1), dtype=np.float32)
        elif embed is not None:
            self._vectors = np.asarray(embed(texts), dtype=np.float32)
        else:
            self._vectors = hashed_features(texts, _HASH_DIM)
        self._empty = np.array([len(e.plan.calls) == 0 for e in self.examples], dtype=bool)
        self._vocab = {name: j for j, name in enumerate(sorted(set().union(*self._tool_sets)))}
        self._uses = np.zeros((len(self.examples), len(self._vocab)), dtype=bool)
        for i, names in enumerate(self._tool_sets):
            for name in names:
                self._uses[i, self._vocab[name]] = True

    def query_vector(self, query: str) -> Any:
        """The vector this selector compares ``query`` by."""
        if self._embed is not None:
            return self._embed([query])[0]
        return hashed_features([query], _HASH_DIM)[0]

    def similarities(self, query_vector: Any) -> Any:
        """Cosine similarity of the query to every example in the pool."""
        import numpy as np

        if not self.examples:
            return np.zeros(0, dtype=np.float32)
        return self._vectors @ query_vector

    def nearest_tools(self, sims: Any, m: int) -> list[str]:
        """The tools called by the ``m`` most similar examples (empty-plan ones included, bringing none), most similar
        example first, each tool once.

        Args:
            sims: similarities from :meth:`similarities`.
            m: how many examples.
        """
        import numpy as np

        if m <= 0 or not self.examples:
            return []
        n = min(m, len(self.examples))
        top = np.argpartition(-sims, n - 1)[:n] if n < len(self.examples) else np.arange(n)
        top = top[np.argsort(-sims[top], kind="stable")]
        out: dict[str, None] = {}
        for i in top:
            for name in sorted(self._tool_sets[int(i)]):
                out[name] = None
        return list(out)

    def looks_conversational(self, sims: Any) -> bool:
        """True when the most similar example in the pool needs no tool (its plan is empty)."""
        if len(self.examples) == 0:
            return False
        return bool(self._empty[int(sims.argmax())])

    def select(
        self,
        tools: Collection[str],
        k: int,
        sims: Any,
        conversational: bool = False,
    ) -> tuple[Example, ...]:
        """The ``k`` best examples whose tools are a subset of ``tools``, best first.

        Examples with a tool set not yet chosen go first, so that the prompt shows different ways to use the tools.
        When ``conversational``, the most similar empty-plan example is always included.

        Args:
            tools: the offered tools.
            k: how many examples to return at most.
            sims: similarities from :meth:`similarities`.
            conversational: include an empty-plan example.
        """
        import numpy as np

        if k <= 0 or not self.examples:
            return ()
        allowed = np.zeros(len(self._vocab), dtype=bool)
        for name in tools:
            j = self._vocab.get(name)
            if j is not None:
                allowed[j] = True
        order = np.argsort(-sims, kind="stable")
        chosen: list[int] = []
        if conversational:
            empties = order[self._empty[order]]
            if empties.size:
                chosen.append(int(empties[0]))
        ok = ~self._empty & ~(self._uses & ~allowed).any(axis=1)
        compatible = [int(i) for i in order[ok[order]]]
        seen_sets: set[frozenset[str]] = set()
        for i in compatible:  # first pass: one example per distinct tool set
            if len(chosen) >= k:
                break
            names = self._tool_sets[i]
            if names not in seen_sets:
                seen_sets.add(names)
                chosen.append(i)
        for i in compatible:  # second pass: fill up
            if len(chosen) >= k:
                break
            if i not in chosen:
                chosen.append(i)
        return tuple(self.examples[i] for i in chosen)
