"""Tool retrieval benchmark: recall, tools offered, prompt tokens and latency; planner accuracy and latency with and
without retrieval. Writes ``benchmarks/results/retrieval.json`` with one entry per registry (``functions``,
``stress``) and ``foreign``: registries the team did not write, with no examples (see ``retrieval_foreign.py``).

Usage (anything that loads an LLM must hold the heavy lock on a shared machine)::

    python benchmarks/bench_retrieval.py --skip-planner                 # retrieval only, no LLM
    python benchmarks/bench_retrieval.py --foreign-only                 # only the foreign registries (no LLM)
    flock /tmp/tinyagent-heavy.lock python benchmarks/bench_retrieval.py --planner-limit 40
    flock /tmp/tinyagent-heavy.lock python benchmarks/bench_retrieval.py --llama-embed   # + llama.cpp embeddings

Retrieval is fitted on the functions eval set's train split (few-shot pool, calibration, classifier training) and
measured on its test split; the stress registry is the built-in tools plus 400 BFCL distractors, queried with the
same test split. Prompt tokens are counted with the planner's tokenizer on the prompt the Agent builds.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tinyagent import ToolRegistry  # noqa: E402
from tinyagent._plan import Example  # noqa: E402
from tinyagent._prompts import build_planner_messages  # noqa: E402
from tinyagent.functions import builtin_tools  # noqa: E402
from tinyagent.functions.bench import default_examples  # noqa: E402
from tinyagent.retrieval import (  # noqa: E402
    BM25Retriever,
    ClassifierRetriever,
    EmbeddingRetriever,
    HybridRetriever,
    OnnxEmbedder,
    ScoringRetriever,
    cache_dir,
    stress_registry,
)
from tinyagent.scoring import EvalCase, dag_success, load_evalset  # noqa: E402

sys.path.insert(0, str(ROOT / "benchmarks"))
import retrieval_foreign as foreign  # noqa: E402

log = logging.getLogger("bench_retrieval")
OUT = ROOT / "benchmarks" / "results" / "retrieval.json"
MAX_EXAMPLES = 4  # AgentSettings.max_examples
PLANNER = "qwen2.5-coder-0.5b"


def as_example(case: EvalCase) -> Example:
    return Example(query=case.query, plan=case.plan, today=case.today)


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    idx = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[idx]


class TokenCounter:
    """Counts prompt tokens with the planner's own tokenizer (vocab only), applying its chat template."""

    def __init__(self, model_name: str) -> None:
        import llama_cpp

        from tinyagent.models import ModelCatalog
        from tinyagent.models.llama._processors import _template_formatter

        self._llm = llama_cpp.Llama(model_path=str(ModelCatalog().path(model_name)), vocab_only=True, verbose=False)
        self._format = _template_formatter(self._llm)
        self.name = model_name

    def __call__(self, messages: list[dict[str, Any]]) -> int:
        text = self._format(messages=messages).prompt if self._format else "".join(m["content"] for m in messages)
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))


def full_prompt_examples(registry: ToolRegistry, static: Sequence[Example]) -> list[Example]:
    """What the Agent shows without a retriever: the static examples whose tools are all registered."""
    return [e for e in static if e.tool_names <= set(registry)][:MAX_EXAMPLES]


def measure_retriever(
    name: str,
    retriever: ScoringRetriever,
    registry: ToolRegistry,
    cases: Sequence[EvalCase],
    pool: Sequence[Example],
    count: Callable[[list[dict[str, Any]]], int],
    full_tokens: dict[str, int],
) -> dict[str, Any]:
    """Recall, set sizes, prompt tokens and latency of one retriever on ``cases``."""
    recalls, found, offered, ratios, latencies, uncertain = [], [], [], [], [], 0
    tokens_with = []
    for case in cases[:3]:  # warm-up (onnxruntime allocates on first use)
        retriever.retrieve(case.query + " warm-up")
    embedder = getattr(retriever, "embedder", None)
    if embedder is not None and hasattr(embedder, "forget"):
        embedder.forget()  # another retriever may have embedded these queries already: time them fresh
    for case in cases:
        start = time.perf_counter()
        result = retriever.retrieve(case.query)
        latencies.append((time.perf_counter() - start) * 1000)
        gold = {c["name"] for c in case.calls}
        got = set(result.tools)
        offered.append(len(result.tools))
        uncertain += bool(result.uncertain)
        if gold:
            recalls.append(len(gold & got) / len(gold))
            found.append(float(gold <= got))
        tools = [registry[n] for n in registry if n in got]  # the Agent's order does not change the count
        examples = [e for e in result.examples if e.tool_names <= got][:MAX_EXAMPLES]
        n_with = count(build_planner_messages(tools, case.query, case.today, examples))
        tokens_with.append(n_with)
        ratios.append(n_with / full_tokens[case.id])
    entry = {
        "recall": round(statistics.mean(recalls), 4),
        "all_tools_found": round(statistics.mean(found), 4),
        "mean_tools_offered": round(statistics.mean(offered), 3),
        "registry_size": len(registry),
        "uncertain_rate": round(uncertain / len(cases), 4),
        "prompt_tokens_with": round(statistics.mean(tokens_with), 1),
        "prompt_tokens_full": round(statistics.mean(full_tokens.values()), 1),
        "prompt_token_ratio": round(statistics.mean(ratios), 4),
        "latency_ms_p50": round(percentile(latencies, 50), 3),
        "latency_ms_p95": round(percentile(latencies, 95), 3),
        "latency_ms_mean": round(statistics.mean(latencies), 3),
        "queries": len(cases),
    }
    log.info(
        "%-18s recall %.4f  all %.4f  tools %.2f/%d  tokens %.3f  p50 %.2f ms  unsure %.2f",
        name,
        entry["recall"],
        entry["all_tools_found"],
        entry["mean_tools_offered"],
        len(registry),
        entry["prompt_token_ratio"],
        entry["latency_ms_p50"],
        entry["uncertain_rate"],
    )
    return entry


def ensure_classifier(out: Path, retrain: bool, threads: int, use_embedding: bool = True) -> Path:
    """Train the built-in tools' classifier on the train split (once; cached in ``out``)."""
    if (out / "classifier.json").is_file() and not retrain:
        return out
    from tinyagent.retrieval.train_classifier import TrainConfig, TrainingRow, train_classifier

    rows = [TrainingRow(c.query, frozenset(x["name"] for x in c.calls), c.plan) for c in load_evalset("train")]
    log.info("training the tool classifier (embedding=%s) on %d train rows into %s", use_embedding, len(rows), out)
    start = time.perf_counter()
    train_classifier(
        ToolRegistry(builtin_tools()), rows, out, TrainConfig(threads=threads, use_embedding=use_embedding)
    )
    log.info("trained in %.1f s", time.perf_counter() - start)
    return out


def choose_default(per: dict[str, Any], names: Sequence[str], target: float) -> str:
    """The retriever the planner part uses: recall at target and under 10 ms if any is, then the fewest tokens."""
    ok = [n for n in names if per[n]["recall"] >= target and per[n]["latency_ms_p50"] < 10]
    ok = ok or [n for n in names if per[n]["recall"] >= target]
    if not ok:
        return max(names, key=lambda n: per[n]["recall"])
    return min(ok, key=lambda n: (per[n]["prompt_token_ratio"], per[n]["latency_ms_p50"]))


async def plan_all(agent: Any, cases: Sequence[EvalCase]) -> dict[str, Any]:
    """Plan every case; DAG success against the gold plan and planner latency.

    One warm-up request first, as an app that has been running a while: without retrieval the static prompt is then
    in llama.cpp's prefix cache; with retrieval every prompt differs anyway.
    """
    ok, latency, tokens, offered, errors = [], [], [], [], 0
    rows: list[dict[str, Any]] = []
    model = getattr(agent, "model", None)
    with contextlib.suppress(Exception):
        await agent.plan("warm up the prompt cache", today=cases[0].today)
    for case in cases:
        try:
            result = await agent.plan(case.query, today=case.today)
        except Exception as exc:  # noqa: BLE001 - a failed plan counts as a miss; the benchmark goes on
            log.warning("plan failed for %s: %s", case.id, exc)
            errors += 1
            ok.append(False)
            rows.append({"id": case.id, "dag": False, "error": str(exc)})
            continue
        ok.append(dag_success(result.plan, case.calls))
        rows.append({
            "id": case.id, "dag": ok[-1], "latency_s": round(result.elapsed_s, 3), "ttft_s": round(result.ttft_s, 3),
            "output_tokens": result.usage.output_tokens, "prompt_tokens": result.prompt_tokens,
            "prompt_tokens_evaluated": getattr(model, "last_prompt_tokens_evaluated", None),
            "prefix_loaded": getattr(model, "last_prefix_loaded", None), "tools_offered": len(result.tools_offered),
        })
        latency.append(result.elapsed_s)
        tokens.append(result.prompt_tokens)
        offered.append(len(result.tools_offered))
    return {
        "dag_success": round(sum(ok) / len(ok), 4) if ok else 0.0,
        "latency_s_mean": round(statistics.mean(latency), 3) if latency else None,
        "latency_s_p50": round(percentile(latency, 50), 3) if latency else None,
        "latency_s_first": round(latency[0], 3) if latency else None,
        "prompt_tokens_mean": round(statistics.mean(tokens), 1) if tokens else None,
        "tools_offered_mean": round(statistics.mean(offered), 2) if offered else None,
        "errors": errors,
        "n": len(cases),
        "rows": rows,
    }


def without_from(path: Path, model_name: str, cases: Sequence[EvalCase]) -> dict[str, Any]:
    """The no-retrieval arm from bench_planner.py's per-case rows (planner latency = the planner call's seconds)."""
    rows = {r["id"]: r for r in json.loads(path.read_text())["models"][model_name]["rows"]}
    mine = [rows[c.id] for c in cases if c.id in rows]
    if len(mine) < len(cases):
        raise SystemExit(f"{path} has rows for {len(mine)} of the {len(cases)} queries; run bench_planner.py first")
    latency = [r.get("plan_s") or r["latency_s"] for r in mine]
    return {
        "fits_context": True,
        "dag_success": round(sum(bool(r["dag"]) for r in mine) / len(mine), 4),
        "latency_s_mean": round(statistics.mean(latency), 3),
        "latency_s_p50": round(percentile(latency, 50), 3),
        "prompt_tokens_mean": round(statistics.mean(r["prompt_tokens"] for r in mine), 1),
        "tools_offered_mean": round(statistics.mean(r["tools_offered"] for r in mine), 2),
        "errors": sum(r.get("error") is not None for r in mine),
        "n": len(mine),
        "source": f"{path.name} (bench_planner.py, same queries and model)",
    }


def run_planner(
    registries: dict[str, ToolRegistry],
    retrievers: dict[str, ScoringRetriever],
    pool: Sequence[Example],
    cases: Sequence[EvalCase],
    model_name: str,
    n_ctx: int,
    threads: int,
    max_full_tokens: dict[str, float],
    without: Path | None = None,
    keep_without: dict[str, Any] | None = None,
) -> dict[str, dict[str, Any]]:
    from tinyagent._agent import Agent
    from tinyagent.models import load_model

    out: dict[str, dict[str, Any]] = {}
    model = load_model(model_name, n_ctx=n_ctx, n_threads=threads)
    for reg_name, registry in registries.items():
        res: dict[str, Any] = {}
        # One model, so the "without" run keeps its static prompt cached from request to request, as an app would.
        with_agent = Agent(registry, model, retriever=retrievers[reg_name], examples=pool)
        log.info("planner %s with retrieval on %d queries", reg_name, len(cases))
        res["with"] = asyncio.run(plan_all(with_agent, cases))
        if keep_without and reg_name in keep_without:
            res["without"] = keep_without[reg_name]
        elif without is not None and reg_name == "functions":
            res["without"] = without_from(without, model_name, cases)
        elif max_full_tokens[reg_name] + 600 > n_ctx:
            res["without"] = {
                "dag_success": None,
                "fits_context": False,
                "skipped": f"the full prompt ({max_full_tokens[reg_name]:.0f} "
                f"tokens) does not fit the {n_ctx}-token context",
                "n": len(cases),
            }
        else:
            # The agent's default without a retriever: every tool (a prefix llama.cpp keeps cached between requests)
            # and the few-shot examples most similar to each request, as with retrieval, so only the tools differ.
            without_agent = Agent(registry, model, retriever=None, examples=pool)
            log.info("planner %s without retrieval on the same %d queries", reg_name, len(cases))
            res["without"] = {"fits_context": True, **asyncio.run(plan_all(without_agent, cases))}
        log.info("%s: %s", reg_name, res)
        out[reg_name] = res
    asyncio.run(model.aclose())
    return out


def store_planner(results: dict[str, Any], planner: dict[str, Any], args: argparse.Namespace, n: int) -> None:
    """Put the planner part's numbers into each registry's entry."""
    for reg_name, res in planner.items():
        entry = results[reg_name]
        entry["dag_success_with"] = res["with"]["dag_success"]
        entry["dag_success_without"] = res["without"]["dag_success"]
        entry["planner_latency_s_with"] = res["with"].get("latency_s_mean")
        entry["planner_latency_s_without"] = res["without"].get("latency_s_mean")
        entry["planner"] = {"model": args.planner_model, "queries": n, "n_ctx": args.n_ctx,
                            "command": " ".join(["python", "benchmarks/bench_retrieval.py", *sys.argv[1:]]),
                            "date": time.strftime("%Y-%m-%d %H:%M"), **res}


def planner_only(args: argparse.Namespace, registries: dict[str, ToolRegistry], pool: Sequence[Example],
                 static: Sequence[Example], test: Sequence[EvalCase], count: TokenCounter) -> int:
    """Rerun the planner part for some registries with the retriever an earlier full run chose for each."""
    if not args.out.is_file():
        raise SystemExit(f"--planner-only updates {args.out}; run the full benchmark first")
    results = json.loads(args.out.read_text())
    names = [n for n in args.planner_only.split(",") if n]
    unknown = [n for n in names if n not in registries]
    if unknown:
        raise SystemExit(f"unknown registries {unknown}; choose from {sorted(registries)}")
    classifier_hash = ensure_classifier(
        args.classifier.with_name(args.classifier.name + "-hash"), args.retrain, args.threads, use_embedding=False
    )
    makers: dict[str, Callable[[], ScoringRetriever]] = {
        "hybrid_hash": lambda: HybridRetriever(classifier_hash, embedder=False),
        "hybrid_hash_embed": lambda: HybridRetriever(classifier_hash, embedder=OnnxEmbedder(threads=1, int8=True)),
        "hybrid": lambda: HybridRetriever(ensure_classifier(args.classifier, args.retrain, args.threads),
                                          embedder=OnnxEmbedder(threads=1)),
    }
    subset = {n: registries[n] for n in names}
    retrievers: dict[str, ScoringRetriever] = {}
    max_full: dict[str, float] = {}
    for name, registry in subset.items():
        chosen = results[name]["retriever"]
        if chosen not in makers:
            raise SystemExit(f"--planner-only cannot rebuild retriever {chosen!r}")
        retrievers[name] = makers[chosen]()
        retrievers[name].fit(registry, pool)
        full_examples = full_prompt_examples(registry, static)
        max_full[name] = max(count(build_planner_messages(list(registry.values()), c.query, c.today, full_examples))
                             for c in test)
    cases = test[: args.planner_limit or len(test)]
    keep: dict[str, Any] = {}
    if args.keep_without:
        for name in subset:
            old = results[name].get("planner", {})
            if old.get("queries") != len(cases) or "without" not in old:
                raise SystemExit(f"--keep-without: {args.out} has no no-retrieval arm on {len(cases)} queries")
            keep[name] = {**old["without"], "kept_from": old.get("date") or results[name]["meta"]["date"]}
    planner = run_planner(subset, retrievers, pool, cases, args.planner_model, args.n_ctx, args.threads, max_full,
                          args.without_from, keep)
    earlier = {name: results[name].get("planner", {}).get("with") for name in subset}
    store_planner(results, planner, args, len(cases))
    for name, old_with in earlier.items():
        if old_with:  # the arm this run replaces, for comparison (e.g. another tool order)
            results[name]["planner"]["with_before"] = {k: v for k, v in old_with.items() if k != "rows"}
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    log.info("wrote %s", args.out)
    return 0


def foreign_results(args: argparse.Namespace) -> dict[str, Any]:
    """Issue 15: the default retriever, fitted with no examples, on registries the team did not write."""
    from tinyagent.evals.bfcl import ensure_data
    from tinyagent.retrieval import default_embedder_dir, default_retriever

    load_before = os.getloadavg()
    data = ensure_data()
    makers: dict[str, Callable[[], Any]] = {"default": lambda: default_retriever(embedder=False)}
    if (default_embedder_dir() / "model.onnx").is_file():
        embedder = OnnxEmbedder(threads=1)
        makers["default_minilm"] = lambda: default_retriever(embedder=embedder)
    specs, requests = foreign.multi_turn_setup(data, foreign.DEFAULT_SUITES)
    live = foreign.live_setup(data, args.live_limit or None)
    out: dict[str, Any] = {}
    for name, make in makers.items():
        alone = foreign.measure_registry(make, ToolRegistry.from_openai(specs), requests)
        crowded = foreign.measure_registry(make, foreign.with_distractors(specs), requests)
        multiple = foreign.measure_per_case(make, live)
        out[name] = {"bfcl_multi_turn_alone": alone, "bfcl_multi_turn": crowded, "bfcl_multiple": multiple}
        for reg, entry in out[name].items():
            log.info("foreign %-15s %-22s recall %.4f  all %.4f  tools %.2f  p50 %.2f ms  p95 %.2f ms", name, reg,
                     entry["recall"], entry["all_tools_found"], entry["mean_tools_offered"], entry["latency_ms_p50"],
                     entry["latency_ms_p95"])
    out["meta"] = {
        "suites": list(foreign.DEFAULT_SUITES), "user_tools": len(specs), "distractors": foreign.DISTRACTORS,
        "multi_turn_requests": len(requests), "multiple_categories": list(foreign.LIVE_CATEGORIES),
        "multiple_cases": len(live), "examples": 0, "parity": "even",
        "retrievers": {"default": "default_retriever() without MiniLM (a new user's install: BM25 only)",
                       "default_minilm": "default_retriever() with the exported MiniLM (onnxruntime, 1 thread)"},
        "command": " ".join(["python", "benchmarks/bench_retrieval.py", *sys.argv[1:]]),
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
    }
    return out


def write_foreign(args: argparse.Namespace) -> int:
    """``--foreign-only``: measure the foreign registries and store them under ``foreign``, keeping the rest."""
    results = json.loads(args.out.read_text()) if args.out.is_file() else {}
    before = results.get("foreign", {}).get("before")
    results["foreign"] = foreign_results(args)
    if before is not None:
        results["foreign"]["before"] = before
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    log.info("wrote %s", args.out)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--skip-planner", action="store_true", help="retrieval metrics only (no LLM)")
    parser.add_argument("--planner-limit", type=int, default=0, help="test queries for the planner part (0 = all)")
    parser.add_argument("--planner-model", default=PLANNER)
    parser.add_argument("--n-ctx", type=int, default=8192)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--classifier", type=Path, default=cache_dir() / "classifiers" / "functions-builtin")
    parser.add_argument("--retrain", action="store_true", help="train the classifier again")
    parser.add_argument("--llama-embed", action="store_true", help="also measure llama.cpp embeddings (loads a GGUF)")
    parser.add_argument("--target-recall", type=float, default=0.99)
    parser.add_argument("--without-from", type=Path, default=None, metavar="PLANNER_JSON",
                        help="take the functions registry's no-retrieval arm from bench_planner.py's rows for the same "
                        "queries (the same configuration: every tool, per-request examples) instead of planning again")
    parser.add_argument("--planner-only", default="", metavar="REGISTRIES",
                        help="rerun only the planner part for these registries (comma-separated: functions,stress) "
                        "with the retriever --out names for each; everything else in --out is kept")
    parser.add_argument("--keep-without", action="store_true",
                        help="with --planner-only: keep the no-retrieval arm --out holds (it does not depend on the "
                        "retriever or on how retrieved tools are ordered) and plan only with retrieval")
    parser.add_argument("--foreign-only", action="store_true",
                        help="only the registries the team did not write (key foreign); everything else is kept")
    parser.add_argument("--skip-foreign", action="store_true", help="leave the foreign registries out")
    parser.add_argument("--live-limit", type=int, default=0, help="BFCL multiple/live_multiple cases (0 = all)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.foreign_only:
        return write_foreign(args)
    load_before = os.getloadavg()

    train, test = load_evalset("train"), load_evalset("test")
    pool = [as_example(c) for c in train]
    static = default_examples(train)  # the functions benchmark's four diverse examples, for the full prompt
    labelled = [e for e in pool if e.tool_names]
    registries = {"functions": ToolRegistry(builtin_tools()), "stress": stress_registry()}
    count = TokenCounter(args.planner_model)
    if args.planner_only:
        return planner_only(args, registries, pool, static, test, count)
    embedder = OnnxEmbedder(threads=1)
    classifier = ensure_classifier(args.classifier, args.retrain, args.threads)
    classifier_hash = ensure_classifier(
        args.classifier.with_name(args.classifier.name + "-hash"), args.retrain, args.threads, use_embedding=False
    )
    embedder_int8 = OnnxEmbedder(threads=1, int8=True)

    llama_embedder: Any = None
    if args.llama_embed:
        from tinyagent.models import ModelCatalog
        from tinyagent.retrieval import LlamaCppEmbedder

        llama_embedder = LlamaCppEmbedder(ModelCatalog().path(args.planner_model), threads=args.threads)

    results: dict[str, Any] = {}
    default_retrievers: dict[str, ScoringRetriever] = {}
    max_full: dict[str, float] = {}
    for reg_name, registry in registries.items():
        full_examples = full_prompt_examples(registry, static)
        full_tokens = {
            c.id: count(build_planner_messages(list(registry.values()), c.query, c.today, full_examples)) for c in test
        }
        max_full[reg_name] = max(full_tokens.values())
        candidates: dict[str, Callable[[], ScoringRetriever]] = {
            "bm25": lambda: BM25Retriever(),
            "embedding": lambda: EmbeddingRetriever(embedder),
            "embedding_int8": lambda: EmbeddingRetriever(embedder_int8),
            "hybrid_untrained": lambda: HybridRetriever(embedder=embedder),
            "classifier": lambda: ClassifierRetriever(classifier, embedder=embedder),
            "classifier_hash": lambda: ClassifierRetriever(classifier_hash),
            "hybrid": lambda: HybridRetriever(classifier, embedder=embedder),
            "hybrid_hash": lambda: HybridRetriever(classifier_hash, embedder=False),
            "hybrid_hash_embed": lambda: HybridRetriever(classifier_hash, embedder=embedder_int8),
        }
        if llama_embedder is not None and reg_name == "functions":
            candidates["llama_embedding"] = lambda: EmbeddingRetriever(llama_embedder)
        per: dict[str, Any] = {}
        built: dict[str, ScoringRetriever] = {}
        for name, make in candidates.items():
            retriever = make()
            start = time.perf_counter()
            retriever.fit(registry, pool)
            fit_s = time.perf_counter() - start
            calibration = None
            if name in ("bm25", "embedding", "embedding_int8", "hybrid_untrained", "llama_embedding"):
                calibration = dict(retriever.calibrate(labelled, args.target_recall))
            per[name] = measure_retriever(name, retriever, registry, test, pool, count, full_tokens)
            per[name]["fit_s"] = round(fit_s, 3)
            if calibration:
                per[name]["calibrated_k"] = int(calibration["k"])
            if name.startswith("hybrid") and name != "hybrid_untrained":
                built[name] = retriever
        chosen = choose_default(per, [n for n in built], args.target_recall)
        default_retrievers[reg_name] = built[chosen]
        best = per[chosen]
        results[reg_name] = {
            "retriever": chosen,
            "recall": best["recall"],
            "all_tools_found": best["all_tools_found"],
            "mean_tools_offered": best["mean_tools_offered"],
            "prompt_token_ratio": best["prompt_token_ratio"],
            "latency_ms_p50": best["latency_ms_p50"],
            "dag_success_with": None,
            "dag_success_without": None,
            "planner_latency_s_with": None,
            "planner_latency_s_without": None,
            "registry_size": len(registry),
            "retrievers": per,
        }

    if not args.skip_planner:
        limit = args.planner_limit or len(test)
        cases = test[:limit]
        planner = run_planner(
            registries, default_retrievers, pool, cases, args.planner_model, args.n_ctx, args.threads, max_full,
            args.without_from,
        )
        store_planner(results, planner, args, len(cases))

    meta = {
        "evalset": {"train": len(train), "test": len(test)},
        "token_counter": count.name,
        "planner": None if args.skip_planner else args.planner_model,
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "note": "recall = mean per-request share of gold tools offered (requests that need a tool); "
        "all_tools_found = share of those requests with every gold tool offered; latency = one retrieve() call, "
        "onnxruntime on 1 thread",
    }
    for reg_name in registries:
        results[reg_name]["meta"] = meta
    if not args.skip_foreign:
        results["foreign"] = foreign_results(args)
    # Merge into an earlier file: a retrieval-only run keeps the planner numbers of an earlier planner run, and a
    # planner run keeps whatever else the file holds (other registries, keys this run did not produce).
    if args.out.is_file():
        old = json.loads(args.out.read_text())
        planner_keys = (
            "dag_success_with",
            "dag_success_without",
            "planner_latency_s_with",
            "planner_latency_s_without",
            "planner",
        )
        for reg_name, old_entry in old.items():
            if reg_name not in results:
                results[reg_name] = old_entry
                continue
            for key, value in old_entry.items():
                keep_old = key not in results[reg_name] or (
                    args.skip_planner and key in planner_keys and results[reg_name].get(key) is None
                )
                if keep_old:
                    results[reg_name][key] = value
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    log.info("wrote %s", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
