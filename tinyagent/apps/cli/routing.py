"""``tinyagent routing calibrate``: fit the local-first escalation threshold on recorded outcomes.

Mounted by the root app as ``tinyagent routing``; ``python -m tinyagent.routing`` runs the same command.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._app import state

__all__ = ["app"]

app = typer.Typer(help="Budget-aware routing: calibrate the escalation threshold on recorded outcomes.",
                  no_args_is_help=True)


@app.command("calibrate")
def calibrate_cmd(
    ctx: typer.Context,
    records: Annotated[Path, typer.Option(help="JSONL file of routing records.")],
    target_cost: Annotated[float | None, typer.Option(help="Most cost per request.")] = None,
    target_accuracy: Annotated[float | None, typer.Option(help="Least success rate.")] = None,
    relative: Annotated[bool, typer.Option(help="The targets are fractions of always-cloud.")] = False,
) -> None:
    """Fit the thresholds and print them, with their expected success and cost, as JSON."""
    from ...routing import calibration_report, load_records

    state(ctx).emit_json(calibration_report(load_records(records), target_cost=target_cost,
                                            target_accuracy=target_accuracy, relative=relative))
