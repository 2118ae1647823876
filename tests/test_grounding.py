"""Unit tests for tinyagent._grounding: deterministic dates, times and identifiers from a request."""

from __future__ import annotations

import datetime as dt
import itertools

import pytest

from tinyagent._grounded_formats import format_for_schema, grounding_note, values_for_parameter
from tinyagent._grounding import GroundedValue, ground

TUE = dt.date(2026, 12, 1)  # a Tuesday
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
DATE_KINDS = ("date", "datetime", "time")


def dates(request: str, today: dt.date = TUE, now: dt.time | None = None) -> list[tuple[str, str]]:
    return [(v.kind, v.value) for v in ground(request, today, now=now) if v.kind in DATE_KINDS]


def one(request: str, today: dt.date = TUE, now: dt.time | None = None) -> str:
    found = dates(request, today, now)
    assert len(found) == 1, found
    return found[0][1]


# ------------------------------------------------------------------------------------------- relative dates


@pytest.mark.parametrize(
    ("request_", "today", "expected"),
    [
        ("today", TUE, "2026-12-01"),
        ("tomorrow", TUE, "2026-12-02"),
        ("yesterday", TUE, "2026-11-30"),
        ("the day after tomorrow", TUE, "2026-12-03"),
        ("day before yesterday", TUE, "2026-11-29"),
        ("tomorrow", dt.date(2026, 12, 31), "2027-01-01"),
        ("tomorrow", dt.date(2026, 11, 30), "2026-12-01"),
        ("tomorrow", dt.date(2028, 2, 28), "2028-02-29"),
        ("tomorrow", dt.date(2027, 2, 28), "2027-03-01"),
        ("tomorrow", dt.date(2000, 2, 28), "2000-02-29"),
        ("tomorrow", dt.date(2100, 2, 28), "2100-03-01"),
        ("yesterday", dt.date(2027, 1, 1), "2026-12-31"),
        ("yesterday", dt.date(2028, 3, 1), "2028-02-29"),
        ("the day after tomorrow", dt.date(2026, 12, 30), "2027-01-01"),
        ("in 3 days", dt.date(2026, 12, 30), "2027-01-02"),
        ("in 3 days", TUE, "2026-12-04"),
        ("in two weeks", TUE, "2026-12-15"),
        ("in two weeks", dt.date(2026, 12, 25), "2027-01-08"),
        ("in a week", dt.date(2028, 2, 25), "2028-03-03"),
        ("in a month", dt.date(2027, 1, 31), "2027-02-28"),
        ("in a month", dt.date(2028, 1, 31), "2028-02-29"),
        ("in a year", dt.date(2028, 2, 29), "2029-02-28"),
        ("in a couple of days", TUE, "2026-12-03"),
        ("3 days from now", TUE, "2026-12-04"),
        ("2 weeks ago", TUE, "2026-11-17"),
        ("next week", TUE, "2026-12-07"),
        ("next week", dt.date(2026, 12, 6), "2026-12-07"),  # Sunday
        ("next week", dt.date(2026, 12, 28), "2027-01-04"),
        ("next month", TUE, "2027-01-01"),
        ("next month", dt.date(2026, 12, 31), "2027-01-01"),
        ("next month", dt.date(2027, 1, 31), "2027-02-01"),
        ("next year", TUE, "2027-01-01"),
        ("end of the month", TUE, "2026-12-31"),
        ("end of the month", dt.date(2028, 2, 10), "2028-02-29"),
        ("on the last day of this month", TUE, "2026-12-31"),
        ("the last day of next month", TUE, "2027-01-31"),
        ("end of the month", dt.date(2027, 2, 10), "2027-02-28"),
        ("by the end of next month", dt.date(2027, 1, 31), "2027-02-28"),
        ("end of the year", TUE, "2026-12-31"),
        ("this weekend", TUE, "2026-12-05"),
        ("over the weekend", dt.date(2026, 12, 5), "2026-12-05"),
        ("this weekend", dt.date(2026, 12, 6), "2026-12-05"),
        ("next weekend", TUE, "2026-12-12"),
        ("this weekend", dt.date(2026, 12, 31), "2027-01-02"),
    ],
)
def test_relative_dates(request_: str, today: dt.date, expected: str) -> None:
    assert one(request_, today) == expected


@pytest.mark.parametrize(
    ("request_", "today", "expected"),
    [
        ("December 3rd", TUE, "2026-12-03"),
        ("3 Dec", TUE, "2026-12-03"),
        ("Dec 3, 2027", TUE, "2027-12-03"),
        ("the 3rd of March 2027", TUE, "2027-03-03"),
        ("on Jan 5", TUE, "2027-01-05"),  # already past this year: next occurrence
        ("November 30", TUE, "2027-11-30"),
        ("December 1st", TUE, "2026-12-01"),  # today counts
        ("Feb 29", TUE, "2028-02-29"),  # next leap year
        ("Sept 9", TUE, "2027-09-09"),
        ("2026-12-05", TUE, "2026-12-05"),
        ("2027/01/02", TUE, "2027-01-02"),
    ],
)
def test_absolute_dates(request_: str, today: dt.date, expected: str) -> None:
    assert one(request_, today) == expected


@pytest.mark.parametrize("request_", ["12/03", "meet 12/03 at the cafe", "Feb 30", "2026-13-01", "Dec 32"])
def test_ambiguous_or_impossible_dates_are_skipped(request_: str) -> None:
    assert [k for k, _ in dates(request_) if k != "time"] == []


# ------------------------------------------------------------------------------------------- weekdays


@pytest.mark.parametrize(("today_wd", "target_wd", "form"),
                         list(itertools.product(range(7), range(7), ["{}", "on {}", "next {}", "coming {}"])))
def test_weekday_is_next_occurrence_strictly_after_today(today_wd: int, target_wd: int, form: str) -> None:
    today = dt.date(2026, 11, 30) + dt.timedelta(days=today_wd)  # 2026-11-30 is a Monday
    resolved = dt.date.fromisoformat(one(form.format(WEEKDAYS[target_wd].capitalize()), today))
    assert 1 <= (resolved - today).days <= 7
    assert resolved.weekday() == target_wd


@pytest.mark.parametrize(("today_wd", "target_wd"), list(itertools.product(range(7), range(7))))
def test_this_and_last_weekday(today_wd: int, target_wd: int) -> None:
    today = dt.date(2026, 12, 28) + dt.timedelta(days=today_wd)  # a Monday, so the week crosses the year end
    this = dt.date.fromisoformat(one(f"this {WEEKDAYS[target_wd]}", today))
    last = dt.date.fromisoformat(one(f"last {WEEKDAYS[target_wd]}", today))
    assert this.isocalendar()[:2] == today.isocalendar()[:2] and this.weekday() == target_wd
    assert 1 <= (today - last).days <= 7 and last.weekday() == target_wd


@pytest.mark.parametrize(("abbr", "weekday"), [("on Fri", 4), ("next Wed", 2), ("by Thurs", 3), ("until Sat.", 5)])
def test_weekday_abbreviations_with_a_preposition(abbr: str, weekday: int) -> None:
    assert dt.date.fromisoformat(one(abbr)).weekday() == weekday


# ------------------------------------------------------------------------------------------- times


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        ("at noon", "12:00"),
        ("midday", "12:00"),
        ("midnight", "00:00"),
        ("at 10", "10:00"),
        ("at 3", "15:00"),  # bare 1-6 reads as afternoon
        ("at 12", "12:00"),
        ("10am", "10:00"),
        ("10 a.m.", "10:00"),
        ("12am", "00:00"),
        ("12pm", "12:00"),
        ("3:30 pm", "15:30"),
        ("3:30PM", "15:30"),
        ("15:00", "15:00"),
        ("09:00", "09:00"),
        ("23:59", "23:59"),
        ("at 7 o'clock", "07:00"),
    ],
)
def test_times(request_: str, expected: str) -> None:
    assert dates(request_) == [("time", expected)]


@pytest.mark.parametrize(
    ("request_", "today", "expected"),
    [
        ("tonight", TUE, "2026-12-01T20:00"),
        ("tonight at 9", TUE, "2026-12-01T21:00"),
        ("tonight at 9", dt.date(2026, 12, 31), "2026-12-31T21:00"),
        ("at 10 tonight", TUE, "2026-12-01T22:00"),
        ("tonight at 11:30", TUE, "2026-12-01T23:30"),
        ("this evening", TUE, "2026-12-01T19:00"),
        ("tomorrow at 10", TUE, "2026-12-02T10:00"),
        ("tomorrow at 10", dt.date(2026, 12, 31), "2027-01-01T10:00"),
        ("tomorrow, 10am", TUE, "2026-12-02T10:00"),
        ("at 3pm tomorrow", TUE, "2026-12-02T15:00"),
        ("10am on Friday", TUE, "2026-12-04T10:00"),
        ("next Monday at 3pm", TUE, "2026-12-07T15:00"),
        ("tomorrow morning at 8", TUE, "2026-12-02T08:00"),
        ("tomorrow morning", TUE, "2026-12-02T09:00"),
        ("tomorrow afternoon at 4", TUE, "2026-12-02T16:00"),
        ("December 3rd at noon", TUE, "2026-12-03T12:00"),
        ("Dec 3, 2027 at 15:30", TUE, "2027-12-03T15:30"),
        ("2026-12-03T09:30", TUE, "2026-12-03T09:30"),
        ("2026-12-03 14:00", TUE, "2026-12-03T14:00"),
        ("in 3 days at 9am", dt.date(2026, 12, 30), "2027-01-02T09:00"),
    ],
)
def test_date_and_time_combined(request_: str, today: dt.date, expected: str) -> None:
    assert dates(request_, today) == [("datetime", expected)]


@pytest.mark.parametrize(
    ("request_", "now", "expected"),
    [
        ("in an hour", dt.time(9, 15), "2026-12-01T10:15"),
        ("in 30 minutes", dt.time(9, 15), "2026-12-01T09:45"),
        ("in half an hour", dt.time(23, 50), "2026-12-02T00:20"),
        ("in 2 hours", dt.time(23, 0), "2026-12-02T01:00"),
    ],
)
def test_clock_offsets_need_now(request_: str, now: dt.time, expected: str) -> None:
    assert dates(request_, TUE, now) == [("datetime", expected)]
    assert dates(request_, TUE) == []  # without `now`, nothing is invented


# ------------------------------------------------------------------------------------------- typos


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        ("tomorow", "2026-12-02"),
        ("tommorow", "2026-12-02"),
        ("tmrw", "2026-12-02"),
        ("wensday", "2026-12-02"),
        ("wednsday", "2026-12-02"),
        ("thurday", "2026-12-03"),
        ("firday", "2026-12-04"),
        ("saturady", "2026-12-05"),
        ("sundy", "2026-12-06"),
        ("nxt week", "2026-12-07"),
        ("nxt friday", "2026-12-04"),
        ("Decmber 3", "2026-12-03"),
        ("yesterdy", "2026-11-30"),
    ],
)
def test_typos_in_date_words(request_: str, expected: str) -> None:
    assert one(request_) == expected


def test_typo_span_is_the_text_as_written() -> None:
    (v,) = ground("remind me tommorow at 10 please", TUE)
    assert (v.text, v.value) == ("tommorow at 10", "2026-12-02T10:00")
    assert "remind me tommorow at 10 please"[v.start:v.end] == v.text


# ------------------------------------------------------------------------------------------- no false positives


@pytest.mark.parametrize(
    "request_",
    [
        "I may send 10 emails",
        "the Mayor said so",
        "buy sundry items and a sundae",
        "put the milk in the fridge",
        "I sat in the sun",
        "save some money for the monkey",
        "march on",
        "version 2.5 has 3 bugs",
        "the meeting notes",
        "wed the two files",
        "meet 5 people at 3 locations",
        "grow at 10% a year",
        "12/03/2026",
    ],
)
def test_no_false_date_positives(request_: str) -> None:
    assert dates(request_) == []


def test_possessive_weekday_resolves() -> None:
    (v,) = ground("Friday's notes", TUE)
    assert (v.text, v.value) == ("Friday", "2026-12-04")


def test_numbers_as_written() -> None:
    assert [(v.kind, v.value) for v in ground("I may send 10 emails and 1,500.50 dollars", TUE)] == [
        ("number", "10"), ("number", "1,500.50")]


# ------------------------------------------------------------------------------------------- identifiers


@pytest.mark.parametrize(
    ("request_", "kind", "value"),
    [
        ("email bob.smith+x@example.co.uk about it", "email", "bob.smith+x@example.co.uk"),
        ("write to ana@corp.io.", "email", "ana@corp.io"),
        ("text +1 555-123-4567 now", "phone", "+1 555-123-4567"),
        ("call +44 20 7946 0958", "phone", "+44 20 7946 0958"),
        ("call 555-1234", "phone", "555-1234"),
        ("call (555) 123-4567", "phone", "(555) 123-4567"),
        ("open ~/docs/menu.pdf", "path", "~/docs/menu.pdf"),
        ("run ./scripts/build.sh", "path", "./scripts/build.sh"),
        ("read /etc/hosts.", "path", "/etc/hosts"),
        ("attach menu.pdf to the mail", "path", "menu.pdf"),
        ("load Q3 report.xlsx", "path", "report.xlsx"),
        (r"open C:\Users\ana\notes.txt", "path", r"C:\Users\ana\notes.txt"),
        ("see https://example.org/a?b=1.", "url", "https://example.org/a?b=1"),
        ("visit www.example.com today", "url", "www.example.com"),
    ],
)
def test_identifiers_as_written(request_: str, kind: str, value: str) -> None:
    found = [v for v in ground(request_, TUE) if v.kind == kind]
    assert [v.value for v in found] == [value]
    assert request_[found[0].start:found[0].end] == value


@pytest.mark.parametrize("request_", ["and/or", "12/03", "e.g. this", "2026-12-03", "score 3-1", "2026 2027"])
def test_no_false_identifier_positives(request_: str) -> None:
    assert [v for v in ground(request_, TUE) if v.kind in ("email", "phone", "path", "url")] == []


def test_dates_inside_identifiers_are_not_read() -> None:
    found = ground("open ~/notes/tomorrow.md and https://x.org/friday", TUE)
    assert [v.kind for v in found] == ["path", "url"]


def test_mixed_request_in_order() -> None:
    found = ground("Email ana@corp.io tomorrow at 10 and call +1 555 123 4567 on Friday", TUE)
    assert [(v.kind, v.value) for v in found] == [
        ("email", "ana@corp.io"), ("datetime", "2026-12-02T10:00"), ("phone", "+1 555 123 4567"),
        ("date", "2026-12-04")]


# ------------------------------------------------------------------------------------------- formatting

DT = GroundedValue("tomorrow at 10", "datetime", "2026-12-02T10:00", 0, 14)
D = GroundedValue("tomorrow", "date", "2026-12-02", 0, 8)
T = GroundedValue("at 10", "time", "10:00", 0, 5)
UNIX_DT = str(int(dt.datetime(2026, 12, 2, 10, tzinfo=dt.UTC).timestamp()))


@pytest.mark.parametrize(
    ("value", "schema", "description", "expected"),
    [
        (DT, {"type": "string", "format": "date"}, "", "2026-12-02"),
        (DT, {"type": "string", "format": "date-time"}, "", "2026-12-02T10:00:00"),
        (DT, {"type": "string", "format": "time"}, "", "10:00:00"),
        (D, {"type": "string", "format": "date-time"}, "", "2026-12-02T00:00:00"),
        (T, {"type": "string", "format": "time"}, "", "10:00:00"),
        (DT, {"type": "string"}, "Start, as YYYY-MM-DD HH:MM:SS", "2026-12-02 10:00:00"),
        (DT, {"type": "string"}, "Start (YYYY-MM-DDTHH:MM)", "2026-12-02T10:00"),
        (DT, {"type": "string"}, "Day in MM/DD/YYYY format", "12/02/2026"),
        (DT, {"type": "string"}, "Day as DD.MM.YYYY", "02.12.2026"),
        (DT, {"type": "string"}, "Time, HH:MM", "10:00"),
        (T, {"type": "string"}, "Time, HH:MM:SS", "10:00:00"),
        (DT, {"type": "string"}, "format yyyy-mm-dd hh:mm", "2026-12-02 10:00"),
        (DT, {"type": "string", "description": "When, in YYYY-MM-DD HH:MM:SS"}, "", "2026-12-02 10:00:00"),
        (DT, {"type": "integer"}, "Unix timestamp of the start", UNIX_DT),
        (D, {"type": "integer"}, "Seconds since the epoch", str(int(dt.datetime(2026, 12, 2, tzinfo=dt.UTC)
                                                                   .timestamp()))),
        (DT, {"type": "string"}, "Start time, e.g. 2026-01-01 14:00:00", "2026-12-02 10:00:00"),
        (DT, {"type": "string"}, "The date of the meeting", "2026-12-02"),
        (DT, {"type": "string"}, "The time of the meeting", "10:00"),
        (DT, {"type": "string"}, "", "2026-12-02T10:00"),  # no hint: ISO
        (D, {"type": "string"}, "", "2026-12-02"),
        (T, {"type": "string"}, "Day as YYYY-MM-DD", "10:00"),  # no date to show: as is
        (DT, {"type": "string"}, "Start time, 12-hour clock hh:mm AM/PM (e.g. 02:30 PM)", "10:00 AM"),
        (GroundedValue("at 4:15pm", "datetime", "2026-12-02T16:15", 0, 9), {"type": "string"},
         "When, MM/DD/YYYY hh:mm AM/PM", "12/02/2026 04:15 PM"),
        (GroundedValue("a@b.co", "email", "a@b.co", 0, 6), {"format": "date"}, "", "a@b.co"),
    ],
)
def test_format_for_schema(value: GroundedValue, schema: dict[str, object], description: str, expected: str) -> None:
    assert format_for_schema(value, schema, description) == expected


# ------------------------------------------------------------------------------------------- parameters & note

REQUEST = "Email ana@corp.io the menu ~/menu.pdf tomorrow at 10, call +1 555-123-4567; see https://x.org"


@pytest.mark.parametrize(
    ("schema", "description", "expected"),
    [
        ({"type": "string", "format": "date-time"}, "", ["2026-12-02T10:00:00"]),
        ({"type": "string"}, "When it starts (YYYY-MM-DD HH:MM:SS)", ["2026-12-02 10:00:00"]),
        ({"type": "string"}, "Due date", ["2026-12-02"]),
        ({"type": "string", "format": "email"}, "", ["ana@corp.io"]),
        ({"type": "array", "items": {"type": "string"}}, "Recipients; must be email addresses", ["ana@corp.io"]),
        ({"type": "string"}, "The phone number to text", ["+1 555-123-4567"]),
        ({"type": "string"}, "Path of the file to attach", ["~/menu.pdf"]),
        ({"type": "string", "format": "uri"}, "", ["https://x.org"]),
        ({"type": "string"}, "The message body", []),
        ({"type": "string"}, "IANA time zone name", []),
        ({"type": "integer"}, "How many results", []),
    ],
)
def test_values_for_parameter(schema: dict[str, object], description: str, expected: list[str]) -> None:
    assert values_for_parameter(ground(REQUEST, TUE), schema, description) == expected


def test_a_day_is_no_value_for_a_time_of_day() -> None:
    """"On Saturday" gives no start time: midnight would be made up (a 12-hour time of day, or a 24-hour one)."""
    for description in ("Start time, hh:mm AM/PM", "Start time, HH:MM"):
        assert values_for_parameter([D], {"type": "string"}, description) == []
    assert values_for_parameter([D], {"type": "string"}, "When, MM/DD/YYYY hh:mm AM/PM") == ["12/02/2026 12:00 AM"]
    assert values_for_parameter([D], {"type": "string"}, "When the event starts") == ["2026-12-02"]  # no form
    assert values_for_parameter([D], {"type": "integer"}, "Unix timestamp of the day") == [str(int(
        dt.datetime(2026, 12, 2, tzinfo=dt.UTC).timestamp()))]


def test_values_for_parameter_dedupes() -> None:
    values = ground("tomorrow at 10, I said tomorrow at 10", TUE)
    assert values_for_parameter(values, {"format": "date"}) == ["2026-12-02"]


def test_grounding_note() -> None:
    note = grounding_note(ground("Email ana@corp.io tomorrow at 10 about 3 items", TUE))
    assert note == ('Resolved from the request (use these exact values):\n'
                    '- email: ana@corp.io\n'
                    '- "tomorrow at 10" = 2026-12-02T10:00')


@pytest.mark.parametrize("request_", ["", "hello there", "send 3 emails"])
def test_grounding_note_empty(request_: str) -> None:
    assert grounding_note(ground(request_, TUE)) == ""


@pytest.mark.parametrize(("request_text", "want"), [
    ("Team lunch is on the 22nd at 12:30", "2026-12-22T12:30"),  # a day of this month
    ("Dinner on the 3rd", "2027-01-03"),  # passed this month: the next month's
    ("Book club Thursday from 7 to 9pm", "2026-12-17T19:00"),  # the start takes the end's half of the day
    ("Put it on my calendar Wednesday, 2 to 3pm", "2026-12-16T14:00"),
    ("Are we free Monday 9 to 11am", "2026-12-21T09:00"),
])
def test_days_of_the_month_and_time_ranges(request_text: str, want: str) -> None:
    from tinyagent._grounding import ground

    assert want in [v.value for v in ground(request_text, dt.date(2026, 12, 14))]


def test_an_ordinal_that_is_no_date() -> None:
    from tinyagent._grounding import ground

    assert ground("the files on the 2nd floor", dt.date(2026, 12, 14)) == []


@pytest.mark.parametrize(("request_", "said", "expected"), [
    ("Fly out a week from today; remind me the night before at 8", "the night before at 8", "2027-05-26T20:00"),
    ("Dentist on June 3rd at 9:40, and remind me the evening before at 7", "the evening before at 7",
     "2027-06-02T19:00"),
    ("Launch on Friday, and a retro the morning after", "the morning after", "2027-05-22T09:00"),
    ("Party on Saturday; shop the day before", "the day before", "2027-05-21"),
])
def test_a_day_next_to_the_requests_one_date(request_: str, said: str, expected: str) -> None:
    values = {v.text: v.value for v in ground(request_, dt.date(2027, 5, 20))}
    assert values[said] == expected


def test_a_day_next_to_no_date_or_to_two_is_not_guessed() -> None:
    for request_ in ("Remind me the night before at 8", "Monday or Friday, and the day before"):
        assert not any(v.text.startswith("the ") for v in ground(request_, dt.date(2027, 5, 20)))
    assert "the day before yesterday" in {v.text for v in ground("the day before yesterday", dt.date(2027, 5, 20))}


def test_the_time_the_request_says_it_is_counts_for_in_so_many_minutes() -> None:
    values = {v.text: v.value for v in ground("It's 1:45pm. In 90 minutes remind me to call mum", dt.date(2027, 5, 20))}
    assert values["In 90 minutes"] == "2027-05-20T15:15"
    values = {v.text: v.value for v in ground("remind me in 45 min to move the car its 2:10pm now",
                                              dt.date(2027, 5, 20))}
    assert values["in 45 min"] == "2027-05-20T14:55"
    assert not any(v.kind == "datetime" for v in ground("remind me in 45 min", dt.date(2027, 5, 20)))


@pytest.mark.parametrize(("request_", "said", "expected"), [
    ("Look through everything I've had since October 1st", "October 1st", "2027-10-01"),  # not next year's
    ("any mail from Raj since the 20th?", "the 20th", "2027-09-20"),
    ("what came in since Friday", "Friday", "2027-10-08"),
    ("Book the venue for October 1st", "October 1st", "2028-10-01"),  # (ahead, without "since")
])
def test_a_day_since_which_something_happened_is_the_one_gone_by(request_: str, said: str, expected: str) -> None:
    values = {v.text: v.value for v in ground(request_, dt.date(2027, 10, 13))}
    assert values[said] == expected
