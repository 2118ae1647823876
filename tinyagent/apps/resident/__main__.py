"""``python -m tinyagent.apps.resident``: the resident worker (the ``tinyagent`` command starts it)."""

from __future__ import annotations

from ._worker import main

if __name__ == "__main__":
    main()
