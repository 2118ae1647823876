"""A clause the plan dropped, found by planning each clause alone (tinyagent/run/_coverage.py), on a made-up
registry with the scripted test model."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from _helpers_tools import TEXT, openai_fn

from tinyagent import Agent, AgentSettings, ToolRegistry
from tinyagent._plan import Call, Plan
from tinyagent.models import ModelRequest, ScriptedModel
from tinyagent.run._coverage import _feeds, _served, clause_requests

TODAY = dt.date(2026, 12, 1)
NUMBERS = {"type": "array", "items": {"type": "string"}, "description": "Destination phone numbers."}
REQUEST = "Get directions to the airport and text them to Zoe"
ON = AgentSettings(clause_check=True)


def _tools() -> ToolRegistry:
    return ToolRegistry.from_openai([
        openai_fn("phonebook", "Finds a person's mobile number.", {"who": TEXT}, ["who"]),
        openai_fn("sms", "Sends an SMS to phone numbers.", {"to": NUMBERS, "body": TEXT}, ["to", "body"]),
        openai_fn("wayfinder", "Opens a route between two places.", {"dest": TEXT, "origin": TEXT}, ["dest"]),
        openai_fn("slot_free", "Checks whether a time slot is free.", {"start": TEXT}, ["start"]),
    ])


_DROPPED = '1. phonebook(who="Zoe")\n2. sms(to=[$1], body="On my way to the airport")\n3. join()\n<END_OF_PLAN>'
_RIGHT = ('1. wayfinder(dest="airport")\n2. phonebook(who="Zoe")\n3. sms(to=[$2], body=$1)\n4. join()\n'
          '<END_OF_PLAN>')


def _request_of(request: ModelRequest) -> str:
    found = re.search(r"Request: (.*)", str(request.messages[-1]["content"]))
    return found.group(1) if found else ""


def _script(clause_reply: str) -> tuple[ScriptedModel, list[str]]:
    """The full request is planned without the route first, then (told why) with it; each clause alone gets
    ``clause_reply``."""
    plans = [_DROPPED, _RIGHT]
    asked: list[str] = []

    def reply(request: ModelRequest) -> str:
        said = _request_of(request)
        if said.startswith(REQUEST):
            return plans.pop(0) if len(plans) > 1 else plans[0]
        asked.append(said)
        return clause_reply
    return ScriptedModel(reply), asked


@pytest.mark.parametrize(("request_text", "clauses"), [
    (REQUEST, ["Get directions to the airport"]),  # (texting is tinyagent.run._channels' to check)
    ("Get directions to the airport", []),  # one clause: nothing to drop
    ("Email Derek the signed NDA and the statement of work", []),  # a list's next item
    ("I'm looking into stocks. Get the price of AAPL and buy 100 shares", ["Get the price of AAPL",
                                                                          "buy 100 shares"]),  # a statement
    ("Would you find the lease, and tell me what the deposit is", []),  # a question, a request for the answer
    ("Book a table. Alex Johnson will be my guest", ["Book a table"]),  # a sentence about someone
])
def test_the_clauses_worth_planning_alone(request_text: str, clauses: list[str]) -> None:
    assert clause_requests(request_text, _tools()) == clauses


def test_a_dropped_clause_is_planned_again_with_the_tool_it_starts_with_required() -> None:
    model, asked = _script('1. wayfinder(dest="airport")\n2. join()\n<END_OF_PLAN>')
    result = Agent(tools=_tools(), model=model, settings=ON).plan_sync(REQUEST, today=TODAY)
    assert asked == ["Get directions to the airport"]
    assert [c.name for c in result.plan.calls] == ["wayfinder", "phonebook", "sms"]
    again = model.requests[-1]
    assert "Get directions to the airport" in str(again.messages[-1]["content"])
    assert "root ::= step-1-need1" in (again.grammar or "")  # the route is required
    clause_request = model.requests[1]
    assert clause_request.stop == ("\n",) and clause_request.max_tokens <= 64


@pytest.mark.parametrize("clause_reply", [
    '1. wayfinder(dest="the office", origin="home")\n2. join()\n',  # nothing the clause says: made up
    "1. join()\n",  # no tool
    '1. phonebook(who="Zoe")\n2. join()\n',  # a tool the plan calls
])
def test_no_replan_when_the_clause_alone_starts_with_a_made_up_call_none_or_a_planned_tool(
        clause_reply: str) -> None:
    model, asked = _script(clause_reply)
    result = Agent(tools=_tools(), model=model, settings=ON).plan_sync(REQUEST, today=TODAY)
    assert asked == ["Get directions to the airport"]
    assert [c.name for c in result.plan.calls] == ["phonebook", "sms"]
    assert len(model.requests) == 2


def test_off_by_default() -> None:
    model, asked = _script('1. wayfinder(dest="airport")\n2. join()\n')
    Agent(tools=_tools(), model=model).plan_sync(REQUEST, today=TODAY)
    assert asked == [] and len(model.requests) == 1


def test_a_plan_call_on_the_same_thing_by_another_tool_serves_the_clause() -> None:
    plan = Plan(calls=(Call(1, "reminder", {"title": "Oat milk", "list": "Groceries"}),))
    assert _served(Call(1, "note_new", {"title": "Groceries", "body": "oat milk"}), plan)
    # a long text that mentions it is no call on it; nor a shared time
    texted = Plan(calls=(Call(1, "sms", {"to": ["+1 555 0100"], "body": "Heading to the airport now, see you"}),))
    assert not _served(Call(1, "wayfinder", {"dest": "airport"}), texted)
    event = Plan(calls=(Call(1, "event", {"start": "2026-12-09 10:00:00", "title": "Sync"}),))
    assert not _served(Call(1, "slot_free", {"start": "2026-12-09 10:00:00"}), event)


def test_a_lookup_that_finds_what_a_called_tool_takes_is_no_dropped_clause() -> None:
    tools = ToolRegistry.from_openai([
        openai_fn("get_zipcode_based_on_city", "Finds a city's zip code.", {"city": TEXT}, ["city"]),
        openai_fn("estimate_distance", "Distance between two places.", {"cityA": {
            "type": "string", "description": "The zipcode of the first city."}}, ["cityA"]),
        openai_fn("wayfinder", "Opens a route.", {"dest": TEXT}, ["dest"]),
    ])
    assert _feeds("get_zipcode_based_on_city", {"estimate_distance"}, tools)
    assert not _feeds("wayfinder", {"estimate_distance"}, tools)
    assert not _feeds("estimate_distance", {"get_zipcode_based_on_city"}, tools)


def test_a_plan_with_no_call_is_planned_again_when_two_clauses_alone_start_with_two_tools() -> None:
    tools = ToolRegistry.from_openai([
        openai_fn("link_new", "Creates a video-meeting link.", {"topic": TEXT}, ["topic"]),
        openai_fn("event_new", "Adds a calendar event.", {"title": TEXT, "start": TEXT}, ["title", "start"]),
    ])
    request = "Get me a video link for the design critique and put it on my calendar Wednesday at 2pm"
    clause_calls = {"Get me a video link for the design critique": '1. link_new(topic="design critique")\n',
                    "put it on my calendar Wednesday at 2pm":
                        '1. event_new(title="Design critique", start="2026-12-02 14:00")\n'}
    plans = ["1. join()\n<END_OF_PLAN>", '1. link_new(topic="design critique")\n2. event_new(title="Design critique", '
             'start="2026-12-02 14:00")\n3. join()\n<END_OF_PLAN>']

    def reply(request_: ModelRequest) -> str:
        said = _request_of(request_)
        return clause_calls[said] if said in clause_calls else plans.pop(0) if len(plans) > 1 else plans[0]

    result = Agent(tools=tools, model=ScriptedModel(reply), settings=ON).plan_sync(request, today=TODAY)
    assert [c.name for c in result.plan.calls] == ["link_new", "event_new"]
    # one clause alone is not enough to overturn "no tool"
    lone = ScriptedModel(lambda r: '1. link_new(topic="design critique")\n'
                         if _request_of(r) == "Get me a video link for the design critique"
                         else "1. join()\n<END_OF_PLAN>")
    assert Agent(tools=tools, model=lone, settings=ON).plan_sync(
        "Get me a video link for the design critique and tell me a joke about it", today=TODAY).plan.calls == ()
