"""Compatibility alias: the functions benchmark moved to :mod:`tinyagent.evals` (CLI: ``tinyagent eval functions``)."""

from __future__ import annotations

from ..evals import EXAMPLE_CATEGORIES, default_examples, run_functions_benchmark

run_benchmark = run_functions_benchmark

__all__ = ["EXAMPLE_CATEGORIES", "default_examples", "run_benchmark"]
