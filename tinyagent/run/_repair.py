"""Plan repairs that need no model: identifiers the user wrote are used as written.

A small planner often looks up what the request already gives: "Send an email to jane@corp.com" becomes
``1. get_email_address(name="Jane")`` and ``2. send_email(to=[$1], ...)``. Where a reference to an earlier step
lands in a parameter that holds an identifier (an email address or a phone number, read from the parameter's schema
and description by :func:`tinyagent._formats.identifier_kind`), and the request writes such an identifier that the
plan uses nowhere and that belongs to what the step looked up (the step's argument words are in it, or it is in the
step's arguments), the reference becomes that identifier. A step whose every use was replaced so is dropped from the
plan (in a streamed run it may already have run: it only looked something up).

Nothing here is keyed to a tool's name: what a parameter holds comes from its schema and description, what the
request gives from :func:`tinyagent._grounding.ground`.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .._formats import identifier_kind
from .._grounding import ground
from .._plan import Call, Plan, Ref, find_refs, map_refs
from .._provenance import leaves
from .._tools import Tool
from ..models import ModelRequest
from ._no_tool import _grounded, _stem, _words, request_text

__all__ = ["GivenIdentifiers", "drop_replaced", "drop_ungrounded_optionals", "invented_identifiers", "invented_note",
           "known_text", "repair_call", "repair_plan", "use_given_identifiers"]

_TOKEN = re.compile(r"[a-z0-9]{2,}")
_SPOKEN_AT = re.compile(r"\s*(?:\[\s*at\s*\]|\(\s*at\s*\)|\{\s*at\s*\}|\bat\b)\s*")
_SPOKEN_DOT = re.compile(r"\s*(?:\[\s*dot\s*\]|\(\s*dot\s*\)|\{\s*dot\s*\}|\bdot\b)\s*")


class GivenIdentifiers:
    """The identifiers a request writes, by kind, and which of them a plan has used so far."""

    def __init__(self, request: str, today: dt.date) -> None:
        self.by_kind: dict[str, list[str]] = {}
        for value in ground(request, today):
            if value.kind in ("email", "phone") and value.value not in self.by_kind.get(value.kind, []):
                self.by_kind.setdefault(value.kind, []).append(value.value)
        self.used: set[str] = set()
        self.replaced: set[int] = set()

    def note_used(self, call: Call, tools: Mapping[str, Tool]) -> None:
        """Mark the literals ``call`` passes where an identifier goes as used (not those it looks up by: a lookup
        of "nina.r@example.org" does not use the address as an address)."""
        tool = tools.get(call.name)
        props: Mapping[str, Any] = tool.parameters.get("properties", {}) if tool is not None else {}
        for name, value in call.args.items():
            if identifier_kind(props.get(name, {})) is not None:
                self.used |= {str(v).lower() for v in leaves(value) if isinstance(v, str)}

    def unused(self, kind: str) -> list[str]:
        return [lit for lit in self.by_kind.get(kind, []) if lit.lower() not in self.used]


def use_given_identifiers(call: Call, earlier: Mapping[int, Call], given: GivenIdentifiers,
                          tools: Mapping[str, Tool]) -> Call:
    """``call`` with each reference to a lookup of an identifier the request already gives replaced by it.

    Args:
        call: the call just planned.
        earlier: the plan's earlier calls by step.
        given: the request's identifiers (updated: the ones used, the steps replaced).
        tools: the offered tools (the parameters' schemas).
    """
    given.note_used(call, tools)
    tool = tools.get(call.name)
    if tool is None or not given.by_kind:
        return call
    props: Mapping[str, Any] = tool.parameters.get("properties", {})
    args = dict(call.args)
    changed = False
    for name, value in call.args.items():
        kind = identifier_kind(props.get(name, {}))
        if kind is None or not given.unused(kind) or not any(True for _ in find_refs(value)):
            continue
        new = _replace(value, kind, earlier, given)
        if new != value:
            args[name], changed = new, True
    return Call(call.id, call.name, args) if changed else call


def _replace(value: Any, kind: str, earlier: Mapping[int, Call], given: GivenIdentifiers) -> Any:
    if isinstance(value, list | tuple):
        return [_replace(v, kind, earlier, given) for v in value]
    if not isinstance(value, Ref) or value.step not in earlier:
        return value
    looked_up = earlier[value.step]
    matches = [lit for lit in given.unused(kind) if _belongs(lit, looked_up)]
    if len(matches) != 1:
        return value
    given.used.add(matches[0].lower())
    given.replaced.add(value.step)
    return matches[0]


def _belongs(literal: str, lookup: Call) -> bool:
    """Whether ``literal`` is what ``lookup`` looked up: it is in the lookup's arguments, or shares a word with
    them ("Jane" and ``jane@corp.com``)."""
    texts = [str(v).lower() for v in leaves(lookup.args) if isinstance(v, str)]
    if any(literal.lower() in t for t in texts):
        return True
    words = {w for t in texts for w in _TOKEN.findall(t)}
    return bool(words & set(_TOKEN.findall(literal.lower().split("@")[0])))


def drop_ungrounded_optionals(call: Call, tools: Mapping[str, Tool], request: str) -> Call:
    """``call`` without the optional arguments whose values the request does not support.

    Small planners fill optional parameters with values nobody asked for (``year=2026``, ``price_min=100``,
    ``rounding=2``); the tool's own default is then the better value. An optional argument is dropped when it is a
    number or a short text (at most four words, an enum value included) and none of it is in ``request`` (the
    request with its resolved dates: the grounding of :mod:`tinyagent.run._no_tool`). Required arguments,
    references, booleans, lists and longer texts (composed content) are kept.
    """
    tool = tools.get(call.name)
    if tool is None:
        return call
    required = set(tool.required)
    stems = {_stem(w) for w in _words(request)}
    keep = {k: v for k, v in call.args.items()
            if k in required or not _droppable(v) or _grounded(v, request, stems)}
    return call if len(keep) == len(call.args) else Call(call.id, call.name, keep)


def _droppable(value: Any) -> bool:
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, int | float):
        return True
    return isinstance(value, str) and 0 < len(value.split()) <= 4


def invented_identifiers(call: Call, tools: Mapping[str, Tool], known: str) -> list[tuple[str, str]]:
    """The ``(parameter, value)`` pairs of ``call`` that pass an email address or phone number found nowhere in
    ``known`` (the request, the conversation, the results so far), also read as spoken ("sid at example dot com")
    and with a phone number's punctuation ignored: values the planner made up. A reference is never one (its
    value comes from a step)."""
    tool = tools.get(call.name)
    if tool is None:
        return []
    props: Mapping[str, Any] = tool.parameters.get("properties", {})
    text, digits = known.lower(), re.sub(r"\D", "", known)
    spoken = _SPOKEN_DOT.sub(".", _SPOKEN_AT.sub("@", text))  # "sid at example dot com", "sid [at] example [dot] com"
    out = []
    for name, value in call.args.items():
        kind = identifier_kind(props.get(name, {}))
        if kind is None:
            continue
        for leaf in leaves(value):
            if not isinstance(leaf, str) or not leaf.strip():
                continue
            seen = (re.sub(r"\D", "", leaf) in digits) if kind == "phone" else \
                leaf.lower() in text or leaf.lower() in spoken
            if not seen:
                out.append((name, leaf))
    return out


def invented_note(step: int, invented: Sequence[tuple[str, str]]) -> str:
    """What the planner is told when a step passes made-up identifiers."""
    shown = ", ".join(f"{name}={value!r}" for name, value in invented)
    return (f"step {step} passes {shown}, which the request does not give; first call a listed tool that finds it "
            "and pass that step's result as $k")


def drop_replaced(calls: Sequence[Call], replaced: Iterable[int]) -> Plan:
    """The plan without the replaced steps nobody references any more, renumbered from 1 (references follow)."""
    referenced = {r.step for c in calls for r in find_refs(c.args)}
    gone = {s for s in replaced if s not in referenced}
    kept = [c for c in calls if c.id not in gone]
    if not gone:
        return Plan(calls=tuple(calls))
    numbers = {c.id: i + 1 for i, c in enumerate(kept)}
    def renumber(ref: Ref) -> Ref:
        return Ref(numbers.get(ref.step, ref.step))

    return Plan(calls=tuple(Call(numbers[c.id], c.name, map_refs(c.args, renumber)) for c in kept))


def repair_call(call: Call, earlier: Mapping[int, Call], given: GivenIdentifiers | None, tools: Mapping[str, Tool],
                grounding: str | None) -> Call:
    """One call through the repairs that are on: :func:`use_given_identifiers` (``given``), then
    :func:`drop_ungrounded_optionals` (``grounding``: the request as the planner saw it, with its resolved dates)."""
    if given is not None:
        call = use_given_identifiers(call, earlier, given, tools)
    return call if grounding is None else drop_ungrounded_optionals(call, tools, grounding)


def known_text(query: str, history: Iterable[Mapping[str, Any]], observations: Iterable[str] = ()) -> str:
    """What a literal identifier may come from: the request, the conversation and the results so far."""
    return " ".join([query, *(str(m.get("content", "")) for m in history), *observations])


def repair_plan(plan: Plan, planner: ModelRequest, query: str, today: dt.date, tools: Mapping[str, Tool], *,
                identifiers: bool = True, optionals: bool = True) -> tuple[Plan, list[str]]:
    """:func:`repair_call` over a whole plan, then :func:`drop_replaced`; with notes of what changed."""
    given = GivenIdentifiers(query, today) if identifiers else None
    grounding = request_text(planner, query) if optionals else None
    done: dict[int, Call] = {}
    out = []
    for call in plan.calls:
        fixed = repair_call(call, done, given, tools, grounding)
        done[call.id] = fixed
        out.append(fixed)
    notes = [f"plan: step {new.id} left out {', '.join(sorted(set(old.args) - set(new.args)))} (not in the request)"
             for old, new in zip(plan.calls, out, strict=True) if set(new.args) < set(old.args)]
    if given is None or not given.replaced:
        return Plan(calls=tuple(out), answer=plan.answer), notes
    repaired = drop_replaced(out, given.replaced)
    notes.append(f"plan: used the identifiers the request gives instead of looking them up (steps "
                 f"{', '.join(str(s) for s in sorted(given.replaced))})")
    return Plan(calls=repaired.calls, answer=plan.answer), notes
