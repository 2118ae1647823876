"""Plan dates held to the days a request names (tinyagent.run._days), without a model."""

from __future__ import annotations

import datetime as dt

import pytest

from tinyagent._plan import Call
from tinyagent.run._days import RequestDays, on_the_named_day

TODAY = dt.date(2027, 3, 17)  # a Wednesday


def moved(query: str, **args: str) -> dict[str, object]:
    return dict(on_the_named_day(Call(1, "tool", args), RequestDays.of(query, TODAY)).args)


@pytest.mark.parametrize(("query", "args", "expected"), [
    # the prompt's "Today is ..." copied for a day counted from today
    ("What have I got on two weeks from today?", {"day": "2027-03-17"}, {"day": "2027-03-31"}),
    # a reminder an hour before a meeting the day after tomorrow, slipped a day: the time is kept
    ("Meeting Carlos the day after tomorrow at 2pm; remind me an hour before", {"at": "2027-03-18 13:00:00"},
     {"at": "2027-03-19 13:00:00"}),
    ("Lunch on Friday at 1", {"start": "2027-03-19T13:00"}, {"start": "2027-03-19T13:00"}),  # right already
    # an end days after the start the request gives: the call passes the named day already
    ("Block out my holiday from Friday", {"start": "2027-03-19", "end": "2027-03-26"},
     {"start": "2027-03-19", "end": "2027-03-26"}),
    # a day counted from another, a series, two days, no day: the request means other days
    ("Remind me the day before my dentist appointment on Friday", {"at": "2027-03-18 09:00:00"},
     {"at": "2027-03-18 09:00:00"}),
    ("Remind me every day until Friday", {"at": "2027-03-17 09:00:00"}, {"at": "2027-03-17 09:00:00"}),
    ("Move the Monday standup to Friday", {"from": "2027-03-22", "to": "2027-03-19"},
     {"from": "2027-03-22", "to": "2027-03-19"}),
    ("Remind me to call Ann at 5pm", {"at": "2027-03-17 17:00:00"}, {"at": "2027-03-17 17:00:00"}),
    # a year-less date taken in another year is the same day
    ("Find flights on April 15th", {"date": "2023-04-15"}, {"date": "2023-04-15"}),
    ("What's on tomorrow?", {"day": "next week"}, {"day": "next week"}),  # not an ISO date: left as written
])
def test_a_date_on_another_day_moves_to_the_one_day_the_request_names(query: str, args: dict[str, str],
                                                                      expected: dict[str, str]) -> None:
    assert moved(query, **args) == expected


def test_the_days_a_request_names() -> None:
    days = RequestDays.of("Lunch with Dev this Friday at 1 and a call on Monday", TODAY)
    assert days.named == {dt.date(2027, 3, 19), dt.date(2027, 3, 22)} and days.undated == {dt.date(2027, 3, 22)}
    assert not days.counted and RequestDays.of("the day before the launch", TODAY).counted


def test_a_named_day_in_a_far_year_is_put_in_the_named_year() -> None:
    from tinyagent.run._days import in_the_named_year

    days = RequestDays.of("It's 1:45pm. In 90 minutes remind me to call mum", dt.date(2027, 5, 20))
    call = Call(1, "remind", {"what": "call mum", "when": "1330-05-20T15:15"})
    assert in_the_named_year(call, days).args["when"] == "2027-05-20T15:15"
    for kept in ("2028-05-20T15:15", "2027-06-01T10:00", "call mum"):
        assert in_the_named_year(Call(1, "remind", {"when": kept}), days).args["when"] == kept


def test_a_documented_us_date_moves_too_and_keeps_its_form() -> None:
    """A day the parameter documents as "MM/DD/YYYY" (or "MM/DD/YYYY hh:mm AM/PM") is moved like an ISO one, and
    written back in that form; a time alone is no day."""
    from tinyagent import ToolRegistry

    tools = ToolRegistry.from_openai([{"type": "function", "function": {
        "name": "event", "description": "Adds an event.", "parameters": {"type": "object", "properties": {
            "day": {"type": "string", "description": "Date, MM/DD/YYYY."},
            "start": {"type": "string", "description": "Start time, hh:mm AM/PM."},
            "alert": {"type": "string", "description": "When, MM/DD/YYYY hh:mm AM/PM."}}}}}])
    days = RequestDays.of("Lunch on Friday at 1pm", TODAY)
    call = on_the_named_day(Call(1, "event", {"day": "03/18/2027", "start": "01:00 PM"}), days, tools)
    assert call.args == {"day": "03/19/2027", "start": "01:00 PM"}
    call = on_the_named_day(Call(1, "event", {"alert": "03/18/2027 12:30 PM"}), days, tools)
    assert call.args == {"alert": "03/19/2027 12:30 PM"}
    assert on_the_named_day(Call(1, "event", {"day": "03/18/2027"}), days).args == {"day": "03/18/2027"}  # no tools


@pytest.mark.parametrize(("value", "expected"), [
    ("09/22/2027 16:15 PM", "09/22/2027 04:15 PM"), ("16:15 AM", "04:15 PM"), ("00:30 AM", "12:30 AM"),
    ("09:30 AM", "09:30 AM"), ("12:00 PM", "12:00 PM"), ("16:15", "16:15")])
def test_a_24_hour_time_where_a_12_hour_clock_is_documented(value: str, expected: str) -> None:
    from tinyagent import ToolRegistry
    from tinyagent.run._days import on_the_12_hour_clock

    tools = ToolRegistry.from_openai([{"type": "function", "function": {
        "name": "remind", "description": "A reminder.", "parameters": {"type": "object", "properties": {
            "at": {"type": "string", "description": "When, MM/DD/YYYY hh:mm AM/PM."},
            "other": {"type": "string", "description": "When, MM/DD/YYYY HH:mm."}}}}}])
    assert on_the_12_hour_clock(Call(1, "remind", {"at": value}), tools).args["at"] == expected
    assert on_the_12_hour_clock(Call(1, "remind", {"other": value}), tools).args["other"] == value
