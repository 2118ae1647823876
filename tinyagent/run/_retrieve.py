"""Stage 1, retrieve: which tools and worked examples the planner sees for a request.

The agent depends only on the protocols here; :mod:`tinyagent.retrieval` implements them (the core never imports
it), and callers pass an instance.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from .._plan import Call, Example
from .._tools import Tool, ToolRegistry
from ._settings import AgentSettings

__all__ = ["ExampleSelector", "Offer", "RetrievalResult", "ToolRetriever", "disagrees_with_examples", "offer"]


class RetrievalResult(Protocol):
    """What a retriever returns for one request (``tinyagent.retrieval.Retrieval`` is one)."""

    @property
    def tools(self) -> tuple[str, ...]: ...

    @property
    def examples(self) -> tuple[Example, ...]: ...

    @property
    def uncertain(self) -> bool: ...


@runtime_checkable
class ToolRetriever(Protocol):
    """What the agent needs from a retriever (see :mod:`tinyagent.retrieval`)."""

    def fit(self, registry: ToolRegistry, examples: Sequence[Example] = ()) -> None: ...

    def retrieve(self, query: str) -> RetrievalResult: ...

    def widen(self, query: str, previous: Any, hint: str = "") -> RetrievalResult: ...


@runtime_checkable
class ExampleSelector(Protocol):
    """Chooses the worked examples most similar to a request (``tinyagent.retrieval.ExampleSelector`` is one).

    Used when there is no retriever and the pool holds more examples than the prompt takes.
    """

    examples: tuple[Example, ...]

    def query_vector(self, query: str) -> Any: ...

    def similarities(self, query_vector: Any) -> Any: ...

    def looks_conversational(self, sims: Any) -> bool: ...

    def select(self, tools: Collection[str], k: int, sims: Any, conversational: bool = False) -> tuple[Example, ...]:
        ...


@dataclass(frozen=True)
class Offer:
    """What the planner is offered for one request.

    Attributes:
        tools: the offered tools, in prompt order.
        examples: the worked examples shown (their tools are all offered).
        uncertain: the retriever was unsure (a routing signal).
        retrieval: the retriever's result, which a replan may widen (None without a retriever).
    """

    tools: dict[str, Tool]
    examples: list[Example]
    uncertain: bool = False
    retrieval: RetrievalResult | None = None


def offer(
    registry: ToolRegistry,
    settings: AgentSettings,
    query: str,
    *,
    retriever: ToolRetriever | None,
    examples: Sequence[Example],
    selector: ExampleSelector | None,
    previous: RetrievalResult | None = None,
    hint: str = "",
) -> Offer:
    """The tools and examples for ``query``: retrieved (or widened from ``previous``), or every tool."""
    if retriever is None:
        tools = dict(registry.items())
        return Offer(tools, similar_examples(query, tools.keys(), examples, selector, settings.max_examples))
    retrieval = retriever.widen(query, previous, hint) if previous is not None else retriever.retrieve(query)
    if settings.tool_order == "registry":
        chosen = set(retrieval.tools)
        names = [n for n in registry if n in chosen]
    else:
        names = [n for n in retrieval.tools if n in registry]
    offered = {n: registry[n] for n in names}
    shown = [e for e in retrieval.examples if e.tool_names <= offered.keys()][: settings.max_examples]
    return Offer(offered, shown, bool(retrieval.uncertain), retrieval)


def similar_examples(query: str, tools: Iterable[str], examples: Sequence[Example],
                     selector: ExampleSelector | None, k: int) -> list[Example]:
    """The examples most similar to ``query`` whose tools are all offered (pool order without a selector)."""
    allowed = set(tools)
    if len(examples) <= k or selector is None:
        return [e for e in examples if e.tool_names <= allowed][:k]
    sims = selector.similarities(selector.query_vector(query))
    return list(selector.select(allowed, k, sims, selector.looks_conversational(sims)))


def disagrees_with_examples(calls: Iterable[Call], examples: Sequence[Example], *, by_similarity: bool) -> bool:
    """True when the plan calls a different set of tools than the most similar worked example offered.

    Only meaningful when the examples were chosen by similarity (``by_similarity``: a retriever, or a pool larger
    than the prompt takes); a fixed example set gives no signal.
    """
    if not examples or not by_similarity:
        return False
    return frozenset(c.name for c in calls) != examples[0].tool_names

