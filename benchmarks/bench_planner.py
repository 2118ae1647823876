"""Planner accuracy and latency on the functions eval set, per catalog model.

    python benchmarks/bench_planner.py --models qwen2.5-coder-1.5b,qwen2.5-coder-0.5b [--limit N] [--split test]

Writes benchmarks/results/planner.json: per model, DAG and strict success, latency p50/p95, prompt tokens, and the
failures (for error analysis).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from tinyagent import Agent, Example, Plan
from tinyagent.errors import PlanParseError, PlanValidationError, TinyAgentError
from tinyagent.functions import FunctionsSettings, builtin_tools
from tinyagent.models import LlamaCppModel
from tinyagent.routing import AlwaysLocal, Router
from tinyagent.scoring import EvalCase, dag_success, load_evalset, strict_success

RESULTS = Path(__file__).parent / "results"


def examples_from(cases: list[EvalCase], k: int) -> list[Example]:
    """A small, diverse set of train examples: one per category, multi-step first."""
    by_cat: dict[str, EvalCase] = {}
    for case in sorted(cases, key=lambda c: -len(c.calls)):
        by_cat.setdefault(case.category or "", case)
    chosen = sorted(by_cat.values(), key=lambda c: -len(c.calls))[:k]
    return [Example(c.query, Plan.from_json(c.calls, answer=c.answer), c.today) for c in chosen]


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    idx = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[idx]


async def evaluate(model_name: str, cases: list[EvalCase], examples: list[Example], data_dir: Path,
                   retriever: Any = None, **settings: Any) -> dict[str, Any]:
    model = LlamaCppModel(model_name, n_threads=int(os.environ.get("BENCH_THREADS", "2")))
    tools = builtin_tools(FunctionsSettings(data_dir=data_dir))
    # A local-only router that asks for log-probabilities: the rows then double as the routing benchmark's local
    # records (bench_routing.py --local-from planner.json), with the same prompt and code path.
    router = Router(model, None, AlwaysLocal(), wants_logprobs=True)
    agent = Agent(tools, router=router, examples=examples, retriever=retriever, **settings)
    tool_map = {t.name: t for t in tools}
    rows = []
    await agent.plan("warm up the prompt cache", today=cases[0].today)
    for case in cases:
        started = time.perf_counter()
        parse_failed = validation_failed = False
        try:
            res = await agent.plan(case.query, today=case.today)
            calls = res.plan.to_json()
            err = None
        except TinyAgentError as exc:
            res, calls, err = None, [], str(exc)
            parse_failed, validation_failed = isinstance(exc, PlanParseError), isinstance(exc, PlanValidationError)
        elapsed = time.perf_counter() - started
        dag = dag_success(calls, list(case.calls))
        strict = strict_success(calls, list(case.calls), case.key_args, tool_map) if dag else False
        rows.append({"id": case.id, "category": case.category, "dag": dag, "strict": strict, "latency_s": elapsed,
                     "plan_s": res.elapsed_s if res else None, "no_tool_prob": res.no_tool_prob if res else None,
                     "stop_probs": list(res.stop_probs) if res else [],
                     "prompt_tokens": res.prompt_tokens if res else 0,
                     "tools_offered": len(res.tools_offered) if res else 0,
                     "pred": calls, "gold": list(case.calls), "error": err, "query": case.query,
                     "mean_logprob": res.mean_logprob if res else None,
                     "example_disagreement": res.example_disagreement if res else False,
                     "parse_failed": parse_failed, "validation_failed": validation_failed,
                     "input_tokens": res.usage.input_tokens if res else 0,
                     "output_tokens": res.usage.output_tokens if res else 0})
        print(f"{model_name} {case.id} dag={dag} strict={strict} {elapsed:.2f}s", file=sys.stderr)
    await model.aclose()
    lat = [r["latency_s"] for r in rows]
    return {
        "n": len(rows),
        "dag_success": sum(r["dag"] for r in rows) / len(rows),
        "strict_success": sum(r["strict"] for r in rows) / len(rows),
        "latency_s_p50": percentile(lat, 0.5),
        "latency_s_p95": percentile(lat, 0.95),
        "latency_s_mean": statistics.fmean(lat),
        "prompt_tokens_mean": statistics.fmean(r["prompt_tokens"] for r in rows),
        "failures": [r for r in rows if not r["strict"]],
        "rows": [{k: v for k, v in r.items() if k not in ("gold", "query")} for r in rows],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="qwen2.5-coder-1.5b,qwen2.5-coder-0.5b")
    ap.add_argument("--split", default="test")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--examples", type=int, default=4)
    ap.add_argument("--example-pool", action="store_true", default=True,
                    help="give the agent the whole train split; it picks the most similar examples per request")
    ap.add_argument("--static-examples", dest="example_pool", action="store_false")
    ap.add_argument("--max-examples", type=int, default=None,
                    help="AgentSettings.max_examples: examples per request from the pool (default: the agent's)")
    ap.add_argument("--retriever", choices=("none", "builtin"), default="none",
                    help="none: every tool in the prompt (the agent's default); builtin: the built-in library's "
                         "retriever chooses the tools and examples per request")
    ap.add_argument("--output", default=str(RESULTS / "planner.json"))
    args = ap.parse_args()
    settings = {} if args.max_examples is None else {"max_examples": args.max_examples}
    cases = load_evalset(args.split)
    if args.limit:
        cases = cases[: args.limit]
    train = load_evalset("train")
    examples = ([Example(c.query, Plan.from_json(c.calls, answer=c.answer), c.today) for c in train]
                if args.example_pool else examples_from(train, args.examples))
    import tempfile

    from tinyagent.functions import init_demo

    # Models run one at a time and merge into the file, so a run of one model keeps the others' figures.
    path = Path(args.output)
    out: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    out.setdefault("models", {})
    out.update(split=args.split, examples=len(examples),
               command="python benchmarks/bench_planner.py --models " + args.models)
    with tempfile.TemporaryDirectory() as tmp:
        init_demo(Path(tmp))
        for name in args.models.split(","):
            retriever = None
            if args.retriever == "builtin":
                from tinyagent.functions import builtin_retriever

                retriever = builtin_retriever()
            result = asyncio.run(evaluate(name, cases, examples, Path(tmp), retriever=retriever, **settings))
            result["settings"] = {**settings, "retriever": args.retriever}
            result["machine"] = machine()
            result["examples"] = "per-request pool" if args.example_pool else f"{args.examples} fixed"
            out["models"][name] = result
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(out, indent=2, default=str))
    for name, r in out["models"].items():
        print(f"{name}: dag {r['dag_success']:.3f} strict {r['strict_success']:.3f} "
              f"p50 {r['latency_s_p50']:.2f}s p95 {r['latency_s_p95']:.2f}s "
              f"prompt {r.get('prompt_tokens_mean', 0):.0f} tok")


def machine() -> dict[str, Any]:
    threads = int(os.environ.get("BENCH_THREADS", "2"))
    return {"cores": os.cpu_count(), "load_1m": os.getloadavg()[0], "threads": threads}


if __name__ == "__main__":
    main()
