"""What the request reports done is not done again (tinyagent/run/_done.py), read from a made-up registry's names."""

from __future__ import annotations

from _helpers_tools import TEXT, openai_fn

from tinyagent import ToolRegistry
from tinyagent._plan import Call, Plan
from tinyagent.run._done import done_spans, drop_done


def _tools() -> ToolRegistry:
    flag = {"type": "boolean"}
    return ToolRegistry.from_openai([
        openai_fn("lockDoors", "Locks the doors.", {"unlock": flag}, ["unlock"]),
        openai_fn("activateParkingBrake", "Sets the parking brake.", {"mode": TEXT}, ["mode"]),
        openai_fn("pressBrakePedal", "Presses the brake pedal.", {"position": {"type": "number"}}, ["position"]),
        openai_fn("startEngine", "Starts the engine.", {"mode": TEXT}, ["mode"]),
    ])


def test_calls_for_what_the_user_reports_done_go() -> None:
    request = ("I have secured my car by locking all doors and applying the parking brake. Would it be possible to "
               "start the engine?")
    assert [request[a:b] for a, b in done_spans(request)] == [
        "I have secured my car by locking all doors and applying the parking brake"]
    plan = Plan(calls=(Call(1, "lockDoors", {"unlock": False}), Call(2, "activateParkingBrake", {"mode": "engage"}),
                       Call(3, "pressBrakePedal", {"position": 1.0}), Call(4, "startEngine", {"mode": "START"})))
    kept, notes = drop_done(plan, _tools(), request)
    # the brake pedal shares one word of three with the reported act: kept
    assert [c.name for c in kept.calls] == ["pressBrakePedal", "startEngine"] and notes


def test_wishes_and_requests_report_nothing_done() -> None:
    plan = Plan(calls=(Call(1, "lockDoors", {"unlock": False}), Call(2, "startEngine", {"mode": "START"})))
    for request in ("I wanted to lock the doors and start the engine.", "I need the doors locked; start the engine.",
                    "Lock the doors. I've started the engine already."):
        assert drop_done(plan, _tools(), request)[0] == plan, request
    alone = Plan(calls=(plan.calls[0],))
    assert drop_done(alone, _tools(), "I locked the doors.")[0] == alone  # nothing else would be left
