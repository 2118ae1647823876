"""Shared fixtures: real model paths (skipping with a clear reason when a model package is absent), the
``tinyagent.functions`` demo data set, and the switch that keeps unit tests off real models.

Unit tests can never reach a real model: every test not marked ``slow`` or ``real_model`` runs with
``tinyagent.models.ALLOW_MODEL_REQUESTS = False``, so a ``LlamaCppModel`` or ``OpenAIModel`` call raises
:class:`~tinyagent.errors.ModelRequestsBlocked`. Mark a test ``real_model`` when it drives a real model class
against a stand-in backend (a mock HTTP transport, a local fault server) and is still fast.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest
from _helpers_functions import TODAY

REAL_MODEL_MARKERS = ("slow", "real_model")
# No test leaves a resident worker behind (``tinyagent.apps.resident``): every ``tinyagent`` command a test starts
# runs in its own process unless the test sets its own keep-alive.
os.environ["TINYAGENT_KEEP_ALIVE"] = "0"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "real_model: calls a real model class (LlamaCppModel, OpenAIModel) against some backend"
    )


@pytest.fixture(autouse=True)
def _block_real_models(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Switch real model requests off for every test not marked ``slow`` or ``real_model``."""
    if any(request.node.get_closest_marker(m) is not None for m in REAL_MODEL_MARKERS):
        return
    import tinyagent.models

    monkeypatch.setattr(tinyagent.models, "ALLOW_MODEL_REQUESTS", False)


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


@pytest.fixture(scope="module")
def demo_template(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``tinyagent.functions`` demo data set seeded around ``TODAY``, made once per test module.

    Its timezone is the test module's ``DEMO_TIMEZONE`` (UTC when the module sets none).
    """
    from tinyagent.functions import init_demo

    path = tmp_path_factory.mktemp("demo-template")
    init_demo(path, today=TODAY, timezone=getattr(request.module, "DEMO_TIMEZONE", "UTC"))
    return path


@pytest.fixture
def data_dir(tmp_path: Path, demo_template: Path) -> Path:
    """A fresh copy of the demo data set for one test, so tests may change it freely."""
    shutil.copytree(demo_template, tmp_path / "data")
    return tmp_path / "data"
