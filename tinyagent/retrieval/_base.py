"""The contract between the agent and a tool retriever. Light: no numpy, no onnxruntime."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from .._plan import Example
from .._tools import ToolRegistry
from ..errors import RetrieverNotFittedError

__all__ = ["Retrieval", "RetrieverNotFittedError", "ToolRetriever"]


@dataclass(frozen=True)
class Retrieval:
    """What a retriever offers the planner for one request.

    Attributes:
        tools: tool names to offer, best first. Only these go into the prompt and the grammar.
        examples: few-shot examples that use only ``tools`` (an empty-plan one when the request looks conversational).
        uncertain: True when the retriever widened the set because it was unsure (or because a replan asked it to).
        scores: a score per registry tool (higher is more relevant; the scale depends on the retriever).
    """

    tools: tuple[str, ...]
    examples: tuple[Example, ...] = ()
    uncertain: bool = False
    scores: Mapping[str, float] = field(default_factory=dict)


@runtime_checkable
class ToolRetriever(Protocol):
    """Chooses the few tools (and examples) the planner sees for a request.

    The agent calls :meth:`fit` once with its registry, :meth:`retrieve` for every request, and :meth:`widen` when a
    replan reports a missing capability.
    """

    def fit(self, registry: ToolRegistry, examples: Sequence[Example] = ()) -> None:
        """Index ``registry``; ``examples`` is the few-shot pool (and the source of tool co-occurrence)."""
        ...

    def retrieve(self, query: str) -> Retrieval:
        """The tools and examples to offer for ``query``."""
        ...

    def widen(self, query: str, previous: Retrieval, hint: str = "") -> Retrieval:
        """A larger set than ``previous`` (a superset), guided by ``hint`` (what the replan said was missing)."""
        ...
