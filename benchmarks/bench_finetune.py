"""Distillation benchmark: a Qwen2.5-Coder-0.5B student tuned on plans the 1.5B teacher wrote for the built-in tools.

    flock /tmp/tinyagent-heavy.lock python benchmarks/bench_finetune.py   # the measured run (about 70 min on 2 cores)

Steps (each cached in ``--work``, so a killed or repeated run resumes):

1. distill: the 1.5B teacher writes ``--examples`` requests for the built-in tools and plans them through the Agent
   (tool retrieval on, few-shot examples from the eval set's *train* split); plans are verified, including a dry
   run on a scratch copy of the demo data.
2. train: LoRA on the 0.5B student (dequantized from the catalog GGUF), loss on the plan only, ``--steps`` steps.
3. export: the adapter as GGUF (applied by llama.cpp over the packaged 0.5B); optionally merged + Q4_K_M.
4. evaluate on the functions eval *test* split (first ``--limit`` cases): base 0.5B and the 1.5B teacher with
   few-shot examples, the tuned 0.5B with the prompt it was trained on (``--student-prompt``: ``teacher`` = the
   teacher's prompt, retrieved tools + 4 similar train-split examples; ``bare`` = retrieved tools only). Same
   retriever for all.

Writes benchmarks/results/finetune.json with base_acc, tuned_acc, teacher_acc (DAG success), strict_* versions,
sec_per_step, train_minutes, examples_kept, examples_dropped, latency and size per model, and the configuration.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tinyagent import Agent
from tinyagent._plan import Example, Plan
from tinyagent.finetune import DistillConfig, TrainConfig, builtin_dry_run, distill, train
from tinyagent.functions import FunctionsSettings, builtin_tools, init_demo
from tinyagent.models import LlamaCppModel, ModelCatalog
from tinyagent.quant import export_adapter, merge_and_quantize
from tinyagent.scoring import evaluate, load_evalset

RESULTS = Path(__file__).parent / "results"
log = logging.getLogger("bench_finetune")


def retriever() -> Any:
    """The built-in tools' retriever (the classifier shipped in the package; recall 1.0 on the test split)."""
    from tinyagent.functions import builtin_retriever

    return builtin_retriever()


def train_examples() -> list[Example]:
    return [Example(c.query, Plan.from_json(c.calls, answer=c.answer), c.today) for c in load_evalset("train")]


def seed_examples(pool: list[Example], k: int) -> list[Example]:
    """A few diverse user examples (one per tool combination, multi-step first) to seed request synthesis."""
    seen: set[frozenset[str]] = set()
    out = []
    for ex in sorted(pool, key=lambda e: (-len(e.plan.calls), e.query)):
        if ex.tool_names not in seen:
            seen.add(ex.tool_names)
            out.append(ex)
        if len(out) >= k:
            break
    return out


async def eval_model(name: str, path: Path, lora: Path | None, cases: list[Any], tools: list[Any],
                     examples: list[Example], threads: int, *, max_examples: int) -> dict[str, Any]:
    model = LlamaCppModel(path=path, lora_path=lora, n_threads=threads)
    try:
        agent = Agent(tools, model=model, examples=examples, retriever=retriever(), max_examples=max_examples)
        await agent.plan("warm up the prompt cache", today=cases[0].today)
        result = await evaluate(agent, cases, tools)
    finally:
        await model.aclose()
    size = path.stat().st_size + (lora.stat().st_size if lora else 0)
    return {
        "model": name, "n": result["n"], "dag_success": result["dag_success"],
        "strict_success": result["strict_success"], "mean_latency_s": result["mean_latency_s"],
        "size_mb": round(size / 1e6, 1), "by_category": result["by_category"],
        "errors": len(result["errors"]), "dag_failures": result["dag_failures"],
        "predictions": result["predictions"],  # kept in the work folder for diagnosis, not in finetune.json
    }


def cached(path: Path, compute: Any) -> Any:
    if path.is_file():
        return json.loads(path.read_text())
    value = compute()
    path.write_text(json.dumps(value, indent=2, default=str))
    return value


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        epilog="A reduced run (minutes, not hours): --requests 10 --max-steps 3 --eval-limit 5 --work /tmp/bench-small",
    )
    ap.add_argument("--examples", "--requests", dest="examples", type=int, default=70,
                    help="requests the teacher synthesizes (one teacher call per 5)")
    ap.add_argument("--steps", "--max-steps", dest="steps", type=int, default=45, help="training steps (-1: --epochs)")
    ap.add_argument("--epochs", type=float, default=2.0)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--grad-accum", type=int, default=1)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--max-length", type=int, default=1280)
    ap.add_argument("--limit", "--eval-limit", dest="limit", type=int, default=0,
                    help="test cases to evaluate each model on (0: all)")
    ap.add_argument("--student-prompt", choices=("teacher", "bare"), default="teacher",
                    help="the prompt in the training data and for the tuned model: the teacher's (with few-shot "
                    "examples) or bare (retrieved tools only: shorter, no examples)")
    ap.add_argument("--seeds", type=int, default=6, help="user examples that seed request synthesis")
    ap.add_argument("--teacher", default="qwen2.5-coder-1.5b")
    ap.add_argument("--student", default="qwen2.5-coder-0.5b")
    ap.add_argument("--threads", type=int, default=int(os.environ.get("BENCH_THREADS", "2")))
    ap.add_argument("--merge", default="", help="also merge and quantize, e.g. Q4_K_M, and evaluate that too")
    ap.add_argument("--work", default=str(Path(tempfile.gettempdir()) / "tinyagent-bench-finetune"))
    ap.add_argument("--output", default=str(RESULTS / "finetune.json"))
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    catalog = ModelCatalog()
    teacher_path, student_path = catalog.path(args.teacher), catalog.path(args.student)
    pool = train_examples()
    seeds = seed_examples(pool, args.seeds)
    cases = load_evalset("test")
    cases = cases[: args.limit] if args.limit else cases
    timings: dict[str, float] = {}

    with tempfile.TemporaryDirectory() as tmp:
        demo = Path(tmp) / "demo"
        init_demo(demo)
        tools = builtin_tools(FunctionsSettings(data_dir=demo, timezone="UTC"))

        # 1. distill
        start = time.perf_counter()
        teacher = LlamaCppModel(args.teacher, n_threads=args.threads)
        with builtin_dry_run() as dry:
            data = asyncio.run(distill(
                tools, teacher, work / "data", examples=seeds,
                config=DistillConfig(n_requests=args.examples, batch_size=5, seed=0, valid_fraction=0.0),
                dry_run=dry, student_examples=None if args.student_prompt == "teacher" else (),
                agent_options={"retriever": retriever(), "examples": pool, "max_examples": 4},
            ))
        asyncio.run(teacher.aclose())
        timings["distill_s"] = time.perf_counter() - start

        # 2. train
        start = time.perf_counter()
        config = TrainConfig(max_steps=args.steps, epochs=args.epochs, batch_size=args.batch,
                             grad_accum=args.grad_accum, learning_rate=args.lr, max_length=args.max_length,
                             save_steps=10, threads=args.threads, probe=True, eval_loss=False)
        trained = train(work / "data", args.student, work / "train", config=config)
        timings["train_call_s"] = time.perf_counter() - start

        # 3. export
        start = time.perf_counter()
        adapter = work / "adapter.gguf"
        if not adapter.is_file():
            export_adapter(trained.adapter_dir, adapter)
        merged: dict[str, Path] = {}
        if args.merge:
            merged = merge_and_quantize(trained.adapter_dir, work / "export", types=args.merge.split(","),
                                        name="student-tuned").quantized
        timings["export_s"] = time.perf_counter() - start

        # 4. evaluate (cached per model in the work folder)
        start = time.perf_counter()
        key = f"{args.limit or 'all'}"
        models: dict[str, Any] = {}
        models["base"] = cached(work / f"eval-base-{key}.json", lambda: asyncio.run(eval_model(
            args.student, student_path, None, cases, tools, pool, args.threads, max_examples=4)))
        tuned_examples = 4 if args.student_prompt == "teacher" else 0
        tkey = f"{key}-{args.student_prompt}-{trained.global_step}"
        models["tuned"] = cached(work / f"eval-tuned-{tkey}.json", lambda: asyncio.run(
            eval_model(f"{args.student}+lora", student_path, adapter, cases, tools, pool, args.threads,
                       max_examples=tuned_examples)))
        for qtype, path in merged.items():
            models[f"tuned_{qtype}"] = cached(work / f"eval-tuned-{qtype}-{tkey}.json",
                                              lambda p=path, q=qtype: asyncio.run(eval_model(
                                                  f"{args.student}-tuned-{q}", p, None, cases, tools, pool,
                                                  args.threads, max_examples=tuned_examples)))
        models["teacher"] = cached(work / f"eval-teacher-{key}.json", lambda: asyncio.run(eval_model(
            args.teacher, teacher_path, None, cases, tools, pool, args.threads, max_examples=4)))
        timings["eval_s"] = time.perf_counter() - start

    stats = data.stats
    steps_done = trained.global_step
    out = {
        "base_acc": models["base"]["dag_success"],
        "tuned_acc": models["tuned"]["dag_success"],
        "teacher_acc": models["teacher"]["dag_success"],
        "strict_base_acc": models["base"]["strict_success"],
        "strict_tuned_acc": models["tuned"]["strict_success"],
        "strict_teacher_acc": models["teacher"]["strict_success"],
        "sec_per_step": trained.sec_per_step,
        "estimated_sec_per_step": trained.estimated_sec_per_step,
        "train_minutes": round(trained.train_seconds / 60, 2),
        "train_steps": steps_done,
        "examples_kept": stats["kept"],
        "examples_dropped": stats["dropped"],
        "dropped_by_reason": stats["dropped_by_reason"],
        "tolerated_in_dry_run": stats.get("tolerated_in_dry_run", {}),
        "latency_s": {k: v["mean_latency_s"] for k, v in models.items()},
        "size_mb": {k: v["size_mb"] for k, v in models.items()},
        "models": {k: {f: v for f, v in m.items() if f != "predictions"} for k, m in models.items()},
        "config": {
            "teacher": args.teacher, "student": args.student, "requests": args.examples, "steps": args.steps,
            "batch": args.batch, "grad_accum": args.grad_accum, "lr": args.lr, "max_length": args.max_length,
            "lora_r": config.lora_r, "eval_cases": len(cases), "split": "test", "threads": args.threads,
            "retriever": "tinyagent.functions.builtin_retriever() (shipped classifier + BM25 + example votes)",
            "prompts": "base and teacher: retrieved tools + 4 similar train-split examples; tuned: "
                       + ("the same (as trained)" if args.student_prompt == "teacher"
                          else "retrieved tools, no examples (as trained)"),
            "student_prompt": args.student_prompt,
            "load_1m_at_end": os.getloadavg()[0],
        },
        "timings_s": {k: round(v, 1) for k, v in timings.items()},
        "distill_seconds": stats.get("seconds"),
    }
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(out, indent=2, default=str) + "\n")
    print(f"base {out['base_acc']:.3f}  tuned {out['tuned_acc']:.3f}  teacher {out['teacher_acc']:.3f}  (DAG, "
          f"n={len(cases)}); strict {out['strict_base_acc']:.3f} / {out['strict_tuned_acc']:.3f} / "
          f"{out['strict_teacher_acc']:.3f}; {steps_done} steps at {out['sec_per_step'] or 0:.1f} s/step; kept "
          f"{out['examples_kept']}, dropped {out['examples_dropped']}")


if __name__ == "__main__":
    main()
