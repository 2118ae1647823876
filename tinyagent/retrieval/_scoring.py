"""The shared machinery of the retrievers: score every tool, offer the best, widen when unsure, pick examples."""

from __future__ import annotations

import abc
import logging
from collections.abc import Sequence
from typing import Any

from .._plan import Example
from .._tools import ToolRegistry
from ..errors import ConfigurationError
from ._base import Retrieval, RetrieverNotFittedError
from ._deps import require
from ._examples import DependencyGraph, ExampleSelector
from ._text import tool_document

__all__ = ["ScoringRetriever", "Calibration"]

log = logging.getLogger("tinyagent.retrieval")


class Calibration(dict[str, float]):
    """What :meth:`ScoringRetriever.calibrate` chose and measured (``k``, ``recall`` …)."""


class ScoringRetriever(abc.ABC):
    """A retriever that scores every tool and offers the ``k`` best.

    Subclasses implement :meth:`_index` and :meth:`_score`. The rest is shared: dependency expansion learned from the
    example plans, the uncertainty rule, widening, and example selection.

    Uncertainty: the set is widened to ``wide_k`` and marked uncertain when nothing matches (the best raw score is at
    most ``floor``) or when the cut is arbitrary (the first tool left out scores within ``margin`` of the last one
    kept, on scores divided by the best one).

    Args:
        k: tools offered when the retriever is sure.
        wide_k: tools offered when it is unsure; defaults to ``2 * k``.
        n_examples: few-shot examples to choose per request.
        expand_dependencies: also offer the tools a chosen tool usually needs (learned from the examples' plans).
        margin: the uncertainty margin (see above); 0 turns the rule off.
        floor: a best raw score at or below this means nothing matched.
    """

    def __init__(
        self,
        *,
        k: int = 5,
        wide_k: int | None = None,
        n_examples: int = 3,
        expand_dependencies: bool = True,
        margin: float = 0.05,
        floor: float = 0.0,
    ) -> None:
        if k < 1:
            raise ConfigurationError(f"k must be at least 1, got {k}")
        if wide_k is not None and wide_k < k:
            raise ConfigurationError(f"wide_k ({wide_k}) must be at least k ({k})")
        self.k = k
        self.wide_k = wide_k if wide_k is not None else 2 * k
        self.n_examples = n_examples
        self.expand_dependencies = expand_dependencies
        self.margin = margin
        self.floor = floor
        self._names: list[str] = []
        self._graph = DependencyGraph()
        self._selector: ExampleSelector | None = None

    # -- what a subclass provides --------------------------------------------------------------------------------
    @abc.abstractmethod
    def _index(self, registry: ToolRegistry, documents: list[str]) -> None:
        """Index the registry's tools (``documents[i]`` describes the i-th tool)."""

    @abc.abstractmethod
    def _score(self, query: str, vector: Any, sims: Any = None) -> Any:
        """Raw relevance of every tool (a float array in registry order).

        ``vector`` is from :meth:`_encode`; ``sims`` are the query's similarities to the example pool, when known.
        """

    def _documents(self, registry: ToolRegistry) -> list[str]:
        """The text each tool is indexed by, in registry order (:func:`tool_document`)."""
        return [tool_document(registry[n]) for n in self._names]

    def _encode(self, query: str) -> Any:
        """A query representation shared by tool scoring and example selection (an embedding), or None."""
        return None

    def _embed_texts(self) -> Any:
        """A function texts → normalised vectors for example similarity, or None for hashed word features."""
        return None

    def _normalized(self, raw: Any) -> Any:
        """Scores on a 0..1 scale (best tool = 1) for the margin rule and for merging with a hint's scores."""
        np = require("numpy")
        top = float(raw.max()) if raw.size else 0.0
        if top <= 0:
            return np.zeros_like(raw)
        return np.clip(raw / top, 0.0, 1.0)

    def _hint_scores(self, hint: str) -> Any:
        """How well each tool matches a replan's hint, on 0..1."""
        return self._normalized(self._score(hint, self._encode(hint)))

    def _choose(self, raw: Any, sims: Any, query: str = "", vector: Any = None) -> tuple[list[str], bool]:
        """The tools to offer (best first) and whether the retriever was unsure (``query`` and its ``vector`` from
        :meth:`_encode` are there for rules that score the request again)."""
        np = require("numpy")
        order = np.argsort(-raw, kind="stable")
        k = min(self.k, len(order))
        norm = self._normalized(raw)
        unsure = float(raw[order[0]]) <= self.floor
        if not unsure and self.margin > 0 and k < len(order):
            unsure = float(norm[order[k - 1]] - norm[order[k]]) < self.margin
        n = min(self.wide_k, len(order)) if unsure else k
        return [self._names[int(i)] for i in order[:n]], unsure

    # -- the ToolRetriever protocol ----------------------------------------------------------------------------
    def fit(self, registry: ToolRegistry, examples: Sequence[Example] = ()) -> None:
        """Index ``registry`` and learn tool dependencies and example similarity from ``examples``.

        Raises:
            ConfigurationError: the registry is empty.
        """
        if len(registry) == 0:
            raise ConfigurationError("cannot fit a retriever on an empty tool registry; add tools first")
        self._names = list(registry)
        self._index(registry, self._documents(registry))
        known = set(self._names)
        pool = [e for e in examples if e.tool_names <= known]
        if len(pool) < len(examples):
            log.info(
                "retriever: %d example(s) use tools outside the registry and are ignored", len(examples) - len(pool)
            )
        self._graph = (
            DependencyGraph.from_plans(e.plan for e in pool) if self.expand_dependencies else DependencyGraph()
        )
        self._selector = ExampleSelector(pool, embed=self._embed_texts())
        log.debug("retriever fitted: %d tools, %d examples", len(self._names), len(pool))

    def retrieve(self, query: str) -> Retrieval:
        """The tools (best first) and examples to offer for ``query``.

        Raises:
            RetrieverNotFittedError: :meth:`fit` was not called.
        """
        selector = self._require_fitted()
        vector = self._encode(query)
        sims = selector.similarities(vector if vector is not None else selector.query_vector(query))
        raw = self._score(query, vector, sims)
        tools, unsure = self._choose(raw, sims, query, vector)
        return self._finish(tools, unsure, raw, sims, selector)

    def widen(self, query: str, previous: Retrieval, hint: str = "") -> Retrieval:
        """A superset of ``previous``: at least twice as many tools (and ``wide_k``), led by what ``hint`` names.

        Args:
            query: the request.
            previous: what was offered before.
            hint: what the replan said was missing (e.g. "no tool to look up a phone number"); may be empty.

        Returns:
            The wider set, marked ``uncertain``.

        Raises:
            RetrieverNotFittedError: :meth:`fit` was not called.
        """
        np = require("numpy")
        selector = self._require_fitted()
        vector = self._encode(query)
        sims = selector.similarities(vector if vector is not None else selector.query_vector(query))
        raw = self._score(query, vector, sims)
        merged = self._normalized(raw)
        tools = [t for t in previous.tools if t in self._names]
        if hint.strip():
            hint_scores = self._hint_scores(hint)
            for i in np.argsort(-hint_scores, kind="stable")[:2]:  # what the hint names comes first
                if hint_scores[i] > 0 and self._names[int(i)] not in tools:
                    tools.append(self._names[int(i)])
            merged = np.maximum(merged, hint_scores)
        target = min(len(self._names), max(self.wide_k, 2 * len(previous.tools), len(tools)))
        for i in np.argsort(-merged, kind="stable"):
            if len(tools) >= target:
                break
            if self._names[int(i)] not in tools:
                tools.append(self._names[int(i)])
        return self._finish(tools, True, raw, sims, selector)

    # -- shared helpers ---------------------------------------------------------------------------------------
    def _finish(self, tools: list[str], unsure: bool, raw: Any, sims: Any, selector: ExampleSelector) -> Retrieval:
        offered = self._graph.expand(tools, self._names) if self.expand_dependencies else tuple(tools)
        conversational = selector.looks_conversational(sims)
        examples = selector.select(offered, self.n_examples, sims, conversational=conversational)
        scores = dict(zip(self._names, (float(x) for x in raw), strict=True))
        return Retrieval(tools=tuple(offered), examples=examples, uncertain=unsure, scores=scores)

    def _require_fitted(self) -> ExampleSelector:
        if self._selector is None:
            raise RetrieverNotFittedError(
                f"{type(self).__name__} is not fitted: call fit(registry, examples) before retrieve() or widen()"
            )
        return self._selector

    @property
    def tool_names(self) -> tuple[str, ...]:
        """The registry's tool names, in the order scores are computed."""
        return tuple(self._names)

    def rank(self, query: str) -> list[str]:
        """Every tool, most relevant first (for evaluation and calibration)."""
        np = require("numpy")
        self._require_fitted()
        raw = self._score(query, self._encode(query))
        return [self._names[int(i)] for i in np.argsort(-raw, kind="stable")]

    def calibrate(
        self, examples: Sequence[Example], target_recall: float = 0.99, max_k: int | None = None
    ) -> Calibration:
        """Choose ``k`` (and ``wide_k``) from labelled examples: the smallest ``k`` whose mean recall of the examples'
        tools reaches ``target_recall`` (dependency expansion included).

        Args:
            examples: requests with their correct plans (use a split the retriever is not evaluated on).
            target_recall: the mean per-request recall to reach.
            max_k: the largest ``k`` to consider; defaults to the registry size.

        Returns:
            The chosen ``k`` and the recall it reached on ``examples``.

        Raises:
            RetrieverNotFittedError: :meth:`fit` was not called.
            ConfigurationError: no example uses a tool.
        """
        self._require_fitted()
        labelled = [e for e in examples if e.tool_names and e.tool_names <= set(self._names)]
        if not labelled:
            raise ConfigurationError("calibrate() needs examples whose plans call registry tools")
        rankings = [(self.rank(e.query), e.tool_names) for e in labelled]
        limit = min(max_k or len(self._names), len(self._names))
        best_k, best_recall = limit, 0.0
        for k in range(1, limit + 1):
            total = 0.0
            for ranking, gold in rankings:
                offered = (
                    set(self._graph.expand(ranking[:k], self._names)) if self.expand_dependencies else set(ranking[:k])
                )
                total += len(gold & offered) / len(gold)
            recall = total / len(rankings)
            best_k, best_recall = k, recall
            if recall >= target_recall:
                break
        self.k = best_k
        self.wide_k = max(self.wide_k, min(len(self._names), 2 * best_k))
        log.info("retriever calibrated: k=%d, recall %.4f on %d examples", best_k, best_recall, len(rankings))
        return Calibration(k=float(best_k), recall=best_recall, examples=float(len(rankings)))
