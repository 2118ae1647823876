"""Latency side by side in one process: plan decoding against raw llama.cpp, plan time, the demo run, the joiner, RSS.

    python benchmarks/bench_latency.py [--model qwen2.5-coder-1.5b] [--threads 2] [--limit 12]

Writes benchmarks/results/latency.json. Every figure is measured in this one run, on this machine, with the load
recorded before and after: a second llama.cpp process on a 2-core machine slows both by 5-20x, so run it alone.

* ``decode``: for each request, the planner's real request is captured, then decoded (its KV prefix warm) by
  the raw floor (a tight llama_decode + greedy-sampler loop, no grammar, no Python per-token work beyond the call)
  and by the SDK's decoders: ``speculative`` (the default), ``greedy`` (the same loop, one token per pass) and
  ``llama`` (llama-cpp-python's completion loop with the GBNF grammar). Decode tokens/s excludes the prompt.
  ``decode_ratio_vs_raw`` = SDK (speculative) tokens/s / raw tokens/s, medians over requests; ``same_plans``
  counts the requests whose speculative plan equals the greedy one.
* ``plan``: ``Agent.plan`` wall time per request, p50/p95, on the functions eval set (test split, with its examples)
  and on a foreign registry (a BFCL multi-turn API suite, no examples).
  Each set's agent is warmed first, as ``tinyagent warm [--tools T.json]`` does at install (``warm_s``,
  ``warm_tokens``: the rules and, with every tool offered, the tool list); ``first_s`` is the first request.
* ``run``: the ``tinyagent`` command's ``run`` on the README's demo request, in a new process each: cold (the first
  run after the README's install command, ``demo init`` and ``tinyagent warm``: ``run_cold_s``, with
  ``install_warm_s`` for the warm step) and warm (the next run: ``run_warm_s``), with the resident worker that
  ``warm`` leaves behind (the default, ``tinyagent.apps.resident``); the same three with every command in its own
  process (``TINYAGENT_KEEP_ALIVE=0``): ``*_no_worker``; and without the warm step, nothing saved yet:
  ``run_cold_unwarmed_s``.
* ``joiner_s``: the answer step of that run with the default joiner (``auto``: a template answer for an action plan
  whose steps all succeeded), in process; ``joiner_llm_s`` / ``joiner_template_s`` and the first words' delay too.
  ``joiner_llm_prompt_tokens_at_join``: the prompt tokens the LLM joiner's own request evaluated (the instruction
  and the results were evaluated ahead as they became known, see ``tinyagent.run._warm``); its first-words delay
  still holds that evaluation whenever the steps finish before the plan does (the demo's tools take milliseconds).
* ``rss_mb``: peak RSS of a process that loads the planner and plans one request (default and fast planner).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tinyagent import Agent, Tool
from tinyagent.evals import load_evalset
from tinyagent.functions import FunctionsSettings, builtin_examples, builtin_tools, init_demo
from tinyagent.models import Completion, LlamaCppModel, ModelRequest, free_cores, on_llama_thread

RESULTS = Path(__file__).parent / "results"
TODAY = dt.date(2026, 12, 1)
DEMO_QUERY = ("Email Sid the notes from today's standup and put a 30 minute follow-up on my calendar for tomorrow "
              "at 10")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def machine() -> dict[str, Any]:
    return {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
            "loadavg": [round(x, 2) for x in os.getloadavg()], "free_cores": free_cores(),
            "python": platform.python_version()}


# -- the raw floor -------------------------------------------------------------------------------------------------
def raw_decode(llm: Any, prompt: list[int], n: int) -> float:
    """Tokens/s of plain greedy decoding: llama_decode one token at a time, llama.cpp's own greedy sampler."""
    import llama_cpp

    from tinyagent.models.llama._decode import _Sequence

    seq = _Sequence(llm)
    seq.start(prompt)
    sampler = llama_cpp.llama_sampler_init_greedy()
    ctx = llm._ctx.ctx
    batch = llama_cpp.llama_batch_get_one
    try:
        token = llama_cpp.llama_sampler_sample(sampler, ctx, -1)
        start = time.perf_counter()
        for _ in range(n - 1):
            arr = (llama_cpp.llama_token * 1)(token)
            if llama_cpp.llama_decode(ctx, batch(arr, 1)) != 0:
                raise RuntimeError("llama_decode failed")
            token = llama_cpp.llama_sampler_sample(sampler, ctx, -1)
        elapsed = time.perf_counter() - start
    finally:
        llama_cpp.llama_sampler_free(sampler)
        llm.n_tokens = len(prompt)  # the raw loop bypassed llama-cpp-python's bookkeeping: forget its tokens
        llm._ctx.kv_cache_seq_rm(-1, len(prompt), -1)
        llm._requires_eval = True
    return (n - 1) / elapsed


def capture_request(agent: Agent, model: LlamaCppModel, query: str) -> ModelRequest:
    """The planner's real request for ``query`` (the model answers ``join()`` so nothing runs)."""
    captured: list[ModelRequest] = []
    original = model.stream

    async def spy(request: ModelRequest) -> Any:
        captured.append(request)
        yield Completion(text="1. join()\n", model=model.name)

    model.stream = spy  # type: ignore[method-assign]
    try:
        agent.plan_sync(query, today=TODAY)
    finally:
        model.stream = original  # type: ignore[method-assign]
    return captured[0]


def sdk_decode(model: LlamaCppModel, request: ModelRequest, decoder: str) -> tuple[float, str, int]:
    """Decode tokens/s (prompt excluded), the text, and the tokens generated, with ``decoder``."""
    model.decoder = decoder  # type: ignore[assignment]

    async def go() -> Completion:
        final = None
        async for item in model.stream(request):
            if isinstance(item, Completion):
                final = item
        assert final is not None
        return final

    completion = asyncio.run(go())
    stats = model.last_decode
    if stats is not None:
        return (stats.tokens - 1) / max(stats.decode_s, 1e-9), completion.text, stats.tokens
    n = completion.usage.output_tokens
    return (n - 1) / max(completion.elapsed_s - completion.ttft_s, 1e-9), completion.text, n


def decode_rows(model: LlamaCppModel, agent: Agent, queries: list[str], label: str) -> list[dict[str, Any]]:
    rows = []
    orders = (("speculative", "greedy", "llama"), ("greedy", "llama", "speculative"),
              ("llama", "speculative", "greedy"))
    for i, query in enumerate(queries):
        request = capture_request(agent, model, query)
        sdk_decode(model, request, "speculative")  # warm the prompt's KV prefix (and the grammar)
        row: dict[str, Any] = {"set": label, "query": query}
        texts, stats = {}, None
        for decoder in orders[i % len(orders)]:  # rotate the order, so drift in the machine hits each alike
            tok_s, texts[decoder], tokens = sdk_decode(model, request, decoder)
            row[f"{decoder}_tok_s"] = round(tok_s, 2)
            if decoder == "speculative":
                n, stats = tokens, model.last_decode
        model.decoder = "speculative"
        prompt = [int(t) for t in model._prompt_ids(request.messages)[0]]
        # on the thread that loaded the model and runs the SDK's decoding too (see tinyagent.models._thread)
        row["raw_tok_s"] = round(on_llama_thread(raw_decode, model.llama, prompt, max(n, 8)), 2)
        row["tokens"] = n
        row["forward_passes"] = stats.forward_passes if stats else None
        row["accepted"] = stats.accepted if stats else None
        row["same_plan"] = texts["speculative"] == texts["greedy"]
        row["same_as_llama"] = texts["speculative"] == texts["llama"]
        row["ratio"] = round(row["speculative_tok_s"] / row["raw_tok_s"], 3)
        log(f"  {label}: spec {row['speculative_tok_s']} greedy {row['greedy_tok_s']} llama {row['llama_tok_s']} "
            f"raw {row['raw_tok_s']} tok/s ({n} tokens, {row['forward_passes']} passes)")
        rows.append(row)
    return rows


def plan_times(agent: Agent, model: LlamaCppModel, queries: list[str]) -> dict[str, Any]:
    model.decoder = "speculative"
    times, prompt_tokens = [], []
    for query in queries:
        start = time.perf_counter()
        agent.plan_sync(query, today=TODAY)
        times.append(time.perf_counter() - start)
        prompt_tokens.append(model.last_prompt_tokens_evaluated or 0)
    steady = sorted(times[1:]) or times
    return {"n": len(times), "p50_s": round(statistics.median(times), 3), "p95_s": _p95(times),
            "first_s": round(times[0], 3), "p95_after_first_s": _p95(steady),
            "mean_prompt_tokens_evaluated": round(statistics.mean(prompt_tokens), 1),
            "times_s": [round(t, 2) for t in times], "prompt_tokens_evaluated": prompt_tokens}


def _p95(times: list[float]) -> float:
    ordered = sorted(times)
    return round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 3)


# -- request sets --------------------------------------------------------------------------------------------------
def functions_set(limit: int, data: Path) -> tuple[list[Tool], list[Any], list[str]]:
    tools = builtin_tools(FunctionsSettings(data_dir=data, timezone="UTC"))
    cases = [c for c in load_evalset("test") if c.calls][:limit]
    return tools, list(builtin_examples()), [c.query for c in cases]


def foreign_set(limit: int, suite: str = "vehicle_control") -> tuple[list[Tool], list[str]]:
    """A BFCL multi-turn API suite (third-party tools, no examples) and the first user turns of its even cases."""
    from tinyagent.evals import load_multi_turn_cases, suite_functions
    from tinyagent.evals.bfcl import ensure_data

    data = ensure_data()
    tools = [Tool.from_openai(spec) for spec in suite_functions(data, suite)]
    names = {t.name for t in tools}
    cases = [c.case for c in load_multi_turn_cases(data, [suite], parity="even")
             if {str(call["name"]) for call in c.case.calls} <= names]
    return tools, [c.query for c in cases[:limit]]


# -- whole runs ----------------------------------------------------------------------------------------------------
def _tinyagent_command() -> list[str]:
    """The ``tinyagent`` console script a user runs (it forwards to a resident worker when one is up)."""
    script = Path(sys.executable).with_name("tinyagent")
    return [str(script)] if script.is_file() else [sys.executable, "-c",
                                                   "from tinyagent.apps.resident import main; main()"]


def cli_run(env: dict[str, str], model_name: str, threads: int) -> float:
    start = time.perf_counter()
    subprocess.run([*_tinyagent_command(), "--yes", "--model", model_name, "--threads", str(threads), "--today",
                    TODAY.isoformat(), "run", DEMO_QUERY], env=env, check=True, capture_output=True, timeout=900)
    return time.perf_counter() - start


def _fresh_home() -> tuple[Path, dict[str, str]]:
    """A new user's HOME: an empty cache (the assembled models linked in, no KV prefixes) and the demo data."""
    from tinyagent.models import cache_dir

    home = Path(tempfile.mkdtemp(prefix="bench-latency-"))
    cache = home / "cache"
    cache.mkdir()
    (cache / "models").symlink_to(cache_dir() / "models")  # the assembled models, not the KV prefixes
    env = {**os.environ, "HOME": str(home), "XDG_DATA_HOME": str(home / "data"), "TINYAGENT_CACHE": str(cache),
           "XDG_CONFIG_HOME": str(home / "config")}
    subprocess.run([sys.executable, "-m", "tinyagent.apps.cli", "demo", "init"], env=env, check=True,
                   capture_output=True, timeout=120)
    return home, env


def _install_then_two_runs(env: dict[str, str], model_name: str, threads: int) -> dict[str, float]:
    """The README's install steps after ``demo init`` (``tinyagent warm``), the first run, the next run."""
    start = time.perf_counter()
    subprocess.run([*_tinyagent_command(), "--model", model_name, "--threads", str(threads), "warm"], env=env,
                   check=True, capture_output=True, timeout=900)
    out = {"install_warm_s": round(time.perf_counter() - start, 2)}
    out["run_cold_s"] = round(cli_run(env, model_name, threads), 2)
    out["run_warm_s"] = round(cli_run(env, model_name, threads), 2)
    return out


def run_cold_warm(model_name: str, threads: int) -> dict[str, Any]:
    """The demo request in new ``tinyagent`` processes: the first run after the README's install command (``demo
    init`` then ``tinyagent warm``) and the next run, with the resident worker (the default: ``warm`` leaves it
    behind, loading the model while the first run starts) and with ``TINYAGENT_KEEP_ALIVE=0`` (every command in its
    own process, ``*_no_worker``); and a first run without ``tinyagent warm`` (nothing saved yet, no worker)."""
    from tinyagent.apps.resident import KEEP_ALIVE_ENV, request_stop, socket_path

    out: dict[str, Any] = {}
    home, env = _fresh_home()
    try:
        out["run_cold_unwarmed_s"] = round(cli_run({**env, KEEP_ALIVE_ENV: "0"}, model_name, threads), 2)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    home, env = _fresh_home()
    try:
        alone = _install_then_two_runs({**env, KEEP_ALIVE_ENV: "0"}, model_name, threads)
        out.update({f"{k}_no_worker": v for k, v in alone.items()})
    finally:
        shutil.rmtree(home, ignore_errors=True)
    home, env = _fresh_home()
    env = {**env, KEEP_ALIVE_ENV: "120"}
    try:
        out.update(_install_then_two_runs(env, model_name, threads))
    finally:
        path = socket_path(env)
        if path is not None:
            request_stop(path)
        shutil.rmtree(home, ignore_errors=True)
    out["run_resident_worker"] = True
    return out


def joiner_time(model: LlamaCppModel, data: Path) -> dict[str, Any]:
    tools = builtin_tools(FunctionsSettings(data_dir=data, timezone="UTC"))
    out = {}
    for joiner in ("llm", "auto", "template"):
        from tinyagent import AgentSettings

        agent = Agent(tools=tools, model=model, examples=builtin_examples(), confirm=lambda _: True,
                      settings=AgentSettings(joiner=joiner))
        result = agent.run_sync(DEMO_QUERY, today=TODAY)
        out[f"joiner_{joiner}_s"] = round(result.timings.get("join", 0.0), 3)
        out[f"joiner_{joiner}_first_words_s"] = round(result.timings.get("join_first_token", 0.0), 3)
        out[f"answer_{joiner}"] = result.answer
        if joiner == "llm":  # the join was the model's last request: what was left to evaluate after the steps
            out["joiner_llm_prompt_tokens_at_join"] = model.last_prompt_tokens_evaluated
            out["joiner_llm_decode_s"] = round(model.last_decode.decode_s, 3) if model.last_decode else None
            out["joiner_llm_execute_s"] = round(result.timings.get("execute", 0.0), 3)
    return out


def rss(model_name: str, threads: int) -> float:
    code = (
        "import sys\n"
        "from tinyagent import Agent\n"
        "from tinyagent.apps._demo_tools import demo_tools\n"
        "from tinyagent.models import LlamaCppModel\n"
        f"m = LlamaCppModel({model_name!r}, n_threads={threads})\n"
        "Agent(tools=demo_tools(), model=m).plan_sync('Email Sid the agenda')\n"
        "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')))\n"
    )  # VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the parent across fork and exec
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=900)
    return round(int(out.stdout.strip().splitlines()[-1]) / 1024, 1)


SECTIONS = ("decode", "plan", "run", "joiner", "rss")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--fast-model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--limit", type=int, default=12, help="requests per set")
    parser.add_argument("--skip", default="", help="comma-separated sections to skip: decode,plan,run,joiner,rss")
    parser.add_argument("--output", type=Path, default=RESULTS / "latency.json",
                        help="the results file (default %(default)s; a partial run updates it)")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    out: dict[str, Any] = {"model": args.model, "threads": args.threads, "machine_before": machine(),
                           "flash_attn": os.environ.get("TINYAGENT_FLASH_ATTN", "0")}
    data = Path(tempfile.mkdtemp(prefix="bench-latency-data-"))
    init_demo(data, today=TODAY, timezone="UTC")
    # A new user's prefix cache (empty): what earlier runs saved must not make the first requests warm.
    model = LlamaCppModel(args.model, n_threads=args.threads, prefix_cache_dir=Path(tempfile.mkdtemp(prefix="kv-")))
    f_tools, f_examples, f_queries = functions_set(args.limit, data)
    x_tools, x_queries = foreign_set(args.limit)
    sets = {"functions": Agent(tools=f_tools, model=model, examples=f_examples),
            "foreign": Agent(tools=x_tools, model=model)}
    queries = {"functions": f_queries, "foreign": x_queries}
    if "decode" not in skip:
        rows = [r for name, agent in sets.items() for r in decode_rows(model, agent, queries[name], name)]
        out["decode"] = rows
        out["decode_ratio_vs_raw"] = round(statistics.median(r["ratio"] for r in rows), 3)
        out["decode_ratio_greedy_vs_raw"] = round(statistics.median(r["greedy_tok_s"] / r["raw_tok_s"]
                                                                    for r in rows), 3)
        out["decode_ratio_llama_vs_raw"] = round(statistics.median(r["llama_tok_s"] / r["raw_tok_s"]
                                                                   for r in rows), 3)
        out["same_plans"] = f"{sum(r['same_plan'] for r in rows)}/{len(rows)}"
    if "plan" not in skip:
        for name, agent in sets.items():
            start = time.perf_counter()
            warmed = agent.warm_sync()  # the install step (``tinyagent warm [--tools T.json]``)
            warm = {"warm_s": round(time.perf_counter() - start, 2), "warm_tokens": warmed}
            out[f"plan_{name}"] = {**plan_times(agent, model, queries[name]), **warm}
        out["plan_p50_s"] = {n: out[f"plan_{n}"]["p50_s"] for n in sets}
        out["plan_p95_s"] = {n: out[f"plan_{n}"]["p95_s"] for n in sets}
    if "joiner" not in skip:
        out.update(joiner_time(model, data))
        out["joiner_s"] = out["joiner_auto_s"]  # the default joiner
    out["rss_mb_bench_process"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    asyncio.run(model.aclose())
    del model
    if "run" not in skip:
        out.update(run_cold_warm(args.model, args.threads))
    if "rss" not in skip:
        out["rss_mb"] = {args.model: rss(args.model, args.threads), args.fast_model: rss(args.fast_model, args.threads)}
    out["machine_after"] = machine()
    path = args.output
    path.parent.mkdir(parents=True, exist_ok=True)
    if skip and path.exists():  # a partial run updates the sections it measured and keeps the others
        kept = json.loads(path.read_text())
        kept.setdefault("partial_runs", []).append({"measured": sorted(set(SECTIONS) - skip),
                                                    "machine_before": out["machine_before"],
                                                    "machine_after": out["machine_after"]})
        out = {**kept, **{k: v for k, v in out.items() if k not in ("machine_before", "machine_after")}}
    path.write_text(json.dumps(out, indent=2) + "\n")
    log(json.dumps({k: v for k, v in out.items() if k != "decode"}, indent=2))


if __name__ == "__main__":
    main()
