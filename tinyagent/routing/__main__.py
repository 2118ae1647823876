"""``python -m tinyagent.routing ARGS``: a thin shim over ``tinyagent routing ARGS``."""

from __future__ import annotations

if __name__ == "__main__":
    from tinyagent.apps import run_command

    run_command(["routing"])
