"""Planning on registries the team did not write: BFCL multi-turn API suites and BFCL live, even-indexed cases only.

Registries (``--registries``, comma-separated):

* ``mt_<suite>`` for a BFCL multi-turn suite (``mt_gorilla_file_system``, ``mt_vehicle_control``, ``mt_trading_bot``,
  ``mt_travel_booking``, ``mt_message_api``, ``mt_posting_api``, ``mt_ticket_api``, ``mt_math_api``): one request
  per even-indexed multi-turn base case that involves the suite (its first user turn), the gold plan being BFCL's
  ground-truth calls for that turn; scored with the project's DAG and strict metrics.
* ``bfcl_live``: even-indexed live_simple / live_multiple / live_irrelevance cases, scored with BFCL's AST checker
  (``strict``); ``dag`` is "the same function names as the answer".

Usage (heavy: run it alone, under the shared lock)::

    flock /tmp/tinyagent-heavy.lock python benchmarks/bench_foreign.py
    python benchmarks/bench_foreign.py --model smollm2-135m --limit 2 --registries mt_gorilla_file_system,bfcl_live
    python benchmarks/bench_foreign.py --distill            # also the distillation row (about an hour)
    python benchmarks/bench_foreign.py --distill-only --distill-n 40 --distill-steps 16 --distill-batch 1 \
        --distill-eval 10
    python benchmarks/bench_foreign.py --auto-examples --limit 6   # without vs with automatic examples

``--auto-examples`` plans every case twice, without and with the automatic examples of
:func:`tinyagent.finetune.build_examples` (built per case's tool set into a scratch cache, outside the timed part),
and writes ``benchmarks/results/foreign_autoex.json``: ``{"without": {registry: row}, "with": {...},
"build_s": {...}, "examples": {...}}``.

Writes ``benchmarks/results/foreign.json``: ``{"registries": {name: {"dag", "strict", "no_tool", "p50_s", "p95_s",
"prompt_tokens", "n", ...}}, "distillation": {"registry", "base_acc", "tuned_acc", "teacher_acc", "n", "status"},
"machine": {...}, "settings": {...}, "cases": {name: [...]}}``. Rates are 0 to 1; ``no_tool`` is None for a
registry with no no-call cases. Odd-indexed cases are never loaded (they are kept for judging).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from tinyagent.evals import (
    ForeignCase,
    bfcl,
    default_agent_factory,
    live_cases,
    load_multi_turn_cases,
    plan_live,
    plan_multi_turn,
    suite_functions,
    summarize,
)
from tinyagent.models import load_model

RESULTS = Path(__file__).parent / "results" / "foreign.json"
TODAY = dt.date(2026, 11, 30)
DEFAULT_REGISTRIES = ("mt_gorilla_file_system", "mt_vehicle_control", "mt_trading_bot", "mt_travel_booking",
                      "bfcl_live")
LIVE = "bfcl_live"
DISTILL_SUITE = "gorilla_file_system"


def machine(stage: str, into: dict[str, Any]) -> None:
    load = os.getloadavg()
    into[f"loadavg_{stage}"] = [round(x, 2) for x in load]
    into["nproc"] = os.cpu_count()


def auto_example_factory(model: Any, root: Path, stats: dict[str, list[float]],
                         kinds: list[str] | None = None) -> Any:
    """Agents whose examples are built (and cached under ``root``) for each case's tool set."""
    from tinyagent import Agent, ToolRegistry
    from tinyagent.finetune import build_examples

    def make(functions: Any) -> Any:
        registry = ToolRegistry.from_openai(functions)
        built = build_examples(registry, root=root, kinds=kinds)
        stats.setdefault("build_s", []).append(built.seconds)
        stats.setdefault("examples", []).append(len(built.examples))
        return Agent(tools=registry, model=model, examples=built.examples, auto_examples=False)

    return make


def run_registries(model_name: str, names: list[str], data: Path, limit: int, threads: int,
                   auto_root: Path | None = None, stats: dict[str, list[float]] | None = None,
                   kinds: list[str] | None = None) -> dict[str, Any]:
    model = load_model(model_name, n_threads=threads)
    if auto_root is not None:
        make_agent = auto_example_factory(model, auto_root, stats if stats is not None else {}, kinds)
    else:
        make_agent = default_agent_factory(model, auto_examples=False)
    rows: dict[str, list[dict[str, Any]]] = {}

    async def go() -> None:
        try:
            for name in names:
                if name == LIVE:
                    cases = live_cases(data, limit, parity="even")
                    rows[name] = await plan_live(cases, make_agent, model=model, today=TODAY, registry=name)
                else:
                    suite = name.removeprefix("mt_")
                    mt = load_multi_turn_cases(data, [suite], limit, parity="even", today=TODAY)
                    rows[name] = await plan_multi_turn(mt, make_agent, model=model, registry=name)
                print(f"{name}: {json.dumps(summarize(rows[name]))}", file=sys.stderr, flush=True)
        finally:
            await model.aclose()

    asyncio.run(go())
    return rows


def distill_cases(data: Path, suite: str) -> tuple[list[dict[str, Any]], list[ForeignCase]]:
    """The suite's own tools (OpenAI format) and its even-indexed requests whose gold calls use only those tools."""
    functions = suite_functions(data, suite)
    names = {str(f["name"]) for f in functions}
    cases = load_multi_turn_cases(data, [suite], None, parity="even", today=TODAY)
    held = [c for c in cases if c.case.calls and all(call["name"] in names for call in c.case.calls)]
    return [{"type": "function", "function": f} for f in functions], held


def run_distillation(data: Path, teacher: str, student: str, threads: int, work: Path, n: int = 200,
                     steps: int = -1, eval_n: int = 0, max_length: int = 2560, batch: int = 4) -> dict[str, Any]:
    """Distil the suite's tools with ``tinyagent.apps.finetune_on_device.run`` and score base, tuned and teacher
    on the same held-out requests (the first ``eval_n``, or all); ``n`` requests synthesised, ``steps`` training
    steps (-1: the pipeline's epochs)."""
    from tinyagent.apps.finetune_on_device import OnDeviceSettings, run
    from tinyagent.evals import planning_accuracy
    from tinyagent.models import ModelCatalog

    tools, held = distill_cases(data, DISTILL_SUITE)
    held = held[:eval_n] if eval_n else held
    work.mkdir(parents=True, exist_ok=True)
    tools_file, eval_file = work / "tools.json", work / "eval.jsonl"
    tools_file.write_text(json.dumps(tools, indent=1), encoding="utf-8")
    eval_file.write_text("".join(json.dumps(c.case.to_json()) + "\n" for c in held), encoding="utf-8")
    report = run(OnDeviceSettings(tools=str(tools_file), teacher=teacher, student=student, work=work / "run",
                                  eval_set=eval_file, threads=threads, n=n, steps=steps,
                                  max_length=max_length, train_batch=batch))
    from tinyagent import ToolRegistry

    teacher_acc = planning_accuracy(ModelCatalog().path(teacher), [c.case for c in held],
                                    list(ToolRegistry.from_openai(tools).values()), n_threads=threads)
    after = (report.get("eval_after") or {}).get("adapter") or {}
    return {"registry": f"mt_{DISTILL_SUITE}", "base_acc": (report.get("eval_before") or {}).get("dag_success"),
            "tuned_acc": after.get("dag_success"), "teacher_acc": teacher_acc.get("dag_success"), "n": len(held),
            "teacher": teacher, "student": student, "requests": n, "steps": steps, "max_length": max_length,
            "train_batch": batch, "status": "run",
            "report": str(work / "run" / "report.json")}


def compare_auto_examples(args: argparse.Namespace, names: list[str], data: Path) -> int:
    """Plan every case without, then with, automatic examples; write both summaries."""
    import tempfile

    info: dict[str, Any] = {}
    machine("before", info)
    start = time.perf_counter()
    without = {} if args.skip_without else run_registries(args.model, names, data, args.limit, args.threads)
    stats: dict[str, list[float]] = {}
    kinds = [k.strip() for k in args.auto_kinds.split(",") if k.strip()] if args.auto_kinds else None
    with tempfile.TemporaryDirectory(prefix="tinyagent-autoex-") as root:
        with_ex = run_registries(args.model, names, data, args.limit, args.threads, Path(root), stats, kinds)
    machine("after", info)
    output = args.output if args.output != RESULTS else RESULTS.with_name("foreign_autoex.json")
    result = {
        "without": {name: summarize(r) for name, r in without.items()},
        "with": {name: summarize(r) for name, r in with_ex.items()},
        "build_s": {"max": max(stats.get("build_s") or [0]), "mean": round(
            sum(stats.get("build_s") or [0]) / max(1, len(stats.get("build_s") or [])), 3)},
        "examples": {"min": min(stats.get("examples") or [0]), "max": max(stats.get("examples") or [0])},
        "machine": info,
        "settings": {"model": args.model, "limit": args.limit, "threads": args.threads, "parity": "even",
                     "today": TODAY.isoformat(), "bfcl_eval": bfcl.BFCL_VERSION, "date": dt.date.today().isoformat(),
                     "seconds": round(time.perf_counter() - start, 1), "auto_kinds": kinds},
        "cases": {"without": without, "with": with_ex},
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps({k: result[k] for k in ("without", "with", "build_s", "examples")}, indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="qwen2.5-coder-1.5b", help="planner (catalog name or .gguf)")
    parser.add_argument("--limit", type=int, default=30, help="cases per registry (default 30)")
    parser.add_argument("--registries", default=",".join(DEFAULT_REGISTRIES), help="comma-separated registries")
    parser.add_argument("--threads", type=int, default=2, help="llama.cpp threads")
    parser.add_argument("--data-dir", type=Path, default=None, help="bfcl-eval wheel or folder (default: download)")
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--distill", action="store_true",
                        help="also run the distillation row (finetune_on_device on mt_gorilla_file_system; ~1 h)")
    parser.add_argument("--distill-only", action="store_true",
                        help="only the distillation row; the registries' rows already in --output are kept")
    parser.add_argument("--distill-n", type=int, default=200, help="requests the teacher synthesises (default 200)")
    parser.add_argument("--distill-steps", type=int, default=-1, help="training steps (default: the epochs)")
    parser.add_argument("--distill-eval", type=int, default=0, help="held-out requests scored (default: all)")
    parser.add_argument("--distill-max-length", type=int, default=2560,
                        help="training sequence length (the suite's whole tool list is in each prompt)")
    parser.add_argument("--distill-batch", type=int, default=4, help="training sequences per step (default 4)")
    parser.add_argument("--teacher", default="qwen2.5-coder-1.5b")
    parser.add_argument("--student", default="qwen2.5-coder-0.5b")
    parser.add_argument("--work", type=Path, default=Path("tinyagent-foreign-distill"))
    parser.add_argument("--auto-examples", action="store_true",
                        help="compare without vs with automatic examples (writes results/foreign_autoex.json)")
    parser.add_argument("--auto-kinds", default="", help="with --auto-examples: only these kinds (comma-separated: "
                        "single,chain,fanout,no_tool; default all)")
    parser.add_argument("--skip-without", action="store_true", help="with --auto-examples: only the 'with' run")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    names = [n.strip() for n in args.registries.split(",") if n.strip()]
    data = args.data_dir or bfcl.ensure_data()
    if args.auto_examples:
        return compare_auto_examples(args, names, data)
    info: dict[str, Any] = {}
    machine("before", info)
    start = time.perf_counter()
    kept = json.loads(args.output.read_text(encoding="utf-8")) if args.distill_only and args.output.exists() else {}
    rows = kept.get("cases", {}) if args.distill_only else run_registries(args.model, names, data, args.limit,
                                                                           args.threads)
    distillation: dict[str, Any] = {"registry": f"mt_{DISTILL_SUITE}", "base_acc": None, "tuned_acc": None,
                                    "teacher_acc": None, "n": None,
                                    "status": "not run: pass --distill (about an hour on 2 cores)"}
    previous = json.loads(args.output.read_text(encoding="utf-8")) if args.output.exists() else {}
    if not (args.distill or args.distill_only) and previous.get("distillation", {}).get("base_acc") is not None:
        distillation = previous["distillation"]  # kept from the run that measured it (its settings say when)
    if args.distill or args.distill_only:
        distillation = run_distillation(data, args.teacher, args.student, args.threads, args.work, args.distill_n,
                                        args.distill_steps, args.distill_eval, args.distill_max_length,
                                        args.distill_batch)
    machine("after", info)
    result = {
        "registries": kept.get("registries", {}) if args.distill_only else
        {name: summarize(r) for name, r in rows.items()},
        "distillation": distillation,
        "machine": info,
        "settings": {"model": args.model, "limit": args.limit, "threads": args.threads, "parity": "even",
                     "today": TODAY.isoformat(), "bfcl_eval": bfcl.BFCL_VERSION, "date": dt.date.today().isoformat(),
                     "seconds": round(time.perf_counter() - start, 1)},
        "cases": rows,
    }
    if not (args.distill or args.distill_only) and "distillation_run" in previous.get("settings", {}):
        result["settings"]["distillation_run"] = previous["settings"]["distillation_run"]
    if args.distill_only:  # the registries' rows, machine and settings stay those of the run that measured them
        result["machine"] = kept.get("machine", {})
        result["settings"] = {**kept.get("settings", {}), "distillation_run": {
            "machine": info, "date": dt.date.today().isoformat(), "threads": args.threads,
            "seconds": round(time.perf_counter() - start, 1)}}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps({"registries": result["registries"], "distillation": distillation}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
