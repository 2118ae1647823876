"""The plan: numbered tool calls whose arguments may reference earlier results, ending in a join.

Text form (what the planner writes, LLMCompiler style)::

    1. get_email_address(name="Sid")
    2. create_calendar_event(title="Lunch", start="2026-12-01T12:00", invitees=[$1])
    3. join()
    <END_OF_PLAN>

JSON form (CLI, eval sets, training data): ``{"id": 1, "name": "...", "args": {...}}`` with a reference written as
the string ``"$k"``.
"""

from __future__ import annotations

import datetime as dt
import graphlib
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import PlanValidationError

__all__ = [
    "Call",
    "Example",
    "Plan",
    "Ref",
    "END_OF_PLAN",
    "JOIN",
    "find_refs",
    "leaves",
    "map_refs",
    "renumbered",
    "resolve_refs",
    "format_value",
    "refs_to_strings",
    "strings_to_refs",
]

END_OF_PLAN = "<END_OF_PLAN>"
JOIN = "join"
_REF_STR = re.compile(r"^\$(\d+)$")


@dataclass(frozen=True, order=True)
class Ref:
    """A reference to the result of step ``step``."""

    step: int

    def __str__(self) -> str:
        return f"${self.step}"


@dataclass(frozen=True)
class Call:
    """One numbered tool call. ``args`` may hold :class:`Ref` values, alone or inside lists and dicts."""

    id: int
    name: str
    args: Mapping[str, Any] = field(default_factory=dict)

    @property
    def deps(self) -> frozenset[int]:
        """The step numbers this call references."""
        return frozenset(r.step for r in find_refs(self.args))

    def to_text(self) -> str:
        """``k. name(arg=value, ...)``."""
        inner = ", ".join(f"{k}={format_value(v)}" for k, v in self.args.items())
        return f"{self.id}. {self.name}({inner})"

    def to_json(self) -> dict[str, Any]:
        """``{"id", "name", "args"}`` with references as ``"$k"``."""
        return {"id": self.id, "name": self.name, "args": refs_to_strings(dict(self.args))}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Call:
        """Inverse of :meth:`to_json`; the string ``"$k"`` becomes ``Ref(k)``."""
        try:
            return cls(id=int(data["id"]), name=str(data["name"]), args=strings_to_refs(dict(data.get("args", {}))))
        except (KeyError, TypeError, ValueError) as exc:
            raise PlanValidationError(f"not a plan call: {data!r:.200} ({exc})") from exc


@dataclass(frozen=True)
class Plan:
    """A complete plan: the calls (possibly none) and, for an empty plan, an optional direct answer."""

    calls: tuple[Call, ...] = ()
    answer: str | None = None

    def __iter__(self) -> Iterator[Call]:
        return iter(self.calls)

    def __len__(self) -> int:
        return len(self.calls)

    def to_text(self) -> str:
        """The plan in the planner's text form, join and end marker included."""
        lines = [c.to_text() for c in self.calls]
        lines.append(f"{len(self.calls) + 1}. {JOIN}()")
        return "\n".join(lines) + "\n" + END_OF_PLAN

    def to_json(self) -> list[dict[str, Any]]:
        """The calls in JSON form."""
        return [c.to_json() for c in self.calls]

    @classmethod
    def from_json(cls, calls: Iterable[Mapping[str, Any]], answer: str | None = None) -> Plan:
        """Build a plan from JSON calls (references as ``"$k"``)."""
        return cls(calls=tuple(Call.from_json(c) for c in calls), answer=answer)

    def in_dependency_order(self) -> Plan:
        """The plan with every call after the calls it references, renumbered from 1 (references follow): a plan
        whose step used a later step's result (``2. post(body=$3)``, ``3. make_link()``) made runnable.

        Raises:
            PlanValidationError: duplicate ids, a reference to a missing step, or a cycle.
        """
        return Plan(calls=renumbered(self.topological_order()), answer=self.answer)

    def topological_order(self) -> list[Call]:
        """The calls in an order where every call follows its dependencies.

        Raises:
            PlanValidationError: duplicate ids, a reference to a missing step, or a cycle.
        """
        by_id: dict[int, Call] = {}
        for call in self.calls:
            if call.id in by_id:
                raise PlanValidationError(f"two steps are numbered {call.id}", step=call.id)
            by_id[call.id] = call
        sorter: graphlib.TopologicalSorter[int] = graphlib.TopologicalSorter()
        for call in self.calls:
            missing = sorted(d for d in call.deps if d not in by_id)
            if missing:
                raise PlanValidationError(f"references step(s) {missing}, which do not exist", step=call.id)
            sorter.add(call.id, *call.deps)
        try:
            return [by_id[i] for i in sorter.static_order()]
        except graphlib.CycleError as exc:
            cycle = exc.args[1] if len(exc.args) > 1 else []
            raise PlanValidationError(f"the plan has a cycle through steps {cycle}") from exc


@dataclass(frozen=True)
class Example:
    """A worked example for the planner's prompt: a request and its plan.

    Attributes:
        query: the user's request.
        plan: the correct plan (empty for a request that needs no tool, with ``plan.answer`` set).
        today: the date the example was written against (shown in the prompt), if it matters.
    """

    query: str
    plan: Plan
    today: dt.date | None = None

    @property
    def tool_names(self) -> frozenset[str]:
        """The tools the example uses."""
        return frozenset(c.name for c in self.plan.calls)


def renumbered(calls: Iterable[Call]) -> tuple[Call, ...]:
    """``calls`` in the order given, numbered from 1; references to them follow (others keep their number)."""
    calls = list(calls)
    numbers = {c.id: i + 1 for i, c in enumerate(calls)}
    return tuple(Call(numbers[c.id], c.name, map_refs(dict(c.args), lambda r: Ref(numbers.get(r.step, r.step))))
                 for c in calls)


def find_refs(value: Any) -> Iterator[Ref]:
    """Every :class:`Ref` inside ``value`` (lists, tuples and dicts are searched)."""
    return (v for v in leaves(value) if isinstance(v, Ref))


def leaves(value: Any) -> Iterator[Any]:
    """The scalar values inside nested dicts, lists and tuples, in order."""
    if isinstance(value, Mapping):
        for v in value.values():
            yield from leaves(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from leaves(v)
    else:
        yield value


def map_refs(value: Any, fn: Callable[[Ref], Any]) -> Any:
    """``value`` with every :class:`Ref` replaced by ``fn(ref)`` (lists, tuples and dicts are searched; tuples
    come back as lists)."""
    if isinstance(value, Ref):
        return fn(value)
    if isinstance(value, Mapping):
        return {k: map_refs(v, fn) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [map_refs(v, fn) for v in value]
    return value


def resolve_refs(value: Any, results: Mapping[int, Any]) -> Any:
    """Replace every :class:`Ref` in ``value`` by the real Python result it points to."""
    return map_refs(value, lambda ref: results[ref.step])


def format_value(value: Any) -> str:
    """A plan-text literal: JSON, with references bare (``$3``)."""
    if isinstance(value, Ref):
        return str(value)
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{json.dumps(str(k))}: {format_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def refs_to_strings(value: Any) -> Any:
    """``value`` with every :class:`Ref` written as the string ``"$k"`` (the JSON form)."""
    return map_refs(value, str)


def strings_to_refs(value: Any) -> Any:
    """Inverse of :func:`refs_to_strings`: every string ``"$k"`` becomes ``Ref(k)``."""
    if isinstance(value, str):
        m = _REF_STR.match(value)
        return Ref(int(m.group(1))) if m else value
    if isinstance(value, Mapping):
        return {k: strings_to_refs(v) for k, v in value.items()}
    if isinstance(value, Sequence):
        return [strings_to_refs(v) for v in value]
    return value


# Old private names, kept for code that imported them.
_refs_to_strings = refs_to_strings
_strings_to_refs = strings_to_refs
