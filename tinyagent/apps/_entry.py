"""``python -m tinyagent.X``: the entry-point shims' one function."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from ..errors import MissingDependencyError

__all__ = ["run_command"]


def run_command(prefix: Sequence[str]) -> None:
    """Run ``tinyagent PREFIX ARGS`` with this process's arguments, and exit with its status.

    Without the ``cli`` extra (typer, rich) this says which ``pip install`` fixes it (exit 2), not a traceback.
    """
    try:
        from .cli import main_with_prefix
    except ImportError as exc:
        if exc.name not in ("typer", "click", "rich"):
            raise
        sys.stderr.write(f"error: {MissingDependencyError(exc.name, 'cli')}\n")
        raise SystemExit(2) from None
    main_with_prefix(prefix)
