"""``python -m tinyagent.finetune distill|train``: the synthesis and training steps, with rich progress bars.

Examples::

    python -m tinyagent.finetune distill --tools my_tools.py --teacher qwen2.5-coder-1.5b --out runs/data -n 300
    python -m tinyagent.finetune train --data runs/data --base qwen2.5-coder-0.5b --out runs/train --epochs 2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import TinyAgentError
from ._progress import ProgressEvent

__all__ = ["RichProgress", "main"]

_LABELS = {
    "requests": "writing requests",
    "plans": "planning + verifying",
    "estimate": "estimate",
    "train": "training",
    "export": "exporting",
    "eval": "evaluating",
}


class RichProgress:
    """Renders :class:`~tinyagent.finetune.ProgressEvent` updates as rich progress bars (one bar per stage).

    Args:
        console: the rich console to draw on (default: stderr).
    """

    def __init__(self, console: Any = None) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.console = console or Console(stderr=True)
        self.progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            TimeRemainingColumn(), TextColumn("{task.fields[note]}"), console=self.console,
        )
        self.tasks: dict[str, Any] = {}

    def __call__(self, event: ProgressEvent) -> None:
        if event.stage == "estimate":
            self.console.print(f"[yellow]Estimate:[/] {event.message}")
            return
        label = _LABELS.get(event.stage, event.stage)
        note = event.message[:60]
        if event.stage == "plans" and event.metrics:
            note = f"kept {event.metrics.get('kept', 0)}, dropped {event.metrics.get('dropped', 0)}"
        if event.stage not in self.tasks:
            self.tasks[event.stage] = self.progress.add_task(label, total=event.total or None, note=note)
        self.progress.update(self.tasks[event.stage], completed=event.done, total=event.total or None, note=note)

    @contextmanager
    def live(self) -> Iterator[RichProgress]:
        """Draw the bars while the block runs."""
        with self.progress:
            yield self


def _distill(args: argparse.Namespace, bar: RichProgress) -> dict[str, Any]:
    from . import DistillConfig, builtin_dry_run, distill
    from ._cli import load_examples, load_teacher, load_tools_spec

    tools = load_tools_spec(args.tools, Path(args.data_dir) if args.data_dir else None)
    teacher = load_teacher(args.teacher, threads=args.threads)
    examples = load_examples(args.examples)
    config = DistillConfig(n_requests=args.n, batch_size=args.batch, seed=args.seed,
                           valid_fraction=args.valid_fraction)
    dry = None
    if args.dry_run == "builtin" or (args.dry_run == "auto" and args.tools == "builtin"):
        dry = builtin_dry_run(data_dir=args.data_dir)
    try:
        with bar.live():
            result = asyncio.run(distill(tools, teacher, args.out, examples=examples, config=config, dry_run=dry,
                                         resume=not args.fresh, progress=bar))
    finally:
        if dry is not None:
            dry.close()
    return result.stats


def _train(args: argparse.Namespace, bar: RichProgress) -> dict[str, Any]:
    from . import TrainConfig, train

    config = TrainConfig(max_steps=args.steps, epochs=args.epochs, batch_size=args.batch, grad_accum=args.grad_accum,
                         learning_rate=args.lr, max_length=args.max_length, save_steps=args.save_steps,
                         qlora=args.qlora, threads=args.threads, lora_r=args.lora_r, lora_alpha=2 * args.lora_r)
    with bar.live():
        result = train(args.data, args.base, args.out, config=config, resume=not args.fresh, progress=bar)
    return result.to_json()


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (also used by the docs)."""
    parser = argparse.ArgumentParser(prog="python -m tinyagent.finetune", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("distill", help="synthesize and verify planning data with a teacher")
    d.add_argument("--tools", required=True, help="my_tools.py, builtin, demo, specs.json or MODULE:ATTR")
    d.add_argument("--teacher", required=True, help="an endpoint URL, a catalog name or a .gguf path")
    d.add_argument("--out", required=True, help="the run folder (resumed when it exists)")
    d.add_argument("-n", type=int, default=200, help="requests to synthesize")
    d.add_argument("--batch", type=int, default=5, help="requests per teacher call")
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--valid-fraction", type=float, default=0.1)
    d.add_argument("--examples", help="a JSONL file of worked examples")
    d.add_argument("--data-dir", help="data folder of the built-in tools (copied for dry runs, never written)")
    d.add_argument("--dry-run", choices=("auto", "builtin", "none"), default="auto")
    d.add_argument("--threads", type=int, help="llama.cpp threads for a local teacher")
    d.add_argument("--fresh", action="store_true", help="start over instead of resuming")
    t = sub.add_parser("train", help="LoRA fine-tuning on distilled data")
    t.add_argument("--data", required=True, help="a distill folder or a train.jsonl")
    t.add_argument("--base", required=True, help="a catalog name, a .gguf or a Hugging Face directory")
    t.add_argument("--out", required=True, help="the run folder (resumed from its last checkpoint)")
    t.add_argument("--steps", type=int, default=-1, help="optimizer steps (-1: use --epochs)")
    t.add_argument("--epochs", type=float, default=2.0)
    t.add_argument("--batch", type=int, default=4)
    t.add_argument("--grad-accum", type=int, default=1)
    t.add_argument("--lr", type=float, default=2e-4)
    t.add_argument("--lora-r", type=int, default=8)
    t.add_argument("--max-length", type=int, default=1024)
    t.add_argument("--save-steps", type=int, default=25)
    t.add_argument("--qlora", action=argparse.BooleanOptionalAction, default=None,
                   help="4-bit QLoRA (default: on CUDA only)")
    t.add_argument("--threads", type=int, help="torch threads (default: the free cores)")
    t.add_argument("--fresh", action="store_true", help="start over instead of resuming")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    bar = RichProgress()
    try:
        summary = _distill(args, bar) if args.command == "distill" else _train(args, bar)
    except TinyAgentError as exc:
        bar.console.print(f"[red]error:[/] {exc}")
        return 1
    except KeyboardInterrupt:
        bar.console.print("[yellow]interrupted; run the same command again to resume[/]")
        return 130
    print(json.dumps(summary, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
