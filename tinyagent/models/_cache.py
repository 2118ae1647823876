"""The one cache directory of tinyagent (assembled models, KV prefixes, tokenizers, BFCL data)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir"]


def cache_dir() -> Path:
    """tinyagent's cache directory: ``$TINYAGENT_CACHE``, else the platform's user cache dir."""
    env = os.environ.get("TINYAGENT_CACHE")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("tinyagent"))
