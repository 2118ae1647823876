"""Registries the team did not write: BFCL's multi-turn API suites as single-request eval cases, and BFCL's live
categories, planned with tinyagent's planner and scored per registry.

* **Multi-turn suites** (``multi_turn_func_doc/<suite>.json`` in the ``bfcl-eval`` wheel). Each multi-turn base case
  whose index is even becomes one request: its FIRST user turn, with BFCL's ground-truth calls for that turn
  (``"cd(folder='document')"``, parsed with :mod:`ast`; positional arguments take the parameter names in the
  schema's order) as the gold plan, in order and without references. The tools offered are the functions of every
  class the case involves. A case belongs to every suite whose class it involves. Scored with the project's DAG
  and strict metrics (:func:`~tinyagent.evals.dag_success`, :func:`~tinyagent.evals.strict_success`; every
  ground-truth argument is a key argument).
* **Live** (``live_simple``, ``live_multiple``, ``live_irrelevance``): scored with BFCL's AST checker (that is
  ``strict``); ``dag`` is the same multiset of function names as some possible answer (no call for irrelevance).

Per registry: ``dag``, ``strict``, ``no_tool`` (the share of no-call cases left without a call; None when there are
none), ``p50_s``/``p95_s`` (wall time of ``Agent.plan``), ``prompt_tokens`` (mean planner prompt tokens),
``prompt_evaluated`` (of those, the mean not served by llama.cpp's KV prefix cache) and ``n``.
"""

from __future__ import annotations

import ast
import datetime as dt
import logging
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import BfclDataError, ConfigurationError, TinyAgentError
from ._bfcl_data import LIVE_CATEGORIES, BfclCase, Parity, _DataSource, check_parity, load_cases, parity_matches
from ._scoring import EvalCase, dag_success, strict_success
from .bfcl import _jsonable, check_case

if TYPE_CHECKING:
    from ..models import Model

__all__ = [
    "MULTI_TURN_SUITES",
    "AgentFactory",
    "ForeignCase",
    "default_agent_factory",
    "live_cases",
    "load_multi_turn_cases",
    "parse_ground_truth_call",
    "plan_live",
    "plan_multi_turn",
    "suite_functions",
    "summarize",
]

logger = logging.getLogger("tinyagent.evals.foreign")

MULTI_TURN_SUITES: Mapping[str, str] = {
    "GorillaFileSystem": "gorilla_file_system",
    "VehicleControlAPI": "vehicle_control",
    "TradingBot": "trading_bot",
    "TravelAPI": "travel_booking",
    "MessageAPI": "message_api",
    "TwitterAPI": "posting_api",
    "TicketAPI": "ticket_api",
    "MathAPI": "math_api",
}
"""BFCL's multi-turn API classes and the ``multi_turn_func_doc`` file (the suite name) of each."""

_BASE = "BFCL_v4_multi_turn_base.json"
TODAY = dt.date(2026, 11, 30)


@dataclass(frozen=True)
class ForeignCase:
    """One single-request case built from a BFCL multi-turn case.

    Attributes:
        case: the eval case (query, gold calls, key arguments); ``category`` is the suite.
        functions: the BFCL function specs offered (every involved class's functions).
    """

    case: EvalCase
    functions: tuple[dict[str, Any], ...]


def parse_ground_truth_call(text: str, functions: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """One BFCL ground-truth call (``"mv(source='a', destination='b')"``) as ``{"name", "args"}``.

    Args:
        text: the call, Python syntax with literal arguments.
        functions: the specs by name, so positional arguments get their parameter names (in schema order).

    Raises:
        BfclDataError: it is not a call with literal arguments, or has more positional arguments than parameters.
    """
    try:
        node = ast.parse(text.strip(), mode="eval").body
        if not isinstance(node, ast.Call):
            raise ValueError("not a call")
        name = ast.unparse(node.func)
        positional = [ast.literal_eval(a) for a in node.args]
        named = {str(k.arg): ast.literal_eval(k.value) for k in node.keywords if k.arg is not None}
    except (SyntaxError, ValueError, TypeError) as exc:
        raise BfclDataError(f"BFCL ground truth {text!r:.120} is not a call with literal arguments ({exc})") from exc
    params = list(((functions.get(name) or {}).get("parameters") or {}).get("properties") or {})
    if len(positional) > len(params):
        raise BfclDataError(f"BFCL ground truth {text!r:.120} has more positional arguments than {name} has "
                            "parameters")
    args = dict(zip(params, positional, strict=False))
    args.update(named)
    return {"name": name, "args": args}


def load_multi_turn_cases(
    data_dir: str | Path,
    suites: Iterable[str],
    limit: int | None = None,
    *,
    parity: Parity = "even",
    today: dt.date = TODAY,
) -> list[ForeignCase]:
    """Single-request cases from BFCL's multi-turn base cases, suite by suite (see the module docstring).

    Args:
        data_dir: the ``bfcl-eval`` wheel or folder (as for :func:`~tinyagent.evals.bfcl.load_cases`).
        suites: suite names, values of :data:`MULTI_TURN_SUITES` (``gorilla_file_system`` ...).
        limit: at most this many cases per suite.
        parity: which indexes to keep; odd-indexed cases are never read into cases under ``"even"``.
        today: the date the requests are resolved against.

    Raises:
        ConfigurationError: an unknown suite or parity, or a negative limit.
        BfclDataError: the data is missing or malformed.
    """
    parity = check_parity(parity)
    wanted = list(dict.fromkeys(suites))
    unknown = [s for s in wanted if s not in MULTI_TURN_SUITES.values()]
    if unknown:
        raise ConfigurationError(f"unknown BFCL multi-turn suite(s) {unknown}; choose from "
                                 f"{sorted(MULTI_TURN_SUITES.values())}")
    if limit is not None and limit < 0:
        raise ConfigurationError(f"limit must be a positive number of cases per suite, got {limit}")
    source = _DataSource(data_dir)
    try:
        entries = [e for e in _required(source, _BASE) if parity_matches(str(e["id"]), parity)]
        answers = {str(r["id"]): r.get("ground_truth") for r in _required(source, f"possible_answer/{_BASE}")}
        docs: dict[str, list[dict[str, Any]]] = {}
        out: dict[str, list[ForeignCase]] = {s: [] for s in wanted}
        for entry in entries:
            classes = [str(c) for c in entry.get("involved_classes") or []]
            for suite in dict.fromkeys(MULTI_TURN_SUITES.get(c, "") for c in classes):
                if suite not in out or (limit is not None and len(out[suite]) >= limit):
                    continue
                # The suite's own class first, the others sorted: every case of a suite then shares the prompt
                # prefix of its own tools (llama.cpp's KV cache reuses it), whatever order BFCL lists them in.
                ordered = [c for c in classes if MULTI_TURN_SUITES.get(c) == suite]
                ordered += sorted(c for c in classes if MULTI_TURN_SUITES.get(c) != suite)
                functions = [f for c in ordered for f in _suite_doc(source, docs, c)]
                out[suite].append(_build_case(entry, answers.get(str(entry["id"])), suite, functions, today))
        return [case for suite in wanted for case in out[suite]]
    finally:
        source.close()


def suite_functions(data_dir: str | Path, suite: str) -> list[dict[str, Any]]:
    """The function specs (BFCL dialect) of one multi-turn suite, e.g. ``gorilla_file_system``.

    Raises:
        ConfigurationError: an unknown suite.
        BfclDataError: the data is missing or malformed.
    """
    classes = [c for c, s in MULTI_TURN_SUITES.items() if s == suite]
    if not classes:
        raise ConfigurationError(f"unknown BFCL multi-turn suite {suite!r}; choose from "
                                 f"{sorted(MULTI_TURN_SUITES.values())}")
    source = _DataSource(data_dir)
    try:
        return list(_suite_doc(source, {}, classes[0]))
    finally:
        source.close()


def _required(source: _DataSource, name: str) -> list[dict[str, Any]]:
    rows = source.read_lines(name)
    if rows is None:
        raise BfclDataError(f"{source.path} has no {name}; is it the bfcl-eval data?")
    return rows


def _suite_doc(source: _DataSource, docs: dict[str, list[dict[str, Any]]], cls: str) -> list[dict[str, Any]]:
    suite = MULTI_TURN_SUITES.get(cls)
    if suite is None:
        raise BfclDataError(f"BFCL multi-turn class {cls!r} has no known function doc")
    if suite not in docs:
        rows = source.read_lines(f"multi_turn_func_doc/{suite}.json", key="name")
        if rows is None:
            raise BfclDataError(f"{source.path} has no multi_turn_func_doc/{suite}.json")
        docs[suite] = [{k: v for k, v in row.items() if k != "response"} for row in rows]
    return docs[suite]


def _build_case(entry: Mapping[str, Any], truth: Any, suite: str, functions: list[dict[str, Any]],
                today: dt.date) -> ForeignCase:
    case_id = str(entry["id"])
    try:
        first_turn = entry["question"][0]
        query = next(str(m.get("content") or "") for m in reversed(first_turn) if m.get("role") == "user")
    except (KeyError, IndexError, TypeError, StopIteration) as exc:
        raise BfclDataError(f"BFCL case {case_id} has no first user turn ({exc!r})") from exc
    if not isinstance(truth, list) or not truth or not isinstance(truth[0], list):
        raise BfclDataError(f"BFCL case {case_id} has no ground truth per turn")
    by_name = {str(f["name"]): f for f in functions}
    calls = tuple(
        {"id": i, **parse_ground_truth_call(str(text), by_name)} for i, text in enumerate(truth[0], 1)
    )
    return ForeignCase(
        EvalCase(id=case_id, query=query, today=today, split="test", calls=calls,
                 key_args={c["id"]: tuple(c["args"]) for c in calls}, answer=None if calls else "",
                 category=suite),
        tuple(functions),
    )


def live_cases(data_dir: str | Path, limit: int | None = None, *, parity: Parity = "even") -> list[BfclCase]:
    """BFCL's live categories (:data:`~tinyagent.evals.bfcl.LIVE_CATEGORIES`), ``limit`` cases in all, spread
    evenly over the categories, of the given index parity."""
    per = None if limit is None else math.ceil(limit / len(LIVE_CATEGORIES))
    cases = load_cases(data_dir, LIVE_CATEGORIES, per, parity=parity)
    if limit is None:
        return cases
    by_cat = {c: [x for x in cases if x.category == c] for c in LIVE_CATEGORIES}
    picked: list[BfclCase] = []
    while len(picked) < limit and any(by_cat.values()):
        for category in LIVE_CATEGORIES:
            if by_cat[category] and len(picked) < limit:
                picked.append(by_cat[category].pop(0))
    return picked


# -- planning and scoring ------------------------------------------------------------------------------------------


AgentFactory = Callable[[Sequence[Mapping[str, Any]]], Any]
"""From the function specs to a planner (something with ``async plan(query, *, today, history)``)."""


def default_agent_factory(model: Model, **options: Any) -> AgentFactory:
    """Agents over schema-only tools built from the specs, all sharing ``model``."""

    def make(functions: Sequence[Mapping[str, Any]]) -> Any:
        from .. import Agent, ToolRegistry

        return Agent(tools=ToolRegistry.from_openai(functions), model=model, **options)

    return make


async def _timed_plan(agent: Any, query: str, today: dt.date | None, history: Sequence[Mapping[str, Any]],
                      model: Any) -> tuple[Any, float, int | None, str | None]:
    start = time.perf_counter()
    try:
        result = await agent.plan(query, today=today, history=history)
    except TinyAgentError as exc:
        return None, time.perf_counter() - start, None, f"{type(exc).__name__}: {exc}"
    elapsed = time.perf_counter() - start
    tokens = getattr(result, "prompt_tokens", None) or getattr(model, "last_prompt_tokens_evaluated", None)
    return result, elapsed, (int(tokens) if tokens else None), None


def _evaluated(model: Any) -> int | None:
    """Prompt tokens the last request evaluated (the rest came from the KV prefix cache); None when unknown."""
    value = getattr(model, "last_prompt_tokens_evaluated", None)
    return int(value) if isinstance(value, int) else None


async def plan_multi_turn(cases: Sequence[ForeignCase], make_agent: AgentFactory, *, model: Any = None,
                          registry: str = "") -> list[dict[str, Any]]:
    """Plan every case and score it; one row per case.

    Returns:
        Rows ``{"id", "registry", "dag", "strict", "no_tool", "elapsed_s", "prompt_tokens", "calls", "error"}``;
        ``no_tool`` is None unless the gold plan has no call.
    """
    rows = []
    for fc in cases:
        agent = make_agent(fc.functions)
        result, elapsed, tokens, error = await _timed_plan(agent, fc.case.query, fc.case.today, (), model)
        pred = result.plan if result is not None else None
        dag = pred is not None and dag_success(pred, fc.case.calls)
        strict = dag and pred is not None and strict_success(pred, fc.case.calls, fc.case.key_args)
        no_call_gold = not fc.case.calls
        rows.append({
            "id": fc.case.id, "registry": registry or fc.case.category, "dag": dag, "strict": strict,
            "no_tool": (pred is not None and not pred.calls) if no_call_gold else None,
            "elapsed_s": round(elapsed, 3), "prompt_tokens": tokens, "prompt_evaluated": _evaluated(model),
            "calls": pred.to_json() if pred is not None else [], "error": error,
        })
        logger.info("%s: dag=%s strict=%s %.1fs", fc.case.id, dag, strict, elapsed)
    return rows


async def plan_live(cases: Sequence[BfclCase], make_agent: AgentFactory, *, model: Any = None,
                    today: dt.date | None = TODAY, registry: str = "bfcl_live") -> list[dict[str, Any]]:
    """Plan BFCL live cases and score them with BFCL's AST checker (``strict``) and by function names (``dag``)."""
    rows = []
    for case in cases:
        agent = make_agent(case.functions)
        last_user = max((i for i, m in enumerate(case.messages) if m.get("role") == "user"), default=0)
        result, elapsed, tokens, error = await _timed_plan(agent, case.question, today, case.messages[:last_user],
                                                           model)
        calls = [{"name": c.name, "args": dict(c.args)} for c in result.plan.calls] if result is not None else []
        strict, reason = check_case(case, calls)
        names_ok = sorted(c["name"] for c in calls) == sorted(next(iter(t)) for t in case.ground_truth)
        rows.append({
            "id": case.id, "registry": registry, "category": case.category, "dag": names_ok, "strict": strict,
            "no_tool": (not calls) if case.expects_no_call else None, "reason": reason,
            "elapsed_s": round(elapsed, 3), "prompt_tokens": tokens, "prompt_evaluated": _evaluated(model),
            "calls": [_jsonable(c) for c in calls],
            "error": error,
        })
    return rows


def _percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    rank = max(0, math.ceil(q * len(ordered)) - 1)
    return round(ordered[rank], 3)


def summarize(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One registry's row: ``dag``, ``strict``, ``no_tool`` (rates 0-1, ``no_tool`` None without no-call cases),
    ``p50_s``, ``p95_s``, ``prompt_tokens`` (mean; None when unknown), ``prompt_evaluated`` (mean prompt tokens not
    served by the KV prefix cache; None when the backend does not say), ``n`` and ``errors``."""
    n = len(rows)
    no_tool = [bool(r["no_tool"]) for r in rows if r.get("no_tool") is not None]
    tokens = [int(r["prompt_tokens"]) for r in rows if r.get("prompt_tokens")]
    evaluated = [int(r["prompt_evaluated"]) for r in rows if r.get("prompt_evaluated") is not None]
    latencies = [float(r["elapsed_s"]) for r in rows]
    return {
        "dag": round(sum(bool(r["dag"]) for r in rows) / n, 4) if n else None,
        "strict": round(sum(bool(r["strict"]) for r in rows) / n, 4) if n else None,
        "no_tool": round(sum(no_tool) / len(no_tool), 4) if no_tool else None,
        "no_tool_n": len(no_tool),
        "p50_s": _percentile(latencies, 0.50),
        "p95_s": _percentile(latencies, 0.95),
        "prompt_tokens": round(sum(tokens) / len(tokens), 1) if tokens else None,
        "prompt_evaluated": round(sum(evaluated) / len(evaluated), 1) if evaluated else None,
        "n": n,
        "errors": sum(r.get("error") is not None for r in rows),
    }
