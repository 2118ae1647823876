"""``tinyagent resident status|stop``: the resident worker that keeps the model loaded between commands.

See :mod:`tinyagent.apps.resident`. ``TINYAGENT_KEEP_ALIVE`` (seconds, or ``5m``; ``0`` turns it off) sets how
long it waits idle.
"""

from __future__ import annotations

import typer
from rich.text import Text

from .. import resident as _resident
from ._app import state

__all__ = ["app"]

app = typer.Typer(help="The resident worker that keeps the model loaded between commands.", no_args_is_help=True)


@app.command("status")
def status_cmd(ctx: typer.Context) -> None:
    """Whether a worker serves this configuration: its pid, model, requests served and idle time."""
    st = state(ctx)
    path = _resident.socket_path()
    info = None if path is None else _resident.request_status(path)
    if st.json:
        st.emit_json({"socket": None if path is None else str(path), "running": info is not None, **(info or {})})
        return
    if path is None:
        st.console.print(Text("resident workers are not available here (no private Unix socket folder)"))
    elif info is None:
        st.console.print(Text(f"no resident worker (keep-alive {_resident.keep_alive_seconds():g} s; it starts "
                              "after a run, plan or warm that loads a local model)"))
    else:
        st.console.print(Text(f"worker {info['pid']} · model {info['model']} · {info['served']} request(s) served · "
                              f"idle {info['idle_s']} s of {info['keep_alive_s']:g} s"
                              + (" · busy" if info.get("busy") else "")))


@app.command("stop")
def stop_cmd(ctx: typer.Context) -> None:
    """Ask this configuration's worker to exit (after its current request) and wait for it."""
    st = state(ctx)
    path = _resident.socket_path()
    stopped = path is not None and _resident.request_stop(path)
    if st.json:
        st.emit_json({"stopped": stopped})
        return
    st.console.print(Text("worker stopped" if stopped else "no resident worker was running"))
