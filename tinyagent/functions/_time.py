"""Resolving dates and times: ISO strings and relative English expressions, against a given ``today``.

Conventions (documented for the planner and the eval set):

* ``"Friday"``, ``"on Friday"``, ``"next Friday"``, ``"coming Friday"``: the first Friday strictly after today.
* ``"this Friday"``: the Friday of the current week (Monday to Sunday), which may be today or already past.
* ``"Friday next week"``, ``"next week Friday"``: that weekday in the next calendar week.
* ``"next week"``: next Monday. ``"next month"``: the first of next month. ``"end of the week"``: this week's Friday.
* ``"in 3 days"``, ``"2 weeks from now"``, ``"in a month"``; ``"tomorrow"``, ``"day after tomorrow"``, ``"yesterday"``.
* Times: ``"3pm"``, ``"3:30 pm"``, ``"15:00"``, ``"at 10"`` (1–6 mean the afternoon), ``"noon"``, ``"midnight"``,
  ``"morning"`` (09:00), ``"afternoon"`` (15:00), ``"evening"`` (18:00), ``"tonight"`` (today 20:00), ``"eod"`` (17:00).
* Calendar dates without a year (``"December 5"``, ``"5 Jan"``) mean the next such date on or after today.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re

from ..errors import MissingDependencyError
from ._errors import InvalidDate

__all__ = ["format_when", "parse_date", "parse_datetime", "parse_when", "resolve_expression"]

_WEEKDAYS = {
    "monday": 0, "mon": 0, "tuesday": 1, "tue": 1, "tues": 1, "wednesday": 2, "wed": 2, "thursday": 3, "thu": 3,
    "thur": 3, "thurs": 3, "friday": 4, "fri": 4, "saturday": 5, "sat": 5, "sunday": 6, "sun": 6,
}
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple of": 2, "a couple of": 2, "few": 3, "a few": 3,
}
_NAMED_TIMES = {
    "noon": dt.time(12, 0), "midday": dt.time(12, 0), "lunchtime": dt.time(12, 0), "midnight": dt.time(0, 0),
    "morning": dt.time(9, 0), "afternoon": dt.time(15, 0), "evening": dt.time(18, 0), "tonight": dt.time(20, 0),
    "eod": dt.time(17, 0), "end of day": dt.time(17, 0), "end of the day": dt.time(17, 0),
}
_ISO = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:[t ](\d{1,2}):(\d{2})(?::(\d{2}))?)?$")
_AMPM = re.compile(r"\b(?:at\s+)?(\d{1,2})(?:[:.](\d{2}))?\s*(a\.?m\.?|p\.?m\.?)(?=\W|$)")
_H24 = re.compile(r"\b(?:at\s+)?(\d{1,2}):(\d{2})\b")
_BARE_AT = re.compile(r"\bat\s+(\d{1,2})\b(?!\s*(?:st|nd|rd|th|/|-|\d))")
_NUM = r"(\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|(?:a\s+)?couple\s+of|(?:a\s+)?few)"
_IN_N = re.compile(
    rf"^(?:in\s+{_NUM}\s+(day|week|month|year)s?|{_NUM}\s+(day|week|month|year)s?\s+from\s+(?:now|today))$"
)
_MONTH = re.compile(r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\b")
_FILLER = re.compile(r"\b(?:on|at|by|for|the|of|due|starting|from)\b")

EXAMPLES = "'2026-12-05', '2026-12-05T15:00', 'tomorrow at 10am', 'next Friday at 3pm', 'in 2 days', 'Monday noon'"


def resolve_expression(expression: str, today: dt.date) -> tuple[dt.date, dt.time | None]:
    """Resolve an ISO date/time or a relative English expression against ``today``.

    Args:
        expression: e.g. ``"2026-12-05T15:00"``, ``"tomorrow at 10"``, ``"next Friday at 3pm"``, ``"in 2 days"``.
        today: the date relative expressions count from.

    Returns:
        The date, and the time of day when the expression names one.

    Raises:
        InvalidDate: the expression cannot be resolved (the message lists forms that work).
    """
    if not isinstance(expression, str) or not expression.strip():
        raise InvalidDate(f"an empty date was given; use e.g. {EXAMPLES}")
    text = " ".join(expression.strip().lower().replace(",", " ").rstrip(".").split())
    iso = _ISO.match(text)
    if iso:
        return _from_iso(expression, iso)
    time_of_day, rest = _extract_time(text, expression)
    rest = " ".join(rest.replace("'s", "").split())
    day = _resolve_day(rest, today, expression, has_time=time_of_day is not None)
    if rest.strip() in ("tonight",) and time_of_day is None:
        time_of_day = _NAMED_TIMES["tonight"]
    return day, time_of_day


def format_when(day: dt.date, time_of_day: dt.time | None) -> str:
    """``YYYY-MM-DD`` or ``YYYY-MM-DDTHH:MM``."""
    if time_of_day is None:
        return day.isoformat()
    return f"{day.isoformat()}T{time_of_day.hour:02d}:{time_of_day.minute:02d}"


def parse_when(value: str, today: dt.date) -> tuple[dt.date, dt.time | None]:
    """Same as :func:`resolve_expression`; the name reads better at call sites that take a tool argument."""
    return resolve_expression(value, today)


def parse_datetime(value: str, today: dt.date, what: str = "start") -> dt.datetime:
    """A naive local datetime from an argument that must name a time of day.

    Raises:
        InvalidDate: unparseable, or a date without a time.
    """
    day, time_of_day = resolve_expression(value, today)
    if time_of_day is None:
        raise InvalidDate(f"{what} {value!r} has no time of day; give one, e.g. '{day.isoformat()}T10:00'")
    return dt.datetime.combine(day, time_of_day)


def parse_date(value: str, today: dt.date) -> dt.date:
    """A date from an argument (a time of day, if given, is ignored).

    Raises:
        InvalidDate: unparseable.
    """
    return resolve_expression(value, today)[0]


# -- internals ----------------------------------------------------------------------------------------------
def _from_iso(original: str, match: re.Match[str]) -> tuple[dt.date, dt.time | None]:
    try:
        day = dt.date.fromisoformat(match.group(1))
        if match.group(2) is None:
            return day, None
        return day, dt.time(int(match.group(2)), int(match.group(3)))
    except ValueError as exc:
        raise InvalidDate(f"{original!r} is not a real date or time ({exc}); use e.g. {EXAMPLES}") from exc


def _extract_time(text: str, original: str) -> tuple[dt.time | None, str]:
    m = _AMPM.search(text)
    if m:
        hour, minute = int(m.group(1)), int(m.group(2) or 0)
        if not 1 <= hour <= 12 or minute > 59:
            raise InvalidDate(f"{original!r} has an impossible time {m.group(0).strip()!r}; use e.g. '3pm' or '15:00'")
        pm = m.group(3).startswith("p")
        hour = hour % 12 + (12 if pm else 0)
        return dt.time(hour, minute), text[: m.start()] + " " + text[m.end():]
    m = _H24.search(text)
    if m:
        hour, minute = int(m.group(1)), int(m.group(2))
        if hour > 23 or minute > 59:
            raise InvalidDate(f"{original!r} has an impossible time {m.group(0).strip()!r}; use e.g. '15:00'")
        return dt.time(hour, minute), text[: m.start()] + " " + text[m.end():]
    for name in sorted(_NAMED_TIMES, key=len, reverse=True):
        m = re.search(rf"\b(?:in the\s+|at\s+|this\s+)?{name}\b", text)
        if m:
            rest = text[: m.start()] + " " + text[m.end():]
            if name == "tonight":
                rest = rest + " today"
            return _NAMED_TIMES[name], rest
    m = _BARE_AT.search(text)
    if m:
        hour = int(m.group(1))
        if not 0 <= hour <= 23:
            raise InvalidDate(f"{original!r} has an impossible hour {hour}; use e.g. '10am' or '15:00'")
        if 1 <= hour <= 6:
            hour += 12
        return dt.time(hour, 0), text[: m.start()] + " " + text[m.end():]
    return None, text


def _number(word: str) -> int:
    word = " ".join(word.split())
    return int(word) if word.isdigit() else _NUMBERS[word]


def _add_months(day: dt.date, months: int) -> dt.date:
    month_index = day.month - 1 + months
    year, month = day.year + month_index // 12, month_index % 12 + 1
    return dt.date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def _resolve_day(rest: str, today: dt.date, original: str, has_time: bool) -> dt.date:
    m = _IN_N.match(" ".join(re.sub(r"\b(?:on|at|by|due)\b", " ", rest).split()))
    if m:
        return _relative(m, today)
    text = " ".join(_FILLER.sub(" ", rest).split())
    if not text:
        if has_time:
            return today
        raise InvalidDate(f"{original!r} names no date; use e.g. {EXAMPLES}")
    if text in ("today", "now", "tonight", "this"):
        return today
    if text in ("tomorrow", "tmrw", "tomorow", "tommorow", "tommorrow"):
        return today + dt.timedelta(days=1)
    if text in ("day after tomorrow", "day after tommorow"):
        return today + dt.timedelta(days=2)
    if text == "yesterday":
        return today - dt.timedelta(days=1)
    if text in ("next week", "week"):
        return today + dt.timedelta(days=7 - today.weekday())
    if text == "next month":
        return _add_months(today.replace(day=1), 1)
    if text in ("end week", "end this week", "end week this"):
        return today + dt.timedelta(days=(4 - today.weekday()) % 7)
    if text in ("end month", "end this month"):
        return today.replace(day=calendar.monthrange(today.year, today.month)[1])
    words = text.split()
    weekday_words = [w for w in words if w in _WEEKDAYS]
    if len(weekday_words) == 1:
        weekday = _WEEKDAYS[weekday_words[0]]
        others = [w for w in words if w not in _WEEKDAYS]
        if others in ([], ["next"], ["coming"], ["upcoming"]):
            return today + dt.timedelta(days=(weekday - today.weekday() - 1) % 7 + 1)
        if others == ["this"]:
            return today + dt.timedelta(days=weekday - today.weekday())
        if others == ["last"]:
            return today - dt.timedelta(days=(today.weekday() - weekday - 1) % 7 + 1)
        if others in (["next", "week"], ["week", "next"]):
            return today + dt.timedelta(days=7 - today.weekday() + weekday)
    return _absolute(text, today, original)


def _relative(m: re.Match[str], today: dt.date) -> dt.date:
    n = _number(m.group(1) or m.group(3))
    unit = m.group(2) or m.group(4)
    if unit == "day":
        return today + dt.timedelta(days=n)
    if unit == "week":
        return today + dt.timedelta(weeks=n)
    if unit == "month":
        return _add_months(today, n)
    return _add_months(today, 12 * n)


def _absolute(text: str, today: dt.date, original: str) -> dt.date:
    try:
        from dateutil import parser as date_parser
    except ImportError as exc:
        raise MissingDependencyError("python-dateutil", "functions") from exc
    default = dt.datetime(today.year, today.month, today.day)
    try:
        parsed = date_parser.parse(text, default=default, fuzzy=False)
    except (ValueError, OverflowError) as exc:
        raise InvalidDate(f"cannot understand the date {original!r}; use e.g. {EXAMPLES}") from exc
    day: dt.date = parsed.date()
    if day < today and not re.search(r"\b\d{4}\b", text):
        # "December 5" said on December 20 means next year's; "the 3rd" said on the 20th means next month's
        has_month = bool(_MONTH.search(text)) or "/" in text or "-" in text
        day = _add_months(day, 12 if has_month else 1)
    return day
