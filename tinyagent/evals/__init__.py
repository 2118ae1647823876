"""Evaluations: BFCL's single-turn categories scored with BFCL's own AST rules (:mod:`tinyagent.evals.bfcl`),
and the plain llama-cpp-python tool-calling baselines it is compared against (:mod:`tinyagent.evals.baselines`).

Nothing heavy is imported here; models and llama.cpp load only when a run starts.
"""

from __future__ import annotations

from . import bfcl

__all__ = ["bfcl"]
