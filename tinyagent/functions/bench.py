"""Benchmark planners on the built-in tools' eval set: DAG and strict success per catalog model.

Usage (loads real models; run one at a time)::

    python -m tinyagent.functions.bench --model qwen2.5-coder-0.5b --split test --out result.json

Nothing is executed: each request is only planned (few-shot examples come from the train split).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._plan import Example
from ..scoring import EvalCase, evaluate, load_evalset
from ._builtin import builtin_tools
from ._settings import FunctionsSettings

__all__ = ["default_examples", "main", "run_benchmark"]

# Four train cases that show a chain, a fan-out with a relative date, a given address and a request needing no tool.
EXAMPLE_CATEGORIES = ("meeting_with", "fan_out", "email_address", "no_tool")


def default_examples(train: Sequence[EvalCase], categories: Sequence[str] = EXAMPLE_CATEGORIES) -> list[Example]:
    """One worked example per category, taken from the train split in file order."""
    examples = []
    for category in categories:
        case = next((c for c in train if c.category == category), None)
        if case is not None:
            examples.append(Example(query=case.query, plan=case.plan, today=case.today))
    return examples


async def run_benchmark(model_name: str, split: str = "test", limit: int | None = None,
                        n_threads: int = 2, use_grammar: bool = True) -> dict[str, Any]:
    """Plan every case of ``split`` with the catalog model ``model_name`` and score it.

    Raises:
        TinyAgentError: the model cannot be loaded.
    """
    from .. import Agent
    from ..models import load_model

    tools = builtin_tools(FunctionsSettings(data_dir=Path(".")))
    cases = load_evalset(split)[:limit]
    examples = default_examples(load_evalset("train"))
    model = load_model(model_name, n_threads=n_threads)
    try:
        agent = Agent(tools=tools, model=model, examples=examples, use_grammar=use_grammar)
        result = await evaluate(agent, cases, tools)
    finally:
        await model.aclose()
    result["model"] = model_name
    result["split"] = split
    result["grammar"] = use_grammar
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; writes the full result as JSON and a one-line summary to stderr."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--model", required=True, help="catalog name, e.g. qwen2.5-coder-0.5b")
    parser.add_argument("--split", default="test", choices=("train", "test"))
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-grammar", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    result = asyncio.run(run_benchmark(args.model, args.split, args.limit, args.threads, not args.no_grammar))
    text = json.dumps(result, indent=2, ensure_ascii=False)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    else:
        sys.stdout.write(text + "\n")
    sys.stderr.write(
        f"{args.model} {args.split} n={result['n']}: DAG {result['dag_success']:.1%}, "
        f"strict {result['strict_success']:.1%}, mean {result['mean_latency_s']:.2f} s/request\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
