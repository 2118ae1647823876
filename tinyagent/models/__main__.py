"""``python -m tinyagent.models list|verify|verify-all``: the same commands as ``tinyagent models ...`` (CI runs
``verify-all``)."""

from __future__ import annotations

if __name__ == "__main__":
    from tinyagent.apps import run_command

    run_command(["models"])
