"""New or existing items (tinyagent/run/_items.py) and lookups of the wrong kind (tinyagent/run/_lookups.py), read
from a registry's descriptions and schemas: a forward where the request asks for a new e-mail, a new note where it
points at an existing one, an e-mail lookup whose result goes to a text message's phone numbers."""

from __future__ import annotations

import asyncio
import datetime as dt
from dataclasses import replace
from pathlib import Path

import pytest
from _helpers_models import real_model_available
from _helpers_tools import TEXT, openai_fn

from tinyagent import Agent, AgentSettings, ToolRegistry
from tinyagent._plan import Call, Ref
from tinyagent.models import ScriptedModel
from tinyagent.run._items import (
    existing_kinds,
    item_problem,
    item_users,
    new_kinds,
    pointed_kinds,
    ruled_out_items,
    unattached_problem,
    unserved_item,
)
from tinyagent.run._lookups import lookup_kind, mismatched_refs, swap_lookups

TODAY = dt.date(2026, 12, 1)
ADDRESSES = {"type": "array", "items": {"type": "string"}, "description": "E-mail addresses of the recipients."}
NUMBERS = {"type": "array", "items": {"type": "string"}, "description": "Destination phone numbers."}


def _tools() -> ToolRegistry:
    return ToolRegistry.from_openai([
        openai_fn("find_address", "Finds a person's e-mail address.", {"who": TEXT}, ["who"]),
        openai_fn("find_mobile", "Finds a person's mobile number.", {"who": TEXT}, ["who"]),
        openai_fn("write_mail", "Composes a brand-new e-mail message and delivers it.",
            {"to": ADDRESSES, "subject": TEXT, "body": TEXT}, ["to", "subject", "body"]),
        openai_fn("pass_on", "Forwards an existing message from the inbox to new recipients.",
            {"match": TEXT, "to": ADDRESSES}, ["match", "to"]),
        openai_fn("buzz", "Sends a short message.", {"numbers": NUMBERS, "body": TEXT}, ["numbers", "body"]),
        openai_fn("jot", "Stores a new note. The user is asked before an existing note with that title is replaced.",
            {"title": TEXT, "body": TEXT}, ["title", "body"]),
        openai_fn("extend", "Appends text to an existing note.", {"title": TEXT, "body": TEXT}, ["title", "body"]),
        openai_fn("agenda", "Lists the events of a day.", {"day": TEXT}, ["day"]),
    ])


def test_kinds_come_from_the_first_sentence_of_a_description() -> None:
    tools = _tools()
    assert new_kinds(tools["write_mail"]) == {"message"} and not existing_kinds(tools["write_mail"])
    assert existing_kinds(tools["pass_on"]) == {"message"} and not new_kinds(tools["pass_on"])  # "new recipients"
    assert new_kinds(tools["jot"]) == {"note"} and not existing_kinds(tools["jot"])  # 2nd sentence: not what it does
    assert existing_kinds(tools["extend"]) == {"note"}
    assert not existing_kinds(tools["agenda"]) and not new_kinds(tools["agenda"])


@pytest.mark.parametrize(("request_text", "kinds"), [
    ("Send Sid the dinner on Friday email", {"message"}),
    ("Reply to Alex Chen's offsite agenda email saying yes", {"message"}),
    ("Add 'olive oil' to my Meeting notes note", {"note"}),
    ("Email Omar: the client call moved to Thursday", set()),  # "email" is the verb
    ("Send Alex the contents of my Gift ideas note by email", {"note"}),  # "by email" is the channel
    ("Send Bob the email address of Sid", set()),  # an address, not a message
    ("Write a new note titled Groceries", set()),
    ("Forward this message to Ann", {"message"}),
    ("send my landlord and the letting agent an email saying the leak is back", set()),  # "an email": a new one
])
def test_a_request_points_at_an_existing_item(request_text: str, kinds: set[str]) -> None:
    assert set(pointed_kinds(request_text)) == kinds


def test_the_wrong_one_of_new_and_existing_is_a_problem_when_an_offered_tool_is_the_right_one() -> None:
    tools = _tools()
    forward = Call(2, "pass_on", {"match": "client call", "to": [Ref(1)]})
    assert "write_mail makes a new one" in (item_problem(forward, tools, "Email Omar: the call moved") or "")
    assert item_problem(forward, tools, "Send Sid the dinner on Friday email") is None
    assert item_problem(forward, tools, "Forward the latest from HR to Sid") is None  # the request names it
    compose = Call(2, "write_mail", {"to": [Ref(1)], "subject": "x", "body": "y"})
    assert "pass_on acts on an existing one" in (item_problem(compose, tools, "Send Sid the dinner email") or "")
    assert item_problem(compose, tools, "Email Sid that dinner is at 8") is None
    assert "extend" in (item_problem(Call(1, "jot", {}), tools, "Add 'milk' to my Groceries note") or "")
    assert item_problem(Call(1, "jot", {}), tools, "Start a new note from my Groceries note") is None
    only_forward = {"pass_on": tools["pass_on"]}  # nothing else would do better
    assert item_problem(forward, only_forward, "Email Omar: the call moved") is None


def test_the_tools_a_request_rules_out() -> None:
    tools = _tools()
    assert ruled_out_items("Email Omar: the call moved to Thursday", tools) == {"pass_on", "extend"}
    assert ruled_out_items("Send Sid the dinner on Friday email", tools) == {"write_mail", "extend"}
    assert ruled_out_items("Add 'milk' to my Groceries note", tools) == {"pass_on", "jot"}
    assert "pass_on" not in ruled_out_items("fwd the 'Invoice #4471' email to Grace pls", tools)  # chat shorthand


def test_agent_plan_leaves_ruled_out_tools_out_of_the_grammar() -> None:
    plan = '1. find_address(who="Omar")\n2. write_mail(to=[$1], subject="Call", body="moved")\n3. join()\n<END_OF_PLAN>'
    model = ScriptedModel([plan])
    result = Agent(tools=_tools(), model=model).plan_sync("Email Omar: the call moved to Thursday", today=TODAY)
    assert [c.name for c in result.plan.calls] == ["find_address", "write_mail"]
    grammar = model.requests[0].grammar or ""
    assert '"pass_on("' not in grammar and '"write_mail("' in grammar
    off = ScriptedModel([plan])
    Agent(tools=_tools(), model=off, settings=AgentSettings(ruled_out_tools=False)).plan_sync(
        "Email Omar: the call moved to Thursday", today=TODAY)
    assert '"pass_on("' in (off.requests[0].grammar or "")


def test_a_forward_the_request_did_not_ask_for_is_planned_again_without_it() -> None:
    model = ScriptedModel([
        '1. find_address(who="Omar")\n2. pass_on(match="call", to=[$1])\n3. join()\n<END_OF_PLAN>',
        '1. find_address(who="Omar")\n2. write_mail(to=[$1], subject="Call", body="moved")\n3. join()\n<END_OF_PLAN>',
    ])
    agent = Agent(tools=_tools(), model=model, settings=AgentSettings(ruled_out_tools=False))
    result = agent.plan_sync("Email Omar: the call moved to Thursday", today=TODAY)
    assert [c.name for c in result.plan.calls] == ["find_address", "write_mail"]
    assert "acts on an existing message" in model.requests[1].messages[-1]["content"]
    assert '"pass_on("' not in (model.requests[1].grammar or "")


def test_the_tools_that_act_on_an_item_and_a_plan_that_acts_on_none() -> None:
    tools = _tools()
    assert item_users("note", tools) == {"extend"}  # (jot makes a new one)
    assert item_users("message", tools) == {"pass_on"}  # (find_address finds an e-mail *address*)
    lookup = [Call(1, "find_address", {"who": "Alex"}), Call(2, "write_mail", {"to": [Ref(1)], "subject": "x",
                                                                               "body": "y"})]
    unserved = unserved_item("Send Alex the contents of my Gift ideas note by email", tools, lookup)
    assert unserved is not None and unserved[1] == {"extend"} and "'the contents of my Gift ideas note'" in unserved[0]
    assert unserved_item("Send Alex my Gift ideas note", tools, [*lookup, Call(3, "extend", {})]) is None
    assert unserved_item("Text Liz: the note is on the fridge", tools, lookup) is None  # what the text says
    assert unserved_item("Email Alex that my note is ready", tools, lookup) is None
    assert unserved_item("What does my Gift ideas note say?", tools, lookup) is None  # a question
    assert unserved_item("Send Alex my Gift ideas note", tools, []) is None  # no plan: the no-tool decision's
    assert unserved_item("I need the email for Maria", tools, lookup[:1]) is None  # the address, looked up


def test_a_plan_that_skips_the_note_it_sends_is_planned_again_with_a_note_tool_required() -> None:
    model = ScriptedModel([
        '1. find_address(who="Alex")\n2. write_mail(to=[$1], subject="Gifts", body="ideas")\n3. join()\n<END_OF_PLAN>',
        '1. extend(title="Gift ideas", body="x")\n2. find_address(who="Alex")\n3. write_mail(to=[$2], subject="Gifts", '
        'body=$1)\n4. join()\n<END_OF_PLAN>',
    ])
    result = Agent(tools=_tools(), model=model).plan_sync("Send Alex the contents of my Gift ideas note by email",
                                                          today=TODAY)
    assert [c.name for c in result.plan.calls] == ["extend", "find_address", "write_mail"]
    assert "no step acts on it" in model.requests[1].messages[-1]["content"]
    assert "step-1-need" in (model.requests[1].grammar or "")


def test_lookup_kinds_come_from_descriptions_and_a_sender_is_no_lookup() -> None:
    tools = _tools()
    assert lookup_kind(tools["find_address"]) == "email" and lookup_kind(tools["find_mobile"]) == "phone"
    assert lookup_kind(tools["buzz"]) is None and lookup_kind(tools["agenda"]) is None


def test_a_lookup_whose_result_goes_to_the_other_kind_is_swapped() -> None:
    tools = _tools()
    calls = [Call(1, "find_address", {"who": "Jo"}), Call(2, "find_address", {"who": "Al"}),
             Call(3, "buzz", {"numbers": [Ref(1), Ref(2)], "body": "landed"})]
    swapped, notes = swap_lookups(calls, tools)
    assert [c.name for c in swapped] == ["find_mobile", "find_mobile", "buzz"] and len(notes) == 2
    right = [Call(1, "find_address", {"who": "Jo"}), Call(2, "write_mail", {"to": [Ref(1)], "subject": "s",
                                                                           "body": "b"})]
    assert swap_lookups(right, tools)[0] == right
    mixed = [*calls[:1], Call(2, "buzz", {"numbers": [Ref(1)], "body": "x"}),
             Call(3, "write_mail", {"to": [Ref(1)], "subject": "s", "body": "b"})]
    assert swap_lookups(mixed, tools)[0] == mixed  # used as both kinds: left alone
    problem = mismatched_refs(calls[2], {c.id: c for c in calls[:2]}, tools)
    assert problem is not None and "find_mobile finds those" in problem
    assert mismatched_refs(right[1], {1: right[0]}, tools) is None


def test_a_text_whose_plan_only_looks_up_is_planned_again_with_a_send_required() -> None:
    model = ScriptedModel([
        '1. find_address(who="Jo")\n2. join()\n<END_OF_PLAN>',
        '1. find_address(who="Jo")\n2. buzz(numbers=[$1], body="landed")\n3. join()\n<END_OF_PLAN>',
    ])
    result = Agent(tools=_tools(), model=model).plan_sync("Text Jo: landed", today=TODAY)
    assert [c.name for c in result.plan.calls] == ["find_mobile", "buzz"]  # and the lookup swapped
    assert "no step does" in model.requests[1].messages[-1]["content"]
    assert "root ::= step-1-need" in (model.requests[1].grammar or "")
    assert '"write_mail("' not in (model.requests[0].grammar or "")  # the other channel, ruled out from the start


def test_a_streamed_run_sends_the_text_its_first_plan_only_looked_up_for() -> None:
    model = ScriptedModel([
        '1. find_mobile(who="Jo")\n2. join()\n<END_OF_PLAN>',
        '2. buzz(numbers=[$1], body="landed")\n3. join()\n<END_OF_PLAN>',
        "Answer: sent",
    ])
    tools = _tools()
    runnable = ToolRegistry([replace(tools["find_mobile"], function=lambda who: "+1 415 555 0100"),
                             *(t for n, t in tools.items() if n != "find_mobile")])
    result = Agent(tools=runnable, model=model, confirm=lambda _: True).run_sync("Text Jo: landed", today=TODAY)
    assert [s.name for s in result.steps] == ["find_mobile", "buzz"]
    assert "no step does" in model.requests[1].messages[-1]["content"]
    assert "-need" in (model.requests[1].grammar or "")


def test_a_value_standing_for_a_missing_step_or_holding_plan_text_is_a_problem() -> None:
    from tinyagent.run._dangling import dangling_problem

    lookup = {1: Call(1, "find_address", {"who": "Kenji"})}
    assert "no step 2 before it" in (dangling_problem(Call(2, "write_mail", {"body": ">$2"}), lookup) or "")
    leaked = Call(2, "write_mail", {"body": '>$1. join() <END_OF_PLAN>**Note:** sent'})
    assert "plan text" in (dangling_problem(leaked, lookup) or "")
    for fine in ("lunch is $25", "$25", "see you at 5"):
        assert dangling_problem(Call(1, "write_mail", {"body": fine}), {}) is None


def test_agent_plan_plans_again_for_a_result_it_never_planned() -> None:
    model = ScriptedModel([
        '1. find_address(who="Kenji")\n2. write_mail(to=[$1], subject="Notes", body=">$2")\n3. join()\n<END_OF_PLAN>',
        '1. find_address(who="Kenji")\n2. write_mail(to=[$1], subject="Notes", body="the notes")\n3. join()\n'
        "<END_OF_PLAN>",
    ])
    result = Agent(tools=_tools(), model=model).plan_sync("Email Kenji my Meeting notes note", today=TODAY)
    assert result.plan.calls[1].args["body"] == "the notes"
    assert "no step 2 before it" in model.requests[1].messages[-1]["content"]


@pytest.mark.slow
@pytest.mark.skipif(not real_model_available("qwen2.5-coder-1.5b"), reason="qwen2.5-coder-1.5b is not installed")
def test_real_planner_new_or_existing_and_lookup_kinds_on_a_foreign_registry() -> None:
    """On the default GGUF over the disguised 23-tool registry: "Write an email to Omar: ..." was a forward and
    "Text Jordan and Omar: ..." two e-mail lookups and no text (PA proxy, session 17); now a new e-mail after the
    lookup, and phone lookups feeding the text."""
    from tinyagent.apps import load_tools
    from tinyagent.models import load_model

    registry = load_tools(str(Path(__file__).parents[1] / "benchmarks" / "data" / "pa_proxy" / "tools.json"))
    model = load_model("qwen2.5-coder-1.5b", n_threads=2)
    try:
        agent = Agent(tools=registry, model=model, auto_examples=False)
        mail = agent.plan_sync("Write an email to Omar: the client call moved to Thursday", today=TODAY).plan
        text = agent.plan_sync("Text Jordan and Omar: landed, see you soon", today=TODAY).plan
    finally:
        asyncio.run(model.aclose())
    makers = [t.name for t in registry.values() if new_kinds(t) == {"message"}]
    assert makers and [c.name for c in mail.calls][-1] in makers, mail
    from tinyagent.run._channels import senders

    assert senders([registry[text.calls[-1].name]]).get(text.calls[-1].name) == {"phone"}, text
    assert all(lookup_kind(registry[c.name]) == "phone" for c in text.calls[:-1]), text


def test_a_message_that_says_attached_but_attaches_nothing_is_planned_again() -> None:
    paths = {"type": "array", "items": {"type": "string"}, "description": "Files to attach."}
    tools = ToolRegistry.from_openai([openai_fn(
        "send_mail", "Composes a brand-new e-mail.", {"to": TEXT, "body": TEXT, "files": paths}, ["to", "body"])])
    bare = Call(2, "send_mail", {"to": Ref(1), "body": "Please find attached the signed NDA."})
    problem = unattached_problem(bare, tools, "Email Derek the signed NDA")
    assert problem is not None and "files" in problem
    attached = Call(2, "send_mail", {"to": Ref(1), "body": "Attached.", "files": ["nda.pdf"]})
    assert unattached_problem(attached, tools, "Email Derek the signed NDA") is None
    news = Call(2, "send_mail", {"to": Ref(1), "body": "The slides are ready; attached."})
    assert unattached_problem(news, tools, "Email Sydney that the slides are ready") is None  # sends news
    said = Call(2, "send_mail", {"to": Ref(1), "body": "Here it is."})
    assert unattached_problem(said, tools, "Email Derek the signed NDA") is None  # claims nothing


def test_a_request_for_a_new_note_is_planned_again_when_no_step_makes_one() -> None:
    from tinyagent.run._items import item_makers, unserved_new_item

    tools = ToolRegistry.from_openai([
        openai_fn("acme_new_note", "Create a note in the notebook.", {"title": TEXT, "text": TEXT}, ["title"]),
        openai_fn("acme_append_note", "Add text to the end of a note.", {"title": TEXT, "text": TEXT}, ["title"]),
        openai_fn("acme_summarize", "Summarize a document.", {"file": TEXT}, ["file"]),
    ])
    assert item_makers("note", tools) == {"acme_new_note"}
    summary = [Call(1, "acme_summarize", {"file": "handbook"})]
    missing = unserved_new_item("Summarise the handbook and keep the summary as a new note", tools, summary)
    assert missing is not None and missing[1] == {"acme_new_note"} and "'a new note'" in missing[0]
    made = [*summary, Call(2, "acme_new_note", {"title": "Handbook", "text": Ref(1)})]
    assert unserved_new_item("Summarise the handbook and keep the summary as a new note", tools, made) is None
    assert unserved_new_item("Summarise the handbook into my Reading note", tools, summary) is None  # (existing)


def test_a_sentence_that_sends_to_someone_is_planned_again_when_no_step_sends() -> None:
    from tinyagent.run._channels import unserved_channel

    tools = _tools()
    agenda = [Call(1, "agenda", {"day": "2026-12-02"})]
    note = unserved_channel("What have I got tomorrow? Send the rundown to my assistant Kai.", tools, agenda)
    assert note is not None and "no step does" in note
    assert unserved_channel("What have I got tomorrow?", tools, agenda) is None
    assert unserved_channel("What have I got tomorrow? Forward it to me.", tools, agenda) is None  # (no one else)
    sent = [*agenda, Call(2, "write_mail", {"to": ["kai@x.io"], "subject": "s", "body": Ref(1)})]
    assert unserved_channel("What have I got tomorrow? Send the rundown to my assistant Kai.", tools, sent) is None
