"""``python -m tinyagent.models list|verify|verify-all``: the same commands as ``tinyagent models ...`` (CI runs
``verify-all``)."""

from __future__ import annotations

from tinyagent.apps.cli import main_with_prefix

if __name__ == "__main__":
    main_with_prefix(["models"])
