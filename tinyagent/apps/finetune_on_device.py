r"""Fine-tune a small planner for your own tools, on this machine, in one resumable command.

    tinyagent finetune run --tools my_tools.py --teacher http://localhost:8080/v1
    tinyagent finetune run --tools builtin --teacher qwen2.5-coder-1.5b --student qwen2.5-coder-0.5b

(``python -m tinyagent.apps.finetune_on_device ...`` runs the same command.)

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

import asyncio
import datetime as dt
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError

__all__ = ["STAGES", "OnDeviceSettings", "run"]

log = logging.getLogger(__name__)

STAGES = ("distill", "eval_before", "train", "export", "eval_after", "register", "report")


@dataclass(frozen=True)
class OnDeviceSettings:
    """What one pipeline run does (the options of ``tinyagent finetune run``).

    Attributes:
        tools: ``my_tools.py``, ``builtin``, a JSON spec file or ``MODULE:ATTR``.
        teacher: an OpenAI-compatible URL (``URL#model``), a catalog name or a ``.gguf``.
        student: a catalog name or a ``.gguf``.
        work: the run folder (resumed when it exists).
        name: the catalog name of the tuned model.
        n, batch, seed, examples: the synthesis (requests, requests per teacher call, seed, worked examples).
        data_dir: the built-in tools' data folder (copied for dry runs, never written).
        steps, epochs, train_batch, lr, max_length, save_steps, qlora: the training.
        types: quantizations of the merged model (comma-separated, or ``none``).
        eval_set, eval_n, skip_eval: what accuracy is measured on.
        threads: llama.cpp and torch threads.
        fresh: forget the recorded stages (the data and checkpoints stay).
    """

    tools: str
    teacher: str
    student: str = "qwen2.5-coder-0.5b"
    work: Path = Path("tinyagent-finetune")
    name: str = "my-planner"
    n: int = 200
    batch: int = 5
    seed: int = 0
    examples: Path | None = None
    data_dir: Path | None = None
    steps: int = -1
    epochs: float = 2.0
    train_batch: int = 4
    lr: float = 2e-4
    max_length: int = 1024
    save_steps: int = 25
    qlora: bool | None = None
    types: str = "Q4_K_M"
    eval_set: Path | None = None
    eval_n: int = 0
    skip_eval: bool = False
    threads: int | None = None
    fresh: bool = False


def parse_types(value: str) -> list[str]:
    """``"Q8_0,Q4_K_M"`` -> ``["Q8_0", "Q4_K_M"]`` (empty for ``""`` or ``"none"``)."""
    if value.strip().lower() in ("", "none"):
        return []
    return [v.strip().upper() for v in value.split(",") if v.strip()]


class _State:
    def __init__(self, work: Path) -> None:
        self.path = work / "state.json"
        from ..finetune import read_json

        self.data: dict[str, Any] = read_json(self.path, {}) or {}

    def done(self, stage: str) -> bool:
        return stage in self.data.get("stages", {})

    def get(self, stage: str) -> Any:
        return self.data.get("stages", {}).get(stage)

    def finish(self, stage: str, value: Any) -> None:
        from ..finetune import atomic_write_json

        self.data.setdefault("stages", {})[stage] = value
        atomic_write_json(self.path, self.data)


def _eval_cases(args: OnDeviceSettings, data_dir: Path) -> list[Any]:
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
    from ..evals import planning_accuracy

    if not cases:
        return {"n": 0, "note": "no held-out requests to evaluate on"}
    scored = planning_accuracy(path, cases, list(tools.values()), lora_path=lora, n_threads=threads)
    return {k: scored[k] for k in ("n", "dag_success", "strict_success", "mean_latency_s")}


class _Pipeline:
    """One run: the tools, the recorded stages and the timings; each stage is a method that runs at most once."""

    def __init__(self, args: OnDeviceSettings, progress: Any) -> None:
        from ..models import ModelCatalog
        from ._runtime import load_tools

        self.args, self.progress = args, progress
        self.work = Path(args.work)
        self.work.mkdir(parents=True, exist_ok=True)
        self.state = _State(self.work)
        if args.fresh:
            self.state.data = {}
        self.data_dir = Path(args.data_dir) if args.data_dir else None
        self.tools = load_tools(args.tools, self.data_dir)
        student = args.student
        self.student_gguf = Path(student) if student.endswith(".gguf") else ModelCatalog().path(student)
        self.timings: dict[str, float] = dict(self.state.data.get("timings", {}))
        self.cases: list[Any] = []

    def stage(self, name: str, step: Any) -> None:
        """Run ``step()`` unless ``name`` is recorded as done; record its result and time."""
        if self.state.done(name):
            return
        start = time.perf_counter()
        value = step()
        self.timings[name] = round(self.timings.get(name, 0.0) + time.perf_counter() - start, 1)
        self.state.data["timings"] = self.timings
        self.state.finish(name, value)

    def distill(self) -> Any:
        from ..finetune import DistillConfig, builtin_dry_run, distill, load_examples
        from ._runtime import load_model_spec

        args = self.args
        teacher = load_model_spec(args.teacher, threads=args.threads)
        dry = builtin_dry_run(data_dir=self.data_dir) if args.tools == "builtin" else None
        try:
            result = asyncio.run(distill(
                self.tools, teacher, self.work / "data", examples=load_examples(args.examples),
                config=DistillConfig(n_requests=args.n, batch_size=args.batch, seed=args.seed), dry_run=dry,
                progress=self.progress,
            ))
        finally:
            if dry is not None:
                dry.close()
            asyncio.run(teacher.aclose())
        if result.kept == 0:
            raise ConfigurationError("the teacher produced no usable examples; see data/rejected.jsonl for why")
        return result.stats

    def train(self) -> Any:
        from ..finetune import TrainConfig, train

        args = self.args
        config = TrainConfig(max_steps=args.steps, epochs=args.epochs, batch_size=args.train_batch,
                             learning_rate=args.lr, max_length=args.max_length, save_steps=args.save_steps,
                             threads=args.threads, qlora=args.qlora)
        return train(self.work / "data", args.student, self.work / "train", config=config,
                     progress=self.progress).to_json()

    def export(self) -> Any:
        from ..quant import export_adapter, merge_and_quantize

        args = self.args
        adapter_dir = Path(self.state.get("train")["adapter_dir"])
        adapter_gguf = export_adapter(adapter_dir, self.work / "export" / f"{args.name}-lora.gguf",
                                      progress=self.progress)
        exported: dict[str, Any] = {"adapter_gguf": str(adapter_gguf)}
        types = parse_types(args.types)
        if types:
            merged = merge_and_quantize(adapter_dir, self.work / "export", types=types, name=args.name,
                                        threads=args.threads, progress=self.progress)
            exported.update(merged.to_json())
        return exported

    def quantized(self) -> dict[str, Path]:
        return {k: Path(v) for k, v in (self.state.get("export") or {}).get("quantized", {}).items()}

    def eval_after(self) -> Any:
        """The adapter over the packaged base, and each quantized merge."""
        lora = Path(self.state.get("export")["adapter_gguf"])
        after = {"adapter": _accuracy(self.student_gguf, lora, self.cases, self.tools, self.args.threads)}
        for qtype, path in self.quantized().items():
            after[qtype] = _accuracy(path, None, self.cases, self.tools, self.args.threads)
        return after

    def register(self) -> Any:
        from ..quant import register_model

        args, registered = self.args, {}
        quantized = self.quantized()
        if quantized:
            smallest = min(quantized.values(), key=lambda p: p.stat().st_size)
            registered[args.name] = str(register_model(args.name, smallest, description="fine-tuned planner").name)
        if not args.student.endswith(".gguf"):
            lora_name = f"{args.name}-lora"
            registered[lora_name] = str(register_model(lora_name, self.state.get("export")["adapter_gguf"],
                                                       base=args.student,
                                                       description=f"LoRA adapter over {args.student}").name)
        return registered

    def report(self) -> dict[str, Any]:
        from ..finetune import atomic_write_json

        get = self.state.get
        report = {
            "tools": list(self.tools), "teacher": self.args.teacher, "student": self.args.student,
            "data": get("distill"), "eval_before": get("eval_before"),
            "train": {k: v for k, v in (get("train") or {}).items() if k != "losses"},
            "export": get("export"), "eval_after": get("eval_after"), "registered": get("register"),
            "timings_s": self.timings,
        }
        atomic_write_json(self.work / "report.json", report)
        (self.work / "report.md").write_text(_markdown(report), encoding="utf-8")
        self.state.finish("report", str(self.work / "report.json"))
        return report


def run(args: OnDeviceSettings, progress: Any = None) -> dict[str, Any]:
    """Run (or resume) the pipeline that ``args`` describes; return the report.

    Raises:
        TinyAgentError: a stage failed (the finished stages stay recorded; run again to continue).
    """
    p = _Pipeline(args, progress)
    p.stage("distill", p.distill)
    p.cases = _eval_cases(args, p.work / "data")
    if not args.skip_eval:
        p.stage("eval_before", lambda: _accuracy(p.student_gguf, None, p.cases, p.tools, args.threads))
    p.stage("train", p.train)
    p.stage("export", p.export)
    if not args.skip_eval:
        p.stage("eval_after", p.eval_after)
    p.stage("register", p.register)
    return p.report()


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


if __name__ == "__main__":  # ``python -m tinyagent.apps.finetune_on_device``: ``tinyagent finetune run``
    from ._entry import run_command

    run_command(["finetune", "run"])
