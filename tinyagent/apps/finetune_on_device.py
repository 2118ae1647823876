r"""Fine-tune a small planner for your own tools, on this machine, in one resumable command.

    python -m tinyagent.apps.finetune_on_device --tools my_tools.py --teacher http://localhost:8080/v1
    python -m tinyagent.apps.finetune_on_device --tools builtin --teacher qwen2.5-coder-1.5b \
        --student qwen2.5-coder-0.5b

Stages, each recorded in ``<work>/state.json`` so that running the same command again continues where it stopped:

1. ``distill``: the teacher writes varied requests for the tools and plans them; every plan is verified.
2. ``eval_before``: the student's planning accuracy before tuning, on held-out requests.
3. ``train``: LoRA fine-tuning of the student (checkpoints; a killed run resumes).
4. ``export``: the adapter as GGUF, plus a merged model quantized to ``--types``.
5. ``eval_after``: the tuned student's accuracy on the same requests.
6. ``register``: the tuned model goes into the model catalog as ``--name`` (``Agent(model=NAME)``).
7. ``report``: ``<work>/report.json`` and ``<work>/report.md``.

Accuracy is measured on the held-out split of the distilled data (the teacher's plans are the reference), or on
``--eval-set`` (JSONL eval cases); with ``--tools builtin`` the built-in tools' own test split is used.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError, TinyAgentError

__all__ = ["STAGES", "main", "run"]

log = logging.getLogger(__name__)

STAGES = ("distill", "eval_before", "train", "export", "eval_after", "register", "report")


class _State:
    def __init__(self, work: Path) -> None:
        self.path = work / "state.json"
        from ..finetune._files import read_json

        self.data: dict[str, Any] = read_json(self.path, {}) or {}

    def done(self, stage: str) -> bool:
        return stage in self.data.get("stages", {})

    def get(self, stage: str) -> Any:
        return self.data.get("stages", {}).get(stage)

    def finish(self, stage: str, value: Any) -> None:
        from ..finetune._files import atomic_write_json

        self.data.setdefault("stages", {})[stage] = value
        atomic_write_json(self.path, self.data)


def _eval_cases(args: argparse.Namespace, data_dir: Path) -> list[Any]:
    from ..scoring import EvalCase, load_evalset

    if args.eval_set:
        cases = load_evalset(None, args.eval_set)
        return cases[: args.eval_n] if args.eval_n else cases
    if args.tools == "builtin":
        return load_evalset("test")[: args.eval_n or None]
    cases = []
    for line in (data_dir / "kept.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("split") != "valid":
            continue
        calls = record.get("plan", [])
        cases.append(EvalCase(id=str(record["id"]), query=str(record["query"]),
                              today=dt.date.fromisoformat(record["today"]), split="test", calls=tuple(calls),
                              key_args={int(c["id"]): tuple(c["args"]) for c in calls},
                              category=str(record.get("kind", ""))))
    return cases[: args.eval_n] if args.eval_n else cases


def _accuracy(path: Path, lora: Path | None, cases: Sequence[Any], tools: Any, threads: int | None) -> dict[str, Any]:
    from ..quant._compare import planning_accuracy

    if not cases:
        return {"n": 0, "note": "no held-out requests to evaluate on"}
    scored = planning_accuracy(path, cases, list(tools.values()), lora_path=lora, n_threads=threads)
    return {k: scored[k] for k in ("n", "dag_success", "strict_success", "mean_latency_s")}


def run(args: argparse.Namespace, progress: Any = None) -> dict[str, Any]:
    """Run (or resume) the pipeline described by the parsed arguments; return the report."""
    from ..finetune import DistillConfig, TrainConfig, builtin_dry_run, distill, train
    from ..finetune._cli import load_examples, load_teacher, load_tools_spec, parse_types
    from ..models._catalog import ModelCatalog
    from ..quant import export_adapter, merge_and_quantize, register_model

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    state = _State(work)
    if args.fresh:
        state.data = {}
    data_dir = Path(args.data_dir) if args.data_dir else None
    tools = load_tools_spec(args.tools, data_dir)
    catalog = ModelCatalog()
    student_gguf = Path(args.student) if args.student.endswith(".gguf") else catalog.path(args.student)
    timings: dict[str, float] = dict(state.data.get("timings", {}))

    def timed(stage: str, start: float) -> None:
        timings[stage] = round(timings.get(stage, 0.0) + time.perf_counter() - start, 1)
        state.data["timings"] = timings

    # 1. distill
    if not state.done("distill"):
        start = time.perf_counter()
        teacher = load_teacher(args.teacher, threads=args.threads)
        dry = builtin_dry_run(data_dir=data_dir) if args.tools == "builtin" else None
        try:
            result = asyncio.run(distill(
                tools, teacher, work / "data", examples=load_examples(args.examples),
                config=DistillConfig(n_requests=args.n, batch_size=args.batch, seed=args.seed), dry_run=dry,
                progress=progress,
            ))
        finally:
            if dry is not None:
                dry.close()
            asyncio.run(teacher.aclose())
        timed("distill", start)
        if result.kept == 0:
            raise ConfigurationError("the teacher produced no usable examples; see data/rejected.jsonl for why")
        state.finish("distill", result.stats)
    cases = _eval_cases(args, work / "data")

    # 2. eval before
    if not state.done("eval_before") and not args.skip_eval:
        start = time.perf_counter()
        state.finish("eval_before", _accuracy(student_gguf, None, cases, tools, args.threads))
        timed("eval_before", start)

    # 3. train
    if not state.done("train"):
        config = TrainConfig(max_steps=args.steps, epochs=args.epochs, batch_size=args.train_batch,
                             learning_rate=args.lr, max_length=args.max_length, save_steps=args.save_steps,
                             threads=args.threads, qlora=args.qlora)
        start = time.perf_counter()
        trained = train(work / "data", args.student, work / "train", config=config, progress=progress)
        timed("train", start)
        state.finish("train", trained.to_json())
    adapter_dir = Path(state.get("train")["adapter_dir"])

    # 4. export
    if not state.done("export"):
        start = time.perf_counter()
        adapter_gguf = export_adapter(adapter_dir, work / "export" / f"{args.name}-lora.gguf", progress=progress)
        exported: dict[str, Any] = {"adapter_gguf": str(adapter_gguf)}
        types = parse_types(args.types)
        if types:
            merged = merge_and_quantize(adapter_dir, work / "export", types=types, name=args.name,
                                        threads=args.threads, progress=progress)
            exported.update(merged.to_json())
        timed("export", start)
        state.finish("export", exported)
    exported = state.get("export")
    quantized = {k: Path(v) for k, v in exported.get("quantized", {}).items()}

    # 5. eval after: the adapter over the packaged base, and each quantized merge
    if not state.done("eval_after") and not args.skip_eval:
        start = time.perf_counter()
        after = {"adapter": _accuracy(student_gguf, Path(exported["adapter_gguf"]), cases, tools, args.threads)}
        for qtype, path in quantized.items():
            after[qtype] = _accuracy(path, None, cases, tools, args.threads)
        state.finish("eval_after", after)
        timed("eval_after", start)

    # 6. register
    if not state.done("register"):
        registered = {}
        if quantized:
            smallest = min(quantized.values(), key=lambda p: p.stat().st_size)
            registered[args.name] = str(register_model(args.name, smallest, description="fine-tuned planner").name)
        if not args.student.endswith(".gguf"):
            lora_name = f"{args.name}-lora"
            registered[lora_name] = str(register_model(lora_name, exported["adapter_gguf"], base=args.student,
                                                       description=f"LoRA adapter over {args.student}").name)
        state.finish("register", registered)

    # 7. report
    report = {
        "tools": list(tools),
        "teacher": args.teacher,
        "student": args.student,
        "data": state.get("distill"),
        "eval_before": state.get("eval_before"),
        "train": {k: v for k, v in (state.get("train") or {}).items() if k != "losses"},
        "export": exported,
        "eval_after": state.get("eval_after"),
        "registered": state.get("register"),
        "timings_s": timings,
    }
    from ..finetune._files import atomic_write_json

    atomic_write_json(work / "report.json", report)
    (work / "report.md").write_text(_markdown(report), encoding="utf-8")
    state.finish("report", str(work / "report.json"))
    return report


def _markdown(report: dict[str, Any]) -> str:
    data = report.get("data") or {}
    train_info = report.get("train") or {}
    lines = [
        "# On-device fine-tuning report", "",
        f"- tools: {len(report['tools'])}; teacher: `{report['teacher']}`; student: `{report['student']}`",
        f"- examples kept: {data.get('kept')}, dropped: {data.get('dropped')} {data.get('dropped_by_reason', {})}",
        f"- training: {train_info.get('global_step')} steps, {train_info.get('sec_per_step') or 0:.1f} s/step, "
        f"{(train_info.get('train_seconds') or 0) / 60:.1f} min",
        "", "| model | DAG success | strict success | s/request |", "|---|---|---|---|",
    ]

    def row(name: str, acc: dict[str, Any] | None) -> None:
        if acc and acc.get("n"):
            lines.append(f"| {name} | {acc['dag_success']:.1%} | {acc['strict_success']:.1%} | "
                         f"{acc['mean_latency_s']:.2f} |")

    row("student before", report.get("eval_before"))
    for name, acc in (report.get("eval_after") or {}).items():
        row(f"tuned ({name})", acc)
    lines += ["", f"Registered: {report.get('registered')}", f"Timings (s): {report.get('timings_s')}", ""]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser."""
    p = argparse.ArgumentParser(
        prog="python -m tinyagent.apps.finetune_on_device",
        description="Distill, fine-tune, export, evaluate and register a planner for your tools.",
    )
    p.add_argument("--tools", required=True, help="my_tools.py, builtin, specs.json or MODULE:ATTR")
    p.add_argument("--teacher", required=True, help="an OpenAI-compatible URL, a catalog name or a .gguf")
    p.add_argument("--student", default="qwen2.5-coder-0.5b", help="a catalog name or a .gguf")
    p.add_argument("--work", default="tinyagent-finetune", help="the run folder (resumed when it exists)")
    p.add_argument("--name", default="my-planner", help="the catalog name of the tuned model")
    p.add_argument("-n", type=int, default=200, help="requests to synthesize")
    p.add_argument("--batch", type=int, default=5, help="requests per teacher call")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--examples", help="a JSONL file of worked examples")
    p.add_argument("--data-dir", help="data folder of the built-in tools (copied for dry runs, never written)")
    p.add_argument("--steps", type=int, default=-1)
    p.add_argument("--epochs", type=float, default=2.0)
    p.add_argument("--train-batch", type=int, default=4)
    p.add_argument("--lr", type=float, default=2e-4)
    p.add_argument("--max-length", type=int, default=1024)
    p.add_argument("--save-steps", type=int, default=25)
    p.add_argument("--qlora", action=argparse.BooleanOptionalAction, default=None)
    p.add_argument("--types", default="Q4_K_M", help="quantizations of the merged model (comma-separated, or none)")
    p.add_argument("--eval-set", help="a JSONL eval set to measure accuracy on")
    p.add_argument("--eval-n", type=int, default=0, help="evaluate on at most this many cases (0: all)")
    p.add_argument("--skip-eval", action="store_true")
    p.add_argument("--threads", type=int)
    p.add_argument("--fresh", action="store_true", help="forget the recorded stages (the data and checkpoints stay)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    from rich.console import Console
    from rich.table import Table

    from ..finetune.__main__ import RichProgress

    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    console = Console(stderr=True)
    bar = RichProgress(console)
    try:
        with bar.live():
            report = run(args, progress=bar)
    except TinyAgentError as exc:
        console.print(f"[red]error:[/] {exc}")
        console.print("Fix the problem and run the same command again: finished stages are kept.")
        return 1
    except KeyboardInterrupt:
        console.print("[yellow]interrupted; run the same command again to resume[/]")
        return 130
    table = Table(title="planning accuracy")
    for column in ("model", "DAG success", "strict success", "s/request"):
        table.add_column(column)
    rows = [("student before", report.get("eval_before"))]
    rows += [(f"tuned ({k})", v) for k, v in (report.get("eval_after") or {}).items()]
    for name, acc in rows:
        if acc and acc.get("n"):
            table.add_row(name, f"{acc['dag_success']:.1%}", f"{acc['strict_success']:.1%}",
                          f"{acc['mean_latency_s']:.2f}")
    console.print(table)
    console.print(f"Report: {Path(args.work) / 'report.md'}; use the model with Agent(model={args.name!r})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
