"""BM25 over tool documents: the fast lexical baseline that needs no model."""

from __future__ import annotations

import logging
from typing import Any

from .._tools import ToolRegistry
from ._deps import require
from ._scoring import ScoringRetriever
from ._text import index_terms

__all__ = ["BM25Retriever", "BM25Index"]

log = logging.getLogger("tinyagent.retrieval")


class BM25Index:
    """A BM25 index over short documents (bm25s underneath).

    Args:
        documents: the texts to index.
        k1: BM25's term-frequency saturation.
        b: BM25's length normalisation.
    """

    def __init__(self, documents: list[str], k1: float = 1.2, b: float = 0.75) -> None:
        bm25s = require("bm25s")
        self._np = require("numpy")
        tokenized = [index_terms(d) or ["_empty_"] for d in documents]
        self._vocab = {t for doc in tokenized for t in doc}
        self._bm25 = bm25s.BM25(k1=k1, b=b)
        self._bm25.index(tokenized, show_progress=False)
        self._size = len(documents)

    def scores(self, text: str) -> Any:
        """BM25 score of every document for ``text`` (0 where no term matches)."""
        query = [t for t in index_terms(text) if t in self._vocab]
        if not query:
            return self._np.zeros(self._size, dtype=self._np.float32)
        return self._np.asarray(self._bm25.get_scores(query), dtype=self._np.float32)


class BM25Retriever(ScoringRetriever):
    """Lexical retrieval: BM25 over each tool's name (split on ``_``), description and parameters.

    Needs no model and indexes 1,000 tools in well under a second. Words are matched after lower-casing and
    plural stripping, so it misses paraphrases ("text Bob" vs ``send_sms``); :class:`EmbeddingRetriever` and
    :class:`HybridRetriever` do not.

    Args:
        k: tools offered when sure.
        wide_k: tools offered when unsure.
        n_examples: few-shot examples per request.
        expand_dependencies: also offer the tools a chosen tool usually needs.
        margin: uncertainty margin on normalised scores.
    """

    def __init__(
        self,
        *,
        k: int = 5,
        wide_k: int | None = None,
        n_examples: int = 3,
        expand_dependencies: bool = True,
        margin: float = 0.05,
    ) -> None:
        super().__init__(
            k=k, wide_k=wide_k, n_examples=n_examples, expand_dependencies=expand_dependencies, margin=margin, floor=0.0
        )
        self._bm25: BM25Index | None = None

    def _index(self, registry: ToolRegistry, documents: list[str]) -> None:
        self._bm25 = BM25Index(documents)

    def _score(self, query: str, vector: Any, sims: Any = None) -> Any:
        assert self._bm25 is not None  # _require_fitted() ran first
        return self._bm25.scores(query)
