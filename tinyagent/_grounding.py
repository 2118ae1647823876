"""Argument grounding: resolve dates, times and identifiers written in a request, deterministically.

`ground` finds every date/time expression and identifier in a request and resolves it against `today` (and
`now`, for "in an hour"). The planner is then offered the exact values (`tinyagent._grounded_formats`:
`grounding_note`, `values_for_parameter`) instead of having to do calendar arithmetic itself. Nothing here looks at
a tool's or a parameter's NAME: which values a parameter takes, and in which format, comes only from its JSON schema
and its description.

Rules (documented once, here):
- A bare weekday, "on <weekday>", "coming <weekday>" and "next <weekday>" mean the first such weekday strictly after
  `today` (so always 1-7 days ahead). "this <weekday>" is that weekday in the current Monday-Sunday week (it may be
  in the past); "last <weekday>" is the most recent one strictly before `today`.
- "next week" is the Monday of next week, "next month" the 1st of next month, "next year" January 1st;
  "end of the month" / "end of the year" (or "the last day of" them) the last day of the current month / year;
  "this weekend" / "the weekend" the Saturday on or after today (yesterday on a Sunday), "next weekend" a week
  later.
- A month and day without a year ("December 3rd", "3 Dec") is the next occurrence on or after `today`.
- Slash dates are ambiguous (12/03: March or December?) and are skipped unless year-first (2026/12/03).
- "tonight" is today at 20:00 unless a time is given; with tonight/afternoon/evening an hour under 12 is PM
  ("tonight at 9" = 21:00). A bare "at H" without am/pm reads 1-6 as PM (15:00 for "at 3") and 7-12 as written.
  "noon" is 12:00, "midnight" 00:00 of the same date.
- "in N hours/minutes" needs `now`; without it such an expression is skipped (no invented value).
- Typos are matched (edit distance, with transpositions) only against the date vocabulary (weekdays, tomorrow,
  yesterday, tonight, long month names), never against arbitrary words.
- Identifiers (emails, URLs, phone numbers, paths) keep the text as written; numbers are reported as written.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from dateutil.relativedelta import relativedelta

__all__ = ["DATE_LIKE", "GroundedValue", "Kind", "ground", "identifiers"]

Kind = Literal["date", "datetime", "time", "email", "phone", "path", "url", "number"]


@dataclass(frozen=True)
class GroundedValue:
    """One value found in a request.

    Attributes:
        text: The span in the request, as written.
        kind: What the span is.
        value: The normalised value: ISO `YYYY-MM-DD`, `YYYY-MM-DDTHH:MM` or `HH:MM` for dates and times; the
            address, number or path as written for identifiers.
        start: Offset of the span's first character in the request.
        end: Offset just past the span's last character.
    """

    text: str
    kind: Kind
    value: str
    start: int
    end: int


# ---------------------------------------------------------------------------------------------- vocabulary & typos

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WD_ABBR = {"mon": 0, "tue": 1, "tues": 1, "wed": 2, "thu": 3, "thur": 3, "thurs": 3, "fri": 4, "sat": 5, "sun": 6}
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")
_MON_ABBR = {m[:3]: i + 1 for i, m in enumerate(_MONTHS)} | {"sept": 9}
_FUZZY_VOCAB = (*_WEEKDAYS, "tomorrow", "yesterday", "tonight", "january", "february", "september", "october",
                "november", "december")
_ALIASES = {"nxt": "next", "tmrw": "tomorrow", "tmr": "tomorrow", "tmrow": "tomorrow", "2morrow": "tomorrow",
            "tonite": "tonight", "2nite": "tonight", "weds": "wed", "tomoro": "tomorrow"}
# Real words within the edit distance of a date word: never "corrected".
_NOT_TYPOS = frozenset({"sundry", "sundae", "sundays", "mondays", "fridays", "tonights", "fridge", "monkey"})


def _edit_distance(a: str, b: str, cap: int) -> int:
    """Optimal-string-alignment distance (a transposition costs 1), stopping early above `cap`."""
    if abs(len(a) - len(b)) > cap:
        return cap + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        if min(cur) > cap:
            return cap + 1
        prev2, prev = prev, cur
    return prev[-1]


def _correct(word: str) -> str:
    """The date word `word` stands for (alias or small typo), else `word` unchanged."""
    if word in _ALIASES:
        return _ALIASES[word]
    if len(word) < 5 or word in _NOT_TYPOS or word in _FUZZY_VOCAB:
        return word
    cap = 2 if len(word) >= 7 else 1
    best, best_d = word, cap + 1
    for target in _FUZZY_VOCAB:
        d = _edit_distance(word, target, cap)
        if d < best_d and word[0] == target[0]:
            best, best_d = target, d
    return best


def _normalise(text: str) -> tuple[str, list[int]]:
    """Lower-case `text` and correct date-word typos; return it with a map from its offsets to `text`'s."""
    parts: list[str] = []
    offsets: list[int] = []
    pos = 0
    for m in re.finditer(r"[A-Za-z0-9']+", text):
        gap = text[pos:m.start()].lower()
        parts.append(gap)
        offsets.extend(range(pos, m.start()))
        word = m.group().lower()
        fixed = _correct(word) if word.isalnum() else word
        parts.append(fixed)
        if fixed == word:
            offsets.extend(range(m.start(), m.end()))
        else:
            offsets.extend([m.start()] * len(fixed))
        pos = m.end()
    parts.append(text[pos:].lower())
    offsets.extend(range(pos, len(text)))
    offsets.append(len(text))
    return "".join(parts), offsets


# ---------------------------------------------------------------------------------------------- identifiers

_PATH_EXT = ("pdf|txt|md|csv|tsv|json|jsonl|yaml|yml|xml|html?|docx?|xlsx?|pptx?|odt|ods|rtf|png|jpe?g|gif|svg|"
             "webp|heic|mp3|mp4|m4a|wav|mov|avi|zip|tar|gz|tgz|7z|py|js|ts|sh|log|ini|toml|cfg|conf|ics|eml|vcf|"
             "epub|key|numbers|gguf|bin|sqlite|db")
_IDENT_PATTERNS: tuple[tuple[Kind, re.Pattern[str]], ...] = (
    ("url", re.compile(r"\b(?:https?|ftp)://[^\s<>\"']+|\bwww\.[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+[^\s<>\"']*")),
    ("email", re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")),
    ("path", re.compile(r"(?<![\w/.~])(?:~|\.{1,2})?/[\w.~+@%-]+(?:/[\w.~+@%-]*)*|\b[A-Za-z]:\\[^\s\"']+")),
    ("path", re.compile(rf"(?<![\w/.@-])[\w-]+(?:\.[\w-]+)*\.(?:{_PATH_EXT})\b", re.IGNORECASE)),
    ("phone", re.compile(r"(?<![\w+])\+?\(?\d[\d\s().-]{5,}\d(?![\w])")),
)
DATE_LIKE = re.compile(r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}|\d{1,2}:\d{2}")


def identifiers(request: str) -> list[GroundedValue]:
    """The e-mail addresses, URLs, paths and phone numbers ``request`` writes, as written (no dates or numbers)."""
    found: list[GroundedValue] = []
    taken = [False] * len(request)
    for kind, pattern in _IDENT_PATTERNS:
        for m in pattern.finditer(request):
            text = m.group().rstrip(".,;:!?)]}'\"")
            start, end = m.start(), m.start() + len(text)
            if not text or any(taken[start:end]):
                continue
            if kind == "phone" and not _is_phone(text):
                continue
            if kind == "path" and text.startswith("/") and len(text) < 3:
                continue
            found.append(GroundedValue(text, kind, text, start, end))
            taken[start:end] = [True] * (end - start)
    return found


def _is_phone(text: str) -> bool:
    digits = sum(c.isdigit() for c in text)
    if digits < 7 or digits > 15 or DATE_LIKE.search(text):
        return False
    groups = re.split(r"[\s().-]+", text.lstrip("+"))
    # "1500 2000 3000" is a list of numbers, not a phone: plain space-separated groups need a leading + or a
    # separator other than a space.
    return text.startswith("+") or bool(re.search(r"[-().]", text)) or len(groups) <= 3 and digits >= 9


# ---------------------------------------------------------------------------------------------- date candidates


@dataclass
class _Cand:
    start: int
    end: int
    slot: Literal["date", "time", "period", "full"]
    date: dt.date | None = None
    time: dt.time | None = None
    hour: int | None = None  # a bare hour ("at 9"), interpreted once the period is known
    minute: int = 0
    pm_bias: bool = False
    shift: int = 0  # "the night before": a day from the request's one other date, its period's hour and half


_NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                 "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple of": 2, "a couple of": 2}
_NUM = r"(?P<n>\d{1,3}|a couple of|couple of|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_WD_FULL = "|".join(_WEEKDAYS)
_WD_ANY = "|".join((*_WEEKDAYS, *sorted(_WD_ABBR, key=len, reverse=True)))
_MON = "|".join((*_MONTHS, *sorted(_MON_ABBR, key=len, reverse=True)))
_DAY = r"(?P<d>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?:,?\s+(?P<y>(?:19|20)\d\d))?"
_PERIODS = {"morning": (9, False), "afternoon": (15, True), "evening": (19, True), "night": (20, True),
            "tonight": (20, True)}


def _weekday_index(name: str) -> int:
    return _WEEKDAYS.index(name) if name in _WEEKDAYS else _WD_ABBR[name]


def _weekday(m: re.Match[str], today: dt.date) -> dt.date | None:
    target = _weekday_index(m.group("wd"))
    mod = m.group("mod") or ""
    if mod == "this":
        return today + dt.timedelta(days=target - today.weekday())
    if mod == "last":
        return today - dt.timedelta(days=(today.weekday() - target - 1) % 7 + 1)
    return today + dt.timedelta(days=(target - today.weekday() - 1) % 7 + 1)


def _month_day(m: re.Match[str], today: dt.date) -> dt.date | None:
    mon = m.group("mon")
    month = _MONTHS.index(mon) + 1 if mon in _MONTHS else _MON_ABBR[mon]
    day, year = int(m.group("d")), m.group("y")
    if not _valid(2000, month, day):  # 2000 is a leap year: no year has this day
        return None
    try:
        if year:
            return dt.date(int(year), month, day)
        found = dt.date(today.year, month, day) if _valid(today.year, month, day) else None
        if found is None or found < today:
            nxt = today.year + 1
            while not _valid(nxt, month, day):  # Feb 29: the next leap year
                nxt += 1
            found = dt.date(nxt, month, day)
        return found
    except ValueError:
        return None


def _day_of_month(m: re.Match[str], today: dt.date) -> dt.date | None:
    """ "the 22nd": that day of this month, or of the next month that has it once it has passed."""
    day = int(m.group("d"))
    year, month = today.year, today.month
    for _ in range(13):
        if _valid(year, month, day) and dt.date(year, month, day) >= today:
            return dt.date(year, month, day)
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return None


def _valid(year: int, month: int, day: int) -> bool:
    return 1 <= day <= calendar.monthrange(year, month)[1]


def _iso(m: re.Match[str], today: dt.date) -> dt.date | None:
    try:
        return dt.date(int(m.group("y")), int(m.group("m")), int(m.group("d")))
    except ValueError:
        return None


def _offset(m: re.Match[str], today: dt.date) -> dt.date | None:
    raw = m.group("n")
    n = int(raw) if raw.isdigit() else _NUMBER_WORDS[raw]
    unit = m.group("unit")
    delta = {"day": relativedelta(days=n), "week": relativedelta(weeks=n), "fortnight": relativedelta(weeks=2 * n),
             "month": relativedelta(months=n), "year": relativedelta(years=n)}[unit]
    result: dt.date = today - delta if m.group("ago") else today + delta
    return result


def _period_start(m: re.Match[str], today: dt.date) -> dt.date | None:
    which, unit = m.group("which"), m.group("unit")
    step = {"next": 1, "last": -1, "this": 0}[which]
    if unit == "week":
        return today - dt.timedelta(days=today.weekday()) + dt.timedelta(weeks=step)
    if unit == "month":
        return today.replace(day=1) + relativedelta(months=step)  # type: ignore[no-any-return]
    return dt.date(today.year + step, 1, 1)


def _end_of(m: re.Match[str], today: dt.date) -> dt.date | None:
    base = today + relativedelta(months=1) if m.group("nxt") else today
    if m.group("unit") == "year":
        return dt.date(base.year if not m.group("nxt") else today.year + 1, 12, 31)
    return base.replace(day=calendar.monthrange(base.year, base.month)[1])  # type: ignore[no-any-return]


def _weekend(m: re.Match[str], today: dt.date) -> dt.date | None:
    """The Saturday of the current weekend (on or after today; today's weekend on a Sunday); "next" adds a week."""
    saturday = today + dt.timedelta(days=(5 - today.weekday()) % 7 if today.weekday() < 6 else -1)
    return saturday + dt.timedelta(weeks=1 if m.group("which") == "next" else 0)


def _fixed(days: int) -> Callable[[re.Match[str], dt.date], dt.date | None]:
    return lambda _m, today: today + dt.timedelta(days=days)


_DATE_RULES: tuple[tuple[re.Pattern[str], Callable[[re.Match[str], dt.date], dt.date | None]], ...] = tuple(
    (re.compile(p), f) for p, f in (
        (r"\b(?:the\s+)?day\s+after\s+tomorrow\b", _fixed(2)),
        (r"\b(?:the\s+)?day\s+before\s+yesterday\b", _fixed(-2)),
        (r"\btoday\b", _fixed(0)),
        (r"\btomorrow\b", _fixed(1)),
        (r"\byesterday\b", _fixed(-1)),
        (rf"\b(?:(?P<mod>on|this|next|last|coming|on\s+the\s+coming)\s+)?(?P<wd>{_WD_FULL})\b", _weekday),
        (rf"\b(?P<mod>on|this|next|last|by|until)\s+(?P<wd>{_WD_ANY})\b\.?", _weekday),
        (rf"\b(?:on\s+)?(?P<mon>{_MON})\.?\s+(?:the\s+)?{_DAY}\b{_YEAR}", _month_day),
        (rf"\b(?:on\s+)?(?:the\s+)?{_DAY}(?:\s+of)?\s+(?P<mon>{_MON})\b\.?{_YEAR}", _month_day),
        (r"\b(?:on\s+)?the\s+(?P<d>[0-3]?\d)(?:st|nd|rd|th)\b(?=\s*(?:$|[,.;!?)]|(?:at|of|in|by|for|from|to|and|"
         r"or|until|till|before|after|@)\b))", _day_of_month),  # (not "the 2nd floor")
        (r"(?<![\d/.-])(?P<y>\d{4})([-/.])(?P<m>\d{1,2})\2(?P<d>\d{1,2})(?![\d/.-]*\d)", _iso),
        (rf"\bin\s+{_NUM}\s+(?P<unit>day|week|fortnight|month|year)s?\b(?P<ago>)", _offset),
        (rf"\b{_NUM}\s+(?P<unit>day|week|month|year)s?\s+(?:from\s+(?:now|today)|later|(?P<ago>ago))\b", _offset),
        (r"\b(?P<which>next|this|last)\s+(?P<unit>week|month|year)\b", _period_start),
        (r"\b(?:(?:over\s+)?the|(?P<which>this|next))\s+weekend\b", _weekend),
        (r"\b(?:by\s+|on\s+)?(?:the\s+)?(?:end|last\s+day)\s+of\s+(?:the\s+|this\s+|(?P<nxt>next)\s+)?"
         r"(?P<unit>month|year)\b", _end_of),
    )
)


def _time_candidates(norm: str) -> list[_Cand]:
    cands: list[_Cand] = []
    at = r"(?:(?:at|by|from|around)\s+|@\s*)"
    for m in re.finditer(rf"\b{at}?(?P<h>\d{{1,2}})(?::(?P<m>[0-5]\d))?\s*(?P<ap>a\.?m\b\.?|p\.?m\b\.?)", norm):
        h, ap = int(m.group("h")), m.group("ap")[0]
        if 1 <= h <= 12:
            hour = (h % 12) + (12 if ap == "p" else 0)
            cands.append(_Cand(m.start(), m.end(), "time", time=dt.time(hour, int(m.group("m") or 0))))
    for m in re.finditer(rf"(?<![\d:.])(?:{at})?(?P<h>[01]?\d|2[0-3]):(?P<m>[0-5]\d)(?::[0-5]\d)?(?![\d:])", norm):
        h, mi = int(m.group("h")), int(m.group("m"))
        exact = h > 12 or len(m.group("h")) == 2 and h < 10  # "15:00", "09:00" are 24-hour clock times
        cands.append(_Cand(m.start(), m.end(), "time", hour=None if exact else h,
                           time=dt.time(h, mi) if exact else None, minute=mi))
    for m in re.finditer(rf"\b(?:{at}(?P<h>\d{{1,2}})(?:\s*o'?clock)?|(?P<h2>\d{{1,2}})\s*o'?clock)\b"
                         r"(?![:.,]?\d|\s*%|\s+(?!this\b)[a-z]{2,}s\b)",  # not "at 10%", "at 3 locations"
                         norm):
        h = int(m.group("h") or m.group("h2"))
        if 0 <= h <= 12:
            cands.append(_Cand(m.start(), m.end(), "time", hour=h))
    _ranges(cands, norm)
    for m in re.finditer(r"\b(?:at\s+)?(?P<w>noon|midday|midnight)\b", norm):
        cands.append(_Cand(m.start(), m.end(), "time", time=dt.time(0 if m.group("w") == "midnight" else 12)))
    for m in re.finditer(r"\b(?:(?P<this>this|in\s+the|at)\s+)?(?P<p>morning|afternoon|evening|night|tonight)\b",
                         norm):
        hour, pm = _PERIODS[m.group("p")]
        today_implied = m.group("p") == "tonight" or m.group("this") == "this"
        cands.append(_Cand(m.start(), m.end(), "period", time=dt.time(hour), pm_bias=pm,
                           date=dt.date.min if today_implied else None))
    return cands


_RANGE = re.compile(r"(?P<h>\d{1,2})(?::(?P<m>[0-5]\d))?\s*(?:-|\u2013|to|until|till)\s*(?P<h2>\d{1,2})(?::[0-5]\d)?"
                    r"\s*(?P<ap>[ap])\.?m\b")


def _ranges(cands: list[_Cand], norm: str) -> None:
    """A range's start without its half of the day takes the end's ("from 7 to 9pm": 19:00, "9 to 11am": 9:00),
    unless it comes later on the clock ("11 to 1pm": 11:00)."""
    for m in _RANGE.finditer(norm):
        h, h2, pm = int(m.group("h")), int(m.group("h2")), m.group("ap") == "p"
        if not (1 <= h <= 12 and 1 <= h2 <= 12):
            continue
        hour = h % 12 + (12 if pm and h % 12 <= h2 % 12 else 0)
        start = _Cand(m.start("h"), m.end("m") if m.group("m") else m.end("h"), "time",
                      time=dt.time(hour, int(m.group("m") or 0)))
        covering = [i for i, c in enumerate(cands) if c.slot == "time" and c.start <= start.start < c.end]
        for i in covering:  # "from 7": the same words, now with their half of the day
            if cands[i].hour is not None and cands[i].end <= start.end + 1:
                cands[i] = _Cand(cands[i].start, cands[i].end, "time", time=start.time)
        if not covering:  # "Wednesday, 2 to 3pm": the bare start is a time too
            cands.append(start)


def _clock_candidates(norm: str, today: dt.date, now: dt.time | None) -> list[_Cand]:
    """ "in an hour", "in 30 minutes": absolute only when `now` is known."""
    if now is None:
        return []
    cands = []
    pattern = rf"\bin\s+(?:{_NUM}|(?P<half>half\s+an))\s+(?P<unit>hour|hr|minute|min)s?\b"
    for m in re.finditer(pattern, norm):
        raw = m.group("n")
        n = 0.5 if m.group("half") else int(raw) if raw.isdigit() else _NUMBER_WORDS[raw]
        minutes = n * (60 if m.group("unit") in ("hour", "hr") else 1)
        at = dt.datetime.combine(today, now) + dt.timedelta(minutes=minutes)
        cands.append(_Cand(m.start(), m.end(), "full", date=at.date(), time=at.time().replace(second=0,
                                                                                             microsecond=0)))
    return cands


_NEXT_TO = re.compile(r"\bthe\s+(?P<p>day|morning|afternoon|evening|night)\s+(?P<rel>before|after)\b"
                      r"(?!\s+(?:tomorrow|yesterday|today|that|the|it|we|i|you|he|she|they)\b)")


def _next_to(norm: str) -> list[_Cand]:
    """ "the night before", "the morning after": a day next to the request's other date (resolved in
    :func:`_dates`), with its period's hour and half of the day."""
    out = []
    for m in _NEXT_TO.finditer(norm):
        hour, pm = _PERIODS.get(m.group("p"), (None, False))
        out.append(_Cand(m.start(), m.end(), "date", time=None if hour is None else dt.time(hour), pm_bias=pm,
                         shift=-1 if m.group("rel") == "before" else 1))
    return out


def _select(cands: list[_Cand]) -> list[_Cand]:
    """Keep the longest non-overlapping candidates."""
    chosen: list[_Cand] = []
    for c in sorted(cands, key=lambda c: (c.start - c.end, c.start)):
        if all(c.end <= o.start or c.start >= o.end for o in chosen):
            chosen.append(c)
    return sorted(chosen, key=lambda c: c.start)


_JOIN = re.compile(r"\s*(?:,|\bat\b|\bon\b|\bthe\b|t)?\s*")


def _group(chosen: list[_Cand], norm: str) -> list[list[_Cand]]:
    """Group adjacent candidates ("tomorrow" "morning" "at 8") that form one expression."""
    groups: list[list[_Cand]] = []
    for c in chosen:
        last = groups[-1] if groups else None
        if (last and c.slot != "full" and all(o.slot not in (c.slot, "full") for o in last)
                and _JOIN.fullmatch(norm[last[-1].end:c.start])):
            last.append(c)
        else:
            groups.append([c])
    return groups


def _resolve(group: list[_Cand], today: dt.date) -> tuple[Kind, str] | None:
    by = {c.slot: c for c in group}
    if "full" in by:
        full = by["full"]
        if full.date is None or full.time is None:
            return None
        return "datetime", f"{full.date.isoformat()}T{full.time:%H:%M}"
    date = by["date"].date if "date" in by else None
    period = by.get("period") or (by["date"] if "date" in by and by["date"].shift else None)
    if date is None and period is not None and period.date is not None:
        date = today
    clock = by.get("time")
    time = clock.time if clock else None
    if clock and clock.hour is not None:
        hour = clock.hour
        if period is not None:
            hour = hour + 12 if period.pm_bias and hour < 12 else hour
        elif 1 <= hour <= 6:
            hour += 12
        time = dt.time(hour % 24, clock.minute)
    if time is None and period is not None and (date is not None or clock is not None):
        time = period.time
    if date is not None and time is not None:
        return "datetime", f"{date.isoformat()}T{time:%H:%M}"
    if date is not None:
        return "date", date.isoformat()
    if time is not None:
        return "time", f"{time:%H:%M}"
    return None


def _dates(request: str, masked: str, today: dt.date, now: dt.time | None) -> list[GroundedValue]:
    norm, offsets = _normalise(masked)
    cands: list[_Cand] = []
    for pattern, resolver in _DATE_RULES:
        for m in pattern.finditer(norm):
            date = resolver(m, today)
            if date is not None and date > today and _SINCE.search(norm, 0, m.start()):
                date = _before(date, resolver, today)  # "everything since October 1st": the one gone by
            if date is not None:
                cands.append(_Cand(m.start(), m.end(), "date", date=date))
    cands += _time_candidates(norm) + _clock_candidates(norm, today, now) + _next_to(norm)
    groups = _group(_select(cands), norm)
    anchors = {c.date for g in groups for c in g if c.slot == "date" and not c.shift and c.date is not None}
    found = []
    for group in groups:
        if any(c.shift for c in group):  # "the night before": the one other date's day before, else nothing
            if len(anchors) != 1:
                continue
            group = [replace(c, date=next(iter(anchors)) + dt.timedelta(days=c.shift)) if c.shift else c
                     for c in group]
        resolved = _resolve(group, today)
        if resolved is None:
            continue
        start, end = offsets[group[0].start], offsets[group[-1].end]
        while end > start and request[end - 1] in " ,.":
            end -= 1
        found.append(GroundedValue(request[start:end], resolved[0], resolved[1], start, end))
    return found


_SINCE = re.compile(r"\bsince\s+(?:the\s+)?$")


def _before(date: dt.date, resolver: Callable[[re.Match[str], dt.date], dt.date | None],
            today: dt.date) -> dt.date | None:
    """The last ``date`` of its kind on or before ``today`` (a year, a month or a week back), for a month's day, a
    day of the month or a weekday; ``date`` itself for any other rule (an offset, a year that was written)."""
    steps: dict[Callable[[re.Match[str], dt.date], dt.date | None], relativedelta] = {
        _month_day: relativedelta(years=1), _day_of_month: relativedelta(months=1), _weekday: relativedelta(weeks=1)}
    step = steps.get(resolver)
    back = date
    while step is not None and back > today:
        back = back - step
    return back if resolver is _weekday or back.day == date.day else None  # (no 31st in the month before)


_NUMBER = re.compile(r"(?<![\w.,/:-])[-+]?\d+(?:[.,]\d+)*(?![\w/:-])")


def ground(request: str, today: dt.date, *, now: dt.time | None = None) -> list[GroundedValue]:
    """Find the dates, times, identifiers and numbers written in `request`, resolved against `today`.

    Args:
        request: The user's request.
        today: The date relative expressions are resolved against.
        now: The current time, for "in an hour"; without it such expressions are skipped.

    Returns:
        The values in order of appearance, without overlaps (see the module docstring for the rules).
    """
    found = identifiers(request)
    masked = _mask(request, found)
    found += _dates(request, masked, today, now or _said_now(request))
    masked = _mask(request, found)
    for m in _NUMBER.finditer(masked):
        found.append(GroundedValue(m.group(), "number", m.group(), m.start(), m.end()))
    return sorted(found, key=lambda v: v.start)


_NOW = re.compile(r"\b(?:it'?s|it\s+is)\s+(?:now\s+)?(?P<h>1[0-2]|0?[1-9])(?::(?P<m>[0-5]\d))?\s*(?P<ap>[ap])\.?m\b"
                  r"|\b(?:it'?s|it\s+is)\s+(?:now\s+)?(?P<h24>[01]\d|2[0-3]):(?P<m24>[0-5]\d)\b", re.IGNORECASE)


def _said_now(request: str) -> dt.time | None:
    """The time the request says it is ("It's 1:45pm.", "its 2:10pm now"), for "in 90 minutes"."""
    m = _NOW.search(request)
    if m is None:
        return None
    if m.group("h24"):
        return dt.time(int(m.group("h24")), int(m.group("m24")))
    return dt.time(int(m.group("h")) % 12 + (12 if m.group("ap").lower() == "p" else 0), int(m.group("m") or 0))


def _mask(request: str, values: Sequence[GroundedValue]) -> str:
    chars = list(request)
    for v in values:
        chars[v.start:v.end] = " " * (v.end - v.start)
    return "".join(chars)
