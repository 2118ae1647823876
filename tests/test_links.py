"""A meeting's link comes from the tool that makes one (tinyagent/run/_links.py), on a made-up registry."""

from __future__ import annotations

from _helpers_tools import TEXT, openai_fn

from tinyagent import ToolRegistry
from tinyagent._plan import Call, Plan, Ref
from tinyagent.run._links import link_producers


def _tools() -> ToolRegistry:
    return ToolRegistry.from_openai([
        openai_fn("diary_book", "Books an entry in the diary.",
                  {"title": TEXT, "when": TEXT, "place": {"type": "string", "description": "Address or meeting link."}},
                  ["title", "when"]),
        openai_fn("hall_open", "Opens a meeting hall online and returns its link.", {"name": TEXT}, ["name"]),
        openai_fn("chart_path", "Draws a path between two addresses. Returns the chart's URL.", {"to": TEXT}, ["to"]),
    ])


def test_a_virtual_place_passed_for_a_link_gets_a_link_made() -> None:
    for place in ("Online", "Zoom", "a video call", "virtual meeting"):
        plan = Plan(calls=(Call(1, "diary_book", {"title": "Demo", "when": "2026-12-08 16:00:00", "place": place}),))
        kept, notes = link_producers(plan, _tools(), "Schedule an online demo Tuesday at 4pm")
        assert [c.name for c in kept.calls] == ["hall_open", "diary_book"] and notes, place
        assert kept.calls[0].args == {"name": "Demo"} and kept.calls[1].args["place"] == Ref(1)


def test_a_real_place_or_no_fitting_maker_changes_nothing() -> None:
    real = Plan(calls=(Call(1, "diary_book", {"title": "Demo", "when": "x", "place": "Room 4, HQ"}),))
    assert link_producers(real, _tools(), "Book the demo in Room 4, HQ") == (real, [])
    online = Plan(calls=(Call(1, "diary_book", {"title": "Demo", "when": "x", "place": "Online"}),))
    no_hall = ToolRegistry.from_openai([_tools()["diary_book"].to_openai(), _tools()["chart_path"].to_openai()])
    assert link_producers(online, no_hall, "Schedule an online demo") == (online, [])  # a map is no meeting


def test_a_request_to_meet_online_gets_a_link_for_the_left_out_place() -> None:
    plan = Plan(calls=(Call(1, "diary_book", {"title": "Onboarding", "when": "2026-12-11 11:00:00"}),))
    kept, notes = link_producers(plan, _tools(), "Schedule an online onboarding session with Kim on Friday at 11am.")
    assert [c.name for c in kept.calls] == ["hall_open", "diary_book"] and kept.calls[1].args["place"] == Ref(1)
    assert "meet online" in notes[0]
    assert link_producers(plan, _tools(), "Schedule the onboarding session on Friday at 11am.") == (plan, [])
    made = Plan(calls=(Call(1, "hall_open", {"name": "Onboarding"}), *plan.calls[:1]))
    assert link_producers(made, _tools(), "Schedule an online onboarding on Friday")[0].calls[1].args == \
        plan.calls[0].args  # a link is made already: wiring it is another repair's


def test_a_link_the_request_does_not_give_is_the_link_makers_result() -> None:
    """A maker that "hands back its join link"; "text Raj the link" planned with a made-up URL: the maker's result
    goes instead. A link the request writes stays, and so does one beside two different links made."""
    tools = ToolRegistry.from_openai([
        openai_fn("bridge_open", "Opens a video-conference room and hands back its join link.", {"topic": TEXT},
                  ["topic"]),
        openai_fn("sms", "Delivers one SMS.", {"to": TEXT, "txt": TEXT}, ["to", "txt"]),
    ])
    plan = Plan(calls=(Call(1, "bridge_open", {"topic": "Call with Raj"}),
                       Call(2, "sms", {"to": "+44 7700 900461", "txt": "https://example.com/video"})))
    fixed, notes = link_producers(plan, tools, "Make a video room and text the link to +44 7700 900461")
    assert fixed.calls[1].args["txt"] == Ref(1) and notes
    given = "Make a video room and text https://example.com/video to +44 7700 900461"
    assert link_producers(plan, tools, given) == (plan, [])
    two = Plan(calls=(plan.calls[0], Call(2, "bridge_open", {"topic": "Other"}),
                      Call(3, "sms", {"to": "+44 7700 900461", "txt": "https://example.com/video"})))
    assert link_producers(two, tools, "Make two rooms and text the link to +44 7700 900461") == (two, [])
