"""``tinyagent eval bfcl`` and ``tinyagent eval functions``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from ...errors import TinyAgentError
from .._files import writable
from ._app import AppState, app, optional, progress, state

__all__ = ["eval_app"]

eval_app = typer.Typer(help="Evaluate the planner.", no_args_is_help=True)
app.add_typer(eval_app, name="eval")


@eval_app.command("bfcl")
def eval_bfcl_cmd(
    ctx: typer.Context,
    data_dir: Annotated[Path | None, typer.Option("--data-dir", help="BFCL data (the bfcl-eval wheel or folder).")]
    = None,
    categories: Annotated[str, typer.Option(help=(
        "Comma-separated categories: simple_python, multiple, parallel, parallel_multiple, irrelevance, "
        "live_simple, live_multiple, live_irrelevance (also live_parallel, live_parallel_multiple)."))] =
    "simple_python,multiple,parallel,parallel_multiple,irrelevance",
    limit: Annotated[int | None, typer.Option(help="Cases per category (after the parity filter).")] = None,
    index_parity: Annotated[str, typer.Option(
        "--index-parity", help="even, odd or all: keep cases whose index (first number in the id) has that parity."
    )] = "all",
    output: Annotated[Path | None, typer.Option(help="Predictions JSONL.")] = None,
) -> None:
    """Run the planner over BFCL and print accuracy per category."""
    st = state(ctx)
    bfcl = optional("tinyagent.evals.bfcl", "the BFCL evaluation (tinyagent.evals.bfcl)")
    cats = [c.strip() for c in categories.split(",") if c.strip()]
    parity = bfcl.check_parity(index_parity)
    model = st.model()
    with progress(st) as bar:
        task = bar.add_task("BFCL", total=None)

        def tick(result: Any) -> None:
            bar.update(task, advance=1, description=f"BFCL {getattr(result, 'category', '')}")

        report = bfcl.eval_bfcl(data_dir, cats, limit, writable(output) if output else None, model=model,
                                today=st.today, on_result=tick, parity=parity)
    if st.json:
        st.emit_json(report.to_dict())
        return
    table = Table(title=f"BFCL · {report.system} · {report.elapsed_s:.1f} s", title_justify="left")
    for col, justify in (("category", "left"), ("correct", "right"), ("total", "right"), ("accuracy", "right"),
                         ("errors", "right"), ("mean s", "right")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for row in report.rows():
        style = "bold" if row.category == "overall" else ""
        table.add_row(row.category, str(row.correct), str(row.total), f"{row.accuracy:.1%}", str(row.errors),
                      f"{row.mean_s:.2f}", style=style)
    st.console.print(table)


async def _plan_cases(st: AppState, agent: Any, cases: list[Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    preds: dict[str, Any] = {}
    lines: list[dict[str, Any]] = []
    with progress(st) as bar:
        task = bar.add_task("planning", total=len(cases))
        for case in cases:
            try:
                result = await agent.plan(case.query, today=case.today)
                preds[case.id] = result.plan
                lines.append({"id": case.id, "calls": result.plan.to_json()})
            except TinyAgentError as exc:
                preds[case.id] = None
                lines.append({"id": case.id, "calls": [], "error": str(exc)})
            bar.advance(task)
    return preds, lines


@eval_app.command("functions")
def eval_functions_cmd(
    ctx: typer.Context,
    split: Annotated[str, typer.Option(help="train, test or all.")] = "test",
    limit: Annotated[int | None, typer.Option(help="At most this many cases.")] = None,
    output: Annotated[Path | None, typer.Option(help="Predictions JSONL ({id, calls}).")] = None,
) -> None:
    """Plan the built-in tools' eval set and score DAG and strict success."""
    st = state(ctx)
    scoring = optional("tinyagent.scoring", "the eval set scorer (tinyagent.scoring)")
    cases = scoring.load_evalset(None if split == "all" else split)[: limit or None]
    agent = st.agent(ask=False)
    preds, lines = asyncio.run(_plan_cases(st, agent, cases))
    report = scoring.score(preds, cases, st.tools())
    if output is not None:
        writable(output).write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    if st.json:
        st.emit_json(report)
        return
    table = Table(title=f"eval set ({split}) · {report['n']} cases · model {st.model().name}", title_justify="left")
    table.add_column("metric")
    table.add_column("correct", justify="right")
    table.add_column("rate", justify="right")
    table.add_row("DAG success", str(report["dag_correct"]), f"{report['dag_success']:.1%}")
    table.add_row("strict success", str(report["strict_correct"]), f"{report['strict_success']:.1%}")
    st.console.print(table)
