"""Benchmark a catalog planner on the built-in tools' eval set: DAG and strict success.

The command line is ``tinyagent eval functions`` (or :func:`run_functions_benchmark` from Python). Nothing is
executed: each request is only planned (few-shot examples come from the train split).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._plan import Example
from ._scoring import EvalCase, evaluate, load_evalset

__all__ = ["EXAMPLE_CATEGORIES", "default_examples", "run_functions_benchmark"]

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


async def run_functions_benchmark(model_name: str, split: str = "test", limit: int | None = None,
                                  n_threads: int = 2, use_grammar: bool = True) -> dict[str, Any]:
    """Plan every case of ``split`` with the catalog model ``model_name`` and score it.

    Returns:
        :func:`evaluate`'s report plus ``model``, ``split`` and ``grammar``.

    Raises:
        TinyAgentError: the model cannot be loaded.
    """
    from .. import Agent
    from ..functions import FunctionsSettings, builtin_tools
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
