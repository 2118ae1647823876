"""Values resolved from a request (:mod:`tinyagent._grounding`), written as a parameter asks for them: its
documented date format ("YYYY-MM-DD HH:MM:SS", "MM/DD/YYYY"), unix time, or ISO when it says nothing; and the note
that shows them to the planner."""

from __future__ import annotations

import calendar
import datetime as dt
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ._formats import DATE_FIELD, DATE_PATTERN, MERIDIEM
from ._grounding import GroundedValue, Kind

__all__ = ["format_for_schema", "grounding_note", "strftime_pattern", "values_for_parameter"]

_FMT_IN_TEXT = re.compile(DATE_PATTERN.pattern, re.IGNORECASE)  # "yyyy-mm-dd" too
_ISO_EXAMPLE = re.compile(r"\b\d{4}-\d{2}-\d{2}(?:(?P<sep>[T ])\d{2}:\d{2}(?P<s>:\d{2})?)?\b")
_TIME_WORD = re.compile(r"\b(?:time(?!\s*zone)|times of day|datetime|hour|clock)\b", re.IGNORECASE)
_UNIX = re.compile(r"\b(?:unix|epoch|posix)\b", re.IGNORECASE)


def strftime_pattern(fmt: str) -> str:
    """Translate "YYYY-MM-DD HH:MM:SS" into a strftime pattern (MM after an hour field means minutes); with a
    12-hour marker ("MM/DD/YYYY hh:mm AM/PM") the hour is %I and the marker %p."""
    twelve = re.search(rf"{MERIDIEM}$", fmt) is not None
    out, seen_hour = [], False
    for tok in re.findall(rf"{MERIDIEM}$|{DATE_FIELD}|.", fmt, re.IGNORECASE):
        up = tok.upper()
        if up == "HH":
            seen_hour = True
        if twelve and re.fullmatch(MERIDIEM, tok):
            out.append("%p")
            continue
        out.append({"YYYY": "%Y", "YY": "%y", "DD": "%d", "HH": "%I" if twelve else "%H", "SS": "%S",
                    "MM": "%M" if seen_hour else "%m"}.get(up, tok))
    return "".join(out)


def _target(schema: Mapping[str, Any], description: str) -> str:
    """The strftime pattern (or "unix") a parameter asks for; ISO when nothing is said."""
    text = " ".join(s for s in (description, str(schema.get("description", ""))) if s)
    fmt = str(schema.get("format", "")).lower()
    if _UNIX.search(text) or fmt in ("unix-time", "timestamp"):
        return "unix"
    written = _FMT_IN_TEXT.search(text)
    if written:
        return strftime_pattern(written.group())
    if fmt in ("date", "date-time", "time"):
        return {"date": "%Y-%m-%d", "date-time": "%Y-%m-%dT%H:%M:%S", "time": "%H:%M:%S"}[fmt]
    example = _ISO_EXAMPLE.search(text)
    if example:
        sep, seconds = example.group("sep"), example.group("s")
        return "%Y-%m-%d" + (f"{sep}%H:%M" if sep else "") + (":%S" if seconds else "")
    says_date, says_time = bool(re.search(r"\bdates?\b", text, re.I)), bool(_TIME_WORD.search(text))
    return "%Y-%m-%d" if says_date and not says_time else "%H:%M" if says_time and not says_date else ""


def format_for_schema(value: GroundedValue, schema: Mapping[str, Any], description: str = "") -> str:
    """Show `value` in the format the parameter asks for.

    The format comes from JSON schema `format` (`date`, `date-time`, `time`), or from a pattern written in the
    description or the schema's own description ("YYYY-MM-DD HH:MM:SS", "MM/DD/YYYY", "Unix timestamp", ...),
    never from a tool or parameter name. Unix timestamps treat the (naive) local time as UTC. Without any
    hint the ISO value is returned. Identifiers and numbers are returned as written.

    Args:
        value: A value from `ground`.
        schema: The parameter's JSON schema.
        description: The parameter's description, if kept apart from the schema.

    Returns:
        The literal to pass for the parameter.
    """
    if value.kind not in ("date", "datetime", "time"):
        return value.value
    target = _target(schema, description)
    if not target:
        return value.value
    if value.kind == "time":
        moment = dt.datetime.combine(dt.date(2000, 1, 1), dt.time.fromisoformat(value.value))
        if target == "unix" or re.search(r"%[Yymd]", target):
            return value.value  # no date to show
    else:
        moment = dt.datetime.fromisoformat(value.value)
    if target == "unix":
        return str(calendar.timegm(moment.timetuple()))
    return moment.strftime(target)


_WANTS: tuple[tuple[frozenset[str], re.Pattern[str], frozenset[Kind]], ...] = (
    (frozenset({"date", "date-time", "time", "unix-time", "timestamp"}),
     re.compile(r"\b(?:date|dates|time(?!\s*zone)|datetime|timestamp|when|deadline|due|schedul\w*|epoch)\b",
                re.IGNORECASE), frozenset({"date", "datetime", "time"})),
    (frozenset({"email", "idn-email"}), re.compile(r"\be-?mails?\b", re.IGNORECASE), frozenset({"email"})),
    (frozenset({"phone"}), re.compile(r"\b(?:phone|telephone|mobile|cell|sms)\b", re.IGNORECASE),
     frozenset({"phone"})),
    (frozenset({"path", "file"}), re.compile(r"\b(?:path|paths|file|files|filename|directory|folder|attachment)s?\b",
                                             re.IGNORECASE), frozenset({"path"})),
    (frozenset({"uri", "url", "iri"}), re.compile(r"\b(?:url|urls|uri|link|website|web page)\b", re.IGNORECASE),
     frozenset({"url"})),
)


def values_for_parameter(values: Sequence[GroundedValue], schema: Mapping[str, Any], description: str = "",
                         ) -> list[str]:
    """The literals from `values` that fit a parameter, formatted as it asks; [] when it holds none of them.

    What a parameter holds is read from its schema `format` and from its description (and the schema's own),
    never from its name. A date-only parameter also takes the date part of a datetime; a time-only one the
    time part.

    Args:
        values: Values from `ground`.
        schema: The parameter's JSON schema.
        description: The parameter's description.

    Returns:
        Distinct candidate literals in order of appearance.
    """
    text = " ".join(s for s in (description, str(schema.get("description", ""))) if s)
    fmt = str(schema.get("format", "")).lower()
    kinds: set[Kind] = set()
    for formats, words, wanted in _WANTS:
        if fmt in formats or words.search(text) or ("date" in wanted and _FMT_IN_TEXT.search(text)):
            kinds |= wanted
    time_only = _time_only(_target(schema, description))
    out: list[str] = []
    for v in values:
        if v.kind == "date" and time_only:
            continue  # a day where only a time of day goes ("hh:mm AM/PM"): midnight would be made up
        if v.kind in kinds:
            literal = format_for_schema(v, schema, description)
            if literal not in out:
                out.append(literal)
    return out


def _time_only(target: str) -> bool:
    """Whether a strftime pattern writes a time of day and no date ("%I:%M %p"; not "", unix or a date)."""
    return "%" in target and not re.search(r"%[Yymd]", target)


def grounding_note(values: Sequence[GroundedValue]) -> str:
    """A short block for the planner prompt listing the resolved values; "" when there is nothing to say.

    Args:
        values: Values from `ground` (numbers are left out: they are already plain in the request).

    Returns:
        "Resolved from the request (use these exact values):" followed by one line per value.
    """
    lines = []
    for v in values:
        if v.kind in ("date", "datetime", "time"):
            lines.append(f'- "{v.text}" = {v.value}')
        elif v.kind != "number":
            lines.append(f"- {v.kind}: {v.value}")
    if not lines:
        return ""
    return "Resolved from the request (use these exact values):\n" + "\n".join(lines)

