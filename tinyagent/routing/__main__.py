"""``python -m tinyagent.routing``: a thin shim over ``tinyagent.apps.routing_cli``."""

from __future__ import annotations

from ..apps.routing_cli import main

if __name__ == "__main__":
    raise SystemExit(main())
