"""Planning accuracy of a GGUF on an eval set, through the Agent (used by ``tinyagent quant compare`` and the
on-device fine-tuning report)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .._tools import Tool

__all__ = ["planning_accuracy"]


def planning_accuracy(
    path: str | Path,
    cases: Sequence[Any],
    tools: Iterable[Tool],
    *,
    lora_path: str | Path | None = None,
    n_threads: int | None = None,
    examples: Sequence[Any] = (),
) -> dict[str, Any]:
    """Plan every eval case with the model at ``path`` through the Agent and score the plans.

    Args:
        path: the GGUF.
        cases: :class:`tinyagent.evals.EvalCase` items (e.g. ``load_evalset("test")``).
        tools: the tools the cases use.
        lora_path: an adapter GGUF applied over ``path``.
        n_threads: llama.cpp threads.
        examples: few-shot examples for the planner.

    Returns:
        :func:`tinyagent.evals.evaluate`'s result.
    """
    from .. import Agent
    from ..models import LlamaCppModel
    from ._scoring import evaluate

    tool_list = list(tools)
    model = LlamaCppModel(path=path, lora_path=lora_path, n_threads=n_threads)
    try:
        agent = Agent(tool_list, model=model, examples=examples)
        return asyncio.run(evaluate(agent, cases, tool_list))
    finally:
        asyncio.run(model.aclose())
