"""Results a plan makes and then does not pass where they go (tinyagent/run/_wiring.py), read from a made-up
registry's descriptions and schemas."""

from __future__ import annotations

from tinyagent import ToolRegistry
from tinyagent._plan import Call, Plan, Ref
from tinyagent.run._wiring import wire_results

TEXT = {"type": "string"}
ADDRESSES = {"type": "array", "items": {"type": "string"}, "description": "E-mail addresses of the recipients."}


def _fn(name: str, desc: str, props: dict[str, object], required: list[str]) -> dict[str, object]:
    return {"type": "function", "function": {"name": name, "description": desc, "parameters": {
        "type": "object", "properties": props, "required": required}}}


def _tools() -> ToolRegistry:
    return ToolRegistry.from_openai([
        _fn("who", "Finds a person's e-mail address.", {"name": TEXT}, ["name"]),
        _fn("room", "Opens a video-conference room and returns its join URL.", {"topic": TEXT}, ["topic"]),
        _fn("map", "Shows a place on the map. Returns the map URL.", {"place": TEXT}, ["place"]),
        _fn("event", "Adds an event to the calendar.", {
            "title": TEXT, "guests": {**ADDRESSES, "description": "E-mail addresses to invite."},
            "where": {"type": "string", "description": "Physical location or video-conference URL."}}, ["title"]),
        _fn("mail", "Sends an e-mail.", {"to": ADDRESSES, "body": TEXT}, ["to", "body"]),
    ])


def test_an_unused_room_becomes_the_events_venue_and_a_map_does_not() -> None:
    tools = _tools()
    plan = Plan(calls=(Call(1, "room", {"topic": "Sync"}), Call(2, "event", {"title": "Sync"})))
    wired, notes = wire_results(plan, tools)
    assert wired.calls[1].args["where"] == Ref(1) and notes
    mapped = Plan(calls=(Call(1, "map", {"place": "Cafe"}), Call(2, "event", {"title": "Coffee"})))
    assert wire_results(mapped, tools) == (mapped, [])  # a map URL shares only "URL" with the venue
    set_venue = Plan(calls=(Call(1, "room", {"topic": "Sync"}), Call(2, "event", {"title": "S", "where": "HQ"})))
    assert wire_results(set_venue, tools)[0] == set_venue  # what the plan set stays


def test_references_of_the_wrong_kind_in_a_recipient_list_become_the_lookups() -> None:
    tools = _tools()
    plan = Plan(calls=(Call(1, "room", {"topic": "Kickoff"}), Call(2, "who", {"name": "Nora"}),
                       Call(3, "who", {"name": "Felix"}),
                       Call(4, "event", {"title": "Kickoff", "guests": [Ref(2), Ref(3)]}),
                       Call(5, "mail", {"to": [Ref(1), Ref(4)], "body": "brief"})))
    wired, _ = wire_results(plan, tools)
    assert wired.calls[4].args["to"] == [Ref(2), Ref(3)]
    assert wired.calls[3].args["where"] == Ref(1)  # the room, no longer "used" as an address
    odd = Plan(calls=(*plan.calls[:4], Call(5, "mail", {"to": [Ref(1)], "body": "brief"})))
    assert wire_results(odd, tools)[0].calls[4].args["to"] == [Ref(1)]  # one wrong, two lookups: which?
