"""Models: one interface, three implementations (llama.cpp, OpenAI-compatible endpoints, scripted).

``LlamaCppModel`` and ``OpenAIModel`` import their backends lazily. Set ``ALLOW_MODEL_REQUESTS = False`` in unit
tests to make any real model call raise :class:`~tinyagent.errors.ModelRequestsBlocked`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._base import Completion, Model, ModelRequest, Preference, Pricing, Usage
from ._scripted import ScriptedModel
from ._test_model import TestModel

if TYPE_CHECKING:
    from ._cache import cache_dir
    from ._catalog import CatalogEntry, ModelCatalog
    from ._cpu import (
        CpuFeatures,
        LoadDecision,
        cpu_features,
        free_cores,
        llama_build_features,
        llama_load_params,
        new_llama,
    )
    from ._openai import OpenAIModel
    from ._thread import on_llama_thread, submit_llama
    from .llama import LlamaCppModel

ALLOW_MODEL_REQUESTS = True

__all__ = [
    "ALLOW_MODEL_REQUESTS",
    "CatalogEntry",
    "Completion",
    "CpuFeatures",
    "LoadDecision",
    "LlamaCppModel",
    "Model",
    "ModelCatalog",
    "ModelRequest",
    "Preference",
    "OpenAIModel",
    "Pricing",
    "ScriptedModel",
    "TestModel",
    "Usage",
    "cache_dir",
    "cpu_features",
    "free_cores",
    "llama_build_features",
    "llama_load_params",
    "load_model",
    "new_llama",
    "on_llama_thread",
    "submit_llama",
]

_LAZY = {
    "LlamaCppModel": ".llama",
    "cache_dir": "._cache",
    "OpenAIModel": "._openai",
    "ModelCatalog": "._catalog",
    "CatalogEntry": "._catalog",
    "load_model": "._catalog",
    "CpuFeatures": "._cpu",
    "LoadDecision": "._cpu",
    "cpu_features": "._cpu",
    "free_cores": "._cpu",
    "llama_build_features": "._cpu",
    "llama_load_params": "._cpu",
    "new_llama": "._cpu",
    "on_llama_thread": "._thread",
    "submit_llama": "._thread",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module = importlib.import_module(_LAZY[name], __name__)
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
