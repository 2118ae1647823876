"""Identifiers the request gives are used as written (tinyagent.run._repair), in Agent.plan and in a streamed run."""

from __future__ import annotations

import asyncio
import datetime as dt
import re
from collections.abc import Callable

import pytest
from _helpers_models import real_model_available

from tinyagent import Agent, Plan, Ref, Tool, ToolRegistry, tool
from tinyagent.models import ModelRequest, ScriptedModel
from tinyagent.run._repair import repair_plan

TODAY = dt.date(2026, 12, 1)


def _tools() -> ToolRegistry:
    def fn(name: str, desc: str, props: dict[str, dict[str, object]], required: list[str]) -> dict[str, object]:
        return {"type": "function", "function": {"name": name, "description": desc, "parameters": {
            "type": "object", "properties": props, "required": required}}}

    return ToolRegistry.from_openai([
        fn("contact_mail", "A person's email address.", {"who": {"type": "string", "description": "their name"}},
           ["who"]),
        fn("mail", "Send a mail.", {"recipients": {"type": "array", "items": {"type": "string"},
                                                   "description": "the recipients' email addresses"},
                                    "text": {"type": "string"}}, ["recipients", "text"]),
    ])


def _mail_tools(sent: list[list[str]], address: Callable[[str], str]) -> tuple[Tool, Tool]:
    """A contact lookup answering ``address(who)`` and a mail tool recording its recipients in ``sent``."""

    @tool(effects="read")
    def contact_mail(who: str) -> str:
        """A person's email address.

        Args:
            who: their name.
        """
        return address(who)

    @tool(effects="write")
    def mail(recipients: list[str], text: str) -> str:
        """Send a mail.

        Args:
            recipients: the recipients' email addresses.
            text: the message.
        """
        sent.append(recipients)
        return "sent"

    return contact_mail, mail


def _repair(plan: Plan, query: str) -> tuple[Plan, list[str]]:
    request = ModelRequest(messages=[{"role": "user", "content": f"Today is {TODAY}.\nRequest: {query}"}])
    return repair_plan(plan, request, query, TODAY, _tools())


def _plan(*calls: dict[str, object]) -> Plan:
    return Plan.from_json([{"id": i + 1, **c} for i, c in enumerate(calls)])


def test_a_lookup_of_an_address_the_request_gives_is_replaced_and_dropped() -> None:
    plan = _plan({"name": "contact_mail", "args": {"who": "Jane"}},
                 {"name": "mail", "args": {"recipients": ["$1"], "text": "done"}})
    fixed, notes = _repair(plan, "Mail jane@corp.com that the deploy is done")
    assert fixed.to_json() == [{"id": 1, "name": "mail", "args": {"recipients": ["jane@corp.com"], "text": "done"}}]
    assert notes


def test_a_lookup_of_someone_else_is_kept() -> None:
    plan = _plan({"name": "contact_mail", "args": {"who": "Sid"}},
                 {"name": "mail", "args": {"recipients": ["$1"], "text": "hi"}})
    fixed, notes = _repair(plan, "Mail Sid hi, and cc jane@corp.com")
    assert fixed == plan and notes == []


def test_an_address_the_plan_already_uses_is_not_taken_twice() -> None:
    plan = _plan({"name": "contact_mail", "args": {"who": "Jane"}},
                 {"name": "mail", "args": {"recipients": ["jane@corp.com", "$1"], "text": "x"}})
    fixed, _ = _repair(plan, "Mail jane@corp.com and Jane Roe")
    assert fixed == plan


def test_a_lookup_still_used_elsewhere_stays_and_references_are_renumbered() -> None:
    plan = _plan({"name": "contact_mail", "args": {"who": "Bob"}},
                 {"name": "contact_mail", "args": {"who": "Jane"}},
                 {"name": "mail", "args": {"recipients": ["$1", "$2"], "text": "x"}},
                 {"name": "mail", "args": {"recipients": ["$1"], "text": "y"}})
    fixed, _ = _repair(plan, "Mail Bob and jane@corp.com x, then Bob y")
    assert [c.name for c in fixed.calls] == ["contact_mail", "mail", "mail"]
    assert fixed.calls[1].args["recipients"] == [Ref(1), "jane@corp.com"]
    assert fixed.calls[2].args["recipients"] == [Ref(1)]


async def test_agent_plan_and_a_streamed_run_use_the_given_address() -> None:
    sent: list[list[str]] = []
    contact_mail, mail = _mail_tools(sent, lambda who: f"{who.lower()}@elsewhere.org")

    text = '1. contact_mail(who="Jane")\n2. mail(recipients=[$1], text="done")\n3. join()\n'
    agent = Agent(tools=[contact_mail, mail], model=ScriptedModel([text, text, "Answer: sent."]),
                  no_tool_check="off", confirm=lambda req: True)
    result = await agent.plan("Mail jane@corp.com that it is done", today=TODAY)
    assert [c.name for c in result.plan.calls] == ["mail"]
    run = await agent.run("Mail jane@corp.com that it is done", today=TODAY)
    assert sent == [["jane@corp.com"]]
    assert any("repaired" in n and "jane@corp.com" in n for n in run.notes)


async def test_the_repair_can_be_turned_off() -> None:
    text = '1. contact_mail(who="Jane")\n2. mail(recipients=[$1], text="done")\n3. join()\n'
    agent = Agent(tools=_tools(), model=ScriptedModel([text]), no_tool_check="off", given_identifiers=False)
    result = await agent.plan("Mail jane@corp.com that it is done", today=TODAY)
    assert len(result.plan.calls) == 2


def test_invented_identifiers_are_found_and_given_ones_are_not() -> None:
    from tinyagent._plan import Call
    from tinyagent.run._repair import invented_identifiers

    call = Call(1, "mail", {"recipients": ["sid@example.com", "jane@corp.com", Ref(1)], "text": "x@y.z"})
    assert invented_identifiers(call, _tools(), "Mail jane@corp.com and Sid") == [("recipients", "sid@example.com")]


async def test_agent_plan_asks_again_when_the_plan_makes_up_an_address() -> None:
    bad = '1. mail(recipients=["sid@example.com"], text="hi")\n2. join()\n'
    good = '1. contact_mail(who="Sid")\n2. mail(recipients=[$1], text="hi")\n3. join()\n'
    model = ScriptedModel([bad, good])
    agent = Agent(tools=_tools(), model=model, no_tool_check="off")
    result = await agent.plan("Mail Sid hi", today=TODAY)
    assert [c.name for c in result.plan.calls] == ["contact_mail", "mail"]
    assert "which the request does not give" in str(model.requests[-1].messages[-1]["content"])
    assert result.usage.output_tokens >= 2


async def test_a_streamed_run_never_sends_to_a_made_up_address() -> None:
    sent: list[list[str]] = []
    contact_mail, mail = _mail_tools(sent, lambda who: "sid@corp.com")

    bad = '1. mail(recipients=["sid@example.com"], text="hi")\n2. join()\n'
    good = '1. contact_mail(who="Sid")\n2. mail(recipients=[$1], text="hi")\n3. join()\n'
    agent = Agent(tools=[contact_mail, mail], model=ScriptedModel([bad, good, "Answer: sent."]),
                  no_tool_check="off", confirm=lambda req: True)
    run = await agent.run("Mail Sid hi", today=TODAY)
    assert sent == [["sid@corp.com"]]
    assert run.replans == 1


def test_optional_arguments_the_request_does_not_support_are_left_out() -> None:
    tools = ToolRegistry.from_openai([{"type": "function", "function": {
        "name": "population", "description": "Population of an area.", "parameters": {
            "type": "object", "required": ["area"], "properties": {
                "area": {"type": "string"}, "year": {"type": "integer"}, "unit": {"type": "string"},
                "exact": {"type": "boolean"}, "note": {"type": "string"}}}}}])
    plan = Plan.from_json([{"id": 1, "name": "population", "args": {
        "area": "Nowhere Town", "year": 2026, "unit": "people", "exact": True,
        "note": "a longer composed text that nobody wrote in the request"}},
        {"id": 2, "name": "population", "args": {"area": "Alaska", "year": 2000}}])
    query = "Population of Alaska in 2000, and of Nowhere Town"
    request = ModelRequest(messages=[{"role": "user", "content": f"Request: {query}"}])
    fixed, notes = repair_plan(plan, request, query, TODAY, tools)
    assert fixed.calls[0].args == {"area": "Nowhere Town", "exact": True,
                                   "note": "a longer composed text that nobody wrote in the request"}
    assert fixed.calls[1].args == {"area": "Alaska", "year": 2000}
    assert notes and "unit, year" in notes[0]
    kept, _ = repair_plan(plan, request, query, TODAY, tools, optionals=False)
    assert kept == plan


@pytest.mark.slow
@pytest.mark.skipif(not real_model_available("qwen2.5-coder-0.5b"), reason="qwen2.5-coder-0.5b is not installed")
def test_real_planner_keeps_shapes_and_the_given_address() -> None:
    """On a real GGUF: a 'City, Country' value has its comma, a date its stated format, and an address the request
    gives reaches the mail call as written, whatever the planner first wrote."""
    from tinyagent.models import load_model

    tools = ToolRegistry.from_openai([*(_tools()[n].to_openai() for n in ("contact_mail", "mail")), {
        "type": "function", "function": {"name": "forecast", "description": "The weather forecast for a place.",
                                         "parameters": {"type": "object", "required": ["place", "day"], "properties": {
                                             "place": {"type": "string", "description": "in the format of 'City, "
                                                       "Country', such as 'Paris, France'"},
                                             "day": {"type": "string", "description": "the day, 'MM/DD/YYYY'"}}}}}])
    model = load_model("qwen2.5-coder-0.5b", n_threads=2)
    try:
        agent = Agent(tools=tools, model=model, no_tool_check="off")
        weather = agent.plan_sync("What's the weather in Tel Aviv tomorrow?", today=TODAY).plan
        mail = agent.plan_sync("Mail jane@corp.com that the deploy is done", today=TODAY).plan
    finally:
        asyncio.run(model.aclose())
    place = [c.args for c in weather.calls if c.name == "forecast"]
    assert place and all(", " in a["place"] and re.fullmatch(r"\d\d/\d\d/\d{4}", a["day"]) for a in place), weather
    sent = [c.args["recipients"] for c in mail.calls if c.name == "mail"]
    assert sent and all(r == ["jane@corp.com"] for r in sent), mail


def test_a_lookup_by_the_address_itself_is_replaced() -> None:
    plan = _plan({"name": "contact_mail", "args": {"who": "nina.r@example.org"}},
                 {"name": "mail", "args": {"recipients": ["$1"], "text": "x"}})
    fixed, _ = _repair(plan, "Email nina.r@example.org that we need to reschedule")
    assert fixed.to_json() == [{"id": 1, "name": "mail", "args": {"recipients": ["nina.r@example.org"], "text": "x"}}]


def test_a_spoken_or_obfuscated_address_is_not_made_up() -> None:
    from tinyagent._plan import Call
    from tinyagent.run._repair import invented_identifiers

    call = Call(1, "mail", {"recipients": ["sid@example.com"], "text": "x"})
    assert invented_identifiers(call, _tools(), "mail sid at example dot com") == []
    assert invented_identifiers(call, _tools(), "write to sid [at] example [dot] com") == []
    assert invented_identifiers(call, _tools(), "mail Sid") == [("recipients", "sid@example.com")]
