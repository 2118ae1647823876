"""``python -m tinyagent.quant``: export adapters, merge and quantize, and compare GGUF models in a table.

Examples::

    python -m tinyagent.quant export --adapter runs/train/adapter
    python -m tinyagent.quant merge --adapter runs/train/adapter --out runs/export --types Q8_0,Q4_K_M
    python -m tinyagent.quant quantize model-f16.gguf --types Q8_0,Q5_K_M,Q4_K_M --eval 20
    python -m tinyagent.quant compare a.gguf b.gguf --eval 20
    python -m tinyagent.quant register my-planner runs/export/tuned-Q4_K_M.gguf
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import TinyAgentError

__all__ = ["main"]


def _eval_cases(n: int) -> tuple[list[Any], list[Any]]:
    """The first ``n`` cases of the built-in tools' test split, and the built-in tools (planning only)."""
    if n <= 0:
        return [], []
    from ..functions import FunctionsSettings, builtin_tools
    from ..scoring import load_evalset

    return load_evalset("test")[:n], builtin_tools(FunctionsSettings(timezone="UTC"))


def _table(console: Any, rows: Sequence[Any]) -> None:
    from rich.table import Table

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
    console.print(table)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser."""
    parser = argparse.ArgumentParser(prog="python -m tinyagent.quant", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    e = sub.add_parser("export", help="a LoRA adapter as a GGUF adapter for llama.cpp")
    e.add_argument("--adapter", required=True)
    e.add_argument("--base", help="default: the base recorded by training")
    e.add_argument("--out", help="default: adapter.gguf next to the adapter folder")
    e.add_argument("--outtype", default="f16", choices=("f16", "f32", "bf16", "q8_0"))
    m = sub.add_parser("merge", help="merge, convert to GGUF f16 and quantize")
    m.add_argument("--adapter", required=True)
    m.add_argument("--out", required=True)
    m.add_argument("--base")
    m.add_argument("--types", default="Q8_0,Q4_K_M", help="comma-separated, or 'none'")
    m.add_argument("--name", default="tuned")
    m.add_argument("--register", help="register the smallest result in the catalog under this name")
    q = sub.add_parser("quantize", help="quantize an f16 GGUF and compare the results")
    q.add_argument("src")
    q.add_argument("--types", default="Q8_0,Q5_K_M,Q4_K_M")
    q.add_argument("--out-dir", help="default: next to the source")
    q.add_argument("--eval", type=int, default=20, help="test cases for accuracy (0 skips)")
    c = sub.add_parser("compare", help="size, speed and accuracy of GGUF models")
    c.add_argument("paths", nargs="+")
    c.add_argument("--eval", type=int, default=20, help="test cases for accuracy (0 skips)")
    r = sub.add_parser("register", help="put a GGUF (or an adapter over a catalog base) in the catalog")
    r.add_argument("name")
    r.add_argument("path")
    r.add_argument("--base", help="for an adapter GGUF: the catalog name of its base")
    for p in (e, m, q, c):
        p.add_argument("--threads", type=int)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    from rich.console import Console

    from ..finetune.__main__ import RichProgress
    from ..finetune._cli import parse_types
    from . import compare, export_adapter, merge_and_quantize, quantize, register_model

    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    console = Console(stderr=True)
    bar = RichProgress(console)
    summary: Any
    try:
        if args.command == "export":
            with bar.live():
                summary = {"adapter_gguf": str(export_adapter(args.adapter, args.out, base=args.base,
                                                              outtype=args.outtype, progress=bar))}
        elif args.command == "merge":
            with bar.live():
                result = merge_and_quantize(args.adapter, args.out, base=args.base, types=parse_types(args.types),
                                            name=args.name, threads=args.threads, progress=bar)
            summary = result.to_json()
            if args.register:
                smallest = min([result.f16, *result.quantized.values()], key=lambda p: p.stat().st_size)
                summary["registered"] = register_model(args.register, smallest).name
        elif args.command == "quantize":
            src = Path(args.src)
            out_dir = Path(args.out_dir) if args.out_dir else src.parent
            stem = src.stem[:-4] if src.stem.lower().endswith("-f16") else src.stem
            outputs = {"F16": src}
            for qtype in parse_types(args.types):
                outputs[qtype] = quantize(src, out_dir / f"{stem}-{qtype}.gguf", qtype, threads=args.threads)
            cases, tools = _eval_cases(args.eval)
            rows = compare({k: v for k, v in outputs.items()}, cases=cases, tools=tools, n_threads=args.threads)
            _table(console, rows)
            summary = [row.to_json() for row in rows]
        elif args.command == "compare":
            cases, tools = _eval_cases(args.eval)
            rows = compare(list(args.paths), cases=cases, tools=tools, n_threads=args.threads)
            _table(console, rows)
            summary = [row.to_json() for row in rows]
        else:
            entry = register_model(args.name, args.path, base=args.base)
            summary = {"registered": entry.name, "path": entry.path or entry.lora_path}
    except TinyAgentError as exc:
        console.print(f"[red]error:[/] {exc}")
        return 1
    print(json.dumps(summary, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
