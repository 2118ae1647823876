"""A length of time copied in the request's unit where the parameter asks for another: no model call.

"Put Team offsite on my calendar next Monday at 9am for 8 hours" was planned as ``length_minutes=8``: the planner
copied the request's number and not its unit. Where a numeric parameter says its unit (by its name's words, or else
its description: seconds, minutes or hours), the request gives exactly one length of time ("for 8 hours", "a
90-minute call", "for an hour and a half"), and the call passes that length's bare number in another unit, the value
becomes the length in the parameter's unit (480). A parameter of that kind the call leaves out takes the length too
(a small planner often drops "for two hours"), and so does one that takes an ISO 8601 duration (``"PT1H30M"``, by
its description). Relative times ("in 2 hours", "2 hours before") are no lengths. Nothing is keyed to a tool's
name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from .._plan import Call
from .._tools import Tool

__all__ = ["fix_durations", "iso_duration", "parameter_unit", "request_durations"]

_SECONDS = {"second": 1.0, "sec": 1.0, "minute": 60.0, "min": 60.0, "hour": 3600.0, "hr": 3600.0, "h": 3600.0}
_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
          "nine": 9, "ten": 10, "twelve": 12, "fifteen": 15, "twenty": 20, "thirty": 30, "forty": 40, "ninety": 90}
_NUMBER = r"(?P<n>\d+(?:\.\d+)?|" + "|".join(sorted(_WORDS, key=len, reverse=True)) + r"|half an?)"
_UNIT = r"(?P<unit>hours?|hrs?|h|minutes?|mins?|seconds?|secs?)"
# "for 8 hours", "for an hour and a half", "lasting 2 hours"; "a 90-minute call", "a 2 hour meeting".
_LENGTH = re.compile(
    rf"\b(?:(?:for|lasting|of|takes?|long)\s+(?:about\s+|around\s+)?{_NUMBER}\s*{_UNIT}(?P<half>\s+and\s+a\s+half)?\b"
    rf"|{_NUMBER.replace('?P<n>', '?P<n2>')}[\s-]{_UNIT.replace('?P<unit>', '?P<unit2>')}[\s-]"
    r"(?:long\s+)?(?:(?!(?:the|a|an|my|our|to|for|of|and|with|before|after|later|from|in|on|at)\b)[a-z]+\s+)?(?:meeting|call|session|event|block|slot|appointment|workshop|class|ride|walk|run|"
    r"drive|timer|countdown|break|nap|workout)\b)",  # ("a 25 minute focus timer")
    re.IGNORECASE)
# A length set apart by commas: "tomorrow at 2pm, 45 minutes, and ...", "on the 21st at 9:30, about half an hour."
_LENGTH_APART = re.compile(rf",\s*(?:about\s+|around\s+|roughly\s+)?{_NUMBER}\s*{_UNIT}(?P<half>\s+and\s+a\s+half)?"
                           r"(?=\s*(?:[,.;!]|$|and\b|long\b))", re.IGNORECASE)
_UNIT_WORD = re.compile(r"\b(seconds?|secs?|minutes?|mins?|hours?|hrs?)\b", re.IGNORECASE)


def request_durations(text: str) -> list[tuple[float, float]]:
    """The lengths of time ``text`` gives, each as ``(the number written, seconds)``, in order."""
    out = []
    matches = sorted([*_LENGTH.finditer(text), *_LENGTH_APART.finditer(text)], key=lambda m: m.start())
    for match in matches:
        found = match.groupdict()
        number = (found.get("n") or found["n2"]).lower()
        unit = (found.get("unit") or found["unit2"]).lower().rstrip("s") or "s"
        written = 0.5 if number.startswith("half") else float(_WORDS.get(number, 0) or number)
        amount = written + (0.5 if found.get("half") else 0.0)
        out.append((written, amount * _SECONDS.get(unit, 1.0)))
    return out


def parameter_unit(name: str, schema: Mapping[str, Any]) -> float | None:
    """Seconds per unit of a numeric parameter, by the unit its name says, or else its description (None: it
    says none, or more than one)."""
    if schema.get("type") not in ("integer", "number"):
        return None
    for text in (re.sub(r"[_\W]+", " ", re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name)), schema.get("description", "")):
        units = {_SECONDS[u.lower().rstrip("s")] for u in _UNIT_WORD.findall(str(text))}
        if units:
            return units.pop() if len(units) == 1 else None
    return None


_ISO_DURATION = re.compile(r"\bISO[ -]?8601 duration|\bPT\d+[HMS]\b")


def iso_duration(seconds: float) -> str:
    """``seconds`` as an ISO 8601 duration (``PT1H30M``)."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return "PT" + "".join(f"{n}{u}" for n, u in ((hours, "H"), (minutes, "M"), (secs, "S")) if n) if whole else "PT0S"


def _length_params(tool: Tool) -> dict[str, float | None]:
    """The parameters of ``tool`` that take a length of time: seconds per unit of a numeric one whose name or
    description says its unit (:func:`parameter_unit`: "duration_minutes"), None for an ISO 8601 duration."""
    props: Mapping[str, Any] = tool.parameters.get("properties") or {}
    out: dict[str, float | None] = {}
    for name, schema in props.items():
        if not isinstance(schema, Mapping):
            continue
        if schema.get("type", "string") == "string" and _ISO_DURATION.search(str(schema.get("description") or "")):
            out[name] = None
        elif re.search(r"duration|length|long", f"{name} {schema.get('description', '')}", re.IGNORECASE) and (
                unit := parameter_unit(name, schema)) is not None:
            out[name] = unit
    return out


def _in_unit(seconds: float, unit: float, schema: Mapping[str, Any]) -> int | float | None:
    """``seconds`` in the parameter's ``unit``: a whole number, or a fraction where the schema takes numbers; None
    for a fraction an integer parameter cannot take."""
    wanted = seconds / unit
    if wanted.is_integer():
        return int(wanted)
    return wanted if schema.get("type") == "number" else None


def fix_durations(calls: Sequence[Call], tools: Mapping[str, Tool], query: str) -> tuple[list[Call], list[str]]:
    """``calls`` with a length of time passed as the request's bare number in the parameter's unit, and the
    request's one length passed where a call leaves out a parameter that takes one; with notes."""
    lengths = {seconds for _, seconds in request_durations(query)}
    if len(lengths) != 1:
        return list(calls), []
    written = {number for number, _ in request_durations(query)}
    seconds = lengths.pop()
    out, notes = [], []
    for call in calls:
        tool = tools.get(call.name)
        props: Mapping[str, Any] = (tool.parameters.get("properties") or {}) if tool is not None else {}
        args = dict(call.args)
        for name, value in call.args.items():
            found = props.get(name)
            schema: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
            unit = parameter_unit(name, schema) if schema else None
            if unit is None or isinstance(value, bool) or not isinstance(value, int | float) or value not in written:
                continue
            wanted = _in_unit(seconds, unit, schema)
            if wanted is not None and wanted != value:
                args[name] = wanted
                notes.append(f"plan: step {call.id} passed {name}={value}; the request's length is {args[name]} in "
                             "its unit")
        once = sum(c.name == call.name for c in calls) == 1  # (two calls of a tool: whose length is it?)
        for name, unit in (_length_params(tool) if tool is not None and once else {}).items():
            if name in args:
                continue
            length = iso_duration(seconds) if unit is None else _in_unit(seconds, unit, props[name])
            if length is None:
                continue
            args[name] = length
            notes.append(f"plan: step {call.id} takes the request's length of time as {name}={args[name]!r}")
        out.append(Call(call.id, call.name, args) if args != call.args else call)
    return out, notes
