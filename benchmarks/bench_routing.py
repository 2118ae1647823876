"""The cost–success frontier of budget-aware routing on the functions eval set.

    flock /tmp/tinyagent-heavy.lock python benchmarks/bench_routing.py [--limit N] [--split test]

"Local" is Qwen2.5-Coder-0.5B in process (free); "cloud" is Qwen2.5-Coder-1.5B behind ``llama_cpp.server`` on
127.0.0.1, reached through ``OpenAIModel`` and priced as a paid API. The benchmark runs in two phases:

1. **Record** (slow, cached): every eval case is planned once locally and once in the cloud. Plan-only DAG success
   (``tinyagent.scoring.dag_success``), the local plan's mean token log-probability, parse/validation failures, tokens,
   latency and cost go to ``benchmarks/results/routing_records.jsonl``. Cached rows are reused (``--rerecord`` redoes).
2. **Frontier** (fast, offline): always-local, always-cloud and ``LocalFirst`` at many confidence thresholds; the
   calibrated threshold for the target (>= 95% of always-cloud success at <= 40% of its cost), with a two-fold
   cross-validated estimate; and budget replays through the real ``Router`` and ``BudgetLedger``, which count budget
   violations. Writes ``benchmarks/results/routing.json`` and ``routing.png``.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import logging
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from tinyagent import Agent, Example, Plan
from tinyagent._routing_base import RouteSignals
from tinyagent.budget import Budget
from tinyagent.errors import BudgetExceeded, PlanParseError, PlanValidationError, TinyAgentError
from tinyagent.models import Completion, Model, ModelRequest, Pricing, Usage
from tinyagent.routing import (
    AlwaysCloud,
    AlwaysLocal,
    EscalationThresholds,
    LocalFirst,
    Router,
    RouteRecord,
    calibrate,
    frontier,
    simulate,
)
from tinyagent.scoring import EvalCase, dag_success, load_evalset, strict_success

RESULTS = Path(__file__).parent / "results"
RECORDS = RESULTS / "routing_records.jsonl"  # per prompt setup: see main()
LOCAL = "qwen2.5-coder-0.5b"
CLOUD = "qwen2.5-coder-1.5b"
# Priced like a small paid API model (currency units per million tokens).
CLOUD_PRICE = Pricing(input_per_mtok=0.50, output_per_mtok=1.50, latency_s=5.0)
TARGET_SUCCESS = 0.95  # of always-cloud's success
TARGET_COST = 0.40  # of always-cloud's cost

log = logging.getLogger("bench_routing")


# -- phase 1: recording --------------------------------------------------------------------------------------------
def load_cache(path: Path) -> dict[str, dict[str, Any]]:
    if not path.is_file():
        return {}
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {row["id"]: row for row in rows}


def save_cache(path: Path, rows: dict[str, dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(rows[k], default=str) + "\n" for k in sorted(rows)))
    tmp.replace(path)


def example_pool(train: list[EvalCase]) -> list[Example]:
    """Every train case: the agent then picks the most similar examples per request (slower: no prompt reuse)."""
    return [Example(c.query, Plan.from_json(c.calls, answer=c.answer), c.today) for c in train]


def static_examples(train: list[EvalCase], k: int) -> list[Example]:
    """``k`` fixed train examples of different shapes: the longest plan, then 2, 1 and 0 calls (no tool needed).

    With a fixed set the system prompt is identical for every request, so llama.cpp reuses its KV cache and only the
    request itself is processed: several times faster on this CPU than picking examples per request.
    """
    ordered = sorted(train, key=lambda c: c.id)
    longest = max(len(c.calls) for c in ordered)
    chosen: list[EvalCase] = []
    for size in (longest, 2, 1, 0, 3, 2, 1):
        for case in ordered:
            if len(case.calls) == size and case not in chosen and case.category not in {c.category for c in chosen}:
                chosen.append(case)
                break
        if len(chosen) >= k:
            break
    return [Example(c.query, Plan.from_json(c.calls, answer=c.answer), c.today) for c in chosen[:k]]


async def plan_case(agent: Agent, case: EvalCase, tools: dict[str, Any]) -> dict[str, Any]:
    """Plan one case; return success, signals, tokens and latency (failures are outcomes, not crashes)."""
    started = time.perf_counter()
    out: dict[str, Any] = {"parse_failed": False, "validation_failed": False, "error": None, "mean_logprob": None,
                           "input_tokens": 0, "output_tokens": 0, "pred": [], "example_disagreement": False}
    try:
        res = await agent.plan(case.query, today=case.today)
        calls = res.plan.to_json()
        out.update(mean_logprob=res.mean_logprob, input_tokens=res.usage.input_tokens,
                   example_disagreement=res.example_disagreement,
                   output_tokens=res.usage.output_tokens, pred=calls, prompt_tokens=res.prompt_tokens)
    except PlanValidationError as exc:
        calls, out["validation_failed"], out["error"] = [], True, str(exc)
    except PlanParseError as exc:
        calls, out["parse_failed"], out["error"] = [], True, str(exc)
    except TinyAgentError as exc:
        calls, out["error"] = [], f"{type(exc).__name__}: {exc}"
    out["latency_s"] = time.perf_counter() - started
    out["success"] = dag_success(calls, list(case.calls))
    out["strict"] = out["success"] and strict_success(calls, list(case.calls), case.key_args, tools)
    return out


def local_from_planner(path: Path, cases: list[EvalCase], rows: dict[str, dict[str, Any]], setup: str) -> int:
    """Take the local model's outcomes from bench_planner.py's rows (same model, prompt and ``Agent.plan`` path)."""
    data = json.loads(path.read_text())
    entry = data.get("models", {}).get(LOCAL, {})
    if entry.get("examples") != "per-request pool" or setup != "example-pool":
        raise SystemExit(f"{path} has no per-request-pool run of {LOCAL}; run bench_planner.py --models {LOCAL}")
    found = {r["id"]: r for r in entry.get("rows", [])}
    taken = 0
    for case in cases:
        r = found.get(case.id)
        if r is None or "local_success" in rows.get(case.id, {}):
            continue
        row = rows.setdefault(case.id, {"id": case.id, "category": case.category, "query": case.query, "setup": setup})
        row.update(local_success=bool(r["dag"]), local_strict=bool(r["strict"]), local_mean_logprob=r["mean_logprob"],
                   local_parse_failed=r["parse_failed"], local_validation_failed=r["validation_failed"],
                   local_example_disagreement=r["example_disagreement"], local_cost=0.0,
                   local_input_tokens=r["input_tokens"], local_output_tokens=r["output_tokens"],
                   local_latency_s=r["latency_s"], local_error=r["error"], local_pred=r["pred"],
                   local_source=str(path.name))
        taken += 1
    return taken


async def record_local(cases: list[EvalCase], rows: dict[str, dict[str, Any]], examples: list[Example],
                       data_dir: Path, threads: int, setup: str) -> None:
    from tinyagent.functions import FunctionsSettings, builtin_tools
    from tinyagent.models import LlamaCppModel

    todo = [c for c in cases if "local_success" not in rows.get(c.id, {})]
    if not todo:
        return
    model = LlamaCppModel(LOCAL, n_threads=threads)
    tools = builtin_tools(FunctionsSettings(data_dir=data_dir))
    router = Router(model, None, AlwaysLocal(), wants_logprobs=True)  # asks for log-probabilities
    agent = Agent(tools, router=router, examples=examples)
    tool_map = {t.name: t for t in tools}
    await agent.plan("warm up the prompt cache", today=todo[0].today)
    for i, case in enumerate(todo, 1):
        r = await plan_case(agent, case, tool_map)
        row = rows.setdefault(case.id, {"id": case.id, "category": case.category, "query": case.query,
                                        "setup": setup})
        row.update(local_success=r["success"], local_strict=r["strict"], local_mean_logprob=r["mean_logprob"],
                   local_parse_failed=r["parse_failed"], local_validation_failed=r["validation_failed"],
                   local_example_disagreement=r["example_disagreement"],
                   local_cost=0.0, local_input_tokens=r["input_tokens"], local_output_tokens=r["output_tokens"],
                   local_latency_s=r["latency_s"], local_error=r["error"], local_pred=r["pred"])
        log.info("local %d/%d %s success=%s lp=%s %.1fs", i, len(todo), case.id, r["success"],
                 None if r["mean_logprob"] is None else round(r["mean_logprob"], 3), r["latency_s"])
        if i % 10 == 0:
            save_cache(RECORDS, rows)
    await model.aclose()
    save_cache(RECORDS, rows)


async def record_cloud(cases: list[EvalCase], rows: dict[str, dict[str, Any]], examples: list[Example],
                       data_dir: Path, threads: int, setup: str) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    import llama_cpp
    from llama_server import llama_server

    from tinyagent.functions import FunctionsSettings, builtin_tools
    from tinyagent.models import ModelCatalog, OpenAIModel

    todo = [c for c in cases if "cloud_success" not in rows.get(c.id, {})]
    if not todo:
        return
    catalog = ModelCatalog()
    # Qwen2.5-Coder 0.5B and 1.5B share a tokenizer: count the cloud's tokens exactly with the small GGUF's vocabulary.
    vocab = llama_cpp.Llama(str(catalog.path(LOCAL)), vocab_only=True, verbose=False)

    def tokenizer(text: str) -> int:
        return len(vocab.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    tools = builtin_tools(FunctionsSettings(data_dir=data_dir))
    tool_map = {t.name: t for t in tools}
    with llama_server(catalog.path(CLOUD), n_ctx=8192, n_threads=threads, startup_timeout=300) as server:
        cloud = OpenAIModel(server.model, base_url=server.base_url, name="cloud", pricing=CLOUD_PRICE,
                            supports_grammar=True, timeout=600, tokenizer=tokenizer)
        agent = Agent(tools, model=cloud, examples=examples)
        await agent.plan("warm up the prompt cache", today=todo[0].today)
        for i, case in enumerate(todo, 1):
            r = await plan_case(agent, case, tool_map)
            usage = Usage(r["input_tokens"], r["output_tokens"], 1)
            row = rows.setdefault(case.id, {"id": case.id, "category": case.category, "query": case.query,
                                        "setup": setup})
            row.update(cloud_success=r["success"], cloud_strict=r["strict"], cloud_cost=CLOUD_PRICE.cost(usage),
                       cloud_input_tokens=r["input_tokens"], cloud_output_tokens=r["output_tokens"],
                       cloud_latency_s=r["latency_s"], cloud_error=r["error"], cloud_pred=r["pred"])
            log.info("cloud %d/%d %s success=%s %.1fs", i, len(todo), case.id, r["success"], r["latency_s"])
            if i % 10 == 0:
                save_cache(RECORDS, rows)
        await cloud.aclose()
    save_cache(RECORDS, rows)


# -- phase 2: the frontier, offline ------------------------------------------------------------------------------------
class ReplayModel(Model):
    """Replays recorded usage, so the real Router and BudgetLedger can be exercised without a model."""

    def __init__(self, name: str, pricing: Pricing) -> None:
        self.name = name
        self.pricing = pricing
        self.usage = Usage()
        self.prompt_bound = 0

    def prompt_token_bound(self, request: ModelRequest) -> int:
        return self.prompt_bound

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | Completion]:  # pragma: no cover - unused
        yield Completion(text="", usage=self.usage, model=self.name)


def budget_replay(records: Sequence[RouteRecord], policy: Any, session_limit: float | None,
                  task_limit: float | None, max_tokens: int, seed: int = 0) -> dict[str, Any]:
    """Run the records (shuffled) through a real Router with budgets; count successes, spend and violations."""
    order = list(records)
    random.Random(seed).shuffle(order)
    local = ReplayModel("local", Pricing())
    cloud = ReplayModel("cloud", CLOUD_PRICE)
    router = Router(local, cloud, policy,
                    session_budget=Budget(session_limit) if session_limit is not None else None,
                    task_budget=Budget(task_limit) if task_limit is not None else None)
    successes = refused = violations = 0
    for rec in order:
        first = router.select("plan", RouteSignals())
        used_cloud = False
        if first is cloud:
            used_cloud = _replay_cloud_call(router, cloud, rec, max_tokens)
        else:
            stronger = router.select("verify", rec.signals())
            if stronger is cloud and router.select("replan", dataclasses.replace(rec.signals(), attempt=1)) is cloud:
                used_cloud = _replay_cloud_call(router, cloud, rec, max_tokens)
        refused += router.status()["reason"] == "budget" and not used_cloud
        successes += rec.cloud_success if used_cloud else rec.local_success
        violations += 0 if router.ledger.within_limits() else 1
    snap = router.ledger.snapshot()
    return {
        "session_limit": session_limit,
        "task_limit": task_limit,
        "success": successes / len(order),
        "cost": router.ledger.session_spent.usd,
        "refused_cloud_calls": refused,
        "budget_violations": violations + router.ledger.overruns,
        "ledger": snap,
    }


def _replay_cloud_call(router: Router, cloud: ReplayModel, rec: RouteRecord, max_tokens: int) -> bool:
    tokens_in = int(rec.extra.get("cloud_input_tokens", 0) or 0)
    tokens_out = int(rec.extra.get("cloud_output_tokens", 0) or 0)
    cloud.prompt_bound = tokens_in
    cloud.usage = Usage(tokens_in, min(tokens_out, max_tokens), 1)
    request = ModelRequest(messages=[{"role": "user", "content": rec.id}], max_tokens=max_tokens)
    try:
        router.before_call(cloud, request)
    except BudgetExceeded:
        return False
    router.after_call(cloud, request, Completion(text="", usage=cloud.usage, model="cloud"))
    return True


def two_fold(records: list[RouteRecord], seed: int = 0) -> dict[str, Any]:
    """Calibrate on one half and evaluate on the other, both ways: an out-of-sample estimate."""
    shuffled = list(records)
    random.Random(seed).shuffle(shuffled)
    halves = [shuffled[::2], shuffled[1::2]]
    folds = []
    for fit, held in (halves, halves[::-1]):
        thresholds = calibrate(fit, target_cost=TARGET_COST, target_accuracy=TARGET_SUCCESS, relative=True)
        point = simulate(held, LocalFirst(thresholds))
        cloud = simulate(held, AlwaysCloud())
        folds.append({
            "threshold": thresholds.min_mean_logprob,
            "example_disagreement": thresholds.escalate_on_example_disagreement,
            "success": point.success,
            "cost": point.cost,
            "success_vs_cloud": point.success / cloud.success if cloud.success else None,
            "cost_vs_cloud": point.cost / cloud.cost if cloud.cost else None,
        })
    return {"folds": folds}


def latency(records: Sequence[RouteRecord], policy: Any) -> float:
    total = 0.0
    for rec in records:
        local_s = float(rec.extra.get("local_latency_s", 0.0) or 0.0)
        cloud_s = float(rec.extra.get("cloud_latency_s", 0.0) or 0.0)
        if isinstance(policy, AlwaysCloud):
            total += cloud_s
        elif policy.decide("verify", rec.signals(), cloud_name="cloud").target == "cloud":
            total += local_s + cloud_s
        else:
            total += local_s
    return total / len(records)


# The escalation signals compared on the frontier: confidence alone, and the plan's agreement with the most similar
# worked example in its prompt plus confidence.
SIGNAL_SETS = {
    "confidence": EscalationThresholds(),
    "example+confidence": EscalationThresholds(escalate_on_example_disagreement=True),
}


def summarize(records: list[RouteRecord], max_tokens: int) -> dict[str, Any]:
    local = simulate(records, AlwaysLocal())
    cloud = simulate(records, AlwaysCloud())
    logprobs = sorted(r.local_mean_logprob for r in records if r.local_mean_logprob is not None)
    grid: list[float | None] = [None]
    if logprobs:
        qs = [0.05 * k for k in range(1, 20)]
        grid += sorted({round(statistics.quantiles(logprobs, n=100, method="inclusive")[int(q * 100) - 1], 4)
                        for q in qs} | {0.0})
    router_points = []
    for label, base in SIGNAL_SETS.items():
        for point in frontier(records, grid, base=base):
            policy = LocalFirst(dataclasses.replace(base, min_mean_logprob=point.threshold))
            router_points.append({**point.to_dict(), "signals": label, "latency_s": latency(records, policy)})
    full = [{**p.to_dict(), "signals": label}
            for label, base in SIGNAL_SETS.items() for p in frontier(records, base=base)]
    meets = [p for p in full if cloud.success and cloud.cost
             and p["success"] >= TARGET_SUCCESS * cloud.success and p["cost"] <= TARGET_COST * cloud.cost]
    calibrated = calibrate(records, target_cost=TARGET_COST, target_accuracy=TARGET_SUCCESS, relative=True)
    cal_point = simulate(records, LocalFirst(calibrated))
    replays = [
        budget_replay(records, LocalFirst(calibrated), TARGET_COST * cloud.cost, None, max_tokens, seed=s)
        for s in range(5)
    ] + [
        budget_replay(records, AlwaysCloud(), 0.25 * cloud.cost, None, max_tokens, seed=s) for s in range(5)
    ] + [
        budget_replay(records, AlwaysCloud(), None, cloud.cost / len(records), max_tokens, seed=0),
    ]
    return {
        "n": len(records),
        "cloud_price_per_mtok": {"input": CLOUD_PRICE.input_per_mtok, "output": CLOUD_PRICE.output_per_mtok},
        "always_local": {**local.to_dict(), "latency_s": latency(records, AlwaysLocal())},
        "always_cloud": {**cloud.to_dict(), "latency_s": latency(records, AlwaysCloud())},
        "router": router_points,
        "frontier_all_thresholds": full,
        "calibrated": {
            "thresholds": calibrated.to_dict(),
            **cal_point.to_dict(),
            "latency_s": latency(records, LocalFirst(calibrated)),
            "success_vs_cloud": cal_point.success / cloud.success if cloud.success else None,
            "cost_vs_cloud": cal_point.cost / cloud.cost if cloud.cost else None,
            "note": "fitted and evaluated on the same split (in-sample); see cross_validation",
        },
        "cross_validation": two_fold(records),
        "target": {"success_vs_cloud": TARGET_SUCCESS, "cost_vs_cloud": TARGET_COST, "met_in_sample": bool(meets),
                   "best_meeting": min(meets, key=lambda p: p["cost"]) if meets else None},
        "budget_replays": replays,
        "budget_violations": sum(r["budget_violations"] for r in replays),
        "local_parse_failures": sum(r.local_parse_failed or r.local_validation_failed for r in records),
    }


def plot(summary: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cloud = summary["always_cloud"]
    local = summary["always_local"]
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=120)
    for label, color in zip(SIGNAL_SETS, ("tab:blue", "tab:purple"), strict=True):
        full = sorted((p for p in summary["frontier_all_thresholds"] if p["signals"] == label), key=lambda p: p["cost"])
        ax.plot([p["cost"] for p in full], [p["success"] for p in full], "-", color=color, alpha=0.5,
                label=f"local-first ({label}), every threshold")
        pts = [p for p in summary["router"] if p["signals"] == label]
        ax.plot([p["cost"] for p in pts], [p["success"] for p in pts], "o", color=color, markersize=4,
                label=f"local-first ({label}), threshold grid")
    ax.plot([local["cost"]], [local["success"]], "s", color="tab:green", markersize=9, label="always local")
    ax.plot([cloud["cost"]], [cloud["success"]], "D", color="tab:red", markersize=9, label="always cloud")
    cal = summary["calibrated"]
    ax.plot([cal["cost"]], [cal["success"]], "*", color="black", markersize=13, label="calibrated")
    if cloud["cost"] > 0:
        ax.axvspan(0, TARGET_COST * cloud["cost"], ymin=0, ymax=1, color="gold", alpha=0.12)
        ax.axhline(TARGET_SUCCESS * cloud["success"], color="gold", linestyle="--", linewidth=1,
                   label=f"target: ≥{TARGET_SUCCESS:.0%} of cloud success at ≤{TARGET_COST:.0%} of its cost")
    ax.set_xlabel(f"cloud cost over {summary['n']} requests (at {CLOUD_PRICE.input_per_mtok}/"
                  f"{CLOUD_PRICE.output_per_mtok} per M tokens)")
    ax.set_ylabel("plan success (DAG)")
    ax.set_title(f"Routing: Qwen-0.5B local vs Qwen-1.5B 'cloud' ({summary.get('examples', '')})")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def to_records(rows: dict[str, dict[str, Any]], ids: list[str]) -> list[RouteRecord]:
    out = []
    for i in ids:
        row = rows.get(i, {})
        if "local_success" in row and "cloud_success" in row:
            out.append(RouteRecord.from_dict(row))
    return out


def main() -> None:
    global RECORDS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", default="test")
    ap.add_argument("--limit", type=int, default=0, help="only the first N cases (a quick run)")
    ap.add_argument("--rerecord", action="store_true", help="ignore cached records")
    ap.add_argument("--local-from", type=Path, default=None, metavar="PLANNER_JSON",
                    help="take the local model's outcomes from bench_planner.py's results (same prompt and code path)")
    ap.add_argument("--offline-only", action="store_true", help="only recompute the frontier from the cache")
    ap.add_argument("--threads", type=int, default=int(os.environ.get("BENCH_THREADS", "2")))
    ap.add_argument("--planner-max-tokens", type=int, default=512)
    ap.add_argument("--fixed-examples", type=int, default=0, metavar="K",
                    help="K fixed few-shot examples instead of the agent's per-request pick from the train split "
                         "(several times faster: the prompt prefix is reused; weaker plans)")
    ap.add_argument("--output", default=None, help="default: results/routing.json (routing_fixedK.json with K)")
    ap.add_argument("--records", default=None, help="the JSONL cache of per-case outcomes")
    args = ap.parse_args()
    suffix = f"_fixed{args.fixed_examples}" if args.fixed_examples else ""
    setup = f"{args.fixed_examples}-fixed-examples" if args.fixed_examples else "example-pool"
    RECORDS = Path(args.records) if args.records else RESULTS / f"routing_records{suffix}.jsonl"
    args.output = args.output or str(RESULTS / f"routing{suffix}.json")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    logging.getLogger("tinyagent.routing").setLevel(logging.ERROR)  # the replays refuse calls on purpose
    cases = load_evalset(args.split)
    if args.limit:
        cases = cases[: args.limit]
    # Outcomes recorded under another prompt setup are not comparable: drop them.
    rows = {} if args.rerecord else {k: v for k, v in load_cache(RECORDS).items() if v.get("setup") == setup}
    if args.local_from is not None:
        log.info("took %d local outcomes from %s", local_from_planner(args.local_from, cases, rows, setup),
                 args.local_from)
    if not args.offline_only:
        from tinyagent.functions import init_demo

        train = load_evalset("train")
        examples = static_examples(train, args.fixed_examples) if args.fixed_examples else example_pool(train)
        with tempfile.TemporaryDirectory() as tmp:
            init_demo(Path(tmp))
            started = time.perf_counter()
            asyncio.run(record_local(cases, rows, examples, Path(tmp), args.threads, setup))
            local_s = time.perf_counter() - started
            asyncio.run(record_cloud(cases, rows, examples, Path(tmp), args.threads, setup))
            log.info("recorded in %.0f s (local %.0f s)", time.perf_counter() - started, local_s)
    records = to_records(rows, [c.id for c in cases])
    if not records:
        raise SystemExit("no complete records: run without --offline-only first")
    summary = {"split": args.split, "local": LOCAL, "cloud": CLOUD, "machine": machine(),
               "examples": setup,
               **summarize(records, args.planner_max_tokens)}
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=2, default=str) + "\n")
    plot(summary, out.with_suffix(".png"))
    lc, cc, cal = summary["always_local"], summary["always_cloud"], summary["calibrated"]
    print(f"n={summary['n']}  always-local {lc['success']:.3f} / {lc['cost']:.5f}   "
          f"always-cloud {cc['success']:.3f} / {cc['cost']:.5f}")
    for p in summary["router"]:
        print(f"  threshold {p['threshold']!s:>8}: success {p['success']:.3f} cost {p['cost']:.5f} "
              f"escalated {p['escalated']:.0%}")
    print(markdown_table(summary))
    print(f"calibrated: threshold {cal['thresholds']['min_mean_logprob']} success {cal['success']:.3f} "
          f"({cal['success_vs_cloud']}) cost {cal['cost']:.5f} ({cal['cost_vs_cloud']}); "
          f"target met in-sample: {summary['target']['met_in_sample']}; "
          f"budget violations: {summary['budget_violations']}")


def markdown_table(summary: dict[str, Any]) -> str:
    """The frontier as a Markdown table (for the README and docs/routing.md)."""
    cloud = summary["always_cloud"]

    def row(name: str, p: dict[str, Any]) -> str:
        rel_s = p["success"] / cloud["success"] if cloud["success"] else float("nan")
        rel_c = p["cost"] / cloud["cost"] if cloud["cost"] else float("nan")
        return (f"| {name} | {p['success']:.3f} | {rel_s:.0%} | {p['cost']:.4f} | {rel_c:.0%} | "
                f"{p.get('escalated', 0.0):.0%} | {p.get('latency_s', float('nan')):.1f} |")

    lines = ["| policy | success | vs cloud | cost | vs cloud | escalated | mean latency s |",
             "|---|---|---|---|---|---|---|",
             row("always local", summary["always_local"]),
             row("always cloud", cloud)]
    for p in summary["router"]:
        t = "none (parse/validation only)" if p["threshold"] is None else f"{p['threshold']:.3f}"
        lines.append(row(f"local-first, min_mean_logprob {t}", p))
    cal = summary["calibrated"]
    lines.append(row(f"calibrated ({cal['thresholds']['min_mean_logprob']})", cal))
    return "\n".join(lines)


def machine() -> dict[str, Any]:
    return {"cores": os.cpu_count(), "load_1m": os.getloadavg()[0]}


if __name__ == "__main__":
    main()
