"""A clause whose verb names a tool the plan never calls (tinyagent/run/_clauses.py): read from the tools' names'
words, on a made-up registry."""

from __future__ import annotations

import datetime as dt

import pytest
from _helpers_tools import TEXT, openai_fn

from tinyagent import Agent, ToolRegistry
from tinyagent._plan import Call, Ref
from tinyagent.models import ScriptedModel
from tinyagent.run._clauses import clause_verbs, same_target, unserved_clause, verb_tools

TODAY = dt.date(2026, 12, 1)
NUMBERS = {"type": "array", "items": {"type": "string"}, "description": "Destination phone numbers."}


def _tools() -> ToolRegistry:
    return ToolRegistry.from_openai([
        openai_fn("phonebook", "Finds a person's mobile number.", {"who": TEXT}, ["who"]),
        openai_fn("sms", "Sends an SMS to phone numbers.", {"to": NUMBERS, "body": TEXT}, ["to", "body"]),
        openai_fn("reminderAdd", "Adds a to-do item.", {"title": TEXT, "due": TEXT}, ["title"]),
        openai_fn("doc_summarize", "Summarizes a document.", {"path": TEXT}, ["path"]),
        openai_fn("calendar_add", "Adds an event to the calendar.", {"title": TEXT, "start": TEXT}, ["title", "start"]),
    ])


@pytest.mark.parametrize(("request_text", "verbs"), [
    ("Text Alex that I'm outside and remind me to pay the bill", ["text", "remind"]),
    ("Summarize the report, email it to Dana, and then remind me on Monday", ["summarize", "email", "remind"]),
    ("What's on today? Also remind me at 6", ["what", "remind"]),
])
def test_the_verbs_that_open_clauses(request_text: str, verbs: list[str]) -> None:
    assert clause_verbs(request_text) == verbs


def test_a_verb_names_the_tools_whose_names_say_it_and_a_generic_one_names_none() -> None:
    tools = _tools()
    assert verb_tools("remind", tools) == {"reminderAdd"}  # (camel case split)
    assert verb_tools("summarise", tools) == {"doc_summarize"}  # the first five letters
    assert verb_tools("add", tools) == frozenset()  # names many things
    assert verb_tools("text", tools) == frozenset()  # a channel: tinyagent.run._channels
    translate = {**tools, **ToolRegistry.from_openai([openai_fn("TranslateText", "Machine translation.",
                                                                {"sourceText": TEXT}, ["sourceText"])])}
    assert verb_tools("transit", translate) == frozenset()  # "trans" leaves two letters of "transit"
    assert verb_tools("translate", translate) == {"TranslateText"}


def test_after_a_verb_that_names_many_things_the_next_word_names_the_tool() -> None:
    tools = {**_tools(), **ToolRegistry.from_openai([openai_fn("video_room", "Opens a video room.", {"topic": TEXT},
                                                           ["topic"])])}
    event = [Call(1, "calendar_add", {"title": "Retro", "start": "2026-12-08 15:00"})]
    unserved = unserved_clause("Set up a video meeting called Retro on Tuesday at 3pm", tools, event)
    assert unserved is not None and unserved[1] == {"video_room"}
    assert unserved_clause("Set up a meeting called Retro on Tuesday at 3pm", tools, event) is None


def test_a_clause_no_step_serves() -> None:
    tools = _tools()
    texted = [Call(1, "phonebook", {"who": "Alex"}), Call(2, "sms", {"to": [Ref(1)], "body": "outside"})]
    request = "Text Alex that I'm outside and remind me to pay the bill next week"
    unserved = unserved_clause(request, tools, texted)
    assert unserved is not None and unserved[1] == {"reminderAdd"} and "remind" in unserved[0]
    assert unserved_clause(request, tools, [*texted, Call(3, "reminderAdd", {"title": "pay"})]) is None
    assert unserved_clause(request, tools, []) is None  # no plan: the no-tool decision's
    two = "Summarize the lease and remind me to pay the bill next week"  # two clauses name different tools
    assert unserved_clause(two, tools, []) is not None
    assert unserved_clause("Text Alex that the reminder app is down", tools, texted) is None


_RIGHT = ('1. phonebook(who="Alex")\n2. sms(to=[$1], body="outside")\n3. reminderAdd(title="Pay the bill")\n'
          '4. join()\n<END_OF_PLAN>')


@pytest.mark.parametrize(("first", "root"), [
    # the reminder went into the text: a reminder required
    ('1. phonebook(who="Alex")\n2. sms(to=[$1], body="outside and remind me to pay the bill")\n3. join()\n'
     '<END_OF_PLAN>', "root ::= step-1-need1"),
    # neither sent nor reminded: both groups required together
    ('1. phonebook(who="Alex")\n2. join()\n<END_OF_PLAN>', "root ::= step-1-need3"),
])
def test_an_unserved_clause_is_planned_again_with_its_tools_required(first: str, root: str) -> None:
    model = ScriptedModel([first, _RIGHT])
    result = Agent(tools=_tools(), model=model).plan_sync(
        "Text Alex that I'm outside and remind me to pay the bill", today=TODAY)
    assert [c.name for c in result.plan.calls] == ["phonebook", "sms", "reminderAdd"]
    assert "asks to remind" in model.requests[1].messages[-1]["content"]
    assert root in (model.requests[1].grammar or "")


def test_chat_shorthand_reads_as_the_verb_it_stands_for() -> None:
    assert clause_verbs("fwd the invoice to Grace pls, and sched a call") == ["forward", "schedule"]


def _mail_tools() -> ToolRegistry:
    match = {"type": "string", "description": "Words of the message's subject or sender."}
    return ToolRegistry.from_openai([
        openai_fn("forward", "Forwards a message to new recipients.", {"match": match, "to": {
            "type": "array", "items": {"type": "string"}, "description": "E-mail addresses."}}, ["match", "to"]),
        openai_fn("reply", "Replies to a message.", {"match": match, "body": TEXT}, ["match", "body"]),
        openai_fn("reminderAdd", "Adds a to-do item.", {"title": TEXT, "due": TEXT}, ["title"]),
        openai_fn("sms", "Sends an SMS to phone numbers.", {"to": NUMBERS, "body": TEXT}, ["to", "body"]),
    ])


def test_calls_act_on_the_same_thing_when_they_pass_the_same_text() -> None:
    forward = Call(1, "forward", {"match": "Coach Rivera", "to": ["mia@x.io"]})
    assert same_target(forward, Call(2, "reply", {"match": "coach rivera ", "body": "yes"}))
    assert not same_target(forward, Call(2, "reply", {"match": "Jun", "body": "yes"}))
    assert not same_target(Call(1, "agenda", {"day": "2026-04-16"}), Call(2, "event", {"start": "2026-04-16 13:00"}))
    assert same_target(Call(1, "post", {"subject": "Invoice #4471"}), Call(2, "forward", {"match": "invoice #4471"}))


def test_a_second_plan_that_swaps_a_kindred_tool_for_the_required_one_is_kept() -> None:
    """A forward for "Reply to ...", planned again with the reply required: the forward is what was wrong."""
    first = ('1. forward(match="Coach Rivera", to=["mia@x.io"])\n2. reminderAdd(title="Pack cleats")\n3. join()\n'
             '<END_OF_PLAN>')
    second = ('1. reply(match="Coach Rivera", body="Mia can make it")\n2. reminderAdd(title="Pack cleats")\n'
              '3. join()\n<END_OF_PLAN>')
    model = ScriptedModel([first, second])
    result = Agent(tools=_mail_tools(), model=model).plan_sync(
        "Reply to Coach Rivera's email saying Mia can make it, and remind me to pack her cleats", today=TODAY)
    assert [c.name for c in result.plan.calls] == ["reply", "reminderAdd"]


def test_a_verb_no_name_says_is_read_from_a_descriptions_nouns_of_action() -> None:
    tools = ToolRegistry.from_openai([
        openai_fn("calendar_add", "Creates an entry in the calendar and sends invitations to the attendees.",
                  {"title": TEXT}, ["title"]),
        openai_fn("contacts_lookup", "Finds a person in the address book.", {"who": TEXT}, ["who"]),
        openai_fn("agenda", "Returns every entry scheduled on a day.", {"day": TEXT}, ["day"]),
    ])
    assert verb_tools("invite", tools) == {"calendar_add"}  # "invitations"
    assert verb_tools("book", tools) == set() and verb_tools("schedule", tools) == set()  # not nouns of action
    assert verb_tools("invite", tools, by_name=True) == set()
    unserved = unserved_clause("Book lunch with Noor at 1pm and invite her", tools, [Call(1, "agenda", {})])
    assert unserved is not None and unserved[1] == {"calendar_add"}


def test_a_verb_names_the_tool_whose_name_says_the_same_act_in_other_words() -> None:
    """"remind me ..." and ``alerts_ping_schedule`` ("Pings the user's phone ... at a set moment"); "summarise the
    forecast" and ``drive_pdf_digest``: a timer planned for the reminder leaves the clause unserved."""
    tools = ToolRegistry.from_openai([
        openai_fn("alerts_ping_schedule", "Pings the user's phone with a short message at a set moment.",
                  {"msg": TEXT, "at": TEXT}, ["msg", "at"]),
        openai_fn("timer_countdown_start", "Countdown timer; rings when it reaches zero.",
                  {"mins": {"type": "number"}}, ["mins"]),
        openai_fn("drive_pdf_digest", "Condenses a PDF into a short summary.", {"fid": TEXT}, ["fid"]),
    ])
    assert verb_tools("remind", tools) == {"alerts_ping_schedule"}
    assert verb_tools("summarise", tools) == {"drive_pdf_digest"}
    note = unserved_clause("Remind me tonight at 9 to put the bins out.", tools,
                           [Call(1, "timer_countdown_start", {"mins": 180})])
    assert note is not None and note[1] == {"alerts_ping_schedule"}
    pinged = unserved_clause("What's the drive to Logan? And ping me Friday at 2:45 PM to head out.", tools,
                             [Call(1, "timer_countdown_start", {"mins": 180})])
    assert pinged is not None and pinged[1] == {"alerts_ping_schedule"}  # "ping me": a reminder, not a message


def test_answer_asks_for_a_reply_and_block_for_the_calendar() -> None:
    """"Answer message 88213-AF with 'Count me in', and block this Friday 7:30 PM ...": English verbs for the acts
    that vendors name "reply" and "calendar"."""
    tools = ToolRegistry.from_openai([
        openai_fn("email-thread-reply", "Sends a reply on an existing message thread.", {"msg_id": TEXT}, ["msg_id"]),
        openai_fn("calendar-event-create", "Adds an event.", {"title": TEXT}, ["title"]),
        openai_fn("videomeet-room-create", "Creates a meeting room.", {"title": TEXT}, ["title"]),
        openai_fn("calendar-day-list", "Lists the day's events.", {"day": TEXT}, ["day"]),
    ])
    assert verb_tools("answer", tools) == {"email-thread-reply"}
    assert verb_tools("block", tools) == {"calendar-event-create"}


def test_a_conditional_clause_still_asks_for_its_action() -> None:
    """"Any unread mail from the school? If so reply saying ..." asks for a reply."""
    from tinyagent.run._clauses import clause_verbs

    assert "reply" in clause_verbs("Any unread mail from the school? If so reply saying Milo is off sick.")
    assert "reply" in clause_verbs("Check for a mail from Ann, and if there is one, reply that I'm in.")


def test_an_idiom_asks_for_the_act_it_stands_for() -> None:
    """"how do you say ... in Portuguese" asks for a translation: a plan of a place search is planned again."""
    tools = ToolRegistry.from_openai([
        openai_fn("places_near", "Finds places nearby.", {"q": TEXT}, ["q"]),
        openai_fn("text_translate", "Translates text into another language.", {"text": TEXT, "to": TEXT},
                  ["text", "to"]),
    ])
    request = "how do you say where is the nearest train station in portuguese"
    unserved = unserved_clause(request, tools, [Call(1, "places_near", {"q": "train station"})])
    assert unserved is not None and unserved[1] == {"text_translate"}
    assert unserved_clause(request, tools, [Call(1, "text_translate", {"text": "x", "to": "pt"})]) is None


def test_a_search_near_a_place_and_a_question_about_a_named_thing_ask_for_their_tools() -> None:
    """"find a winery near Napa" asks for the tool that finds places near one (by its name or description), and
    "What's the weather ... this Saturday?" for the tool named for the weather; a route serves neither. The route
    "there" then goes to the place found, not to the area searched."""
    from tinyagent._plan import Plan
    from tinyagent.run._wiring import wire_results

    tools = ToolRegistry.from_openai([
        openai_fn("place-nearby-search", "Finds businesses around a location.", {"kind": TEXT, "near": TEXT},
                  ["kind", "near"]),
        openai_fn("route-get", "Turn-by-turn route between two places.", {"orig": TEXT, "dest": TEXT},
                  ["orig", "dest"]),
        openai_fn("weather-forecast-get", "Daily forecast for a place.", {"where": TEXT}, ["where"]),
    ])
    route = [Call(1, "route-get", {"orig": "San Francisco", "dest": "Napa"})]
    near = unserved_clause("find a winery near Napa and get me directions there from San Francisco", tools, route)
    assert near is not None and near[1] == {"place-nearby-search"}
    asked = unserved_clause("What's the weather going to be like in Portland this Saturday?", tools, route)
    assert asked is not None and asked[1] == {"weather-forecast-get"}
    assert unserved_clause("What's the route to Napa?", tools, route) is None
    request = "Is there a pharmacy near Elm Street? Get me transit directions to it from home."
    plan = Plan(calls=(Call(1, "place-nearby-search", {"kind": "pharmacy", "near": "Elm Street"}),
                       Call(2, "route-get", {"orig": "home", "dest": "Elm Street"})))
    wired, _ = wire_results(plan, tools, request, request)
    assert wired.calls[1].args["dest"] == Ref(1)
    spelled = "Find a pharmacy near Elm Street and get me directions to Elm Street."  # no word points back
    assert wire_results(plan, tools, spelled, spelled)[0].calls[1].args["dest"] == "Elm Street"
