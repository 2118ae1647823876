"""``tinyagent quant export|merge|quantize|compare|register``: back to llama.cpp, and a size/speed/accuracy table."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from ..finetune_on_device import parse_types
from ._app import AppState, app, state
from .finetune import _bar

__all__ = ["quant_app"]

quant_app = typer.Typer(help="Export a tuned adapter as GGUF, merge and quantize, and compare GGUF models.",
                no_args_is_help=True)
app.add_typer(quant_app, name="quant")

Adapter = Annotated[Path, typer.Option(help="The adapter folder that training wrote (runs/train/adapter).")]
Base = Annotated[str | None, typer.Option(help="The base model (default: the one recorded by training).")]
EvalN = Annotated[int, typer.Option("--eval", help="Test cases of the built-in tools for accuracy (0 skips).")]


@quant_app.command("export")
def export(
    ctx: typer.Context,
    adapter: Adapter,
    base: Base = None,
    out: Annotated[Path | None, typer.Option(help="Default: adapter.gguf next to the adapter folder.")] = None,
    outtype: Annotated[str, typer.Option(help="f16, f32, bf16 or q8_0.")] = "f16",
) -> None:
    """Export a LoRA adapter as a GGUF adapter that llama.cpp applies over the packaged base."""
    from ...quant import export_adapter

    st = state(ctx)
    bar = _bar(st)
    with bar.live():
        path = export_adapter(adapter, out, base=base, outtype=outtype, progress=bar)
    st.emit_json({"adapter_gguf": str(path)})


@quant_app.command("merge")
def merge(
    ctx: typer.Context,
    adapter: Adapter,
    out: Annotated[Path, typer.Option(help="The output folder.")],
    base: Base = None,
    types: Annotated[str, typer.Option(help="Comma-separated quantizations, or 'none'.")] = "Q8_0,Q4_K_M",
    name: Annotated[str, typer.Option(help="The output files' stem.")] = "tuned",
    register: Annotated[str | None, typer.Option(help="Register the smallest result in the catalog as NAME.")]
    = None,
) -> None:
    """Merge the adapter into the base, convert to GGUF f16 and quantize."""
    from ...quant import merge_and_quantize, register_model

    st = state(ctx)
    bar = _bar(st)
    with bar.live():
        result = merge_and_quantize(adapter, out, base=base, types=parse_types(types), name=name, threads=st.threads,
                                    progress=bar)
    summary = result.to_json()
    if register:
        smallest = min([result.f16, *result.quantized.values()], key=lambda p: p.stat().st_size)
        summary["registered"] = register_model(register, smallest).name
    st.emit_json(summary)


def _accuracy(n: int, threads: int | None) -> Callable[[str | Path, str | Path | None], Mapping[str, Any]] | None:
    """Planning accuracy on the first ``n`` cases of the built-in tools' test split (None when ``n`` is 0)."""
    if n <= 0:
        return None
    from ...evals import load_evalset, planning_accuracy
    from ...functions import FunctionsSettings, builtin_tools

    cases, tools = load_evalset("test")[:n], builtin_tools(FunctionsSettings(timezone="UTC"))

    def accuracy(path: str | Path, lora: str | Path | None) -> Mapping[str, Any]:
        return planning_accuracy(path, cases, tools, lora_path=lora, n_threads=threads)

    return accuracy


def _show(st: AppState, rows: Sequence[Any]) -> None:
    if st.json:
        st.emit_json([row.to_json() for row in rows])
        return
    table = Table(title="GGUF models")
    for column in ("model", "size MB", "load s", "prompt tok/s", "gen tok/s", "DAG acc", "strict acc", "s/request"):
        table.add_column(column, justify="left" if column == "model" else "right")
    for r in rows:
        table.add_row(
            r.name, f"{r.size_mb:.1f}", f"{r.load_s:.2f}", f"{r.prompt_tok_s:.0f}", f"{r.gen_tok_s:.0f}",
            f"{r.dag_success:.1%}" if r.dag_success is not None else "-",
            f"{r.strict_success:.1%}" if r.strict_success is not None else "-",
            f"{r.mean_latency_s:.2f}" if r.mean_latency_s is not None else "-",
        )
    st.console.print(table)


@quant_app.command("quantize")
def quantize_cmd(
    ctx: typer.Context,
    src: Annotated[Path, typer.Argument(help="An f16 GGUF.")],
    types: Annotated[str, typer.Option(help="Comma-separated quantizations.")] = "Q8_0,Q5_K_M,Q4_K_M",
    out_dir: Annotated[Path | None, typer.Option(help="Default: next to the source.")] = None,
    eval_n: EvalN = 20,
) -> None:
    """Quantize an f16 GGUF and compare the results in a table."""
    from ...quant import compare, quantize

    st = state(ctx)
    folder = out_dir or src.parent
    stem = src.stem[:-4] if src.stem.lower().endswith("-f16") else src.stem
    outputs: dict[str, str | Path] = {"F16": src}
    for qtype in parse_types(types):
        outputs[qtype] = quantize(src, folder / f"{stem}-{qtype}.gguf", qtype, threads=st.threads)
    _show(st, compare(outputs, accuracy=_accuracy(eval_n, st.threads), n_threads=st.threads))


@quant_app.command("compare")
def compare_cmd(
    ctx: typer.Context,
    paths: Annotated[list[Path], typer.Argument(help="GGUF files.")],
    eval_n: EvalN = 20,
) -> None:
    """Size, speed and accuracy of GGUF models, in a table."""
    from ...quant import compare

    st = state(ctx)
    _show(st, compare(list(paths), accuracy=_accuracy(eval_n, st.threads), n_threads=st.threads))


@quant_app.command("register")
def register_cmd(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The catalog name.")],
    path: Annotated[Path, typer.Argument(help="A GGUF, or an adapter GGUF with --base.")],
    base: Annotated[str | None, typer.Option(help="For an adapter GGUF: the catalog name of its base.")] = None,
) -> None:
    """Put a GGUF (or an adapter over a catalog base) in the model catalog, so Agent(model=NAME) loads it."""
    from ...quant import register_model

    st = state(ctx)
    entry = register_model(name, path, base=base)
    st.emit_json({"registered": entry.name, "path": entry.path or entry.lora_path})
