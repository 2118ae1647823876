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

from .._formats import MERIDIEM, date_patterns
from .._grounded_formats import strftime_pattern
from .._grounding import ground
from .._plan import Call
from .._tools import Tool

__all__ = ["RequestDays", "date_only", "in_the_named_year", "on_the_named_day", "on_the_12_hour_clock"]

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


def on_the_named_day(call: Call, days: RequestDays, tools: Mapping[str, Tool] | None = None) -> Call:
    """``call`` with each date (or date-time) argument on another day than the one day the request names moved
    to that day, its time kept; unchanged when the request names no day or several, counts one day from another
    (:attr:`RequestDays.counted`), or when the call already passes the named day elsewhere (an end a few days
    after a start), in any year ("April 15th" has none). Dates are ISO, or in a form the parameter's description
    documents ("MM/DD/YYYY hh:mm AM/PM"), which the moved date keeps."""
    if len(days.named) != 1 or days.counted:
        return call
    (day,) = days.named
    moments = _moments(call, tools)
    found = {m.day for m in moments.values()}
    if not moments or None in found or any(d is not None and (d.month, d.day) == (day.month, day.day) for d in found):
        return call  # the day is passed already (in whatever year the planner took a year-less date to be)
    args = dict(call.args)
    for name, m in moments.items():
        args[name] = m.on(day)
    return Call(call.id, call.name, args)


def in_the_named_year(call: Call, days: RequestDays, tools: Mapping[str, Tool] | None = None) -> Call:
    """``call`` with a date (or date-time) on a day the request names, but in a year a century or more away
    from it (``1330-05-20T15:15`` for "in 90 minutes" on 2027-05-20: the hour read as a year), put in the named
    day's year. A nearer year stays: a year-less "April 3rd" may be meant in another year than the next."""
    args = dict(call.args)
    for name, m in _moments(call, tools).items():
        same = [d for d in days.named if m.day is not None and (d.month, d.day) == (m.day.month, m.day.day)]
        if m.day is not None and len(same) == 1 and abs(same[0].year - m.day.year) >= 100:
            args[name] = m.on(same[0])
    return call if args == dict(call.args) else Call(call.id, call.name, args)


@dataclass(frozen=True)
class _Moment:
    """A date argument: its day (None: not a real date) and how to write it on another day."""

    text: str
    day: dt.date | None
    pattern: str = ""  # a strftime pattern the parameter documents; "" for ISO

    def on(self, day: dt.date) -> str:
        if not self.pattern:
            return day.isoformat() + self.text[10:]
        moment = dt.datetime.strptime(self.text, self.pattern)
        return moment.replace(year=day.year, month=day.month, day=day.day).strftime(self.pattern)


def _moments(call: Call, tools: Mapping[str, Tool] | None) -> dict[str, _Moment]:
    """The call's date arguments: ISO, or in a form with a day that the parameter's description documents."""
    tool = tools.get(call.name) if tools else None
    props: Mapping[str, Any] = tool.parameters.get("properties", {}) if tool else {}
    out = {}
    for name, value in call.args.items():
        if not isinstance(value, str):
            continue
        if m := _ISO_MOMENT.fullmatch(value.strip()):
            out[name] = _Moment(m.string.strip(), _day(m.group(1)))
            continue
        for pattern in date_patterns(props.get(name, {})):
            form = strftime_pattern(pattern)
            if not re.search(r"%[dm]", form):
                continue
            try:
                moment = dt.datetime.strptime(value.strip(), form)
            except ValueError:
                continue
            out[name] = _Moment(value.strip(), moment.date(), form)
            break
    return out


_CLOCK = re.compile(r"\b(?P<h>\d{1,2}):(?P<m>\d{2})(?P<s>:\d{2})?(?P<sp> ?)(?P<ap>AM|PM|am|pm)\b")


def on_the_12_hour_clock(call: Call, tools: Mapping[str, Tool]) -> Call:
    """``call`` with each time written on a 24-hour clock where the parameter documents a 12-hour one
    ("hh:mm AM/PM"): ``16:15 PM`` is ``04:15 PM``, ``00:30 AM`` is ``12:30 AM`` (the hour says which half of
    the day; a planner's marker after it does not)."""
    tool = tools.get(call.name)
    props: Mapping[str, Any] = tool.parameters.get("properties", {}) if tool else {}
    args = dict(call.args)
    for name, value in call.args.items():
        if isinstance(value, str) and any(re.search(rf"{MERIDIEM}$", p) for p in date_patterns(props.get(name, {}))):
            args[name] = _CLOCK.sub(_twelve, value)
    return call if args == dict(call.args) else Call(call.id, call.name, args)


def _twelve(m: re.Match[str]) -> str:
    """One :data:`_CLOCK` time with a 24-hour hour (0, 13-23) written on the 12-hour clock; others as they are."""
    hour = int(m.group("h"))
    if hour not in (0, *range(13, 24)):
        return m.group()
    half = "PM" if hour >= 12 else "AM"
    half = half.lower() if m.group("ap").islower() else half
    return f"{(hour % 12) or 12:0{len(m.group('h'))}d}:{m.group('m')}{m.group('s') or ''}{m.group('sp')}{half}"


def _day(text: str) -> dt.date | None:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        return None
