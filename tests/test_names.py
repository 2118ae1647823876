"""The names the planner reads (``tinyagent._names``): an MCP server's prefix the description never speaks of is
left out, hyphens become underscores, and the plan comes back under the registry's names."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest
from _helpers_models import real_model_available
from _helpers_tools import TEXT, openai_fn

from tinyagent import Agent, ToolRegistry
from tinyagent._grammar import check_gbnf, plan_grammar
from tinyagent._names import show, shown_names
from tinyagent._plan import Call, Plan, Ref
from tinyagent.models import ScriptedModel
from tinyagent.run._producers import insert_producers

TODAY = dt.date(2027, 5, 20)
NUMBER = {"type": "string", "description": "Destination phone number, E.164 (e.g. +14155550100)."}


def _tools() -> ToolRegistry:
    return ToolRegistry.from_openai([
        openai_fn("pim__people-resolve", "Resolve a person in the address book to one contact channel. Returns: "
                  "{value: the e-mail address, or the phone number}.",
                  {"who": {"type": "string", "description": "Name as spoken, or a relationship label."},
                   "want": {"type": "string", "enum": ["email", "phone"]}}, ["who", "want"]),
        openai_fn("mail__send", "Compose and send a new email.", {"to": TEXT, "body": TEXT}, ["to", "body"]),
        openai_fn("sms__send", "Send a text message.", {"to": NUMBER, "text": TEXT}, ["to", "text"]),
        openai_fn("cal__day-agenda", "List everything on the owner's calendars for one day.", {"day": TEXT},
                  ["day"]),
        openai_fn("wx__forecast", "Daily weather forecast, up to 10 days ahead.", {"place": TEXT, "day": TEXT},
                  ["place"]),
        openai_fn("geo__route", "Route between two places.", {"to": TEXT}, ["to"]),
    ])


def test_a_prefix_the_description_never_speaks_of_is_left_out() -> None:
    names = shown_names(_tools().values())
    assert names["wx__forecast"] == "forecast" and names["geo__route"] == "route"
    assert names["pim__people-resolve"] == "people_resolve"
    assert names["cal__day-agenda"] == "cal_day_agenda"  # ("calendars" speaks of it)
    assert names["mail__send"] == "mail_send"  # ("email" ends with it)
    assert names["sms__send"] == "sms_send"  # (both would be "send")
    plain = ToolRegistry.from_openai([openai_fn("get_weather", "Weather.", {"city": TEXT}, ["city"]),
                                      openai_fn("math.factorial", "Factorial.", {"n": TEXT}, ["n"])])
    assert shown_names(plain.values()) == {}  # (readable names, and dotted ones, are shown as they are)
    clash = ToolRegistry.from_openai([openai_fn("wx__forecast", "Daily weather.", {"a": TEXT}, ["a"]),
                                      openai_fn("forecast", "Sales forecast.", {"a": TEXT}, ["a"])])
    assert shown_names(clash.values()) == {"wx__forecast": "wx_forecast"}  # (never another tool's name)
    assert show("see wx__forecast, not wx__forecasts or my.wx__forecast", names) == \
        "see forecast, not wx__forecasts or my.wx__forecast"


def test_a_product_prefix_every_name_shares_is_left_out_unless_it_means_something() -> None:
    juno = ToolRegistry.from_openai([
        openai_fn("juno_set_reminder", "Schedule a push reminder.", {"text": TEXT}, ["text"]),
        openai_fn("juno_add_todo", "Add a task to a to-do list.", {"task": TEXT}, ["task"]),
        openai_fn("juno_find_file", "Search the drive. Use it with juno_add_todo.", {"q": TEXT}, ["q"]),
    ])
    assert shown_names(juno.values()) == {"juno_set_reminder": "set_reminder", "juno_add_todo": "add_todo",
                                          "juno_find_file": "find_file"}  # (its tool names speak of no "juno")
    spoken = ToolRegistry.from_openai([
        openai_fn("slack_post_message", "Post a message to a Slack channel.", {"text": TEXT}, ["text"]),
        openai_fn("slack_list_channels", "List channels.", {"q": TEXT}, ["q"]),
    ])
    verbs = ToolRegistry.from_openai([openai_fn("get_weather", "Weather.", {"city": TEXT}, ["city"]),
                                      openai_fn("get_time", "Time.", {"city": TEXT}, ["city"])])
    nouns = ToolRegistry.from_openai([openai_fn("weather_forecast_rain", "Rain.", {"city": TEXT}, ["city"]),
                                      openai_fn("weather_forecast_wind", "Wind.", {"city": TEXT}, ["city"])])
    for registry in (spoken, verbs, nouns):  # spoken of, a verb, or names whose rest does nothing
        assert shown_names(registry.values()) == {}


def test_a_lookup_whose_enum_picks_the_channel_is_asked_for_the_one_its_result_goes_to() -> None:
    from tinyagent.run._lookups import mismatched_refs, swap_lookups

    tools = _tools()
    calls = [Call(1, "pim__people-resolve", {"who": "mum", "want": "email"}),
             Call(2, "sms__send", {"to": Ref(1), "text": "on my way"})]
    fixed, notes = swap_lookups(calls, tools)
    assert fixed[0].args == {"who": "mum", "want": "phone"} and "asks pim__people-resolve for phone" in notes[0]
    right = [Call(1, "pim__people-resolve", {"who": "mum", "want": "phone"}), calls[1]]
    assert swap_lookups(right, tools) == (right, [])
    problem = mismatched_refs(calls[1], {1: calls[0]}, tools)  # (a streamed plan whose lookup already ran)
    assert problem is not None and "ask it for phone" in problem
    assert mismatched_refs(right[1], {1: right[0]}, tools) is None


def test_the_planner_reads_the_shown_names_and_the_plan_keeps_the_registrys() -> None:
    model = ScriptedModel(['1. forecast(place="Lisbon", day="2027-05-22")\n2. join()\n<END_OF_PLAN>'])
    result = Agent(_tools(), model).plan_sync("What's the weather in Lisbon on Saturday?", today=TODAY)
    assert [c.name for c in result.plan.calls] == ["wx__forecast"]
    assert result.text.startswith('1. wx__forecast(place="Lisbon"')  # (the user reads the registry's names)
    request = model.requests[0]
    text = "\n".join(str(m["content"]) for m in request.messages)
    assert "forecast(place" in text and "wx__forecast" not in text and "people-resolve" not in text
    assert request.grammar is not None and '"forecast("' in request.grammar and "wx__" not in request.grammar


def test_the_grammar_writes_the_shown_names_and_still_requires_by_the_registrys() -> None:
    tools = _tools()
    grammar = plan_grammar(tools, required=[frozenset({"wx__forecast"})], names=shown_names(tools.values()))
    check_gbnf(grammar)
    assert '"forecast("' in grammar and "need1" in grammar and "wx__forecast" not in grammar


def test_a_lookup_that_picks_its_channel_from_an_enum_is_called_with_the_right_choice() -> None:
    tools = _tools()
    request = "Text my brother that I'll grab him from the airport at 6."
    plan = Plan(calls=(Call(1, "sms__send", {"to": "+14155550100", "text": "I'll grab you at 6"}),))
    fixed, notes = insert_producers(plan, tools, request, request)
    assert fixed.calls[0] == Call(1, "pim__people-resolve", {"who": "brother", "want": "phone"}) and notes
    assert fixed.calls[1].args["to"] == Ref(1)


@pytest.mark.slow
@pytest.mark.skipif(not real_model_available("qwen2.5-coder-1.5b"), reason="needs the 1.5B GGUF")
def test_real_planner_finds_the_weather_behind_a_servers_code() -> None:
    """With the registry's own names the 1.5B planned the weather as a route."""
    from tinyagent.apps import load_model_spec

    model = load_model_spec("qwen2.5-coder-1.5b", threads=2)
    try:
        result = asyncio.run(Agent(_tools(), model).plan("What's the weather looking like in Lisbon on Saturday?",
                                                         today=TODAY))
        assert [c.name for c in result.plan.calls] == ["wx__forecast"]
        assert result.plan.calls[0].args.get("day") == "2027-05-22"
    finally:
        asyncio.run(model.aclose())
