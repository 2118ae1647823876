"""The days a request names, and plan dates held to them.

* :func:`date_only`: a day the request gives without a time ("next week", "tomorrow") that the planner wrote at
  midnight (``2027-03-01 00:00:00``) is written in the parameter's date-only form where its description documents
  one ("or YYYY-MM-DD for an all-day task").
* :func:`on_the_named_day`: where the request names one day and nothing is a day before or after another, a date
  the planner wrote on some other day is moved to that day, its time kept. A small planner copies the prompt's
  "Today is ..." for "two weeks from today", or slips a day on a reminder "an hour before" a meeting the day after
  tomorrow, though the resolved value stood in its prompt.

The days come from :func:`tinyagent._grounding.ground`; a parameter's date forms from its description; nothing is
keyed to a tool's name.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._formats import date_patterns
from .._grounded_formats import strftime_pattern
from .._grounding import ground
from .._plan import Call
from .._tools import Tool

__all__ = ["RequestDays", "date_only", "in_the_named_year", "on_the_named_day"]

_MIDNIGHT = re.compile(r"0{1,2}(?:[:.]0{2}){1,2}")
_ISO_MOMENT = re.compile(r"(\d{4}-\d{2}-\d{2})(?:[T ]\d{2}:\d{2}(?::\d{2})?(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?")
# One day counted from another: "the day before", "two days after the launch", "on the eve", "a week later"
_DAY_OFFSET = re.compile(
    r"\b(?:days?|nights?|evenings?|mornings?|weeks?|months?|years?|fortnight)\s+(?:before|after|earlier|later|prior|"
    r"ahead|from)\b|\beve\b|\b(?:every|each|daily|weekly|through|until|till|between)\b", re.IGNORECASE)


@dataclass(frozen=True)
class RequestDays:
    """The days a request names, resolved against today.

    Attributes:
        undated: the days it gives without a time of day ("next week", "on Friday").
        named: every day it names, with or without a time.
        counted: some day is counted from another ("the day before", "a week later") or days run in a series
            ("every Monday", "until Friday"): other days than the named ones are meant.
    """

    undated: frozenset[dt.date] = frozenset()
    named: frozenset[dt.date] = frozenset()
    counted: bool = False

    @classmethod
    def of(cls, request: str, today: dt.date) -> RequestDays:
        values = [v for v in ground(request, today) if v.kind in ("date", "datetime")]
        rest = request
        for v in sorted(values, key=lambda v: -v.start):
            rest = rest[:v.start] + " " + rest[v.end:]
        return cls(undated=frozenset(dt.date.fromisoformat(v.value) for v in values if v.kind == "date"),
                   named=frozenset(dt.date.fromisoformat(v.value[:10]) for v in values),
                   counted=bool(_DAY_OFFSET.search(rest)))


def date_only(call: Call, tools: Mapping[str, Tool], days: RequestDays) -> Call:
    """``call`` with each date-time at midnight on one of the request's undated days written in its parameter's
    date-only form, where the parameter's description documents one beside a form with a time ("formatted
    YYYY-MM-DD HH:MM:SS, or YYYY-MM-DD for an all-day task"): the request gave a day, not midnight."""
    tool = tools.get(call.name)
    if tool is None or not days.undated:
        return call
    props: Mapping[str, Any] = tool.parameters.get("properties", {})
    args = dict(call.args)
    for name, value in call.args.items():
        patterns = date_patterns(props.get(name, {})) if isinstance(value, str) else []
        day_form = next((p for p in patterns if not re.search(r"[Hh]{2}", p)), None)
        if day_form is None:
            continue
        for pattern in patterns:
            if pattern == day_form:
                continue
            try:
                moment = dt.datetime.strptime(value, strftime_pattern(pattern))
            except ValueError:
                continue
            if moment.time() == dt.time() and moment.date() in days.undated and _MIDNIGHT.search(value):
                args[name] = moment.strftime(strftime_pattern(day_form))
            break
    return call if args == dict(call.args) else Call(call.id, call.name, args)


def on_the_named_day(call: Call, days: RequestDays) -> Call:
    """``call`` with each ISO date (or date-time) argument on another day than the one day the request names moved
    to that day, its time kept; unchanged when the request names no day or several, counts one day from another
    (:attr:`RequestDays.counted`), or when the call already passes the named day elsewhere (an end a few days
    after a start), in any year ("April 15th" has none)."""
    if len(days.named) != 1 or days.counted:
        return call
    (day,) = days.named
    moments = {name: m for name, value in call.args.items()
               if isinstance(value, str) and (m := _ISO_MOMENT.fullmatch(value.strip()))}
    found = {_day(m.group(1)) for m in moments.values()}
    if not moments or None in found or any(d is not None and (d.month, d.day) == (day.month, day.day) for d in found):
        return call  # the day is passed already (in whatever year the planner took a year-less date to be)
    args = dict(call.args)
    for name, m in moments.items():
        args[name] = day.isoformat() + m.string.strip()[10:]
    return Call(call.id, call.name, args)


def in_the_named_year(call: Call, days: RequestDays) -> Call:
    """``call`` with an ISO date (or date-time) on a day the request names, but in a year a century or more away
    from it (``1330-05-20T15:15`` for "in 90 minutes" on 2027-05-20: the hour read as a year), put in the named
    day's year. A nearer year stays: a year-less "April 3rd" may be meant in another year than the next."""
    args = dict(call.args)
    for name, value in call.args.items():
        m = _ISO_MOMENT.fullmatch(value.strip()) if isinstance(value, str) else None
        day = _day(m.group(1)) if m else None
        same = [d for d in days.named if day is not None and (d.month, d.day) == (day.month, day.day)]
        if m and day is not None and len(same) == 1 and abs(same[0].year - day.year) >= 100:
            args[name] = same[0].isoformat() + m.string.strip()[10:]
    return call if args == dict(call.args) else Call(call.id, call.name, args)


def _day(text: str) -> dt.date | None:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        return None
