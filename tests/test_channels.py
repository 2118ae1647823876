"""The channel a request asks for (tinyagent/run/_channels.py): texts go by a tool that sends to phone numbers,
e-mails by one that sends to addresses, read from the registry's descriptions and schemas."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

import pytest
from _helpers_models import real_model_available

from tinyagent import Agent, ToolRegistry
from tinyagent._plan import Call
from tinyagent.models import ScriptedModel
from tinyagent.run._channels import (
    asked_channel,
    channel_clauses,
    channel_problem,
    channel_senders,
    echoed_messages,
    other_channel_senders,
    senders,
    unserved_channel,
)

TODAY = dt.date(2026, 12, 1)


def _tools() -> ToolRegistry:
    def fn(name: str, desc: str, props: dict[str, dict[str, object]], required: list[str]) -> dict[str, object]:
        return {"type": "function", "function": {"name": name, "description": desc, "parameters": {
            "type": "object", "properties": props, "required": required}}}

    text = {"type": "string"}
    return ToolRegistry.from_openai([
        fn("who_mail", "Finds a person's e-mail address.", {"who": text}, ["who"]),
        fn("who_phone", "Finds a person's mobile number.", {"who": text}, ["who"]),
        fn("post", "Composes a message and delivers it.",
           {"to": {"type": "array", "items": {"type": "string"}, "description": "E-mail addresses."}, "body": text},
           ["to", "body"]),
        fn("buzz", "Sends a short message.",
           {"numbers": {"type": "array", "items": {"type": "string"}, "description": "Destination phone numbers."},
            "body": text}, ["numbers", "body"]),
        fn("meet", "Creates an event and sends invitations.",
           {"title": text, "guests": {"type": "array", "items": {"type": "string"},
                                      "description": "E-mail addresses of the guests. Optional."}}, ["title"]),
    ])


def test_senders_come_from_descriptions_and_required_identifier_parameters() -> None:
    assert senders(_tools().values()) == {"post": frozenset({"email"}), "buzz": frozenset({"phone"})}
    # a description that never says "send": the name does ("Text message (SMS) to one mobile number.")
    quiet = ToolRegistry.from_openai([{"type": "function", "function": {
        "name": "sms-message-send", "description": "Text message (SMS) to one mobile number.", "parameters": {
            "type": "object", "properties": {"phone_no": {"type": "string", "description": "Destination phone number."},
                                             "msg_text": {"type": "string"}}, "required": ["phone_no", "msg_text"]}}}])
    assert senders(quiet.values()) == {"sms-message-send": frozenset({"phone"})}


@pytest.mark.parametrize(("request_text", "channel"), [
    ("Text Bob 'happy birthday!'", "phone"), ("Send Lucas a text: keys", "phone"), ("SMS Ann: landed", "phone"),
    ("Email Zoë that the draft is ready", "email"), ("Write to dev@example.net: late", "email"),
    ("Message 555-0142 that I'm late", "phone"), ("Message Alex: hi", None),
    ("Email Ann and text Bob", None), ("Open the text file", None),
    ("Schedule lunch on 2026-12-05 at 12:30", None), ("Invest 2000 in 12 funds", None),
    ("Send the summary to Walter by emial", "email"), ("eamil him the deck", "email"),  # typos
    ("Send my note to jo@x.io and text the same list to +44 7700 900123", None),  # sent to an address too
])
def test_the_channel_asked_for(request_text: str, channel: str | None) -> None:
    assert asked_channel(request_text) == channel


def test_a_call_by_the_other_channel_is_a_problem_unless_the_plan_already_sends_the_right_way() -> None:
    tools = _tools()
    mail = Call(2, "post", {"to": ["x"], "body": "hi"})
    assert "buzz" in (channel_problem(mail, {}, tools, "Text Bob hi") or "")
    assert channel_problem(mail, {1: Call(1, "buzz", {"numbers": ["1"], "body": "hi"})}, tools, "Text Bob hi") is None
    assert channel_problem(mail, {}, tools, "Email Bob hi") is None
    assert channel_problem(Call(1, "meet", {"title": "x"}), {}, tools, "Text Bob hi") is None  # not a sender


def test_an_empty_plan_is_unserved_only_for_a_request_to_send() -> None:
    tools = _tools()
    assert "buzz" in (unserved_channel("Text Bob 'happy birthday!'", tools) or "")
    assert unserved_channel("What's Bob's email address?", tools) is None
    assert unserved_channel("Hi there!", tools) is None
    both = "Text Victor that the review moved, and email him the deck too"
    assert "text message (to phone numbers) and an e-mail" in (unserved_channel(both, tools) or "")
    assert channel_senders(both, tools) == {"post", "buzz"}  # either will do for the grammar


def test_an_empty_plan_for_sending_a_thing_to_a_named_person_by_no_channel_is_unserved() -> None:
    tools = _tools()
    for request in ("Send the Q4 budget to Maria Garcia", "Forward the invoice to Grace please"):
        assert "send something to someone" in (unserved_channel(request, tools) or ""), request
        assert channel_senders(request, tools) == {"post", "buzz"}  # any sender
    for request in ("Send my regards to the team", "Can you send the deck to Tom?", "Translate 'hi' to Spanish"):
        assert unserved_channel(request, tools) is None, request
    # a plan whose steps send nothing leaves it unserved too; one that sends by either channel serves it
    assert "send something to someone" in (unserved_channel("Send the Q4 budget to Maria Garcia", tools, [
        Call(1, "meet", {"title": "x"})]) or "")
    assert unserved_channel("Send the Q4 budget to Maria Garcia", tools, [
        Call(1, "post", {"to": ["maria@x.io"], "body": "budget"})]) is None


def test_a_plan_that_sends_by_one_of_two_asked_channels_is_unserved_for_the_other() -> None:
    tools = _tools()
    both = "Text Victor that the review moved, and email him the deck too"
    mailed = [Call(1, "post", {"to": ["$1"], "body": "moved"})]
    assert "no step sends a text message" in (unserved_channel(both, tools, mailed) or "")
    assert channel_senders(both, tools, mailed) == {"buzz"}  # the grammar must now text
    sent = [*mailed, Call(2, "buzz", {"numbers": ["1"], "body": "moved"})]
    assert unserved_channel(both, tools, sent) is None
    assert unserved_channel("Email Ann the text of my note", tools, mailed) is None  # no clause texts
    met = [Call(1, "meet", {"title": "Lasagna"})]
    assert "buzz" in (unserved_channel("Pls send Carla the recipe by text", tools, met) or "")  # chat shorthand
    # "Send ... to an address" sends by e-mail though no word names the channel
    given = "Send my Packing list note to jo.lee@fastmail.com and text the same list to +44 7700 900123"
    texted = [Call(1, "buzz", {"numbers": ["+44 7700 900123"], "body": "list"})]
    assert "no step sends an e-mail" in (unserved_channel(given, tools, texted) or "")
    assert unserved_channel("Text the same list to +44 7700 900123", tools, texted) is None
    assert other_channel_senders(given, tools) == frozenset()  # so the replan's grammar may e-mail
    # a polite request is no question: "Could you email ... and text ...?", "... to Priyanka? email it to her too"
    polite = "Could you email Ana and text Bo that dinner's pushed to 8? Thanks!"
    assert "no step sends an e-mail" in (unserved_channel(polite, tools, texted) or "")
    later = "can u check my calender and text the list to Priyanka? email it to her as well"
    assert "no step sends an e-mail" in (unserved_channel(later, tools, texted) or "")
    assert unserved_channel("Can I text Bo from here?", tools, []) is None  # a question


def test_a_need_left_by_the_second_plan_is_planned_for_once_more_and_merged() -> None:
    """Nothing sent: both channels asked for; the second plan e-mails only: the text is asked for alone; the third
    plan texts only, and joins the e-mail it dropped."""
    model = ScriptedModel([
        '1. meet(title="Review")\n2. join()\n<END_OF_PLAN>',
        '1. who_mail(who="Victor")\n2. post(to=[$1], body="Here is the deck.")\n3. join()\n<END_OF_PLAN>',
        '1. who_phone(who="Victor")\n2. buzz(numbers=[$1], body="The review moved.")\n3. join()\n<END_OF_PLAN>',
    ])
    result = Agent(tools=_tools(), model=model).plan_sync(
        "Text Victor that the review moved, and email him the deck too", today=TODAY)
    assert [c.name for c in result.plan.calls] == ["meet", "who_mail", "post", "who_phone", "buzz"]  # none lost
    assert len(model.requests) == 3 and "root ::= step-1-need1" in (model.requests[2].grammar or "")
    again = ScriptedModel(['1. who_mail(who="Victor")\n2. post(to=[$1], body="deck")\n3. join()\n<END_OF_PLAN>'] * 3)
    Agent(tools=_tools(), model=again).plan_sync("Text Victor that it moved, and email him the deck", today=TODAY)
    assert len(again.requests) == 2  # the same need again: not planned a third time


def test_agent_plan_replans_a_text_sent_as_an_email() -> None:
    model = ScriptedModel([
        '1. who_mail(who="Bob")\n2. post(to=[$1], body="happy birthday!")\n3. join()\n<END_OF_PLAN>',
        '1. who_phone(who="Bob")\n2. buzz(numbers=[$1], body="happy birthday!")\n3. join()\n<END_OF_PLAN>'])
    result = Agent(tools=_tools(), model=model).plan_sync("Text Bob 'happy birthday!'", today=TODAY)
    assert [c.name for c in result.plan.calls] == ["who_phone", "buzz"]
    assert "sends to e-mail addresses" in model.requests[1].messages[-1]["content"]


def test_agent_plan_replans_an_empty_plan_for_a_request_to_send() -> None:
    model = ScriptedModel(['1. join()\n<END_OF_PLAN>',
                           '1. who_phone(who="Bob")\n2. buzz(numbers=[$1], body="hi")\n3. join()\n<END_OF_PLAN>'])
    result = Agent(tools=_tools(), model=model).plan_sync("Text Bob hi", today=TODAY)
    assert [c.name for c in result.plan.calls] == ["who_phone", "buzz"]


def test_an_empty_plan_for_small_talk_is_not_planned_again() -> None:
    model = ScriptedModel(['1. join()\n<END_OF_PLAN>'])
    result = Agent(tools=_tools(), model=model).plan_sync("Thanks, that's all!", today=TODAY)
    assert result.plan.calls == ()
    assert len(model.requests) == 1


def test_a_streamed_run_replans_an_empty_plan_for_a_request_to_send() -> None:
    model = ScriptedModel(['1. join()\n<END_OF_PLAN>',
                           '1. buzz(numbers=["+1 415 555 0100"], body="hi")\n2. join()\n<END_OF_PLAN>', "Sent."])
    result = Agent(tools=_tools(), model=model, confirm=lambda _: True).run_sync("Text +1 415 555 0100 hi",
                                                                                today=TODAY)
    assert [s.name for s in result.steps] == ["buzz"]
    assert result.replans == 1
    assert "sends that" in model.requests[1].messages[-1]["content"]


def test_a_refused_plan_for_a_request_to_send_is_planned_again(monkeypatch: pytest.MonkeyPatch) -> None:
    import tinyagent.run._agent as agent_module
    from tinyagent._events import NoToolCheck

    async def refuse(*args: object, **kwargs: object) -> NoToolCheck:
        return NoToolCheck(probability=0.9, refused=True)

    monkeypatch.setattr(agent_module, "check_no_tool", refuse)
    model = ScriptedModel(['1. who_mail(who="Jo")\n2. post(to=[$1], body="landed")\n3. join()\n<END_OF_PLAN>',
                           '1. who_phone(who="Jo")\n2. buzz(numbers=[$1], body="landed")\n3. join()\n<END_OF_PLAN>'])
    result = Agent(tools=_tools(), model=model).plan_sync("Text Jo: landed", today=TODAY)
    assert [c.name for c in result.plan.calls] == ["who_phone", "buzz"]
    refused_small_talk = ScriptedModel(['1. post(to=["a@b.io"], body="hi")\n2. join()\n<END_OF_PLAN>'])
    assert Agent(tools=_tools(), model=refused_small_talk).plan_sync("Hi there!", today=TODAY).plan.calls == ()


@pytest.mark.slow
@pytest.mark.skipif(not real_model_available("qwen2.5-coder-1.5b"), reason="qwen2.5-coder-1.5b is not installed")
def test_real_planner_texts_by_the_tool_that_sends_to_phone_numbers() -> None:
    """On the default GGUF over the disguised 23-tool registry: "Text Bob ..." got ``1. join()`` (P(join) 0.26 won
    against tools that split the rest) before the channel check; now the plan sends by the phone-number tool."""
    from tinyagent.apps import load_tools
    from tinyagent.models import load_model

    registry = load_tools(str(Path(__file__).parents[1] / "benchmarks" / "data" / "pa_proxy" / "tools.json"))
    phone = [name for name, kinds in senders(registry.values()).items() if kinds == {"phone"}]
    model = load_model("qwen2.5-coder-1.5b", n_threads=2)
    try:
        plan = Agent(tools=registry, model=model, auto_examples=False).plan_sync(
            "Text Bob 'happy birthday!'", today=TODAY).plan
    finally:
        asyncio.run(model.aclose())
    assert phone and any(c.name in phone for c in plan.calls), plan


def test_a_second_message_that_says_what_the_other_channel_is_asked_for_goes() -> None:
    from tinyagent._plan import Plan, Ref
    from tinyagent.run._borrowed import drop_echoed_messages

    request = "Text Victor that the review moved to 4pm, and email him the updated pitch deck too."
    assert channel_clauses(request) == {"phone": [" Victor that the review moved to 4pm, "],
                                        "email": [" him the updated pitch deck too."]}
    plan = Plan(calls=(Call(1, "who_mail", {"who": "Victor"}),
                       Call(2, "post", {"to": [Ref(1)], "body": "The review moved to 4pm."}),
                       Call(3, "post", {"to": [Ref(1)], "body": "Here is the updated pitch deck."}),
                       Call(4, "who_phone", {"who": "Victor"}),
                       Call(5, "buzz", {"numbers": [Ref(4)], "body": "The review moved to 4pm."})))
    assert echoed_messages(plan.calls, _tools(), request) == {2}
    kept, notes = drop_echoed_messages(plan, _tools(), request)
    assert [c.name for c in kept.calls] == ["who_mail", "post", "who_phone", "buzz"] and notes
    # one message per clause, or to other people, or one channel only: nothing goes
    assert echoed_messages(plan.calls[:2] + plan.calls[3:], _tools(), request) == set()
    other = Plan(calls=(*plan.calls[:2], Call(3, "post", {"to": ["ann@x.io"], "body": "deck"}), *plan.calls[3:]))
    assert echoed_messages(other.calls, _tools(), request) == set()
    assert echoed_messages(plan.calls, _tools(), "Email Victor that the review moved, and the deck") == set()


def test_let_someone_know_by_a_channel_is_a_request_to_send() -> None:
    from _helpers_tools import TEXT, openai_fn

    from tinyagent import ToolRegistry
    from tinyagent._plan import Call
    from tinyagent.run._channels import unserved_channel

    numbers = {"type": "array", "items": {"type": "string"}, "description": "Recipient phone numbers."}
    tools = ToolRegistry.from_openai([
        openai_fn("phone.sendText", "Send an SMS.", {"numbers": numbers, "msg": TEXT}, ["numbers", "msg"]),
        openai_fn("remind.set", "Schedules a reminder.", {"what": TEXT}, ["what"])])
    reminded = [Call(1, "remind.set", {"what": "Practice is cancelled tonight"})]
    unserved = unserved_channel("Practice is cancelled tonight. Let Dariusz know by text.", tools, reminded)
    assert unserved is not None and "phone.sendText" in unserved
    assert unserved_channel("Remind me to let Dariusz know", tools, reminded) is None  # no channel asked


def test_a_note_to_the_user_is_no_request_to_send() -> None:
    """"ping me at 7pm to pack" is a reminder: a plan that reads "Hanna's email" and replies to it sends nothing by
    e-mail and leaves nothing unserved."""
    request = "Dig out Hanna's email about the offsite and reply that I'm in, and ping me at 7pm to pack"
    assert unserved_channel(request, _tools(), [Call(1, "meet", {"title": "Offsite"})]) is None
    assert unserved_channel("Dig out the offsite email and ping Hanna that I'm in", _tools(),
                            [Call(1, "meet", {"title": "Offsite"})]) is not None


@pytest.mark.parametrize(("request_text", "calls", "unserved"), [
    ("Let Oliver and Grace know by text that the barbecue moved", [Call(1, "who_phone", {"who": "Oliver"})], True),
    ("Grab Ingrid's details and both text and email her that the keys are under the mat",
     [Call(1, "who_mail", {"who": "Ingrid"}), Call(2, "post", {"to": ["$1"], "body": "Keys"})], True),
    ("Grab Ingrid's details and email her that the keys are under the mat",
     [Call(1, "who_mail", {"who": "Ingrid"}), Call(2, "post", {"to": ["$1"], "body": "Keys"})], False),
])
def test_letting_several_people_know_and_both_channels_are_requests_to_send(request_text: str, calls: list[Call],
                                                                             unserved: bool) -> None:
    assert (unserved_channel(request_text, _tools(), calls) is not None) is unserved
