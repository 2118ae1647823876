"""BFCL accuracy per category: tinyagent's planner against plain llama-cpp-python tool calling, on the same model.

Three systems run the same cases with the same model file, greedy decoding and the same ``max_tokens``:

* ``tinyagent``: ``Agent.plan`` (grammar-constrained LLMCompiler-style plan; the calls are the prediction);
* ``chatml-function-calling``: llama-cpp-python's own tool-calling handler, ``tool_choice="auto"``;
* ``gguf-template``: the GGUF's own chat template with ``tools=``, read with a lenient JSON parser.

Usage (heavy: run it alone, under the shared lock)::

    flock /tmp/tinyagent-heavy.lock python benchmarks/bench_bfcl.py --limit 20 --models qwen2.5-coder-1.5b

The default categories are the eight of the held-out score (the five single-turn ones plus live_simple,
live_multiple and live_irrelevance), on even-indexed cases only (``--index-parity even``): odd-indexed cases are
kept for judging and never loaded unless asked for.

Writes ``benchmarks/results/bfcl.json``: ``{"model", "limit", "bfcl": {category: accuracy},
"bfcl_baselines": {baseline: {category: accuracy}}, "seconds", ...}``, accuracies from 0 to 1. The target is that
tinyagent beats the better baseline by at least 20 points per category.
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

from tinyagent import AgentSettings
from tinyagent.evals import bfcl
from tinyagent.evals.baselines import BASELINES, LlamaToolBaseline
from tinyagent.models import ModelCatalog, load_model

RESULTS = Path(__file__).parent / "results" / "bfcl.json"
TODAY = dt.date(2026, 11, 30)
TARGET_POINTS = 20.0


def progress(system: str) -> Any:
    def show(result: bfcl.CaseResult) -> None:
        mark = "ok " if result.correct else "BAD"
        print(f"[{system}] {mark} {result.id:<24} {result.elapsed_s:5.1f}s {result.reason[:110]}",
              file=sys.stderr, flush=True)

    return show


def run_sdk(name: str, cases: list[bfcl.BfclCase], n_threads: int,
            no_tool_check: str = "auto") -> tuple[bfcl.Report, dict[str, str]]:
    model = load_model(name, n_threads=n_threads)
    predictor = bfcl.SdkPredictor(model, today=TODAY,
                                  agent_options={"settings": AgentSettings(no_tool_check=no_tool_check)})

    async def go() -> bfcl.Report:
        try:
            return await bfcl.arun_bfcl(predictor, cases, system="tinyagent", on_result=progress("tinyagent"))
        finally:
            await model.aclose()

    return asyncio.run(go()), predictor.plan_texts


def run_baseline(name: str, mode: Any, cases: list[bfcl.BfclCase], n_threads: int,
                 max_tokens: int) -> tuple[bfcl.Report, dict[str, str]]:
    baseline = LlamaToolBaseline(ModelCatalog().path(name), mode, max_tokens=max_tokens, n_threads=n_threads)
    replies: dict[str, str] = {}

    def predict(case: bfcl.BfclCase) -> list[dict[str, Any]]:
        calls = baseline(case)
        replies[case.id] = baseline.last_reply
        return calls

    try:
        return bfcl.run_bfcl(predict, cases, system=mode, on_result=progress(mode)), replies
    finally:
        baseline.close()


def details(report: bfcl.Report, texts: dict[str, str]) -> list[dict[str, Any]]:
    return [
        {"id": r.id, "correct": r.correct, "reason": r.reason[:300], "calls": r.to_json()["calls"],
         "output": texts.get(r.id, "")[:600], "elapsed_s": round(r.elapsed_s, 2)}
        for r in report.results
    ]


def bench_model(name: str, cases: list[bfcl.BfclCase], systems: list[str], n_threads: int,
                max_tokens: int, details_file: Path | None, checkpoint: Any = None,
                no_tool_check: str = "auto") -> dict[str, Any]:
    start = time.perf_counter()
    out: dict[str, Any] = {"bfcl": {}, "bfcl_baselines": {}, "seconds_by_system": {}, "mean_s_per_case": {}}
    sdk_failures: list[dict[str, Any]] = []
    all_details: dict[str, Any] = {}
    for system in systems:
        began = time.perf_counter()
        if system == "tinyagent":
            report, texts = run_sdk(name, cases, n_threads, no_tool_check)
            out["bfcl"] = report.accuracy()
            sdk_failures = [d for d in details(report, texts) if not d["correct"]]
        else:
            report, texts = run_baseline(name, system, cases, n_threads, max_tokens)
            out["bfcl_baselines"][system] = report.accuracy()
        all_details[system] = details(report, texts)
        if details_file is not None:
            details_file.parent.mkdir(parents=True, exist_ok=True)
            details_file.write_text(json.dumps(all_details, indent=1, ensure_ascii=False))
        out["seconds_by_system"][system] = round(time.perf_counter() - began, 1)
        out["mean_s_per_case"][system] = round((time.perf_counter() - began) / max(1, len(cases)), 2)
        print(f"\n{system} on {name}\n{report.format_table()}\n", file=sys.stderr, flush=True)
        out["sdk_failures"] = sdk_failures
        if checkpoint is not None:
            checkpoint(out)  # a long run that is interrupted keeps the systems it finished
    if out["bfcl"] and out["bfcl_baselines"]:
        best = {c: max(b.get(c, 0.0) for b in out["bfcl_baselines"].values()) for c in out["bfcl"]}
        out["best_baseline"] = best
        out["margin_points"] = {c: round(100 * (out["bfcl"][c] - best[c]), 1) for c in out["bfcl"]}
        out["target_met"] = {c: out["margin_points"][c] >= TARGET_POINTS for c in out["bfcl"]}
    out["sdk_failures"] = sdk_failures
    out["seconds"] = round(time.perf_counter() - start, 1)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=20, help="cases per category (default 20)")
    parser.add_argument("--models", default="qwen2.5-coder-1.5b", help="comma-separated catalog names")
    parser.add_argument("--categories", default=",".join((*bfcl.DEFAULT_CATEGORIES, *bfcl.LIVE_CATEGORIES)))
    parser.add_argument("--index-parity", choices=bfcl.PARITIES, default="even",
                        help="cases whose index (first number in the id) is even, odd or all (default even)")
    parser.add_argument("--systems", default=",".join(("tinyagent", *BASELINES)))
    parser.add_argument("--data-dir", default=None, help="bfcl-eval wheel or folder (default: download once)")
    parser.add_argument("--n-threads", type=int, default=2)
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--details", type=Path, default=None, help="write every case's prediction here (JSON)")
    parser.add_argument("--no-tool-check", choices=("auto", "measure", "off"), default="auto",
                        help="AgentSettings.no_tool_check for the tinyagent system (default auto)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)

    data = args.data_dir or bfcl.ensure_data()
    cases = bfcl.load_cases(data, args.categories.split(","), args.limit, parity=args.index_parity)
    systems = [s for s in args.systems.split(",") if s]
    max_tokens = AgentSettings().planner_max_tokens
    models = [m for m in args.models.split(",") if m]
    start = time.perf_counter()
    load_before = os.getloadavg()
    runs: dict[str, dict[str, Any]] = {}
    # Systems run separately (e.g. the baselines once, the SDK after a prompt change) merge into one file when the
    # model, limit and categories match.
    previous: dict[str, Any] = {}
    if args.output.exists():
        old = json.loads(args.output.read_text())
        if (old.get("model"), old.get("limit"), old.get("categories"), old.get("index_parity", "all")) == (
                models[0], args.limit, args.categories.split(","), args.index_parity):
            previous = old

    def summary() -> dict[str, Any]:
        first = runs[models[0]]
        sdk = first["bfcl"] or previous.get("bfcl", {})
        baselines = {**previous.get("bfcl_baselines", {}), **first["bfcl_baselines"]}
        best = {c: max(b.get(c, 0.0) for b in baselines.values()) for c in sdk} if sdk and baselines else {}
        margin = {c: round(100 * (sdk[c] - best[c]), 1) for c in best}
        result: dict[str, Any] = {
            "model": models[0],
            "limit": args.limit,
            "categories": args.categories.split(","),
            "index_parity": args.index_parity,
            "bfcl": sdk,
            "bfcl_baselines": baselines,
            "best_baseline": best,
            "margin_points": margin,
            "target_points": TARGET_POINTS,
            "target_met": {c: m >= TARGET_POINTS for c, m in margin.items()},
            "seconds": round(time.perf_counter() - start, 1),
            "load": {"before": load_before, "after": os.getloadavg()},
            "seconds_by_system": {**previous.get("seconds_by_system", {}), **first["seconds_by_system"]},
            "mean_s_per_case": {**previous.get("mean_s_per_case", {}), **first["mean_s_per_case"]},
            "settings": {"n_threads": args.n_threads, "max_tokens": max_tokens, "greedy": True,
                         "today": TODAY.isoformat(), "bfcl_eval": bfcl.BFCL_VERSION,
                         "no_tool_check": args.no_tool_check,
                         "date": dt.date.today().isoformat()},
            "complete": all(len(r["seconds_by_system"]) == len(systems) for r in runs.values())
            and len(runs) == len(models),
            "sdk_failures": first.get("sdk_failures") or previous.get("sdk_failures", []),
        }
        if len(models) > 1:
            result["by_model"] = {m: {k: v for k, v in r.items() if k != "sdk_failures"} for m, r in runs.items()}
        return result

    def write() -> None:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(summary(), indent=2, ensure_ascii=False) + "\n")

    for m in models:
        def checkpoint(partial: dict[str, Any], m: str = m) -> None:
            runs[m] = partial
            write()

        runs[m] = bench_model(m, cases, systems, args.n_threads, max_tokens, args.details, checkpoint,
                              args.no_tool_check)
    write()
    result = summary()
    print(json.dumps({k: result[k] for k in ("model", "bfcl", "bfcl_baselines", "margin_points", "seconds")}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
