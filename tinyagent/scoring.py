"""Compatibility alias: scoring moved to :mod:`tinyagent.evals` (``from tinyagent.evals import evaluate``)."""

from __future__ import annotations

from .evals import (
    EvalCase,
    Planner,
    dag_success,
    default_evalset_path,
    evaluate,
    load_evalset,
    score,
    strict_success,
)

__all__ = [
    "EvalCase",
    "Planner",
    "dag_success",
    "default_evalset_path",
    "evaluate",
    "load_evalset",
    "score",
    "strict_success",
]
