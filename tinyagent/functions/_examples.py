"""Worked examples for the built-in tools: the train split of the shipped eval set, as planner few-shot examples.

The eval set is read here directly (a few lines of JSON) so that ``functions`` does not depend on
:mod:`tinyagent.evals`, which sits above it; :func:`tinyagent.evals.load_evalset` reads the same file.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from pathlib import Path

from .._plan import Example, Plan
from ..errors import ConfigurationError

__all__ = ["builtin_examples", "evalset_path"]


def evalset_path() -> Path:
    """The built-in tools' eval set, ``data/evalset.jsonl`` (``python -m tinyagent.evals.make_evalset`` writes it)."""
    return Path(__file__).parent / "data" / "evalset.jsonl"


@functools.cache
def _train_examples() -> tuple[Example, ...]:
    path = evalset_path()
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigurationError(f"cannot read the built-in eval set {path}: {exc}; reinstall tinyagent") from exc
    examples = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            if record["split"] != "train":
                continue
            plan = Plan.from_json(record.get("calls", []), answer=record.get("answer"))
            examples.append(Example(str(record["query"]), plan, dt.date.fromisoformat(str(record["today"]))))
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigurationError(f"{path}:{number} is not an eval case ({exc})") from exc
    return tuple(examples)


def builtin_examples() -> list[Example]:
    """The worked examples the planner picks its few-shot examples from when it plans over the built-in tools.

    They are the train split of the shipped eval set (the test split is never used), so benchmarks on the test split
    measure what a user of ``tinyagent run`` gets. The agent puts only the few most similar ones, whose tools are
    all offered, into each prompt.
    """
    return list(_train_examples())
