"""``python -m tinyagent.apps.cli``: the ``tinyagent`` command."""

from __future__ import annotations

from . import main

if __name__ == "__main__":
    main()
