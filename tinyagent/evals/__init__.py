"""Evaluations: scoring plans against gold plans, the built-in tools' eval set (its generator and checker), the
functions benchmark, the retrieval stress registry, and BFCL's single-turn categories scored with BFCL's own AST
rules (:mod:`tinyagent.evals.bfcl`) beside plain llama-cpp-python tool-calling baselines
(:mod:`tinyagent.evals.baselines`).

Modules: ``_scoring`` (DAG and strict success, eval-set loading), ``_evalcheck`` (checks every gold plan),
``make_evalset`` (``python -m tinyagent.evals.make_evalset`` regenerates ``functions/data/evalset.jsonl``),
``_functions_bench`` (plan the eval set with a catalog model), ``_stress`` (built-in tools plus 400 BFCL distractors),
``_foreign`` (registries the team did not write: BFCL multi-turn suites as single requests, and BFCL live),
``_pa_proxy`` (the functions test split over a disguised personal-assistant registry).

Nothing heavy is imported here; models and llama.cpp load only when a run starts.
"""

from __future__ import annotations

from . import bfcl
from ._evalcheck import check_case, check_evalset, iso_when
from ._foreign import (
    MULTI_TURN_SUITES,
    ForeignCase,
    default_agent_factory,
    live_cases,
    load_multi_turn_cases,
    parse_ground_truth_call,
    plan_live,
    plan_multi_turn,
    suite_functions,
    summarize,
)
from ._functions_bench import EXAMPLE_CATEGORIES, default_examples, run_functions_benchmark
from ._pa_proxy import (
    PA_PROXY_DATE_PARAMS,
    PA_PROXY_PARAM_NAMES,
    PA_PROXY_TOOL_NAMES,
    convert_calls,
    convert_case,
    date_format_ok,
    failure_kind,
    load_pa_registry,
    pa_proxy_cases,
    plan_pa_proxy,
    score_pa_plan,
)
from ._planning import planning_accuracy
from ._scoring import (
    EvalCase,
    Planner,
    dag_success,
    default_evalset_path,
    evaluate,
    load_evalset,
    score,
    strict_success,
)
from ._stress import load_distractors, stress_registry

__all__ = [
    "planning_accuracy",
    "EXAMPLE_CATEGORIES",
    "MULTI_TURN_SUITES",
    "PA_PROXY_DATE_PARAMS",
    "PA_PROXY_PARAM_NAMES",
    "PA_PROXY_TOOL_NAMES",
    "EvalCase",
    "ForeignCase",
    "Planner",
    "bfcl",
    "check_case",
    "check_evalset",
    "convert_calls",
    "convert_case",
    "date_format_ok",
    "dag_success",
    "default_agent_factory",
    "default_evalset_path",
    "default_examples",
    "evaluate",
    "failure_kind",
    "iso_when",
    "live_cases",
    "load_distractors",
    "load_evalset",
    "load_multi_turn_cases",
    "load_pa_registry",
    "pa_proxy_cases",
    "parse_ground_truth_call",
    "plan_live",
    "plan_multi_turn",
    "plan_pa_proxy",
    "run_functions_benchmark",
    "score",
    "score_pa_plan",
    "stress_registry",
    "strict_success",
    "suite_functions",
    "summarize",
]
