"""``tinyagent distill`` and ``tinyagent finetune distill|train|run``: teacher distillation and LoRA fine-tuning."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from .._progress import RichProgress
from ._app import AppState, app, state

__all__ = ["distill", "finetune_app", "train"]

finetune_app = typer.Typer(help="Fine-tune a planner for your tools: distill, train, or the whole pipeline (run).",
                   no_args_is_help=True)
app.add_typer(finetune_app, name="finetune")

Teacher = Annotated[str, typer.Option(help="An OpenAI-compatible URL (URL#model), a catalog name or a .gguf.")]


def _bar(st: AppState) -> RichProgress:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    return RichProgress(st.err)


def distill(
    ctx: typer.Context,
    teacher: Teacher,
    out: Annotated[Path, typer.Option(help="The run folder (resumed when it exists).")],
    n: Annotated[int, typer.Option("-n", help="Requests to synthesize.")] = 200,
    batch: Annotated[int, typer.Option(help="Requests per teacher call.")] = 5,
    seed: Annotated[int, typer.Option(help="Seeds the batch plan, the dates and the typos.")] = 0,
    valid_fraction: Annotated[float, typer.Option(help="Share of examples held out.")] = 0.1,
    examples: Annotated[Path | None, typer.Option(help="A JSONL file of worked examples.")] = None,
    dry_run: Annotated[str, typer.Option(help="auto, builtin or none: run plans on scratch data.")] = "auto",
    fresh: Annotated[bool, typer.Option(help="Start over instead of resuming.")] = False,
) -> None:
    """Synthesize and verify planning data for the --tools set with a teacher model."""
    from ...finetune import DistillConfig, builtin_dry_run, load_examples
    from ...finetune import distill as run_distill

    st = state(ctx)
    tools = st.tools()
    bar = _bar(st)
    config = DistillConfig(n_requests=n, batch_size=batch, seed=seed, valid_fraction=valid_fraction)
    builtin = st.tools_spec in (None, "builtin")
    dry = builtin_dry_run(data_dir=st.data_dir) if dry_run == "builtin" or (dry_run == "auto" and builtin) else None
    teacher_model = _load(st, teacher)
    try:
        with bar.live():
            result = asyncio.run(run_distill(tools, teacher_model, out, examples=load_examples(examples),
                                             config=config, dry_run=dry, resume=not fresh, progress=bar))
    finally:
        if dry is not None:
            dry.close()
    st.emit_json(result.stats)


def _load(st: AppState, spec: str) -> Any:
    from .. import _runtime as rt

    return rt.load_model_spec(spec, threads=st.threads)


app.command("distill")(distill)
finetune_app.command("distill")(distill)


@finetune_app.command("train")
def train(
    ctx: typer.Context,
    data: Annotated[Path, typer.Option(help="A distill folder or a train.jsonl.")],
    base: Annotated[str, typer.Option(help="A catalog name, a .gguf or a Hugging Face directory.")],
    out: Annotated[Path, typer.Option(help="The run folder (resumed from its last checkpoint).")],
    steps: Annotated[int, typer.Option(help="Optimizer steps (-1: use --epochs).")] = -1,
    epochs: Annotated[float, typer.Option(help="Passes over the data.")] = 2.0,
    batch: Annotated[int, typer.Option(help="Examples per batch.")] = 4,
    grad_accum: Annotated[int, typer.Option(help="Batches per optimizer step.")] = 1,
    lr: Annotated[float, typer.Option(help="Peak learning rate.")] = 2e-4,
    lora_r: Annotated[int, typer.Option(help="LoRA rank (alpha is twice the rank).")] = 8,
    max_length: Annotated[int, typer.Option(help="Tokens per example; longer ones are dropped.")] = 1024,
    save_steps: Annotated[int, typer.Option(help="Checkpoint interval in steps.")] = 25,
    qlora: Annotated[bool | None, typer.Option("--qlora/--no-qlora", help="4-bit QLoRA (default: on CUDA only).")]
    = None,
    device: Annotated[str | None, typer.Option(help="cpu or cuda (default: CUDA when torch sees it).")] = None,
    fresh: Annotated[bool, typer.Option(help="Start over instead of resuming.")] = False,
) -> None:
    """LoRA fine-tuning on distilled data (extra tinyagent[finetune])."""
    from ...finetune import TrainConfig
    from ...finetune import train as run_train

    st = state(ctx)
    bar = _bar(st)
    config = TrainConfig(max_steps=steps, epochs=epochs, batch_size=batch, grad_accum=grad_accum, learning_rate=lr,
                         max_length=max_length, save_steps=save_steps, qlora=qlora, device=device,
                         threads=st.threads, lora_r=lora_r, lora_alpha=2 * lora_r)
    with bar.live():
        result = run_train(data, base, out, config=config, resume=not fresh, progress=bar)
    st.emit_json(result.to_json())


@finetune_app.command("run")
def run_pipeline(
    ctx: typer.Context,
    teacher: Teacher,
    student: Annotated[str, typer.Option(help="A catalog name or a .gguf.")] = "qwen2.5-coder-0.5b",
    work: Annotated[Path, typer.Option(help="The run folder (resumed when it exists).")] = Path("tinyagent-finetune"),
    name: Annotated[str, typer.Option(help="The catalog name of the tuned model.")] = "my-planner",
    n: Annotated[int, typer.Option("-n", help="Requests to synthesize.")] = 200,
    batch: Annotated[int, typer.Option(help="Requests per teacher call.")] = 5,
    seed: Annotated[int, typer.Option(help="The synthesis seed.")] = 0,
    examples: Annotated[Path | None, typer.Option(help="A JSONL file of worked examples.")] = None,
    steps: Annotated[int, typer.Option(help="Optimizer steps (-1: use --epochs).")] = -1,
    epochs: Annotated[float, typer.Option(help="Passes over the data.")] = 2.0,
    train_batch: Annotated[int, typer.Option(help="Examples per training batch.")] = 4,
    lr: Annotated[float, typer.Option(help="Peak learning rate.")] = 2e-4,
    max_length: Annotated[int, typer.Option(help="Tokens per example.")] = 1024,
    save_steps: Annotated[int, typer.Option(help="Checkpoint interval in steps.")] = 25,
    qlora: Annotated[bool | None, typer.Option("--qlora/--no-qlora", help="4-bit QLoRA (default: CUDA only).")]
    = None,
    types: Annotated[str, typer.Option(help="Quantizations of the merged model (comma-separated, or none).")]
    = "Q4_K_M",
    eval_set: Annotated[Path | None, typer.Option(help="A JSONL eval set to measure accuracy on.")] = None,
    eval_n: Annotated[int, typer.Option(help="Evaluate on at most this many cases (0: all).")] = 0,
    skip_eval: Annotated[bool, typer.Option(help="Skip the before/after accuracy.")] = False,
    fresh: Annotated[bool, typer.Option(help="Forget the recorded stages (data and checkpoints stay).")] = False,
) -> None:
    """Distill, fine-tune, export, evaluate and register a planner for the --tools set, resumably."""
    from ..finetune_on_device import OnDeviceSettings
    from ..finetune_on_device import run as run_on_device

    st = state(ctx)
    settings = OnDeviceSettings(
        tools=st.tools_spec or "builtin", teacher=teacher, student=student, work=work, name=name, n=n, batch=batch,
        seed=seed, examples=examples, data_dir=st.data_dir, steps=steps, epochs=epochs, train_batch=train_batch,
        lr=lr, max_length=max_length, save_steps=save_steps, qlora=qlora, types=types, eval_set=eval_set,
        eval_n=eval_n, skip_eval=skip_eval, threads=st.threads, fresh=fresh)
    bar = _bar(st)
    with bar.live():
        report = run_on_device(settings, progress=bar)
    if st.json:
        st.emit_json(report)
        return
    st.console.print(_accuracy_table(report))
    st.console.print(Text(f"Report: {work / 'report.md'}; use the model with Agent(model={name!r})"))


def _accuracy_table(report: dict[str, Any]) -> Table:
    table = Table(title="planning accuracy")
    for column in ("model", "DAG success", "strict success", "s/request"):
        table.add_column(column)
    rows = [("student before", report.get("eval_before"))]
    rows += [(f"tuned ({k})", v) for k, v in (report.get("eval_after") or {}).items()]
    for label, acc in rows:
        if acc and acc.get("n"):
            table.add_row(label, f"{acc['dag_success']:.1%}", f"{acc['strict_success']:.1%}",
                          f"{acc['mean_latency_s']:.2f}")
    return table
