"""Checks every gold plan of an eval set over the built-in tools."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .._plan import Call, Ref
from .._tools import Tool
from ..errors import InvalidDate, PlanValidationError
from ..functions import FunctionsSettings, builtin_tools, resolve_expression
from ._scoring import EvalCase, load_evalset

__all__ = ["check_case", "check_evalset", "iso_when"]

_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2})?$")
_DATE_ARGS = {"start", "date", "due"}


def iso_when(day: dt.date, time_of_day: dt.time | None) -> str:
    """``YYYY-MM-DD`` or ``YYYY-MM-DDTHH:MM``: how the built-in tools write a resolved date (and time)."""
    if time_of_day is None:
        return day.isoformat()
    return f"{day.isoformat()}T{time_of_day.hour:02d}:{time_of_day.minute:02d}"


def check_evalset(
    cases: Sequence[EvalCase] | None = None, tools: Iterable[Tool] | None = None, min_cases: int = 200
) -> list[str]:
    """Validate every case; return the problems found (an empty list means the set is sound).

    Checks: unique ids and queries; at least ``min_cases`` cases; both splits present at 50–70% train; each call's
    tool exists and its arguments validate (a ``"$k"`` reference counts as any value of the right type); references
    point only to earlier steps; key arguments name real parameters; dates are ISO, consistent with ``today`` (every
    ``date_exprs`` entry re-resolves to the gold value) and within a year of it; a tool-free case has an answer.

    Args:
        cases: the cases; defaults to the shipped eval set.
        tools: the tools; defaults to ``builtin_tools()``.
        min_cases: the smallest acceptable size.
    """
    all_cases = list(cases) if cases is not None else load_evalset()
    registry = {t.name: t for t in (tools if tools is not None else builtin_tools(FunctionsSettings(data_dir=".")))}
    problems: list[str] = []
    if len(all_cases) < min_cases:
        problems.append(f"only {len(all_cases)} cases; at least {min_cases} are required")
    for attr in ("id", "query"):
        seen: set[str] = set()
        for case in all_cases:
            value = getattr(case, attr)
            if value in seen:
                problems.append(f"duplicate {attr} {value!r}")
            seen.add(value)
    train = sum(c.split == "train" for c in all_cases)
    if all_cases and not 0.5 <= train / len(all_cases) <= 0.7:
        problems.append(f"{train} of {len(all_cases)} cases are train; keep it near 60%")
    for case in all_cases:
        problems.extend(f"{case.id}: {p}" for p in check_case(case, registry))
    return problems


def check_case(case: EvalCase, registry: Mapping[str, Tool]) -> list[str]:
    """The problems of one case (see :func:`check_evalset`)."""
    problems: list[str] = []
    if case.split not in ("train", "test"):
        problems.append(f"split {case.split!r} is not 'train' or 'test'")
    if not case.query.strip():
        problems.append("empty query")
    if not case.calls:
        if not (case.answer or "").strip():
            problems.append("a case without calls needs an answer")
    elif case.answer is not None:
        problems.append("a case with calls must have answer null")
    ids: list[int] = []
    for position, raw in enumerate(case.calls, 1):
        try:
            call = Call.from_json(raw)
        except PlanValidationError as exc:
            problems.append(str(exc))
            continue
        if call.id != position:
            problems.append(f"call ids must be 1, 2, 3 … in order; call {position} has id {call.id}")
        bad_refs = sorted(d for d in call.deps if d not in ids)
        if bad_refs:
            problems.append(f"step {call.id} references {bad_refs}, which are not earlier steps")
        ids.append(call.id)
        tool = registry.get(call.name)
        if tool is None:
            problems.append(f"step {call.id}: unknown tool {call.name!r}")
            continue
        try:
            tool.validate_args(_with_placeholders(dict(call.args), tool.parameters), step=call.id)
        except PlanValidationError as exc:
            problems.append(str(exc))
        problems.extend(_check_dates(case, call))
    for cid, names in case.key_args.items():
        match = next((c for c in case.calls if c.get("id") == cid), None)
        if match is None:
            problems.append(f"key_args names step {cid}, which does not exist")
            continue
        props = registry[match["name"]].parameters.get("properties", {}) if match["name"] in registry else {}
        for name in names:
            if name not in props:
                problems.append(f"key_args: {match['name']}() has no parameter {name!r}")
    return problems


def _check_dates(case: EvalCase, call: Call) -> list[str]:
    problems = []
    exprs = case.date_exprs.get(call.id, {})
    for name, value in call.args.items():
        if name not in _DATE_ARGS or isinstance(value, Ref) or value == "":
            continue
        if not isinstance(value, str) or not _ISO.match(value):
            problems.append(f"step {call.id}: {name}={value!r} is not 'YYYY-MM-DD' or 'YYYY-MM-DDTHH:MM'")
            continue
        day = dt.date.fromisoformat(value[:10])
        if abs((day - case.today).days) > 366:
            problems.append(f"step {call.id}: {name}={value} is more than a year from today {case.today}")
        expr = exprs.get(name)
        if expr is None:
            problems.append(f"step {call.id}: {name}={value} has no date_exprs entry to check it against")
            continue
        try:
            expected = iso_when(*resolve_expression(expr, case.today))
        except InvalidDate as exc:
            problems.append(f"step {call.id}: date expression {expr!r} does not resolve: {exc}")
            continue
        if expected != value:
            problems.append(f"step {call.id}: {name}={value}, but {expr!r} on {case.today} is {expected}")
    for name in exprs:
        if name not in call.args:
            problems.append(f"step {call.id}: date_exprs names {name!r}, which the call does not pass")
    return problems


def _with_placeholders(args: dict[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    props = schema.get("properties", {})
    return {k: _fill(v, props.get(k, {})) for k, v in args.items()}


def _fill(value: Any, schema: Mapping[str, Any]) -> Any:
    if isinstance(value, Ref):
        return _placeholder(schema)
    if isinstance(value, list):
        items = schema.get("items", {})
        return [_fill(v, items) for v in value]
    return value


def _placeholder(schema: Mapping[str, Any]) -> Any:
    kind = schema.get("type")
    if kind == "integer":
        return 1
    if kind == "number":
        return 1.0
    if kind == "boolean":
        return True
    if kind == "array":
        return [_placeholder(schema.get("items", {}))]
    if kind == "object":
        return {}
    return "placeholder"
