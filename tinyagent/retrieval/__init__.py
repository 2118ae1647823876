"""Tool retrieval (ToolRAG): offer the planner only the few tools, and the few examples, a request needs.

The agent calls ``fit(registry, examples)`` once, ``retrieve(query)`` per request and ``widen(query, previous,
hint)`` on a replan that reports a missing capability; only ``Retrieval.tools`` go into the prompt and grammar.

Retrievers (numpy, onnxruntime, bm25s and tokenizers are imported lazily: ``pip install 'tinyagent[onnx]'``):

* :class:`BM25Retriever`: lexical, no model.
* :class:`EmbeddingRetriever`: all-MiniLM-L6-v2 on onnxruntime (export once with
  ``python -m tinyagent.retrieval.export_embedder``).
* :class:`ClassifierRetriever`: a multi-label classifier trained for one registry with
  ``python -m tinyagent.retrieval.train_classifier``, run by onnxruntime, with calibrated thresholds.
* :class:`HybridRetriever` (what :func:`default_retriever` builds): the classifier where it knows the tools, fused
  BM25 + embeddings + example votes elsewhere, plus dependency expansion learned from example plans.

The stress registry (the built-in tools plus 400 BFCL distractors) moved to :func:`tinyagent.evals.stress_registry`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._base import Retrieval, RetrieverNotFittedError, ToolRetriever
from ._cache import cache_dir, default_embedder_dir

if TYPE_CHECKING:
    from ._bm25 import BM25Retriever
    from ._classifier import ClassifierModel, ClassifierRetriever, Thresholds
    from ._embedding import Embedder, EmbeddingRetriever, LlamaCppEmbedder, OnnxEmbedder
    from ._examples import DependencyGraph, ExampleSelector
    from ._hybrid import HybridRetriever, default_retriever
    from ._scoring import ScoringRetriever
    from ._text import tool_document

__all__ = [
    "BM25Retriever",
    "ClassifierModel",
    "ClassifierRetriever",
    "DependencyGraph",
    "Embedder",
    "EmbeddingRetriever",
    "ExampleSelector",
    "HybridRetriever",
    "LlamaCppEmbedder",
    "OnnxEmbedder",
    "Retrieval",
    "RetrieverNotFittedError",
    "ScoringRetriever",
    "Thresholds",
    "ToolRetriever",
    "cache_dir",
    "default_embedder_dir",
    "default_retriever",
    "tool_document",
]

_LAZY = {
    "BM25Retriever": "._bm25",
    "ClassifierModel": "._classifier",
    "ClassifierRetriever": "._classifier",
    "Thresholds": "._classifier",
    "DependencyGraph": "._examples",
    "ExampleSelector": "._examples",
    "Embedder": "._embedding",
    "EmbeddingRetriever": "._embedding",
    "LlamaCppEmbedder": "._embedding",
    "OnnxEmbedder": "._embedding",
    "HybridRetriever": "._hybrid",
    "default_retriever": "._hybrid",
    "ScoringRetriever": "._scoring",
    "tool_document": "._text",
}


# Compatibility aliases for names that moved up to tinyagent.evals (not in __all__; import them from there).
_MOVED = {"load_distractors": "tinyagent.evals", "stress_registry": "tinyagent.evals"}


def __getattr__(name: str) -> Any:
    if name in _LAZY or name in _MOVED:
        import importlib

        module = _MOVED.get(name) or _LAZY[name]
        return getattr(importlib.import_module(module, __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
