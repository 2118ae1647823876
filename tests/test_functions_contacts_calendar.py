"""Contacts (vCard), calendar events and reminders (iCalendar) on real files."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import icalendar
import pytest
from _helpers_functions import TODAY

from tinyagent import Tool, ToolContext
from tinyagent.errors import PlanValidationError
from tinyagent.functions import (
    AmbiguousContact,
    ContactFieldMissing,
    ContactNotFound,
    FunctionsSettings,
    InvalidArgument,
    InvalidDate,
    StoreError,
    builtin_tools,
)
from tinyagent.functions._contacts import Contact, parse_vcards, to_vcard

DEMO_TIMEZONE = "Europe/Berlin"  # conftest's demo_template seeds the demo data set in it


@pytest.fixture
def demo(data_dir: Path) -> FunctionsSettings:
    return FunctionsSettings(data_dir=data_dir, timezone=DEMO_TIMEZONE)


@pytest.fixture
def tools(demo: FunctionsSettings) -> dict[str, Tool]:
    return {t.name: t for t in builtin_tools(demo)}


def ctx() -> ToolContext:
    return ToolContext(today=TODAY)


async def call(tools: dict[str, Tool], tool_name: str, /, **args: Any) -> Any:
    return await tools[tool_name].call(args, ctx())


# -- vCard ---------------------------------------------------------------------------------------------------------
def test_vcard_round_trip_and_foreign_formats() -> None:
    original = Contact("José Álvarez", "José", "Álvarez", ["Pepe"], ["j@x.es", "j2@x.es"], ["+34 1"], "Acme; Inc")
    [back] = parse_vcards(to_vcard(original))
    assert (back.full_name, back.given, back.family, back.nicknames) == ("José Álvarez", "José", "Álvarez", ["Pepe"])
    assert back.emails == ["j@x.es", "j2@x.es"] and back.phones == ["+34 1"] and back.org == "Acme; Inc"
    foreign = (
        "BEGIN:VCARD\r\nVERSION:4.0\r\nFN:Ann\r\n  Lee\r\nN:Lee;Ann;;;\r\nitem1.EMAIL;TYPE=work:ann@work.com\r\n"
        "EMAIL;TYPE=home,pref:ann@home.com\r\nTEL;VALUE=uri:tel:+1-555-0100\r\nEND:VCARD\r\n"
    )
    [ann] = parse_vcards(foreign)
    assert ann.full_name == "Ann Lee"
    assert ann.emails == ["ann@home.com", "ann@work.com"]  # the preferred one first
    assert ann.phones == ["+1-555-0100"]


@pytest.mark.parametrize(
    ("name", "email"),
    [
        ("Sid", "sid@example.com"),
        ("sid patel", "sid@example.com"),
        ("Sdi Patel", "sid@example.com"),  # typo
        ("Jose Alvarez", "jose.alvarez@example.com"),  # no diacritics
        ("Pepe", "jose.alvarez@example.com"),  # vCard nickname
        ("Zoe Muller", "zoe.mueller@example.de"),
        ("Bob Miller", "bob.miller@example.com"),  # common nickname
        ("Liz", "liz@example.com"),
        ("Alex Chen", "alex.chen@example.com"),
        ("Maria Gonzalez", "maria.gonzalez@example.com"),
        ("Pryia", "priya@example.com"),
    ],
)
async def test_get_email_address_fuzzy(tools: dict[str, Tool], name: str, email: str) -> None:
    assert await call(tools, "get_email_address", name=name) == email


async def test_ambiguous_name_lists_every_candidate(tools: dict[str, Tool]) -> None:
    with pytest.raises(AmbiguousContact) as info:
        await call(tools, "get_email_address", name="Alex")
    assert info.value.candidates == ["Alex Chen <alex.chen@example.com>", "Alex Kim <alex.kim@example.org>"]
    assert "full name" in str(info.value)
    with pytest.raises(AmbiguousContact, match="Maria Garcia.*Maria Gonzalez"):
        await call(tools, "get_phone_number", name="maria")


async def test_unknown_contact_is_a_clear_error(tools: dict[str, Tool]) -> None:
    with pytest.raises(ContactNotFound, match="no contact matches 'Gandalf'"):
        await call(tools, "get_email_address", name="Gandalf")
    with pytest.raises(ContactNotFound) as info:
        await call(tools, "get_phone_number", name="Gary Oldman")
    assert info.value.query == "Gary Oldman"
    assert await call(tools, "get_phone_number", name="Sydny Brook") == "+1 555 0111"  # a typo still matches


async def test_contact_without_email(tools: dict[str, Tool]) -> None:
    assert await call(tools, "get_phone_number", name="Tom") == "+1 555 0112"
    with pytest.raises(ContactFieldMissing, match="Tom Nguyen has no email address"):
        await call(tools, "get_email_address", name="Tom")


async def test_empty_address_book(tmp_path: Path) -> None:
    tools = {t.name: t for t in builtin_tools(FunctionsSettings(data_dir=tmp_path))}
    with pytest.raises(ContactNotFound, match="add the contact"):
        await tools["get_email_address"].call({"name": "Sid"}, ctx())


# -- calendar --------------------------------------------------------------------------------------------------------
def _events(path: Path) -> list[Any]:
    return list(icalendar.Calendar.from_ical(path.read_bytes()).walk("VEVENT"))


async def test_create_event_writes_a_real_vevent(tools: dict[str, Tool], demo: FunctionsSettings) -> None:
    before = len(_events(demo.calendar_path))
    result = await call(tools, "create_calendar_event", title="Follow-up", start="2026-12-02T10:00",
                        duration_minutes=30, invitees=["sid@example.com", "Priya"], location="Room 1")
    assert result["created"] == {"title": "Follow-up", "start": "2026-12-02T10:00", "end": "2026-12-02T10:30",
                                 "location": "Room 1", "invitees": ["sid@example.com", "priya@example.com"]}
    events = _events(demo.calendar_path)
    assert len(events) == before + 1
    new = next(e for e in events if str(e["summary"]) == "Follow-up")
    start = new.decoded("dtstart")
    assert start == dt.datetime(2026, 12, 2, 10, 0, tzinfo=start.tzinfo) and str(start.tzinfo) == "Europe/Berlin"
    assert new.decoded("dtend") - start == dt.timedelta(minutes=30)
    assert sorted(str(a) for a in new["attendee"]) == ["mailto:priya@example.com", "mailto:sid@example.com"]
    assert b"BEGIN:VTIMEZONE" in demo.calendar_path.read_bytes()


async def test_create_event_accepts_relative_start_and_reports_conflicts(tools: dict[str, Tool]) -> None:
    result = await call(tools, "create_calendar_event", title="Sync", start="today at 12:45")
    assert result["created"]["start"] == "2026-12-01T12:45"
    assert [c["title"] for c in result["conflicts"]] == ["Lunch with Priya"]


async def test_list_day_and_conflicts(tools: dict[str, Tool]) -> None:
    day = await call(tools, "list_calendar_events", date="2026-12-01")
    assert [e["title"] for e in day["events"]] == ["Daily standup", "Lunch with Priya"]
    assert day["events"][0]["start"] == "2026-12-01T09:30"
    assert (await call(tools, "list_calendar_events", date="tomorrow"))["events"][0]["title"] == "Design review"
    clash = await call(tools, "find_calendar_conflicts", start="2026-12-02T13:30", duration_minutes=60)
    assert [c["title"] for c in clash["conflicts"]] == ["Design review"]
    free = await call(tools, "find_calendar_conflicts", start="2026-12-02T10:00", duration_minutes=60)
    assert free["conflicts"] == []
    await call(tools, "create_calendar_event", title="Overlap", start="2026-12-01T09:40", duration_minutes=10)
    pairs = await call(tools, "find_calendar_conflicts", start="2026-12-01")
    assert [[a["title"], b["title"]] for a, b in pairs["overlapping"]] == [["Daily standup", "Overlap"]]


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        ({"title": "X", "start": "the 45th of Smarch"}, InvalidDate, "cannot understand"),
        ({"title": "X", "start": "2026-12-02"}, InvalidDate, "no time of day"),
        ({"title": "X", "start": "2026-13-02T10:00"}, InvalidDate, "not a real date"),
        ({"title": "X", "start": "2026-12-02T10:00", "duration_minutes": 0}, InvalidArgument, "between 1 and"),
        ({"title": " ", "start": "2026-12-02T10:00"}, InvalidArgument, "needs a title"),
        ({"title": "X", "start": "2026-12-02T10:00", "invitees": ["Gandalf"]}, ContactNotFound, "Gandalf"),
        ({"title": "X", "start": "2026-12-02T10:00", "invitees": ["Alex"]}, AmbiguousContact, "Alex Kim"),
        ({"title": "X", "start": "2026-12-02T10:00", "invitees": ["bad@"]}, InvalidArgument, "not an email"),
    ],
)
async def test_bad_event_input_writes_nothing(
    tools: dict[str, Tool], demo: FunctionsSettings, args: dict[str, Any], error: type[Exception], match: str
) -> None:
    before = demo.calendar_path.read_bytes()
    with pytest.raises(error, match=match):
        await tools["create_calendar_event"].call(args, ctx())
    assert demo.calendar_path.read_bytes() == before


async def test_wrong_argument_types_are_plan_errors(tools: dict[str, Tool]) -> None:
    with pytest.raises(PlanValidationError):
        await call(tools, "create_calendar_event", title="X", start="2026-12-02T10:00", invitees="sid@example.com")
    with pytest.raises(PlanValidationError, match="unknown argument"):
        await call(tools, "create_calendar_event", title="X", start="2026-12-02T10:00", when="now")


async def test_parallel_event_creation_loses_nothing(tools: dict[str, Tool], demo: FunctionsSettings) -> None:
    import asyncio

    before = len(_events(demo.calendar_path))
    await asyncio.gather(*[
        call(tools, "create_calendar_event", title=f"E{i}", start=f"2026-12-10T{8 + i:02d}:00") for i in range(6)
    ])
    assert len(_events(demo.calendar_path)) == before + 6


async def test_corrupt_calendar_is_a_store_error(tools: dict[str, Tool], demo: FunctionsSettings) -> None:
    demo.calendar_path.write_text("this is not iCalendar")
    with pytest.raises(StoreError, match="not a valid iCalendar"):
        await call(tools, "list_calendar_events", date="2026-12-01")
    with pytest.raises(StoreError):
        await call(tools, "create_calendar_event", title="X", start="2026-12-02T10:00")
    assert demo.calendar_path.read_text() == "this is not iCalendar"


async def test_recurring_events_from_other_programs_are_expanded(tmp_path: Path) -> None:
    settings = FunctionsSettings(data_dir=tmp_path, timezone="UTC")
    settings.calendar_path.parent.mkdir(parents=True)
    settings.calendar_path.write_text(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//other//EN\r\nBEGIN:VEVENT\r\nUID:r1\r\nDTSTAMP:20261101T000000Z\r\n"
        "DTSTART:20261102T090000Z\r\nDTEND:20261102T091500Z\r\nRRULE:FREQ=WEEKLY;BYDAY=TU\r\nSUMMARY:Weekly sync\r\n"
        "END:VEVENT\r\nEND:VCALENDAR\r\n"
    )
    tools = {t.name: t for t in builtin_tools(settings)}
    day = await tools["list_calendar_events"].call({"date": "2026-12-01"}, ctx())
    assert day["events"] == [{"title": "Weekly sync", "start": "2026-12-01T09:00", "end": "2026-12-01T09:15"}]


# -- reminders ---------------------------------------------------------------------------------------------------
async def test_reminders_are_vtodos_with_due_dates_and_lists(tools: dict[str, Tool], demo: FunctionsSettings) -> None:
    made = await call(tools, "create_reminder", title="Pay rent", due="next Friday")
    assert made == {"title": "Pay rent", "list": "Reminders", "due": "2026-12-04"}
    await call(tools, "create_reminder", title="Eggs", list_name="Groceries")
    await call(tools, "create_reminder", title="Call Bob", due="2026-12-03T17:30")
    todos = list(icalendar.Calendar.from_ical(demo.calendar_path.read_bytes()).walk("VTODO"))
    rent = next(t for t in todos if str(t["summary"]) == "Pay rent")
    assert rent.decoded("due") == dt.date(2026, 12, 4)
    groceries = await call(tools, "list_reminders", list_name="groceries")
    assert [r["title"] for r in groceries["reminders"]] == ["Buy milk", "Eggs"]
    everything = await call(tools, "list_reminders")
    assert [r["title"] for r in everything["reminders"]][:3] == ["Buy milk", "Call Bob", "Pay rent"]
    with pytest.raises(InvalidArgument, match="no reminder list 'Chores'"):
        await call(tools, "list_reminders", list_name="Chores")
    with pytest.raises(InvalidDate):
        await call(tools, "create_reminder", title="X", due="when pigs fly")
