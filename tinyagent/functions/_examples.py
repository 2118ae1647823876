"""Worked examples for the built-in tools: the train split of the shipped eval set, as planner few-shot examples."""

from __future__ import annotations

import functools

from .._plan import Example, Plan
from ..scoring import load_evalset

__all__ = ["builtin_examples"]


@functools.cache
def _train_examples() -> tuple[Example, ...]:
    return tuple(Example(c.query, Plan.from_json(c.calls, answer=c.answer), c.today) for c in load_evalset("train"))


def builtin_examples() -> list[Example]:
    """The worked examples the planner picks its few-shot examples from when it plans over the built-in tools.

    They are the train split of the shipped eval set (the test split is never used), so benchmarks on the test split
    measure what a user of ``tinyagent run`` gets. The agent puts only the few most similar ones, whose tools are
    all offered, into each prompt.
    """
    return list(_train_examples())
