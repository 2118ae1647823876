"""The default retriever: a trained classifier where there is one, BM25 + embeddings + example votes elsewhere."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._plan import Example
from .._tools import ToolRegistry
from ..errors import ConfigurationError
from ._bm25 import BM25Index
from ._classifier import (
    ClassifierModel,
    add_example_tools,
    choose_by_threshold,
    load_classifier,
    zero_shot_scorer,
)
from ._deps import require
from ._embedding import Embedder, load_embedder
from ._schema import producer_graph, reciprocal_rank_fusion, toolkits
from ._scoring import ScoringRetriever
from ._text import hashed_features, tool_document, words
from ._zeroshot import ZeroShotScorer

__all__ = ["HybridRetriever", "default_retriever"]

log = logging.getLogger("tinyagent.retrieval")


class HybridRetriever(ScoringRetriever):
    """Combines every signal available, so it works from 10 tools to 1,000, with or without training data.

    * Tools a trained classifier knows are offered by its calibrated rule (see :class:`Thresholds`): its threshold,
      the best zero-shot matches and the tools of the most similar few-shot examples.
    * Every other tool is ranked by a fused score: BM25 on its document, cosine similarity of embeddings, and a
      vote of the most similar few-shot examples that use it. Without a classifier the ``k`` best are offered; with
      one, the ``extra_k`` best of the tools it does not know are added (tools registered after training).
    * Dependencies learned from example plans (and from the classifier's training data) are added: a chosen tool
      brings the tools it usually needs (``send_email`` brings the address lookup when the data shows that link).
    * Without a classifier (a registry that came with no training data, e.g. one the team did not write), the
      rankings of BM25, embedding cosine and example votes are combined by reciprocal-rank fusion, which needs no
      common scale; the ``k`` best are offered, then the tools their parameters need (:func:`producer_graph`: a
      parameter that asks for the thing another tool's name produces), their siblings, and further tools while
      their fused score stays within ``fill_ratio`` of the ``k``-th one, never more than ``max_tools`` in all. A
      registry of at most ``max_tools`` tools is offered whole (the cut would only risk recall).
    * Siblings: tools whose names share an object noun (``create_note``, ``open_note``, ``search_notes``) form a
      family. When the request names that noun and one of the family is offered, the whole family is: a learned
      signal that found "a note tool" is weak evidence about *which* one, and which one is the planner's job
      (this lifted recall on the functions test split from 0.977 to 1.0 for 0.7 more tools per request). Families
      larger than ``sibling_max`` are generic words ("data", "info") and are not used.

    Args:
        classifier: a trained classifier folder or model, or None.
        embedder: an :class:`Embedder`, an exported MiniLM folder, None for the default exported MiniLM, or False
            for no embeddings (BM25 and example votes only).
        k: tools offered without a classifier when sure.
        wide_k: tools offered when unsure; defaults to ``2 * k``.
        extra_k: with a classifier, how many tools it was not trained on are offered per request.
        n_examples: few-shot examples per request.
        expand_dependencies: offer the tools a chosen tool usually needs.
        weights: fusion weights of (BM25, embedding, example vote).
        margin: uncertainty margin of the fused ranking (see :class:`ScoringRetriever`).
        threads: onnxruntime threads.
        sibling_max: the largest tool family offered as siblings (0: none).
        max_tools: without a classifier, the most tools offered per request (dependencies and siblings included).
        fill_ratio: without a classifier, further tools are offered while their fused score is at least this share
            of the ``k``-th tool's.

    Raises:
        ConfigurationError: the classifier or embedder folder holds no model.
    """

    def __init__(
        self,
        classifier: ClassifierModel | str | Path | None = None,
        *,
        embedder: Embedder | str | Path | None | bool = None,
        k: int = 5,
        wide_k: int | None = None,
        extra_k: int = 2,
        n_examples: int = 3,
        expand_dependencies: bool = True,
        weights: tuple[float, float, float] = (0.3, 0.4, 0.3),
        margin: float = 0.02,
        threads: int = 1,
        sibling_max: int = 6,
        max_tools: int = 10,
        fill_ratio: float = 0.85,
    ) -> None:
        super().__init__(
            k=k,
            wide_k=wide_k,
            n_examples=n_examples,
            expand_dependencies=expand_dependencies,
            margin=margin,
            floor=0.0,
        )
        if len(weights) != 3 or any(w < 0 for w in weights) or sum(weights) <= 0:
            raise ConfigurationError(f"weights must be three non-negative numbers (BM25, embedding, votes): {weights}")
        self.model = load_classifier(classifier, threads) if classifier is not None else None
        self.embedder: Embedder | None = None
        if embedder is not False:
            self.embedder = load_embedder(None if embedder is True else embedder)  # type: ignore[arg-type]
        if self.model is not None and self.model.uses_embedding and self.embedder is None:
            raise ConfigurationError("this classifier was trained with sentence embeddings; pass an embedder")
        if max_tools < k:
            raise ConfigurationError(f"max_tools ({max_tools}) must be at least k ({k})")
        self.extra_k = extra_k
        self.max_tools = max_tools
        self.fill_ratio = fill_ratio
        self._producers: dict[str, dict[str, float]] = {}
        self._kits: list[int] = []
        self._kit_bm25: BM25Index | None = None
        self.sibling_max = sibling_max
        self._families: dict[str, frozenset[str]] = {}
        self.weights = weights
        self._np = require("numpy")
        self._bm25: BM25Index | None = None
        self._docs: Any = None
        self._known: Any = None
        self._columns: Any = None
        self._example_tools: Any = None
        self._zero_shot: ZeroShotScorer | None = None

    # -- indexing ---------------------------------------------------------------------------------------------
    def _documents(self, registry: ToolRegistry) -> list[str]:
        self._kits, descriptions, openings = toolkits([registry[n].description for n in self._names])
        self._kit_bm25 = None
        if openings:
            names: list[list[str]] = [[] for _ in openings]
            for name, kit in zip(self._names, self._kits, strict=True):
                if kit >= 0:
                    names[kit].append(name)
            self._kit_bm25 = BM25Index([f"{o} {' '.join(n)}" for o, n in zip(openings, names, strict=True)])
        return [tool_document(registry[n], description=d) for n, d in zip(self._names, descriptions, strict=True)]

    def _kit_scores(self, query: str) -> Any:
        """Each tool's toolkit's match with the query (0 outside toolkits): the boilerplate, scored once per kit."""
        np = self._np
        if self._kit_bm25 is None:
            return None
        per_kit = self._kit_bm25.scores(query)
        kits = np.asarray(self._kits, dtype=np.int64)
        return np.where(kits >= 0, per_kit[np.maximum(kits, 0)], 0.0).astype(np.float32)

    def _index(self, registry: ToolRegistry, documents: list[str]) -> None:
        np = self._np
        self._families = noun_families(self._names, self.sibling_max)
        self._producers = producer_graph(registry, kits=self._kits) if self.expand_dependencies else {}
        self._bm25 = BM25Index(documents)
        self._docs = self.embedder.embed(documents) if self.embedder is not None else None
        if self.model is not None:
            position = {n: i for i, n in enumerate(self.model.tools)}
            self._columns = np.array([position.get(n, -1) for n in self._names], dtype=np.int64)
        else:
            self._columns = np.full(len(self._names), -1, dtype=np.int64)
        self._known = self._columns >= 0
        self._zero_shot = None
        if self.model is not None and self.model.thresholds.zero_shot_k > 0 and self._known.any():
            known = np.flatnonzero(self._known)
            docs = self._docs[known] if self._docs is not None and self.model.uses_embedding else None
            self._zero_shot = zero_shot_scorer(registry, [self._names[int(i)] for i in known], None, docs)
        log.debug("hybrid retriever: %d of %d tools known to the classifier", int(self._known.sum()), len(self._names))

    def fit(self, registry: ToolRegistry, examples: Sequence[Example] = ()) -> None:
        """Index ``registry``; learn example votes and dependencies from ``examples`` (and the classifier's data)."""
        super().fit(registry, examples)
        np = self._np
        assert self._selector is not None  # set by super().fit
        pool = self._selector.examples
        column = {n: i for i, n in enumerate(self._names)}
        self._example_tools = np.zeros((len(pool), len(self._names)), dtype=np.float32)
        for i, ex in enumerate(pool):
            for name in ex.tool_names:
                self._example_tools[i, column[name]] = 1.0
        if self.model is not None and self.expand_dependencies:
            self._graph = self._graph.merged(self.model.dependencies)

    # -- scoring ----------------------------------------------------------------------------------------------
    def _encode(self, query: str) -> Any:
        return self.embedder.embed([query])[0] if self.embedder is not None else None

    def _embed_texts(self) -> Any:
        return self.embedder.embed if self.embedder is not None else None

    def _fused(self, query: str, vector: Any, sims: Any = None) -> Any:
        """BM25, embedding similarity and example votes, each on 0..1, weighted."""
        np = self._np
        assert self._bm25 is not None and self._selector is not None
        w_lex, w_sem, w_vote = self.weights
        total = np.zeros(len(self._names), dtype=np.float32)
        weight = 0.0
        lex = self._bm25.scores(query)
        if lex.max() > 0:
            total += w_lex * lex / lex.max()
        weight += w_lex
        if self._docs is not None and vector is not None:
            cos = self._docs @ vector
            low, top = float(cos.min()), float(cos.max())
            if top > low:
                total += w_sem * (cos - low) / (top - low)
            weight += w_sem
        if len(self._selector.examples) > 0 and self._example_tools is not None:
            if sims is None:
                selector = self._selector
                sims = selector.similarities(vector if vector is not None else selector.query_vector(query))
            total += w_vote * self._votes(sims)
            weight += w_vote
        return total / weight if weight > 0 else total

    def _votes(self, sims: Any, neighbours: int = 8, temperature: float = 0.05) -> Any:
        """The share of the nearest examples (softmax-weighted by similarity) that use each tool."""
        np = self._np
        n = min(neighbours, len(sims))
        top = np.argpartition(-sims, n - 1)[:n]
        w = np.exp((sims[top] - sims[top].max()) / temperature)
        votes = (w[:, None] * self._example_tools[top]).sum(axis=0) / w.sum()
        return votes.astype(np.float32)

    def _probabilities(self, query: str, vector: Any) -> Any:
        np = self._np
        assert self.model is not None
        emb = vector[None, :].astype(np.float32) if vector is not None else np.zeros((1, 0), dtype=np.float32)
        probs = self.model.predict({"embedding": emb, "words": hashed_features([query], self.model.hash_dim)})[0]
        return np.where(self._known, probs[np.maximum(self._columns, 0)], 0.0).astype(np.float32)

    def _ranked(self, query: str, vector: Any, sims: Any = None) -> Any:
        """Reciprocal-rank fusion of BM25, embedding cosine and example votes (the rule without a classifier)."""
        assert self._bm25 is not None and self._selector is not None
        rankings = [self._bm25.scores(query)]
        kit = self._kit_scores(query)
        if kit is not None:
            rankings.append(kit)
        if self._docs is not None and vector is not None:
            rankings.append(self._docs @ vector)
        if len(self._selector.examples) > 0 and self._example_tools is not None:
            if sims is None:
                selector = self._selector
                sims = selector.similarities(vector if vector is not None else selector.query_vector(query))
            rankings.append(self._votes(sims))
        return reciprocal_rank_fusion(rankings)

    def _score(self, query: str, vector: Any, sims: Any = None) -> Any:
        np = self._np
        if self.model is None:
            return self._ranked(query, vector, sims)
        fused = self._fused(query, vector, sims)
        return np.where(self._known, self._probabilities(query, vector), fused).astype(np.float32)

    def _normalized(self, raw: Any) -> Any:
        if self.model is None:
            return super()._normalized(raw)  # reciprocal-rank scores: best tool = 1
        return raw  # probabilities and fused scores are already on 0..1

    def _hint_scores(self, hint: str) -> Any:
        # A hint names a capability ("no tool to look up a phone number"): match it against every tool's own
        # description too, not only through the classifier, which learned from requests.
        vector = self._encode(hint)
        fused = self._fused(hint, vector)
        top = float(fused.max()) if fused.size else 0.0
        lexical = fused / top if top > 0 else fused
        return self._np.maximum(self._score(hint, vector), lexical)

    def _choose(self, raw: Any, sims: Any, query: str = "", vector: Any = None) -> tuple[list[str], bool]:
        if self.model is None or not self._known.any():
            return self._choose_untrained(raw, query)
        tools, unsure = self._choose_tools(raw, sims, query, vector)
        return with_siblings(tools, query, self._families, self._names), unsure

    def _choose_untrained(self, raw: Any, query: str) -> tuple[list[str], bool]:
        """The ``k`` best, their producers and siblings, then more while the score holds, at most ``max_tools``."""
        np = self._np
        order = [int(i) for i in np.argsort(-raw, kind="stable")]
        if len(order) <= self.max_tools:
            return [self._names[i] for i in order], False
        unsure = float(raw[order[0]]) <= 0.0
        tools = [self._names[i] for i in order[: self.k]]
        needed = [p for t in tools for p in sorted(self._producers.get(t, {}), key=lambda p: -self._producers[t][p])]
        for extra in (needed, with_siblings(tools, query, self._families, self._names)[len(tools) :]):
            for name in extra:
                if name not in tools and len(tools) < self.max_tools:
                    tools.append(name)
        floor = self.fill_ratio * float(raw[order[self.k - 1]])
        # Toolkit mates of the best tools first: a request that needs one tool of a toolkit often needs another
        # (the session, the precondition), and an unrelated distractor seldom.
        kits = {self._kits[i] for i in order[: self.k] if self._kits[i] >= 0}
        for i in sorted(order[self.k :], key=lambda i: self._kits[i] not in kits):
            if len(tools) >= self.max_tools or (not unsure and float(raw[i]) < floor):
                break
            if self._names[i] not in tools:
                tools.append(self._names[i])
        return tools, unsure

    def _choose_tools(self, raw: Any, sims: Any, query: str, vector: Any) -> tuple[list[str], bool]:
        np = self._np
        if self.model is None or not self._known.any():
            return super()._choose(raw, sims, query, vector)
        known = np.flatnonzero(self._known)
        names = [self._names[int(i)] for i in known]
        zero_shot = self._zero_shot.scores(query, vector) if self._zero_shot is not None else None
        tools, unsure = choose_by_threshold(raw[known], names, self.model.thresholds, zero_shot)
        tools = add_example_tools(tools, self._selector, sims, self.model.thresholds.example_k)
        unknown = np.flatnonzero(~self._known)
        if unknown.size and self.extra_k > 0:
            n = self.extra_k * (2 if unsure else 1)
            best = unknown[np.argsort(-raw[unknown], kind="stable")[:n]]
            tools.extend(self._names[int(i)] for i in best if raw[i] > 0)
        return tools, unsure


def noun_families(names: Sequence[str], largest: int) -> dict[str, frozenset[str]]:
    """Tool families by the words after the first (the verb) of each name: ``{"note": {create_note, …}}``.

    Only families of 2 to ``largest`` tools are kept.
    """
    families: dict[str, set[str]] = {}
    for name in names:
        for word in dict.fromkeys(words(name)[1:]):
            families.setdefault(word, set()).add(name)
    return {w: frozenset(f) for w, f in families.items() if 2 <= len(f) <= largest}


def with_siblings(tools: list[str], query: str, families: dict[str, frozenset[str]], order: Sequence[str]) -> list[str]:
    """``tools`` plus every family member of an offered tool whose family noun the query names (in ``order``)."""
    if not families:
        return tools
    offered = set(tools)
    extra: set[str] = set()
    for word in set(words(query)):
        family = families.get(word)
        if family is not None and family & offered:
            extra |= family - offered
    return tools + [n for n in order if n in extra]


def default_retriever(classifier: ClassifierModel | str | Path | None = None, **options: Any) -> HybridRetriever:
    """A :class:`HybridRetriever` with whatever is available: the exported MiniLM if it is in the cache (BM25 and
    example votes otherwise) and ``classifier`` if given.

    Args:
        classifier: a trained classifier folder or model, or None.
        options: passed on to :class:`HybridRetriever`.
    """
    from ._cache import default_embedder_dir

    if "embedder" not in options:
        have = (default_embedder_dir() / "model.onnx").is_file()
        if not have:
            log.info(
                "no exported MiniLM in %s; retrieving with BM25 and example votes only "
                "(python -m tinyagent.retrieval.export_embedder adds embeddings)",
                default_embedder_dir(),
            )
        options["embedder"] = None if have else False
    return HybridRetriever(classifier, **options)
