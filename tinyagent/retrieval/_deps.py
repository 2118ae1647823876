"""Lazy imports of the optional stacks, with an error that names the extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType

from ..errors import MissingDependencyError

__all__ = ["require"]


def require(module: str, extra: str = "onnx", package: str | None = None) -> ModuleType:
    """Import ``module`` or raise :class:`MissingDependencyError` naming ``pip install 'tinyagent[extra]'``."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(package or module.split(".")[0], extra) from exc
