"""Fit the planner's no-tool floor (``AgentSettings.no_tool_threshold``) on held-out data.

Small planners call a loosely related tool rather than none ("Hi there!" -> get_today). The agent measures the
model's probability of ``join`` as the first step of every plan; this script records that probability on requests
that need no tool and on requests that do, and picks the floor with the best balanced accuracy of the decision
"call a tool or not". Nothing here is evaluated on the sets the README reports: it uses the functions *train* split
(leave-one-out examples) and BFCL cases *after* the first ``--bfcl-skip`` of each category (bench_bfcl.py scores
the first 15).

    python benchmarks/calibrate_no_tool.py [--model qwen2.5-coder-1.5b] [--bfcl-skip 15 --bfcl-n 12]

Writes benchmarks/results/no_tool.json (records, the grid and the chosen floor).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from tinyagent import Agent, Example, Plan
from tinyagent._tools import ToolRegistry
from tinyagent.errors import TinyAgentError
from tinyagent.evals.bfcl import DEFAULT_CATEGORIES, ensure_data, load_cases
from tinyagent.functions import FunctionsSettings, builtin_tools
from tinyagent.models import LlamaCppModel
from tinyagent.scoring import load_evalset

RESULTS = Path(__file__).parent / "results"


async def record(agent: Agent, query: str, today: dt.date, gold: list[str], source: str, case_id: str,
                 needs_no_tool: bool) -> dict[str, Any]:
    """Plan ``query`` (greedy, floors only measured) and keep the probabilities of ``join`` along the way.

    ``stop`` holds ``(p, stopped_here, should_stop)`` at each later step whose preceding calls are all in the gold
    plan (as a multiset: parallel calls come in any order); after a wrong call the right answer is unknown.
    """
    started = time.perf_counter()
    try:
        res = await agent.plan(query, today=today)
    except TinyAgentError as exc:
        return {"source": source, "id": case_id, "needs_no_tool": needs_no_tool, "error": str(exc)[:200]}
    names = [c.name for c in res.plan.calls]
    stop = []
    for k, p in enumerate(res.stop_probs[: len(names)], start=1):
        if Counter(names[:k]) - Counter(gold):
            break
        stop.append((round(p, 5), k == len(names), len(gold) == k))
    return {"source": source, "id": case_id, "needs_no_tool": needs_no_tool, "p_join": res.no_tool_prob,
            "greedy_join": not names, "calls": names, "gold": gold, "stop": stop,
            "plan_s": round(time.perf_counter() - started, 3)}


def fit(records: list[dict[str, Any]], items: Any) -> dict[str, Any]:
    """The floor with the best balanced accuracy (ties: the higher floor, which changes fewer plans).

    ``items(record)`` yields ``(probability, greedy_took_join, join_is_right)`` decisions of one record.
    """
    grid = [round(0.01 * i, 2) for i in range(1, 51)] + [1.01]
    rows = []
    decisions = [(r["source"], d) for r in records for d in items(r)]
    for t in grid:
        pos = [(src, p, g) for src, (p, g, right) in decisions if right]
        neg = [(src, p, g) for src, (p, g, right) in decisions if not right]
        tpr = sum(g or p >= t for _, p, g in pos) / max(1, len(pos))
        tnr = sum(not (g or p >= t) for _, p, g in neg) / max(1, len(neg))
        by_source = {}
        for source in sorted({s for s, _ in decisions}):
            mine = [d for s, d in decisions if s == source]
            by_source[source] = round(sum((g or p >= t) == right for p, g, right in mine) / len(mine), 3)
        rows.append({"threshold": t, "join_recall": round(tpr, 3), "call_recall": round(tnr, 3),
                     "balanced_accuracy": round((tpr + tnr) / 2, 4), "accuracy_by_source": by_source,
                     "n_join": len(pos), "n_call": len(neg)})
    best = max(rows, key=lambda r: (r["balanced_accuracy"], r["threshold"]))
    return {"threshold": best["threshold"], "best": best, "greedy": rows[-1], "grid": rows}


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--tool-every", type=int, default=3, help="every k-th train request that needs a tool")
    ap.add_argument("--bfcl-skip", type=int, default=15)
    ap.add_argument("--bfcl-n", type=int, default=12)
    ap.add_argument("--output", default=str(RESULTS / "no_tool.json"))
    args = ap.parse_args()

    model = LlamaCppModel(args.model, n_threads=int(os.environ.get("BENCH_THREADS", "2")))
    records: list[dict[str, Any]] = []
    train = load_evalset("train")
    chosen = [c for c in train if not c.calls] + [c for c in train if c.calls][::args.tool_every]
    with tempfile.TemporaryDirectory() as data:
        tools = builtin_tools(FunctionsSettings(data_dir=Path(data)))
        for case in chosen:
            pool = [Example(c.query, Plan.from_json(c.calls, answer=c.answer), c.today) for c in train if c is not case]
            agent = Agent(tools, model=model, examples=pool)
            rec = await record(agent, case.query, case.today, [c["name"] for c in case.calls], "functions-train",
                               case.id, not case.calls)
            records.append(rec)
            print(json.dumps(rec), file=sys.stderr)
    bfcl = load_cases(ensure_data(), categories=DEFAULT_CATEGORIES, limit=args.bfcl_skip + args.bfcl_n)
    seen: dict[str, int] = {}
    for case in bfcl:
        seen[case.category] = seen.get(case.category, 0) + 1
        if seen[case.category] <= args.bfcl_skip:
            continue
        agent = Agent(tools=ToolRegistry.from_openai(case.functions), model=model)
        gold = [next(iter(answer)) for answer in case.ground_truth]
        rec = await record(agent, case.question, dt.date(2026, 11, 30), gold, "bfcl-heldout", case.id,
                           case.expects_no_call)
        records.append(rec)
        print(json.dumps(rec), file=sys.stderr)
    await model.aclose()
    ok = [r for r in records if "error" not in r]
    no_tool = fit(ok, lambda r: [(r["p_join"], r["greedy_join"], r["needs_no_tool"])])
    stop = fit(ok, lambda r: [tuple(item) for item in r["stop"]])
    result = {"command": "python benchmarks/calibrate_no_tool.py " + " ".join(sys.argv[1:]),
              "model": args.model, "n": len(records), "errors": len(records) - len(ok),
              "no_tool": no_tool, "stop": stop, "records": records}
    Path(args.output).write_text(json.dumps(result, indent=1))
    summary = {name: {k: part[k] for k in ("threshold", "best", "greedy")} for name, part in
               (("no_tool", no_tool), ("stop", stop))}
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
