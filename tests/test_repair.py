"""Identifiers the request gives are used as written (tinyagent.run._repair), in Agent.plan and in a streamed run."""

from __future__ import annotations

import asyncio
import datetime as dt
import re
from collections.abc import Callable
from typing import Any

import pytest
from _helpers_models import real_model_available

from tinyagent import Agent, Plan, Ref, Tool, ToolRegistry, tool
from tinyagent._plan import Call
from tinyagent.models import ModelRequest, ScriptedModel
from tinyagent.run._repair import call_problem, repair_plan, request_numbers, unsourced_values

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
    # (a made-up address built from a name the request writes gets its lookup written in: tests/test_producers.py)
    bad = '1. mail(recipients=["boss@example.com"], text="hi")\n2. join()\n'
    good = '1. contact_mail(who="my boss")\n2. mail(recipients=[$1], text="hi")\n3. join()\n'
    model = ScriptedModel([bad, good])
    agent = Agent(tools=_tools(), model=model, no_tool_check="off")
    result = await agent.plan("Mail my boss hi", today=TODAY)
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


def _day_tools() -> ToolRegistry:
    def fn(name: str, desc: str, props: dict[str, dict[str, object]]) -> dict[str, object]:
        return {"type": "function", "function": {"name": name, "description": desc, "parameters": {
            "type": "object", "properties": props, "required": list(props)}}}

    return ToolRegistry.from_openai([
        fn("todo_add", "Add a to-do.", {
            "title": {"type": "string"},
            "due": {"type": "string",
                    "description": "Due, formatted YYYY-MM-DD HH:MM:SS, or YYYY-MM-DD for all day."}}),
        fn("event_add", "Add an event.", {
            "title": {"type": "string"},
            "start": {"type": "string", "description": "Start, formatted DD/MM/YYYY HH:MM."}}),
        fn("now_date", "Returns the current local date and the day of the week.", {}),
        fn("text", "Send an SMS.", {"body": {"type": "string"}}),
    ])


@pytest.mark.parametrize(("query", "due", "expected"), [
    ("Remind me to call the dentist next week", "2026-12-07 00:00:00", "2026-12-07"),  # a day: the date-only form
    ("Remind me to call the dentist tomorrow", "2026-12-02 00:00:00", "2026-12-02"),
    ("Remind me to call the dentist tomorrow at midnight", "2026-12-02 00:00:00", "2026-12-02 00:00:00"),
    ("Remind me to call the dentist tomorrow at 9am", "2026-12-02 09:00:00", "2026-12-02 09:00:00"),
    ("Remind me to call the dentist tomorrow", "2026-12-05 00:00:00", "2026-12-02"),  # moved to the day given
    ("Remind me to call the dentist tomorrow and on Friday", "2026-12-05 00:00:00", "2026-12-05 00:00:00"),
])
def test_a_day_at_midnight_is_written_as_a_day_where_the_parameter_allows_one(query: str, due: str,
                                                                              expected: str) -> None:
    plan = Plan.from_json([{"id": 1, "name": "todo_add", "args": {"title": "Call the dentist", "due": due}}])
    fixed, _ = repair_plan(plan, ModelRequest(messages=[]), query, TODAY, _day_tools())
    assert fixed.calls[0].args["due"] == expected


def test_a_day_stays_midnight_where_the_parameter_documents_no_date_only_form() -> None:
    plan = Plan.from_json([{"id": 1, "name": "event_add", "args": {"title": "Dentist", "start": "02/12/2026 00:00"}}])
    fixed, _ = repair_plan(plan, ModelRequest(messages=[]), "Dentist tomorrow", TODAY, _day_tools())
    assert fixed.calls[0].args["start"] == "02/12/2026 00:00"


@pytest.mark.parametrize(("query", "kept"), [
    ("Text hi to the team", ["text"]),
    ("Translate 'good morning' into Spanish", []),
    ("What day is it today? Also text hi", ["now_date", "text"]),
    ("How many days until Christmas?", ["now_date"]),
])
def test_a_step_that_only_tells_todays_date_is_dropped_unless_asked_for(query: str, kept: list[str]) -> None:
    calls = [{"id": 1, "name": "now_date", "args": {}}]
    if "text" in query.lower():
        calls.append({"id": 2, "name": "text", "args": {"body": "hi"}})
    fixed, notes = repair_plan(Plan.from_json(calls), ModelRequest(messages=[]), query, TODAY, _day_tools())
    assert [c.name for c in fixed.calls] == kept
    assert [c.id for c in fixed.calls] == list(range(1, len(kept) + 1))
    assert any("today's date" in n for n in notes) == (len(kept) < len(calls))


def test_a_date_step_whose_result_is_used_stays() -> None:
    plan = Plan.from_json([{"id": 1, "name": "now_date", "args": {}},
                           {"id": 2, "name": "text", "args": {"body": "$1"}}])
    fixed, _ = repair_plan(plan, ModelRequest(messages=[]), "Text me the date", TODAY, _day_tools())
    assert [c.name for c in fixed.calls] == ["now_date", "text"]


def _sourced_tools() -> ToolRegistry:
    def fn(name: str, props: dict[str, dict[str, object]]) -> dict[str, object]:
        return {"type": "function", "function": {"name": name, "description": name, "parameters": {
            "type": "object", "properties": props, "required": list(props)}}}

    path = {"type": "string", "description": "Path of the document, as returned by doc_find."}
    return ToolRegistry.from_openai([
        fn("doc_find", {"terms": {"type": "string"}}), fn("note_find", {"terms": {"type": "string"}}),
        fn("doc_digest", {"path": path}),
        fn("send", {"files": {"type": "array", "items": path}}),
    ])


def test_a_value_its_parameter_says_comes_from_another_tool_must_come_from_it() -> None:
    tools = _sourced_tools()
    made_up = Plan.from_json([{"id": 1, "name": "doc_digest", "args": {"path": "Q4 budget.pdf"}}]).calls[0]
    assert unsourced_values(made_up, {}, tools, "Summarize the Q4 budget") == [("path", "Q4 budget.pdf", "doc_find")]
    problem = call_problem(made_up, {}, tools, "Summarize the Q4 budget")
    assert problem is not None and "first call doc_find" in problem
    given = Plan.from_json([{"id": 1, "name": "doc_digest", "args": {"path": "/tmp/q4.pdf"}}]).calls[0]
    assert call_problem(given, {}, tools, "Summarize /tmp/q4.pdf") is None  # the request gives the path
    plan = Plan.from_json([{"id": 1, "name": "note_find", "args": {"terms": "Q4"}},
                           {"id": 2, "name": "doc_find", "args": {"terms": "Q4"}},
                           {"id": 3, "name": "send", "args": {"files": ["$1", "$2"]}}])
    earlier = {c.id: c for c in plan.calls}
    assert unsourced_values(plan.calls[2], earlier, tools, "") == [("files", "$1", "doc_find")]  # $2 is doc_find's


def test_a_plan_with_a_made_up_path_is_planned_again_with_the_reason() -> None:
    # (a path made of the request's words gets its source written in instead: tests/test_producers.py)
    model = ScriptedModel(['1. doc_digest(path="report_final.pdf")\n2. join()\n<END_OF_PLAN>',
                           '1. doc_find(terms="Q4 budget")\n2. doc_digest(path=$1)\n3. join()\n<END_OF_PLAN>'])
    agent = Agent(tools=_sourced_tools(), model=model)
    result = agent.plan_sync("Summarize the Q4 budget", today=TODAY)
    assert [c.name for c in result.plan.calls] == ["doc_find", "doc_digest"]
    assert "first call doc_find" in str(model.requests[1].messages[-1]["content"])


def test_a_bare_reference_where_a_list_goes_is_wrapped_and_a_list_result_spliced() -> None:
    sent: list[list[str]] = []
    contact_mail, mail = _mail_tools(sent, lambda who: "ann@x.io")
    fixed, _ = _repair(_plan({"name": "contact_mail", "args": {"who": "Ann"}},
                             {"name": "mail", "args": {"recipients": "$1", "text": "hi"}}), "Mail Ann hi")
    assert fixed.calls[1].args["recipients"] == [Ref(1)]
    model = ScriptedModel(['1. contact_mail(who="Ann")\n2. mail(recipients=$1, text="hi")\n3. join()\n'
                           "<END_OF_PLAN>", "Answer: sent"])
    Agent(tools=[contact_mail, mail], model=model, confirm=lambda _: True).run_sync("Mail Ann hi", today=TODAY)
    assert sent == [["ann@x.io"]]

    @tool(name="contact_mail", effects="read")
    def team_mail(who: str) -> list[str]:
        """The email addresses of a team.

        Args:
            who: the team's name.
        """
        return ["ann@x.io", "bo@x.io"]

    model.reset()
    result = Agent(tools=[team_mail, mail], model=model, confirm=lambda _: True).run_sync("Mail Ann hi", today=TODAY)
    assert sent[-1] == ["ann@x.io", "bo@x.io"], (sent, result.steps[1])


@pytest.mark.parametrize(("query", "calls", "kept"), [
    # an invented lookup beside a number the request gives
    ("Text +1 415 555 0199 landed", [("contact_mail", {"who": "John Doe"}),
                                     ("mail", {"recipients": ["+1 415 555 0199"], "text": "landed"})], ["mail"]),
    # a lookup of the address the request gives, which the mail already passes
    ("Mail jane@corp.com that it is done", [("contact_mail", {"who": "Jane"}),
                                             ("mail", {"recipients": ["jane@corp.com"], "text": "it is done"})],
     ["mail"]),
    ("Mail jane@corp.com that it is done", [("contact_mail", {"who": "jane@corp.com"}),
                                             ("mail", {"recipients": ["jane@corp.com"], "text": "it is done"})],
     ["mail"]),
    # a lookup the request asks for (its result goes to the answer) stays
    ("Mail jane@corp.com that it is done, and what is Omar's address?",
     [("mail", {"recipients": ["jane@corp.com"], "text": "it is done"}), ("contact_mail", {"who": "Omar"})],
     ["mail", "contact_mail"]),
    # a single call is never dropped
    ("What's John's address?", [("contact_mail", {"who": "Johnny Doe"})], ["contact_mail"]),
    # an unused lookup of an address, for a request that speaks of no address, number or channel
    ("Is it going to rain in Porto on Saturday?", [("contact_mail", {"who": "Porto"}),
                                                  ("mail", {"recipients": ["a@b.co"], "text": "Porto"})], ["mail"]),
])
def test_stray_lookups_are_left_out(query: str, calls: list[tuple[str, dict[str, object]]], kept: list[str]) -> None:
    fixed, _ = _repair(_plan(*({"name": n, "args": a} for n, a in calls)), query)
    assert [c.name for c in fixed.calls] == kept


def test_an_invalid_second_plan_keeps_the_first() -> None:
    model = ScriptedModel(['1. doc_digest(path="report_final.pdf")\n2. join()\n<END_OF_PLAN>',
                           '1. doc_find(terms="Q4 budget")\n2. doc_digest(path=$2)\n3. join()\n<END_OF_PLAN>'])
    result = Agent(tools=_sourced_tools(), model=model).plan_sync("Summarize the Q4 budget", today=TODAY)
    assert [c.name for c in result.plan.calls] == ["doc_digest"]


def test_an_invalid_first_plan_is_planned_once_more_and_twice_is_a_typed_error() -> None:
    from tinyagent.errors import PlanError

    cut = '1. doc_find(terms="Q4 budget")\n2. doc_digest(path="report_final.pdf, and then'  # ran past the limit
    fixed = '1. doc_find(terms="Q4 budget")\n2. doc_digest(path=$1)\n3. join()\n<END_OF_PLAN>'
    model = ScriptedModel([cut, fixed])
    result = Agent(tools=_sourced_tools(), model=model).plan_sync("Summarize the Q4 budget", today=TODAY)
    assert [c.name for c in result.plan.calls] == ["doc_find", "doc_digest"]
    assert "the plan was invalid" in str(model.requests[1].messages)
    with pytest.raises(PlanError):
        Agent(tools=_sourced_tools(), model=ScriptedModel([cut, cut])).plan_sync("Summarize the Q4 budget",
                                                                                 today=TODAY)


def _estate_tools() -> ToolRegistry:
    def fn(name: str, props: dict[str, dict[str, object]]) -> dict[str, object]:
        return {"type": "function", "function": {"name": name, "description": name.replace("_", " "), "parameters": {
            "type": "object", "properties": props, "required": list(props)}}}

    return ToolRegistry.from_openai([
        fn("find_homes", {"city": {"type": "string"}, "bedrooms": {"type": "integer"},
                          "max_price": {"type": "number"}}),
        fn("value_home", {"city": {"type": "string"}, "age": {"type": "integer"}}),
        fn("loan_rate", {"years": {"type": "integer", "description": "Term in years. Defaults to 30."}}),
    ])


@pytest.mark.parametrize(("query", "calls", "kept"), [
    # a second tool whose number nobody gave goes; the one the request's numbers fit stays
    ("Find a 3 bedroom home in San Diego under $400,000",
     [("value_home", {"city": "San Diego", "age": 0}),
      ("find_homes", {"city": "San Diego", "bedrooms": 3, "max_price": 400000.0})], ["find_homes"]),
    # numbers as words, with a scale, or as the documented default count as given
    ("Find a three bedroom home in Lisbon under 2.5k, and the loan rate",
     [("find_homes", {"city": "Lisbon", "bedrooms": 3, "max_price": 2500}), ("loan_rate", {"years": 30})],
     ["find_homes", "loan_rate"]),
    # both tools asked with their numbers: nothing goes
    ("Value my 12 year old home in Lisbon and find 3 bedroom homes there under 500k",
     [("value_home", {"city": "Lisbon", "age": 12}),
      ("find_homes", {"city": "Lisbon", "bedrooms": 3, "max_price": 500000})], ["value_home", "find_homes"]),
    # the same tool twice (parallel calls) is never thinned out
    ("Find homes in Lisbon and Porto", [("find_homes", {"city": "Lisbon", "bedrooms": 2, "max_price": 1}),
                                        ("find_homes", {"city": "Porto", "bedrooms": 2, "max_price": 1})],
     ["find_homes", "find_homes"]),
    # every call invents: nothing is left to keep, so nothing goes
    ("Homes in Lisbon", [("value_home", {"city": "Lisbon", "age": 5}),
                         ("find_homes", {"city": "Lisbon", "bedrooms": 2, "max_price": 9})],
     ["value_home", "find_homes"]),
])
def test_a_call_whose_numbers_nobody_gave_beside_another_tool_is_left_out(
        query: str, calls: list[tuple[str, dict[str, object]]], kept: list[str]) -> None:
    request = ModelRequest(messages=[{"role": "user", "content": f"Request: {query}"}])
    fixed, notes = repair_plan(_plan(*({"name": n, "args": a} for n, a in calls)), request, query, TODAY,
                               _estate_tools())
    assert [c.name for c in fixed.calls] == kept
    assert any("numbers" in n for n in notes) == (len(kept) < len(calls))


def test_request_numbers_reads_digits_units_and_words() -> None:
    assert request_numbers("a $300,000 budget, 5% off, 2.5k steps, twice, a dozen, at midnight") >= {0.0,
        300000.0, 5.0, 0.05, 2500.0, 2.0, 12.0}
    assert 10.0 not in request_numbers("version 2.10")


def test_agent_plan_leaves_out_the_call_nobody_asked_for() -> None:
    model = ScriptedModel(['1. value_home(city="San Diego", age=0)\n'
                           '2. find_homes(city="San Diego", bedrooms=3, max_price=400000)\n3. join()\n<END_OF_PLAN>'])
    result = Agent(tools=_estate_tools(), model=model).plan_sync(
        "Find a 3 bedroom home in San Diego under $400,000", today=TODAY)
    assert [c.name for c in result.plan.calls] == ["find_homes"]


def test_a_reference_written_inside_an_identifier_string_is_a_reference_again() -> None:
    plan = _plan({"name": "contact_mail", "args": {"who": "Emma"}},
                 {"name": "mail", "args": {"recipients": ["$1@example.com"], "text": "hi"}})
    fixed, _ = _repair(plan, "Mail Emma hi")
    assert fixed.calls[1].args["recipients"] == [Ref(1)]
    # a text that only mentions a price is not a reference, nor one to a step that does not come first
    fixed, _ = _repair(_plan({"name": "mail", "args": {"recipients": ["$1@example.com"], "text": "$1 off"}}),
                       "Mail $1@example.com $1 off")
    assert fixed.calls[0].args == {"recipients": ["$1@example.com"], "text": "$1 off"}



def test_an_identifier_string_that_names_several_steps_gives_each_once() -> None:
    plan = _plan({"name": "contact_mail", "args": {"who": "Derek"}}, {"name": "contact_mail", "args": {"who": "Maya"}},
                 {"name": "mail", "args": {"recipients": ["$1$2@acme.io", "$1,derek@x.io"], "text": "hi"}})
    fixed, _ = _repair(plan, "Mail Derek and Maya hi")
    assert fixed.calls[2].args["recipients"] == [Ref(1), Ref(2)]


def test_a_made_up_address_beside_the_lookup_of_that_person_becomes_its_reference() -> None:
    plan = _plan({"name": "contact_mail", "args": {"who": "Zoë"}},
                 {"name": "mail", "args": {"recipients": ["zoë@example.com"], "text": "the draft is ready"}})
    fixed, _ = _repair(plan, "Email Zoë that the draft is ready")
    assert fixed.calls[1].args["recipients"] == [Ref(1)]
    # an address the request gives stays; a made-up one for someone nobody looked up stays (the plan is replanned)
    given = _plan({"name": "mail", "args": {"recipients": ["zoe@corp.com"], "text": "hi"}})
    assert _repair(given, "Email zoe@corp.com hi")[0].calls[0].args["recipients"] == ["zoe@corp.com"]
    other = _plan({"name": "contact_mail", "args": {"who": "Zoë"}},
                  {"name": "mail", "args": {"recipients": ["bob@example.com"], "text": "hi"}})
    assert _repair(other, "Email Zoë hi")[0].calls[1].args["recipients"] == ["bob@example.com"]
    # a lookup whose result is already used is not taken twice
    used = _plan({"name": "contact_mail", "args": {"who": "Zoë"}},
                 {"name": "mail", "args": {"recipients": ["$1", "zoe.m@example.com"], "text": "hi"}})
    assert _repair(used, "Email Zoë hi")[0].calls[1].args["recipients"] == [Ref(1), "zoe.m@example.com"]


def test_a_source_the_tool_description_names_for_a_parameter_is_required() -> None:
    """"The messageId comes from SearchMailbox." in the tool's description: a reference to a contact lookup there
    is a problem naming the search."""
    from tinyagent.run._repair import call_problem

    tools = ToolRegistry.from_openai([
        {"type": "function", "function": {"name": n, "description": d, "parameters": {
            "type": "object", "properties": p, "required": list(p)}}} for n, d, p in (
            ("LookupContactEmail", "Resolves a person to their e-mail address.", {"personName": {"type": "string"}}),
            ("SearchMailbox", "Full-text search over the inbox.", {"searchTerms": {"type": "string"}}),
            ("ReplyToEmail", "Reply in-thread to a message. The messageId comes from SearchMailbox.",
             {"messageId": {"type": "string", "description": "ID of the message."}, "replyBody": {"type": "string"}}),
        )])
    plan = Plan.from_json([{"id": 1, "name": "LookupContactEmail", "args": {"personName": "Gregor"}},
                           {"id": 2, "name": "ReplyToEmail", "args": {"messageId": "$1", "replyBody": "ok"}}])
    earlier = {c.id: c for c in plan.calls}
    query = "reply to Gregor's email about the permit: ok"
    assert "SearchMailbox" in (call_problem(plan.calls[1], earlier, tools, query, query) or "")
    searched = Plan.from_json([{"id": 1, "name": "SearchMailbox", "args": {"searchTerms": "Gregor permit"}},
                               {"id": 2, "name": "ReplyToEmail", "args": {"messageId": "$1", "replyBody": "ok"}}])
    assert call_problem(searched.calls[1], {c.id: c for c in searched.calls}, tools, query, query) is None


@pytest.mark.parametrize(("body", "passed"), [
    ("Hey Rosa, here's your agenda for Jan 22. $1", "ref"),
    ("The tickets are $12.50 each", "text"),  # a price, not a reference
    ("Costs $1,000", "text"),
])
def test_a_reference_written_inside_a_text_passes_that_steps_result(body: str, passed: str) -> None:
    from tinyagent.run._repair import quoted_refs

    tools = ToolRegistry.from_openai([
        {"type": "function", "function": {"name": "agenda", "description": "Returns the day's calendar entries.",
                                          "parameters": {"type": "object", "properties": {"day": {"type": "string"}}}}},
        {"type": "function", "function": {"name": "sms", "description": "Sends an SMS.", "parameters": {
            "type": "object", "properties": {"body": {"type": "string"}}}}},
    ])
    plan = Plan.from_json([{"id": 1, "name": "agenda", "args": {"day": "2027-01-22"}},
                           {"id": 2, "name": "sms", "args": {"body": body}}])
    fixed = quoted_refs(plan.calls[1], {1: plan.calls[0]}, tools, "Text Rosa my agenda for the 22nd")
    assert fixed.args["body"] == (Ref(1) if passed == "ref" else body)
    assert quoted_refs(plan.calls[1], {1: plan.calls[0]}, tools, "Email Jess the summary").args["body"] == body
    taken = Call(2, "sms", {"body": Ref(1)})  # a result another step takes is not what the text meant
    assert quoted_refs(Call(3, "sms", {"body": body}), {1: plan.calls[0], 2: taken}, tools).args["body"] == body


def test_a_lookup_of_no_name_gives_way_to_the_one_number_the_request_writes() -> None:
    """"text it to her at 555-0198" planned with a lookup of "Sister": the request writes one number and names no
    one; a lookup of a name the request writes stays."""
    tools = ToolRegistry.from_openai([
        {"type": "function", "function": {"name": "phone_of", "description": "Finds a person's mobile number.",
                                          "parameters": {"type": "object", "properties": {"who": {"type": "string"}}}}},
        {"type": "function", "function": {"name": "sms", "description": "Sends an SMS.", "parameters": {
            "type": "object", "properties": {"to": {"type": "array", "items": {"type": "string"},
                                                    "description": "Phone numbers."}, "body": {"type": "string"}}}}},
    ])
    request = "My sister asks what to bring. Text it to her at 555-0198."
    plan = Plan.from_json([{"id": 1, "name": "phone_of", "args": {"who": "Sister"}},
                           {"id": 2, "name": "sms", "args": {"to": ["$1"], "body": "hi"}}])
    fixed, _ = repair_plan(plan, ModelRequest(messages=[{"role": "user", "content": request}]), request, TODAY, tools)
    assert [(c.name, c.args.get("to")) for c in fixed.calls] == [("sms", ["555-0198"])]
    named = "Text Bo at 555-0198 and Marco that it's on"
    marco = Plan.from_json([{"id": 1, "name": "phone_of", "args": {"who": "Marco"}},
                            {"id": 2, "name": "sms", "args": {"to": ["$1"], "body": "on"}}])
    kept, _ = repair_plan(marco, ModelRequest(messages=[{"role": "user", "content": named}]), named, TODAY, tools)
    assert [c.name for c in kept.calls] == ["phone_of", "sms"]


@pytest.mark.parametrize(("param", "owner_text", "source"), [
    ("File id from drive_files_find.", "Condenses a PDF.", "drive_files_find"),
    ("Message id.", "The mid must come from a mail_inbox_search result.", "mail_inbox_search"),
    ("Path of a file found with drive_files_find.", "Reads a file.", "drive_files_find"),
    ("Message id.", "Answers a message.", None),
    ("Text from the user.", "Reads a file.", None),  # "from" after no id or path names no source
    ("fileId from drive_files_find.", "Condenses a PDF.", "drive_files_find"),  # camelCase id word
    ("messageId of the message being answered (from mail_inbox_search).", "Replies.", "mail_inbox_search"),
    ("Place name, or a file id from drive_files_find.", "Reads.", None),  # one source of two: literals pass
    ("As typed by the user or as returned by drive_files_find.", "Reads.", "drive_files_find"),
    ("Message id.", "Needs the mid of the message (get it from mail_inbox_search).", "mail_inbox_search"),
])
def test_a_parameters_source_is_the_tool_its_registry_words_name(param: str, owner_text: str,
                                                                  source: str | None) -> None:
    from _helpers_tools import openai_fn

    from tinyagent import ToolRegistry
    from tinyagent.run._sources import documented_source

    tools = ToolRegistry.from_openai([
        openai_fn("drive_files_find", "Finds files.", {"q": {"type": "string"}}, ["q"]),
        openai_fn("mail_inbox_search", "Inbox search.", {"q": {"type": "string"}}, ["q"]),
        openai_fn("owner", owner_text, {"mid": {"type": "string", "description": param}}, ["mid"]),
    ])
    schema = tools["owner"].parameters["properties"]["mid"]
    assert documented_source(schema, dict(tools.items()), tools["owner"], "mid") == source


@pytest.mark.parametrize(("finder_text", "owner_text", "param", "source"), [
    ("Search mail. Pass an id to owner to answer a message.", "Replies.", "message_id", "finder"),
    ("Finds files. Returns fileId; fileId feeds owner.", "Summarizes.", "fileId", "finder"),
    ("Finds files.", "Summarizes. Call finder first to get file_id.", "file_id", "finder"),
    ("Makes notes. Use owner instead when the note exists.", "Appends.", "note_id", None),  # no hand-over
    ("Search mail. Pass an id to owner to answer a message.", "Replies.", "body", None),  # not an identifier
])
def test_a_tool_that_says_it_feeds_another_is_the_source_of_its_one_identifier(
        finder_text: str, owner_text: str, param: str, source: str | None) -> None:
    from _helpers_tools import openai_fn

    from tinyagent import ToolRegistry
    from tinyagent.run._sources import documented_source

    tools = ToolRegistry.from_openai([
        openai_fn("finder", finder_text, {"q": {"type": "string"}}, ["q"]),
        openai_fn("owner", owner_text, {param: {"type": "string", "description": "The one it acts on."},
                                        "text": {"type": "string", "description": "Words."}}, [param]),
    ])
    schema = tools["owner"].parameters["properties"][param]
    assert documented_source(schema, dict(tools.items()), tools["owner"], param) == source


def test_references_that_went_to_each_others_places_are_exchanged() -> None:
    """"Reply to Kofi's last mail with the survey's summary" planned as ``reply(mid=$2, body=$3)``: the message id
    is documented as taken from the mail search, $3 is that search and $2 the summary."""
    from _helpers_tools import TEXT, openai_fn

    from tinyagent.run._sources import swap_sourced_refs

    tools = ToolRegistry.from_openai([
        openai_fn("mail_search", "Searches the inbox.", {"q": TEXT}, ["q"]),
        openai_fn("pdf_digest", "Summarises a PDF.", {"fid": TEXT}, ["fid"]),
        openai_fn("reply", "Replies to a message.", {
            "mid": {**TEXT, "description": "The message id, taken from mail_search's result."}, "body": TEXT},
            ["mid", "body"]),
    ])
    earlier = {1: Call(1, "pdf_digest", {"fid": "f1"}), 2: Call(2, "mail_search", {"q": "Kofi"})}
    swapped = swap_sourced_refs(Call(3, "reply", {"mid": Ref(1), "body": Ref(2)}), earlier, tools)
    assert swapped.args == {"mid": Ref(2), "body": Ref(1)}
    right = Call(3, "reply", {"mid": Ref(2), "body": Ref(1)})
    assert swap_sourced_refs(right, earlier, tools) == right
    # nothing to exchange with: the one unused step of the source takes the place
    alone = Call(3, "reply", {"mid": Ref(1), "body": "Thanks"})
    assert swap_sourced_refs(alone, earlier, tools).args == {"mid": Ref(2), "body": "Thanks"}
    two = {**earlier, 3: Call(3, "mail_search", {"q": "Ann"})}  # two searches: which one is the replan's business
    assert swap_sourced_refs(Call(4, "reply", {"mid": Ref(1), "body": "x"}), two, tools).args["mid"] == Ref(1)
    used = {**earlier, 3: Call(3, "reply", {"mid": Ref(2), "body": "x"})}  # the one search is answered already
    assert swap_sourced_refs(Call(4, "reply", {"mid": Ref(1), "body": "y"}), used, tools).args["mid"] == Ref(1)
    # a list that holds one reference: "send the summary plus the file itself", the two swapped, lists kept
    mail = ToolRegistry.from_openai([
        openai_fn("file-search", "Finds a file.", {"q": TEXT}, ["q"]),
        openai_fn("document-summarize", "Summarises a file.", {"fid": TEXT}, ["fid"]),
        openai_fn("send", "Sends.", {"body": TEXT, "attach_ids": {
            "type": "array", "items": TEXT, "description": "File ids to attach, as returned by file-search."}},
            ["body"]),
    ])
    files = {1: Call(1, "file-search", {"q": "proposal"}), 2: Call(2, "document-summarize", {"fid": Ref(1)})}
    fixed = swap_sourced_refs(Call(3, "send", {"body": Ref(1), "attach_ids": [Ref(2)]}), files, mail)
    assert fixed.args == {"body": Ref(2), "attach_ids": [Ref(1)]}


def test_a_step_passing_an_address_where_its_tool_takes_none_is_left_out() -> None:
    """A route "to" an invitee's address, beside the event that invites her: the route goes; a docket number or a
    route to a place stays."""
    text = {"type": "string"}
    guests = {"type": "array", "items": {"type": "string"}, "description": "Guests' e-mail addresses."}
    tools = ToolRegistry.from_openai([
        {"type": "function", "function": {"name": "route", "description": "Route between two places.", "parameters": {
            "type": "object", "properties": {"to": text, "origin": text}, "required": ["to"]}}},
        {"type": "function", "function": {"name": "add_event", "description": "Create a calendar event.",
                                          "parameters": {"type": "object", "properties": {
                                              "title": text, "start": text, "guests": guests},
                                              "required": ["title", "start"]}}}])
    query = "Sprint review Monday at 10 with yuki@corvid.dev"
    plan = Plan(calls=(Call(1, "route", {"to": "yuki@corvid.dev", "origin": "corvid.dev"}),
                       Call(2, "add_event", {"title": "Sprint review", "start": "2026-12-07T10:00",
                                             "guests": ["yuki@corvid.dev"]})))
    fixed, notes = repair_plan(plan, ModelRequest(messages=[]), query, TODAY, tools)
    assert [c.name for c in fixed.calls] == ["add_event"] and notes
    kept = Plan(calls=(Call(1, "route", {"to": "Pier 39"}), plan.calls[1]))
    assert len(repair_plan(kept, ModelRequest(messages=[]), query + " and a route to Pier 39", TODAY, tools)[0]) == 2


@pytest.mark.parametrize(("request_", "args", "expected"), [
    ("Find the Q3 budget spreadsheet", {"q": "Q3 budget", "kind": "any"}, "sheet"),  # "any" picks nothing
    ("Summarise the lease PDF", {"q": "lease"}, "pdf"),  # none passed
    ("how long is the drive from Bristol", {"q": "Bristol"}, "driving"),  # a word of its stem
    ("Find the deck, not the PDF", {"q": "deck"}, None),  # ruled out
    ("Find the report PDF", {"q": "report", "kind": "doc"}, "doc"),  # the planner's own choice stands
    ("Find the slides or the PDF", {"q": "x"}, None),  # two named: no pick
    ("Convert it to speech", {"q": "x"}, None),  # "it" is no option ("it-IT")
])
def test_an_enum_parameter_takes_the_one_value_the_request_names(request_: str, args: dict[str, Any],
                                                                 expected: str | None) -> None:
    from _helpers_tools import openai_fn

    from tinyagent import ToolRegistry
    from tinyagent.run._choices import named_choices

    tools = ToolRegistry.from_openai([openai_fn("find", "Finds files.", {
        "q": {"type": "string"},
        "kind": {"type": "string", "enum": ["any", "pdf", "doc", "sheet", "slides", "it-IT"], "default": "any"},
        "mode": {"type": "string", "enum": ["driving", "walking", "transit"]}}, ["q"])])
    fixed = named_choices(Call(1, "find", args), dict(tools.items()), request_)
    assert fixed.args.get("kind" if "drive" not in request_ else "mode", args.get("kind")) == (
        expected if expected is not None else args.get("kind"))


def test_a_reference_written_the_shells_way_is_a_reference() -> None:
    from tinyagent.run._repair import quoted_refs

    earlier = {1: Call(1, "agenda", {"day": "2027-10-14"})}
    from _helpers_tools import TEXT, openai_fn

    tools = ToolRegistry.from_openai([
        openai_fn("note_append", "Appends text to a note.", {"title": TEXT, "text": TEXT}, ["title", "text"]),
        openai_fn("agenda", "Lists a day's events.", {"day": TEXT}, ["day"])])
    call = Call(2, "note_append", {"title": "Daily log", "text": "$(1)"})
    fixed = quoted_refs(call, earlier, dict(tools.items()), "put my agenda in my Daily log note")
    assert fixed.args["text"] == Ref(1)
