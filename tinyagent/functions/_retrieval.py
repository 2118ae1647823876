"""Tool retrieval for the built-in library, with the classifier that ships in the package."""

from __future__ import annotations

from pathlib import Path
from typing import Any

BUILTIN_CLASSIFIER = Path(__file__).parent / "data" / "classifier"
"""The built-in tools' multi-label classifier (hashed word n-grams, ONNX, 4 MB; no embedder or torch needed).

Trained on the eval set's *train* split and exported by::

    python -m tinyagent.retrieval.train_classifier --tools tinyagent.functions:builtin_tools \\
        --data tinyagent/functions/data/evalset.jsonl --split train --no-embedding \\
        --out tinyagent/functions/data/classifier
"""


def builtin_retriever(**options: Any) -> Any:
    """A :class:`~tinyagent.retrieval.HybridRetriever` that knows the built-in tools from the shipped classifier.

    Tools added next to the built-ins are ranked by BM25 and example votes (pass ``embedder=None`` to add the
    exported MiniLM: same recall on the test split, 7.5 ms instead of 2.2 ms). Needs the ``onnx`` extra.

    Args:
        options: passed on to :class:`~tinyagent.retrieval.HybridRetriever`.
    """
    from ..retrieval import default_retriever

    options.setdefault("embedder", False)
    return default_retriever(BUILTIN_CLASSIFIER, **options)
