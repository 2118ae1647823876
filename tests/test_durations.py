"""A length of time copied in the request's unit where the parameter asks for another (tinyagent/run/_durations.py),
read from a made-up registry's schemas."""

from __future__ import annotations

import pytest
from _helpers_tools import TEXT, openai_fn

from tinyagent import ToolRegistry
from tinyagent._plan import Call
from tinyagent.run._durations import fix_durations, parameter_unit, request_durations


@pytest.mark.parametrize(("text", "lengths"), [
    ("put Team offsite on my calendar next Monday at 9am for 8 hours", [(8.0, 28800.0)]),
    ("a 90-minute call with Bob", [(90.0, 5400.0)]),
    ("block my afternoon for an hour and a half", [(1.0, 5400.0)]),
    ("book the room for half an hour", [(0.5, 1800.0)]),
    ("remind me in 2 hours", []),  # a time, not a length
    ("call me 2 hours before the flight", []),
])
def test_the_request_lengths_of_time(text: str, lengths: list[tuple[float, float]]) -> None:
    assert request_durations(text) == lengths


def test_a_parameter_says_its_unit_by_name_or_description() -> None:
    assert parameter_unit("length_minutes", {"type": "integer"}) == 60.0
    assert parameter_unit("durationMins", {"type": "integer"}) == 60.0
    assert parameter_unit("length", {"type": "number", "description": "Length in hours."}) == 3600.0
    assert parameter_unit("length", {"type": "string", "description": "Minutes."}) is None  # not a number
    assert parameter_unit("span", {"type": "integer", "description": "Hours or minutes"}) is None  # which one?


def test_the_bare_number_becomes_the_length_in_the_parameters_unit() -> None:
    tools = ToolRegistry.from_openai([openai_fn("add_event", "Adds an event.", {
        "title": TEXT, "length_minutes": {"type": "integer", "description": "Duration."}}, ["title"])])
    call = Call(1, "add_event", {"title": "Team offsite", "length_minutes": 8})
    fixed, notes = fix_durations([call], tools, "Put Team offsite on my calendar Monday at 9am for 8 hours")
    assert fixed[0].args["length_minutes"] == 480 and notes
    ok = Call(1, "add_event", {"title": "Standup", "length_minutes": 15})
    assert fix_durations([ok], tools, "add Standup Monday at 9:15 for 15 min") == ([ok], [])
    other = Call(1, "add_event", {"title": "Offsite", "length_minutes": 45})  # not the request's number: kept
    assert fix_durations([other], tools, "Offsite for 8 hours")[0] == [other]


def test_a_length_before_a_described_timer_counts() -> None:
    assert request_durations("Dim the lights and start a 25 minute focus timer.") == [(25.0, 1500.0)]
    assert request_durations("in 2 hours the meeting starts") == []


def test_a_left_out_length_is_passed_in_the_parameters_unit_or_as_an_iso_duration() -> None:
    from tinyagent.run._durations import iso_duration

    tools = ToolRegistry.from_openai([
        openai_fn("add_event", "Creates an event.", {"title": TEXT, "duration_minutes": {
            "type": "integer", "description": "Length in minutes."}}, ["title"]),
        openai_fn("make_link", "Reserves a video room.", {"topic": TEXT, "duration": {
            "type": "string", "description": "ISO 8601 duration, e.g. PT30M or PT1H30M."}}, ["topic"]),
    ])
    calls = [Call(1, "make_link", {"topic": "review"}), Call(2, "add_event", {"title": "review", "video": "$1"})]
    fixed, notes = fix_durations(calls, tools, "Set up a video call for the review tomorrow at 2pm, 45 minutes")
    assert fixed[0].args["duration"] == "PT45M" and fixed[1].args["duration_minutes"] == 45 and len(notes) == 2
    assert iso_duration(5400) == "PT1H30M" and iso_duration(0) == "PT0S"
    twice = [Call(1, "add_event", {"title": "a"}), Call(2, "add_event", {"title": "b"})]
    assert fix_durations(twice, tools, "Two events, for 2 hours")[0] == twice  # (whose length is it?)
    assert fix_durations(calls[:1], tools, "Remind me in 2 hours")[0] == calls[:1]  # (no length: a relative time)
