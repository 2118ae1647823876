"""Shared pieces of the tests that run a real catalog model."""

from __future__ import annotations


def real_model_available(name: str) -> bool:
    """Whether llama-cpp-python and the catalog model ``name`` are both installed (for ``pytest.mark.skipif``)."""
    try:
        import llama_cpp  # noqa: F401

        from tinyagent.models import ModelCatalog

        return bool(ModelCatalog().installed(name))
    except Exception:  # noqa: BLE001 - any missing piece means: skip
        return False
