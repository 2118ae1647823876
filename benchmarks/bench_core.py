"""Core benchmarks: first dispatch, parallel speedup, vs a sequential loop, prefix-cache reuse.

    python benchmarks/bench_core.py [--model qwen2.5-coder-1.5b] [--queries 6]

Writes benchmarks/results/core.json, merging in planner.json (bench_planner.py) and bfcl.json (bench_bfcl.py) when
they exist. Run it on an otherwise idle machine: llama.cpp threads slow down 5-20x when another process takes a core.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tinyagent import Agent, Example, ToolStarted, tool
from tinyagent._grammar import GrammarOptions, plan_grammar
from tinyagent._plan import END_OF_PLAN
from tinyagent._plan_parser import parse_plan
from tinyagent._prompts import build_planner_messages, format_observation
from tinyagent.functions import FunctionsSettings, builtin_examples, builtin_tools, init_demo
from tinyagent.models import LlamaCppModel, ModelRequest, ScriptedModel
from tinyagent.scoring import load_evalset

RESULTS = Path(__file__).parent / "results"
TODAY = dt.date(2026, 12, 1)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def allow_all(_: Any) -> bool:
    return True


def multi_call_queries(n: int) -> list[str]:
    cases = [c for c in load_evalset("test") if len(c.calls) >= 2]
    return [c.query for c in cases[:n]]


async def first_dispatch(agent: Agent, queries: list[str]) -> dict[str, Any]:
    fractions = []
    for q in queries:
        started = time.perf_counter()
        first = None
        plan_s = None
        async for ev in agent.run_stream(q, today=TODAY):
            if isinstance(ev, ToolStarted) and first is None:
                first = time.perf_counter() - started
            if ev.type == "answer":
                plan_s = ev.result.timings.get("plan")  # type: ignore[union-attr]
        if first is not None and plan_s:
            fractions.append(first / plan_s)
    return {"fraction_median": statistics.median(fractions) if fractions else None, "n": len(fractions)}


# -- parallel speedup ------------------------------------------------------------------------------------------
async def parallel_speedup(n: int = 8, seconds: float = 0.5) -> dict[str, Any]:
    @tool
    def sleep_sync(seconds: float) -> float:
        """Sleep in a thread."""
        time.sleep(seconds)
        return seconds

    @tool
    async def sleep_async(seconds: float) -> float:
        """Sleep on the loop."""
        await asyncio.sleep(seconds)
        return seconds

    lines = [f"{i}. {'sleep_sync' if i % 2 else 'sleep_async'}(seconds={seconds})" for i in range(1, n + 1)]
    plan = "\n".join(lines) + f"\n{n + 1}. join()\n{END_OF_PLAN}"
    agent = Agent([sleep_sync, sleep_async], model=ScriptedModel([plan]), joiner="template")
    await agent.run("warm up")
    runs = []
    for _ in range(3):
        agent = Agent([sleep_sync, sleep_async], model=ScriptedModel([plan]), joiner="template")
        result = await agent.run("sleep")
        start = min(s.started_s for s in result.steps)
        end = max(s.started_s + s.elapsed_s for s in result.steps)
        runs.append(end - start)
    actual = statistics.median(runs)
    return {"steps": n, "step_seconds": seconds, "ideal_s": seconds, "sequential_s": n * seconds,
            "actual_s": actual, "speedup": n * seconds / actual, "speedup_vs_ideal": seconds / actual}


# -- vs a sequential one-call-per-turn loop ------------------------------------------------------------------------
SEQ_SYSTEM = (
    "You are an assistant that acts by calling tools, one call per turn. Reply with exactly one line "
    "`1. tool_name(arg=value, ...)` (values are JSON) to call a tool, or `1. join()` when the request is done. "
    "After each call you will see its result.\n"
)


async def sequential_loop(model: LlamaCppModel, tools: dict[str, Any], query: str, examples: list[Example]) -> float:
    """The baseline: the same model, one tool call per turn, then a final answer."""
    started = time.perf_counter()
    base = build_planner_messages(tools.values(), query, TODAY, examples)
    system = SEQ_SYSTEM + base[0]["content"]
    transcript: list[str] = []
    grammar = plan_grammar(tools, options=GrammarOptions(max_steps=1))
    for _ in range(8):
        user = base[1]["content"] + ("\n\nCalls so far:\n" + "\n".join(transcript) if transcript else "")
        user += "\nNext call (or join() if done):"
        c = await model.complete(ModelRequest(messages=[{"role": "system", "content": system},
                                                        {"role": "user", "content": user}],
                                              grammar=grammar, max_tokens=200, stop=(END_OF_PLAN,)))
        try:
            plan = parse_plan(c.text, tools)
        except Exception:  # noqa: BLE001 - a broken turn ends the baseline loop
            break
        if not plan.calls:
            break
        call = plan.calls[0]
        try:
            value = await tools[call.name].call(dict(call.args))
            transcript.append(f"{call.name}({json.dumps(dict(call.args))}) -> {format_observation(value)}")
        except Exception as exc:  # noqa: BLE001
            transcript.append(f"{call.name}(...) -> ERROR {exc}")
    await model.complete(ModelRequest(messages=[
        {"role": "system", "content": "Answer the user briefly from the results."},
        {"role": "user", "content": f"Request: {query}\nResults:\n" + "\n".join(transcript)}], max_tokens=160))
    return time.perf_counter() - started


async def vs_sequential(model_name: str, threads: int, agent: Agent, queries: list[str]) -> dict[str, Any]:
    """Both sides warm, each with a model instance of its own, so neither evicts the other's KV cache."""
    tools = dict(agent.registry.items())
    seq_model = LlamaCppModel(model_name, n_threads=threads)
    warm = "What is on my calendar today?"
    await agent.run(warm, today=TODAY)
    await sequential_loop(seq_model, tools, warm, agent._similar_examples(warm, tools))
    ours, base = [], []
    for q in queries:
        started = time.perf_counter()
        await agent.run(q, today=TODAY)
        ours.append(time.perf_counter() - started)
        base.append(await sequential_loop(seq_model, tools, q, agent._similar_examples(q, tools)))
        log(f"  vs-seq: ours {ours[-1]:.2f}s sequential {base[-1]:.2f}s  {q[:60]}")
    await seq_model.aclose()
    return {"ours_s_mean": statistics.fmean(ours), "sequential_s_mean": statistics.fmean(base),
            "speedup": statistics.fmean(base) / statistics.fmean(ours), "n": len(queries),
            "ours_s": ours, "sequential_s": base}


# -- prefix cache ----------------------------------------------------------------------------------------------
async def prefix_cache(model: LlamaCppModel, agent: Agent, queries: list[str]) -> dict[str, Any]:
    cold, warm = [], []
    for i, q in enumerate(queries):
        with model.lock:
            model.llama.reset()  # forget the KV cache: the whole prompt is processed again
        r1 = await agent.plan(q, today=TODAY)
        cold.append(r1.ttft_s)
        r2 = await agent.plan(queries[(i + 1) % len(queries)], today=TODAY)  # same static prefix, new request
        warm.append(r2.ttft_s)
    return {"ttft_cold_s_median": statistics.median(cold), "ttft_warm_s_median": statistics.median(warm),
            "ratio": statistics.median(cold) / statistics.median(warm)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--queries", type=int, default=6)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", default="", help="comma list: dispatch,parallel,sequential,prefix (merge: none, only "
                                              "merge the other results files)")
    args = ap.parse_args()
    only = set(args.only.split(",")) if args.only else {"dispatch", "parallel", "sequential", "prefix"}
    out_path = RESULTS / "core.json"
    out: dict[str, Any] = json.loads(out_path.read_text()) if out_path.exists() else {}
    out["model"] = args.model
    out["machine"] = {"cores": os.cpu_count(), "load_1m_at_start": round(os.getloadavg()[0], 2),
                      "n_threads": args.threads}
    queries = multi_call_queries(args.queries)

    async def run() -> None:
        if "parallel" in only:
            out["parallel"] = await parallel_speedup()
            out["parallel_speedup_vs_ideal"] = out["parallel"]["speedup_vs_ideal"]
            log(f"parallel: {out['parallel']}")
        if not only & {"dispatch", "sequential", "prefix"}:
            return
        model = LlamaCppModel(args.model, n_threads=args.threads)
        with tempfile.TemporaryDirectory() as tmp:
            init_demo(Path(tmp))
            tools = builtin_tools(FunctionsSettings(data_dir=Path(tmp)))
            agent = Agent(tools, model=model, examples=builtin_examples(), confirm=allow_all)
            await agent.plan("warm up", today=TODAY)
            if "prefix" in only:
                out["prefix"] = await prefix_cache(model, agent, queries)
                out["prefix_cache_ttft_ratio"] = out["prefix"]["ratio"]
                log(f"prefix: {out['prefix']}")
            if "dispatch" in only:
                out["dispatch"] = await first_dispatch(agent, queries)
                out["first_dispatch_fraction"] = out["dispatch"]["fraction_median"]
                log(f"dispatch: {out['dispatch']}")
            if "sequential" in only:
                out["sequential"] = await vs_sequential(args.model, args.threads, agent, queries)
                out["vs_sequential_speedup"] = out["sequential"]["speedup"]
                log(f"sequential: {out['sequential']}")
        await model.aclose()

    asyncio.run(run())
    out["machine"]["load_1m_at_end"] = round(os.getloadavg()[0], 2)
    # Decoding against raw llama.cpp comes from bench_latency.py (side by side, same prompt, model and threads);
    # it replaces the old sdk_overhead_ratio, which compared against llama-cpp-python's slow grammar sampling.
    for stale in ("overhead", "sdk_overhead_ratio"):
        out.pop(stale, None)
    latency = RESULTS / "latency.json"
    if latency.exists():
        data = json.loads(latency.read_text())
        for k in ("decode_ratio_vs_raw", "decode_ratio_greedy_vs_raw", "decode_ratio_llama_vs_raw", "same_plans"):
            if k in data:
                out[k] = data[k]
    for name, keys in (("planner.json", None), ("bfcl.json", ("bfcl", "bfcl_baselines"))):
        path = RESULTS / name
        if path.exists():
            data = json.loads(path.read_text())
            if keys:
                for k in keys:
                    if k in data:
                        out[k] = data[k]
            else:
                m = data.get("models", {}).get(args.model)
                if m:
                    out["planner"] = {k: v for k, v in m.items() if k != "failures"}
    RESULTS.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(out, indent=2))
    print(json.dumps({k: v for k, v in out.items() if not isinstance(v, dict)}, indent=2))


if __name__ == "__main__":
    main()
