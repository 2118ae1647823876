"""``tinyagent routing …``: fit the escalation threshold on recorded outcomes (a typer sub-app).

The integrator mounts ``app`` on the main CLI (``app.add_typer(routing_app, name="routing")``);
``python -m tinyagent.routing`` is a thin shim over the same app.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Annotated

import typer

from ...errors import ConfigurationError
from ...routing import calibration_report, load_records

__all__ = ["app", "main"]

app = typer.Typer(
    help="Budget-aware routing: calibrate the local-first policy.", no_args_is_help=True, add_completion=False
)


@app.callback()
def _routing() -> None:
    """Budget-aware routing between a free local model and a paid cloud model."""


@app.command()
def calibrate(
    records: Annotated[Path, typer.Option(help="JSONL file of routing records")],
    target_cost: Annotated[float | None, typer.Option(help="most cost per request")] = None,
    target_accuracy: Annotated[float | None, typer.Option(help="least success rate")] = None,
    relative: Annotated[bool, typer.Option("--relative", help="targets are fractions of always-cloud")] = False,
) -> None:
    """Fit the escalation threshold on recorded outcomes; write the thresholds and their expected success and cost
    as JSON to stdout."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s", stream=sys.stderr)
    try:
        report = calibration_report(
            load_records(records), target_cost=target_cost, target_accuracy=target_accuracy, relative=relative
        )
    except ConfigurationError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    typer.echo(json.dumps(report, indent=2))


def main(argv: list[str] | None = None) -> int:
    """Run the sub-app as a program (``python -m tinyagent.routing``) and return its exit status."""
    try:
        app(args=argv, prog_name="python -m tinyagent.routing")
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0
