"""``python -m tinyagent.routing``: a thin shim over the ``routing`` sub-app in ``tinyagent.apps.cli.routing``."""

from __future__ import annotations

import sys

from ..errors import MissingDependencyError


def _main() -> int:
    try:
        from ..apps.cli.routing import main
    except ImportError as exc:  # the command line needs the cli extra (typer)
        if exc.name not in ("typer", "click", "rich"):
            raise
        sys.stderr.write(f"error: {MissingDependencyError(exc.name, 'cli')}\n")
        return 2
    return main()


if __name__ == "__main__":
    raise SystemExit(_main())
