"""Shared fixtures: real model paths (skipping with a clear reason when a model package is absent)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest


def _catalog_path(name: str) -> Path:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed: pip install 'tinyagent[llama]'")
    from tinyagent.errors import ModelIntegrityError
    from tinyagent.models import ModelCatalog

    try:
        return ModelCatalog().path(name)
    except ModelIntegrityError as exc:
        pytest.skip(f"model {name} is not available: {exc}")


@pytest.fixture(scope="session")
def smollm2_path() -> Path:
    """The verified SmolLM2-135M GGUF."""
    return _catalog_path("smollm2-135m")


@pytest.fixture(scope="session")
def qwen05_path() -> Path:
    """The verified Qwen2.5-Coder-0.5B GGUF."""
    return _catalog_path("qwen2.5-coder-0.5b")


@pytest.fixture(scope="session")
def qwen05_model():  # type: ignore[no-untyped-def]
    """One shared Qwen2.5-Coder-0.5B model for the session (loading costs seconds)."""
    _catalog_path("qwen2.5-coder-0.5b")
    from tinyagent.models import LlamaCppModel

    return LlamaCppModel("qwen2.5-coder-0.5b", n_threads=2)
