"""How well a request matches each tool's own text, with no training: the classifier's complement for rare tools."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._bm25 import BM25Index
from ._deps import require

__all__ = ["ZeroShotScorer"]


class ZeroShotScorer:
    """BM25 and embedding cosine against tool documents, each scaled to 0..1 over the tools, then weighted.

    A classifier trained on a few hundred requests knows little about tools its data rarely (or never) shows; this
    score needs no training, so the calibrated rule (``Thresholds.zero_shot_k``) always adds its best few tools.
    Training and retrieval compute it the same way, over the classifier's tools only.

    Args:
        documents: one document per tool (see :func:`tool_document`).
        vectors: L2-normalised embeddings of ``documents`` (rows), or None for BM25 alone.
        weights: the weights of (BM25, embedding).
    """

    def __init__(
        self, documents: Sequence[str], vectors: Any = None, weights: tuple[float, float] = (0.3, 0.4)
    ) -> None:
        self._np = require("numpy")
        self._bm25 = BM25Index(list(documents))
        self._docs = None if vectors is None else self._np.asarray(vectors, dtype=self._np.float32)
        self.weights = weights

    def scores(self, query: str, vector: Any = None) -> Any:
        """The score of every tool for ``query`` (``vector`` is its embedding, needed when there are doc vectors)."""
        np = self._np
        w_lex, w_sem = self.weights
        lex = self._bm25.scores(query)
        total = w_lex * (lex / lex.max() if lex.max() > 0 else lex)
        weight = w_lex
        if self._docs is not None and vector is not None:
            cos = self._docs @ np.asarray(vector, dtype=np.float32)
            low, top = float(cos.min()), float(cos.max())
            if top > low:
                total = total + w_sem * (cos - low) / (top - low)
            weight += w_sem
        return (total / weight).astype(np.float32)
