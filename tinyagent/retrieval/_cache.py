"""Where exported and trained retrieval models live: the user cache, overridable by ``TINYAGENT_CACHE``."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir", "default_embedder_dir"]

EMBEDDER_NAME = "all-MiniLM-L6-v2"


def cache_dir() -> Path:
    """The tinyagent cache folder: ``$TINYAGENT_CACHE`` if set, else the platform's user cache folder."""
    env = os.environ.get("TINYAGENT_CACHE")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("tinyagent"))


def default_embedder_dir() -> Path:
    """Where ``python -m tinyagent.retrieval.export_embedder`` writes the MiniLM ONNX model by default."""
    return cache_dir() / "embedders" / EMBEDDER_NAME
