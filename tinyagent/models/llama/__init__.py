"""The llama.cpp backend: the model (``_model``), its on-disk KV prefix cache (``_kv_cache``), its logits processors
(``_processors``) and its greedy draft-and-verify decoder (``_decode``)."""

from __future__ import annotations

from ._model import LlamaCppModel

__all__ = ["LlamaCppModel"]
