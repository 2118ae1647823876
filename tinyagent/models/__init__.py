"""Models: one interface, three implementations (llama.cpp, OpenAI-compatible endpoints, scripted).

``LlamaCppModel`` and ``OpenAIModel`` import their backends lazily. Set ``ALLOW_MODEL_REQUESTS = False`` in unit
tests to make any real model call raise :class:`~tinyagent.errors.ModelRequestsBlocked`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._base import Completion, Model, ModelRequest, Preference, Pricing, Usage
from ._scripted import ScriptedModel

if TYPE_CHECKING:
    from ._catalog import CatalogEntry, ModelCatalog
    from ._llama import LlamaCppModel
    from ._openai import OpenAIModel

ALLOW_MODEL_REQUESTS = True

__all__ = [
    "ALLOW_MODEL_REQUESTS",
    "CatalogEntry",
    "Completion",
    "LlamaCppModel",
    "Model",
    "ModelCatalog",
    "ModelRequest",
    "Preference",
    "OpenAIModel",
    "Pricing",
    "ScriptedModel",
    "Usage",
    "load_model",
]

_LAZY = {
    "LlamaCppModel": "._llama",
    "OpenAIModel": "._openai",
    "ModelCatalog": "._catalog",
    "CatalogEntry": "._catalog",
    "load_model": "._catalog",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module = importlib.import_module(_LAZY[name], __name__)
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
