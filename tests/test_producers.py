"""The missing step a made-up value needs, written into the plan (tinyagent/run/_producers.py), and values that
hold plan text made what they meant (tinyagent/run/_dangling.py). Read from a registry's descriptions and schemas,
never from tool names: the registry here is made up for the tests."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest
from _helpers_models import real_model_available
from _helpers_tools import TEXT, openai_fn

from tinyagent import Agent, AgentSettings, ToolRegistry
from tinyagent._plan import Call, Plan, Ref
from tinyagent.errors import PlanValidationError
from tinyagent.models import ScriptedModel
from tinyagent.run._clauses import named_clauses, verb_tools
from tinyagent.run._dangling import cut_plan_text, dangling_problem, hoist_named_steps
from tinyagent.run._producers import (
    dropped_actions,
    insert_producers,
    merge_lookups,
    merge_served,
    name_in_request,
    terms_in_request,
)

TODAY = dt.date(2026, 12, 1)
ADDRESSES = {"type": "array", "items": {"type": "string"}, "description": "E-mail addresses of the recipients."}
INVITEES = {"type": "array", "items": {"type": "string"}, "description": "E-mail addresses to invite. Optional."}
CC = {"type": "array", "items": {"type": "string"}, "description": "E-mail addresses for the Cc: field. Optional."}
FILES = {"type": "array", "items": {"type": "string"},
         "description": "Paths of files to attach, as returned by find_doc. Optional."}


def _tools() -> ToolRegistry:
    return ToolRegistry.from_openai([
        openai_fn("who_is", "Finds a person's e-mail address in the address book.", {"person": TEXT}, ["person"]),
        openai_fn("find_doc", "Searches the user's documents. Returns the path of the best match.", {"words": TEXT},
            ["words"]),
        openai_fn("post", "Composes a new e-mail and delivers it.",
            {"to": ADDRESSES, "subject": TEXT, "body": TEXT, "cc": CC, "files": FILES}, ["to", "subject", "body"]),
        openai_fn("book", "Adds an event to the calendar.", {"title": TEXT, "start": TEXT, "guests": INVITEES},
            ["title", "start"]),
    ])


@pytest.mark.parametrize(("value", "request_text", "name"), [
    ("priya@example.com", "Email Priya the notes from today's standup", "Priya"),
    ("alexkim@example.com", "Send Alex Kim the contents of my Gift ideas note", "Alex Kim"),
    ("alex.chen@corp.io", "Reply to Alex Chen's offsite agenda email", "Alex Chen"),
    ("zoe@x.io", "Please mail Zoë the menu", "Zoë"),
    ("your_email@example.com", "Email Priya the notes", None),  # no name in it
    ("bob@x.io", "Email Bob and Bob's brother Bobby", "Bob"),
    ("sam@x.io", "Email Sam and Sam Lee the plan", None),  # two names fit: which one is not known
    ("email@x.io", "Email the team", None),  # the sentence's opening word is no name
])
def test_a_made_up_address_is_read_back_to_the_name_it_was_built_from(value: str, request_text: str,
                                                                        name: str | None) -> None:
    assert name_in_request(value, request_text) == name


@pytest.mark.parametrize(("value", "request_text", "terms"), [
    ("trip_itinerary.pdf", "Attach the trip itinerary and email it to Nina", "trip itinerary"),
    ("/home/me/Docs/Q4_budget.xlsx", "Send the Q4 budget to Maria Garcia", "Q4 budget"),
    ("report.pdf", "Send the Q4 budget to Maria", None),  # words the request does not say
])
def test_a_made_up_file_name_is_read_back_to_the_requests_words(value: str, request_text: str,
                                                                 terms: str | None) -> None:
    assert terms_in_request(value, request_text) == terms


def test_the_lookup_and_the_source_are_written_in_before_the_call() -> None:
    tools = _tools()
    request = "Attach the trip itinerary and email it to Nina"
    plan = Plan(calls=(Call(1, "post", {"to": ["nina@example.com"], "subject": "Trip", "body": "Here it is.",
                                        "files": ["trip_itinerary.pdf"]}),))
    fixed, notes = insert_producers(plan, tools, request, request)
    assert [c.name for c in fixed.calls] == ["who_is", "find_doc", "post"]
    assert fixed.calls[0].args == {"person": "Nina"} and fixed.calls[1].args == {"words": "trip itinerary"}
    assert fixed.calls[2].args["to"] == [Ref(1)] and fixed.calls[2].args["files"] == [Ref(2)]
    assert len(notes) == 2 and "nina@example.com" in notes[0]


def test_later_references_follow_the_new_numbers_and_a_made_up_optional_goes() -> None:
    tools = _tools()
    request = "Email Priya the plan and book a sync tomorrow at 10"
    plan = Plan(calls=(
        Call(1, "post", {"to": ["priya@example.com"], "subject": "Plan", "body": "The plan."}),
        Call(2, "book", {"title": "Sync", "start": "2026-12-02 10:00", "guests": ["me@example.com"]}),
        Call(3, "post", {"to": [Ref(1)], "subject": "x", "body": "y"}),
    ))
    fixed, _ = insert_producers(plan, tools, request, request)
    assert [c.name for c in fixed.calls] == ["who_is", "post", "book", "post"]
    assert "guests" not in fixed.calls[2].args  # made up, no name in it, optional: the tool's default
    assert fixed.calls[3].args["to"] == [Ref(2)]


def test_what_the_request_gives_or_cannot_explain_stays() -> None:
    tools = _tools()
    request = "Email nina@corp.io and the team the plan"
    plan = Plan(calls=(Call(1, "post", {"to": ["nina@corp.io", "team@corp.io"], "subject": "s", "body": "b"}),))
    fixed, notes = insert_producers(plan, tools, request, request)
    assert fixed == plan and not notes  # required and no name: left for the planner to be told


def test_a_lookup_the_plan_already_has_is_passed_again() -> None:
    tools = _tools()
    request = "Email Kenji that the call moved, and cc Nina"
    plan = Plan(calls=(Call(1, "who_is", {"person": "Kenji"}), Call(2, "who_is", {"person": "Nina"}),
                       Call(3, "post", {"to": [Ref(1), Ref(2)], "subject": "s", "body": "b",
                                        "cc": ["nina@example.com"]})))
    fixed, _ = insert_producers(plan, tools, request, request)
    assert [c.name for c in fixed.calls] == ["who_is", "who_is", "post"]
    assert fixed.calls[2].args["cc"] == [Ref(2)]


def test_the_same_lookup_is_written_once() -> None:
    tools = _tools()
    request = "Email Omar the notes and invite Omar to the review on Friday at 3pm"
    plan = Plan(calls=(Call(1, "post", {"to": ["omar@x.com"], "subject": "s", "body": "b"}),
                       Call(2, "book", {"title": "Review", "start": "2026-12-04 15:00", "guests": ["omar@x.com"]})))
    fixed, _ = insert_producers(plan, tools, request, request)
    assert [c.name for c in fixed.calls] == ["who_is", "post", "book"]
    assert fixed.calls[2].args["guests"] == [Ref(1)]


def test_a_second_plan_that_answered_only_the_reason_gives_its_lookups_to_the_first() -> None:
    tools = _tools()
    request = "Make a doc for the retro and email it to my cousins"
    first = Plan(calls=(Call(1, "find_doc", {"words": "retro"}),
                        Call(2, "post", {"to": ["a@x.io", "b@x.io"], "subject": "Retro", "body": "b",
                                         "files": [Ref(1)]})))
    second = Plan(calls=(Call(1, "who_is", {"person": "Leo"}), Call(2, "who_is", {"person": "Sofia"})))
    assert dropped_actions(first, second, tools, frozenset()) == ["find_doc", "post"]
    assert dropped_actions(first, second, tools, frozenset({"find_doc", "post"})) == []  # ruled out: meant
    merged = merge_lookups(first, second, tools, request)
    assert merged is not None
    assert [c.name for c in merged.calls] == ["who_is", "who_is", "find_doc", "post"]
    assert merged.calls[3].args["to"] == [Ref(1), Ref(2)] and merged.calls[3].args["files"] == [Ref(3)]
    one = Plan(calls=(Call(1, "who_is", {"person": "Leo"}),))
    assert merge_lookups(first, one, tools, request) is None  # two made up, one found: which is which?


def test_the_agent_keeps_the_first_plan_when_the_second_lost_its_actions() -> None:
    first = ('1. find_doc(words="retro")\n2. post(to=["a@x.io"], subject="Retro", body="b", files=[$1])\n'
             '3. join()\n<END_OF_PLAN>')
    second = '1. who_is(person="Leo")\n2. join()\n<END_OF_PLAN>'
    result = Agent(_tools(), ScriptedModel([first, second])).plan_sync("Send Leo the retro doc", today=TODAY)
    assert [c.name for c in result.plan.calls] == ["who_is", "find_doc", "post"]
    assert result.plan.calls[2].args["to"] == [Ref(1)]


@pytest.mark.parametrize(("value", "meant"), [
    (">$1. join() <END_OF_PLAN>**Note:** The note was sent.", Ref(1)),
    (">$1", Ref(1)),
    ("[$1]", Ref(1)),
    ("][$1]", Ref(1)),
    ("][$1], words=1000)  # Adjust the word count as needed", Ref(1)),
    ("$1) (the summary)", Ref(1)),
    ("$1 is the total", "$1 is the total"),
    ("Here are the notes. join() <END_OF_PLAN>", "Here are the notes."),
    ("lunch is $25", "lunch is $25"),
])
def test_a_value_with_plan_text_is_what_it_opens_with(value: str, meant: object) -> None:
    earlier = {1: Call(1, "who_is", {"person": "Kenji"})}
    fixed = cut_plan_text(Call(2, "post", {"to": [Ref(1)], "subject": "s", "body": value}), earlier)
    assert fixed.args["body"] == meant
    assert dangling_problem(fixed, earlier) is None


def test_plan_text_with_no_sense_to_keep_is_still_refused() -> None:
    earlier = {1: Call(1, "who_is", {"person": "Kenji"})}
    call = cut_plan_text(Call(2, "post", {"to": [Ref(1)], "subject": "s", "body": ">$7 join()"}), earlier)
    assert dangling_problem(call, earlier) is not None


def test_the_agent_writes_the_lookup_in_when_planning_again_made_the_address_up_again() -> None:
    plan = ('1. post(to=["priya@example.com"], subject="Notes", body="The notes.")\n2. join()\n<END_OF_PLAN>')
    model = ScriptedModel([plan, plan])
    agent = Agent(_tools(), model)
    result = agent.plan_sync("Email Priya the notes", today=TODAY)
    assert [c.name for c in result.plan.calls] == ["who_is", "post"]
    assert result.plan.calls[1].args["to"] == [Ref(1)]
    assert len(model.requests) == 2  # told why first

    off = Agent(_tools(), ScriptedModel([plan, plan]), settings=AgentSettings(last_plan_repairs=False))
    assert [c.name for c in off.plan_sync("Email Priya the notes", today=TODAY).plan.calls] == ["post"]


@pytest.mark.slow
@pytest.mark.skipif(not real_model_available("qwen2.5-coder-1.5b"), reason="needs the 1.5B GGUF")
def test_real_planner_gets_the_lookup_for_a_name() -> None:
    from tinyagent.apps import load_model_spec

    model = load_model_spec("qwen2.5-coder-1.5b", threads=2)
    try:
        agent = Agent(_tools(), model)  # (the 1.5B also calls the document search, passing its path as "to")
        result = asyncio.run(agent.plan("Email Priya that the build is green again", today=TODAY))
        names = [c.name for c in result.plan.calls]
        assert names[-1] == "post" and "who_is" in names
        post = result.plan.calls[-1]
        assert post.args["to"] == [Ref(names.index("who_is") + 1)]
    finally:
        asyncio.run(model.aclose())


def test_a_made_up_attachment_gets_the_one_tool_that_returns_a_path() -> None:
    """No parameter names its source here: the one tool whose description says it returns a path, with one text
    argument, gives it; with two such tools, neither is guessed."""
    attach = {"type": "array", "items": {"type": "string"}, "description": "Local paths of files to attach."}
    reply = openai_fn("answer", "Replies to a message.", {"about": TEXT, "body": TEXT, "files": attach},
                      ["about", "body"])
    finder = openai_fn("find_doc", "Searches documents. Returns the absolute path of the best match.",
                       {"words": TEXT}, ["words"])
    request = "Reply to Hannah about the deposit and attach the signed contract"
    plan = Plan(calls=(Call(1, "answer", {"about": "Hannah", "body": "Paid.", "files": ["signed_contract.pdf"]}),))
    fixed, notes = insert_producers(plan, ToolRegistry.from_openai([reply, finder]), request, request)
    assert [c.name for c in fixed.calls] == ["find_doc", "answer"] and notes
    assert fixed.calls[0].args == {"words": "signed contract"} and fixed.calls[1].args["files"] == [Ref(1)]
    other = openai_fn("find_pic", "Searches photos. Returns the path of the best match.", {"words": TEXT}, ["words"])
    two = ToolRegistry.from_openai([reply, finder, other])
    assert [c.name for c in insert_producers(plan, two, request, request)[0].calls] == ["answer"]


def test_an_empty_path_gets_the_source_called_with_what_the_clause_acts_on() -> None:
    path = {"type": "string", "description": "The file path, as returned by find_doc."}
    tools = ToolRegistry.from_openai([
        openai_fn("find_doc", "Searches documents. Returns the path of the best match.", {"words": TEXT}, ["words"]),
        openai_fn("pdf_summarize", "Summarizes a PDF.", {"file_path": path}, ["file_path"]),
        openai_fn("new_note", "Stores a new note.", {"title": TEXT, "text": TEXT}, ["title", "text"]),
    ])
    request = "Summarize the car insurance policy and save the summary as a new note titled Insurance summary."
    plan = Plan(calls=(Call(1, "pdf_summarize", {"file_path": ""}),
                       Call(2, "new_note", {"title": "Insurance summary", "text": Ref(1)})))
    fixed, notes = insert_producers(plan, tools, request, request)
    assert [c.name for c in fixed.calls] == ["find_doc", "pdf_summarize", "new_note"] and notes
    assert fixed.calls[0].args == {"words": "car insurance policy"} and fixed.calls[2].args["text"] == Ref(2)
    unnamed = "Save the summary as a new note titled Insurance summary."  # no clause names the summarizer
    assert insert_producers(plan, tools, unnamed, unnamed)[0] == plan


def test_a_made_up_recipient_beside_a_given_one_leaves_the_list() -> None:
    tools = _tools()
    request = "Send the plan to jordan.lee@fastmail.com and text it to +44 7700 900123"
    plan = Plan(calls=(Call(1, "post", {"to": ["jordan.lee@fastmail.com", "+447700900123@twilio.com"],
                                        "subject": "Plan", "body": "The plan."}),))
    fixed, notes = insert_producers(plan, tools, request, request)
    assert fixed.calls[0].args["to"] == ["jordan.lee@fastmail.com"] and notes
    alone = Plan(calls=(Call(1, "post", {"to": ["+447700900123@twilio.com"], "subject": "Plan", "body": "x"}),))
    assert insert_producers(alone, tools, request, request)[0] == alone  # nothing would be left to send to


def test_what_the_second_plan_added_for_an_unserved_clause_joins_the_first() -> None:
    """Told that no step reminds, the planner wrote a reminder for every clause and dropped the text message: the
    first plan stays, with the reminder that matches the remind clause, and that clause cut from the message."""
    numbers = {"type": "array", "items": {"type": "string"}, "description": "Destination phone numbers."}
    tools = ToolRegistry.from_openai([
        openai_fn("phonebook", "Finds a person's mobile number.", {"who": TEXT}, ["who"]),
        openai_fn("buzz", "Sends an SMS.", {"to": numbers, "body": TEXT}, ["to", "body"]),
        openai_fn("reminderAdd", "Adds a to-do item.", {"title": TEXT, "due": TEXT}, ["title"]),
    ])
    request = "Text Ines that dinner's at 8 and to bring wine, and remind me to buy dessert at 5pm."
    first = Plan(calls=(Call(1, "phonebook", {"who": "Ines"}), Call(2, "buzz", {
        "to": [Ref(1)], "body": "Dinner's at 8 and to bring wine, and remind me to buy dessert at 5pm"})))
    second = Plan(calls=(Call(1, "reminderAdd", {"title": "Dinner at 8"}), Call(2, "reminderAdd", {
        "title": "Bring wine"}), Call(3, "reminderAdd", {"title": "Buy dessert", "due": "17:00"})))
    group = verb_tools("remind", tools)
    named = named_clauses(request, tools)
    assert (group, "remind me to buy dessert at 5pm") in named
    merged = merge_served(first, second, [group], named)
    assert merged is not None
    assert [c.name for c in merged.calls] == ["phonebook", "buzz", "reminderAdd"]
    assert merged.calls[1].args["body"] == "Dinner's at 8 and to bring wine"
    assert merged.calls[2].args == {"title": "Buy dessert", "due": "17:00"}
    assert merge_served(first, first, [group]) is None  # nothing added


def test_a_merged_call_loses_the_words_of_a_clause_another_call_serves() -> None:
    """The first plan reminded; the second texted everything: the text keeps its own clause only."""
    numbers = {"type": "array", "items": {"type": "string"}, "description": "Destination phone numbers."}
    tools = ToolRegistry.from_openai([
        openai_fn("phonebook", "Finds a person's mobile number.", {"who": TEXT}, ["who"]),
        openai_fn("buzz", "Sends an SMS.", {"to": numbers, "body": TEXT}, ["to", "body"]),
        openai_fn("reminderAdd", "Adds a to-do item.", {"title": TEXT}, ["title"]),
    ])
    request = "Text Alex that I'm outside and remind me to pay the bill next week"
    first = Plan(calls=(Call(1, "reminderAdd", {"title": "Pay the bill"}),))
    second = Plan(calls=(Call(1, "phonebook", {"who": "Alex"}), Call(2, "buzz", {
        "to": [Ref(1)], "body": "I'm outside and remind me to pay the bill next week"})))
    merged = merge_served(first, second, [frozenset({"buzz"})], named_clauses(request, tools))
    assert merged is not None and [c.name for c in merged.calls] == ["reminderAdd", "phonebook", "buzz"]
    assert merged.calls[2].args == {"to": [Ref(2)], "body": "I'm outside"}


def test_a_made_up_number_gets_the_lookup_of_the_requests_one_name() -> None:
    numbers = {"type": "array", "items": {"type": "string"}, "description": "Destination phone numbers."}
    tools = ToolRegistry.from_openai([
        openai_fn("phonebook", "Finds a person's mobile number.", {"who": TEXT}, ["who"]),
        openai_fn("buzz", "Sends an SMS.", {"to": numbers, "body": TEXT}, ["to", "body"]),
    ])
    plan = Plan(calls=(Call(1, "buzz", {"to": ["+1234567890"], "body": "The review moved."}),))
    request = "Text Victor that the review moved to 4pm"
    fixed, notes = insert_producers(plan, tools, request, request)
    assert fixed.calls[0] == Call(1, "phonebook", {"who": "Victor"}) and fixed.calls[1].args["to"] == [Ref(1)]
    two = "Text Victor and Ana that the review moved"  # whose number it is is not known
    assert insert_producers(plan, tools, two, two)[0] == plan


def test_made_up_numbers_for_a_list_of_people_get_their_lookups_in_order() -> None:
    numbers = {"type": "array", "items": {"type": "string"}, "description": "Destination phone numbers."}
    tools = ToolRegistry.from_openai([
        openai_fn("phonebook", "Finds a person's mobile number.", {"who": TEXT}, ["who"]),
        openai_fn("buzz", "Sends an SMS.", {"to": numbers, "body": TEXT}, ["to", "body"]),
    ])
    plan = Plan(calls=(Call(1, "buzz", {"to": ["000-000-0000", "111-111-1111"], "body": "Standup at 9:15"}),))
    request = "Check my agenda for Monday, text Marta and Diego that standup is at 9:15, and add Standup on Monday"
    fixed, _ = insert_producers(plan, tools, request, request)
    assert [c.args for c in fixed.calls[:2]] == [{"who": "Marta"}, {"who": "Diego"}]
    assert fixed.calls[2].args["to"] == [Ref(1), Ref(2)]
    three = "Text Marta, Diego and Ana that standup is at 9:15"  # three people, two numbers: whose is not known
    assert insert_producers(plan, tools, three, three)[0] == plan


def test_people_are_names_not_things_the_user_owns_nor_days() -> None:
    from tinyagent.run._producers import people, person_lists

    request = "Pls send Carla the recipe from my Lasagna note by text on Monday, and text Ines, Pablo & Maria Lopez"
    assert people(request) == ["Carla", "Ines", "Pablo", "Maria Lopez"]
    assert person_lists(request) == [["Ines", "Pablo", "Maria Lopez"]]
    assert person_lists("Text Ines and Pablo that dinner is at 8") == [["Ines", "Pablo"]]  # the verb opens it
    assert name_in_request("danielcruz@acme.com", "email the summary to our realtor Dana Cruz") == "Dana Cruz"


def test_a_made_up_invitee_whom_another_call_already_sends_to_is_left_out() -> None:
    numbers = {"type": "array", "items": {"type": "string"}, "description": "Destination phone numbers."}
    tools = ToolRegistry.from_openai([
        *_tools().to_openai(),
        openai_fn("phonebook", "Finds a person's mobile number.", {"who": TEXT}, ["who"]),
        openai_fn("buzz", "Sends an SMS.", {"to": numbers, "body": TEXT}, ["to", "body"]),
    ])
    plan = Plan(calls=(Call(1, "buzz", {"to": ["123-456-7890", "098-765-4321"], "body": "picks"}),
                       Call(2, "book", {"title": "Book club", "start": "2027-05-20 19:00:00",
                                        "guests": ["ellie@example.com", "sam@example.com"]})))
    request = "Text my picks to Ellie and Sam, and add book club to my calendar in two weeks at 7pm"
    fixed, _ = insert_producers(plan, tools, request, request)
    assert [c.name for c in fixed.calls] == ["phonebook", "phonebook", "buzz", "book"]
    assert "guests" not in fixed.calls[3].args
    alone = Plan(calls=(plan.calls[1],))  # nobody else acts on them: their invitations are looked up
    assert [c.name for c in insert_producers(alone, tools, request, request)[0].calls] == ["who_is", "who_is", "book"]


def test_a_made_up_number_goes_to_the_person_the_texting_clause_names() -> None:
    tools = ToolRegistry.from_openai([
        *(_tools()[n].to_openai() for n in _tools()),
        openai_fn("who_phone", "Finds a person's mobile phone number.", {"person": TEXT}, ["person"]),
        openai_fn("buzz", "Sends a text message.", {"numbers": {"type": "array", "items": {
            "type": "string", "description": "Phone numbers."}}, "body": TEXT}, ["numbers", "body"]),
    ])
    plan = Plan(calls=(Call(1, "buzz", {"numbers": ["+1234567890"], "body": "Running late"}),))
    request = "Text Priya that I'm running late, and email Tom the meeting notes."
    kept, notes = insert_producers(plan, tools, request, request)
    assert kept.calls[0] == Call(1, "who_phone", {"person": "Priya"}) and kept.calls[1].args["numbers"] == [Ref(1)]
    both = "Text Priya and Tom that I'm running late."  # two people in the clause: which one is not known
    assert insert_producers(plan, tools, both, both)[0].calls[0].name == "buzz"


def _card_tools() -> ToolRegistry:
    return ToolRegistry.from_openai([
        openai_fn("people_card", "Returns the matching contact card, with `email` and `mobile` fields.",
                  {"who": {"type": "string", "description": "A name or a saved relation."}}, ["who"]),
        openai_fn("post", "Composes a new e-mail and delivers it.", {"to": ADDRESSES, "subject": TEXT, "body": TEXT},
                  ["to", "subject", "body"]),
        openai_fn("sms", "Delivers one SMS.", {"to": {"type": "string", "description": "Recipient phone number."},
                                               "txt": TEXT}, ["to", "txt"]),
    ])


def test_one_contact_card_finds_both_kinds_and_is_written_in_for_either() -> None:
    """A registry with one lookup for both channels ("the contact card, with email and mobile fields"): a made-up
    number and a made-up address each get that lookup; a tool that only mentions both kinds is no lookup."""
    from tinyagent.run._lookups import lookup_kind, lookup_kinds

    tools = _card_tools()
    assert lookup_kinds(tools["people_card"]) == {"email", "phone"} and lookup_kind(tools["people_card"]) == "contact"
    assert not lookup_kinds(tools["sms"]) and not lookup_kinds(tools["post"])
    # a lookup whose enum picks the kind finds both, though its description names e-mail first
    picks = ToolRegistry.from_openai([openai_fn(
        "contact-lookup", "Resolves a person in the address book and returns ONE value for them: the e-mail address "
        "or the phone number, as chosen by ret_field.",
        {"contact_name": {"type": "string", "description": "Name of the person."},
         "ret_field": {"type": "string", "enum": ["email", "phone"]}}, ["contact_name", "ret_field"])])
    assert lookup_kinds(picks["contact-lookup"]) == {"email", "phone"}
    request = "Text my brother we'll meet at 2 and email Ana the plan"
    plan = Plan(calls=(Call(1, "sms", {"to": "1234567890", "txt": "We'll meet at 2."}),
                       Call(2, "post", {"to": ["ana@example.com"], "subject": "Plan", "body": "The plan."})))
    fixed, _ = insert_producers(plan, tools, request, request)
    assert [c.name for c in fixed.calls] == ["people_card", "sms", "people_card", "post"]
    assert fixed.calls[0].args == {"who": "brother"} and fixed.calls[1].args["to"] == Ref(1)
    assert fixed.calls[2].args == {"who": "Ana"} and fixed.calls[3].args["to"] == [Ref(3)]


def test_a_lookup_that_names_the_other_kind_only_to_send_it_elsewhere_finds_its_own() -> None:
    """"It does not return phone numbers; for those, use find_mobile": the e-mail lookup finds e-mail addresses
    only (naming both kinds made it a contact card for both, and a text went to its result)."""
    from _helpers_tools import TEXT, openai_fn

    from tinyagent.run._lookups import lookup_kinds

    who = {"who": {**TEXT, "description": "The person's name, or a relation such as 'landlord'."}}
    tools = ToolRegistry.from_openai([
        openai_fn("find_mailbox", "Returns the person's contact record, whose main field is the e-mail address. It "
                  "does not return phone numbers; for those, use find_mobile.", who, ["who"]),
        openai_fn("find_mobile", "Returns the mobile number on which they can receive texts. It does not return "
                  "e-mail addresses.", who, ["who"]),
        openai_fn("card", "Returns the e-mail address, not the phone number, of a contact.", who, ["who"]),
    ])
    assert lookup_kinds(tools["find_mailbox"]) == {"email"} and lookup_kinds(tools["find_mobile"]) == {"phone"}
    assert lookup_kinds(tools["card"]) == {"email"}


def test_a_made_up_address_built_from_a_relation_gets_the_relations_lookup() -> None:
    """"email it to my fiancée" planned with ``fiancée's_email@example.com``: the card of "fiancée"."""
    tools = _card_tools()
    request = "Email the vendor list to my fiancée"
    plan = Plan(calls=(Call(1, "post", {"to": ["fiancée's_email@example.com"], "subject": "Vendors", "body": "x"}),))
    fixed, _ = insert_producers(plan, tools, request, request)
    assert fixed.calls[0] == Call(1, "people_card", {"who": "fiancée"}) and fixed.calls[1].args["to"] == [Ref(1)]


def test_a_placeholder_for_a_later_steps_result_moves_that_step_before_it() -> None:
    """The planner wrote the e-mail before the link it sends, with the prompt's ``$k`` and the tool's name in the
    body: the link moves first and the body is its result; the schedule's reference follows."""
    tools = ToolRegistry.from_openai([
        openai_fn("who_is", "Finds a person's e-mail address.", {"person": TEXT}, ["person"]),
        openai_fn("post", "Sends an e-mail.", {"to": ADDRESSES, "body": TEXT}, ["to", "body"]),
        openai_fn("makeVideoLink", "Creates a video room and returns its join URL.", {"topic": TEXT}, ["topic"]),
        openai_fn("book", "Adds an event.", {"title": TEXT, "url": TEXT}, ["title"]),
    ])
    body = "Join here: $k</k> (use the result from makeVideoLink to get the join URL and pass it here)"
    calls = (Call(1, "who_is", {"person": "Grace"}), Call(2, "post", {"to": [Ref(1)], "body": body}),
             Call(3, "makeVideoLink", {"topic": "Sync"}), Call(4, "book", {"title": "Sync", "url": Ref(3)}))
    moved, notes = hoist_named_steps(calls, tools)
    assert [c.name for c in moved] == ["who_is", "makeVideoLink", "post", "book"] and notes
    assert moved[3].args["url"] == Ref(2)
    fixed = cut_plan_text(moved[2], {c.id: c for c in moved[:2]}, tools)
    assert fixed.args["body"] == Ref(2)
    assert dangling_problem(fixed, {c.id: c for c in moved[:2]}, tools) is None
    # No step calls the named tool: planned again, told which; one that needs the holder's result stays put.
    problem = dangling_problem(calls[1], {1: calls[0]}, tools) or ""
    assert "placeholder for makeVideoLink's result" in problem and "$k" not in problem
    needs = (calls[0], Call(2, "post", {"to": [Ref(1)], "body": body}), Call(3, "makeVideoLink", {"topic": Ref(2)}))
    assert hoist_named_steps(needs, tools) == (list(needs), [])
    for fine in ("The video link is below.", "Make a video link", "It costs $5", "call make_video"):
        assert dangling_problem(Call(1, "post", {"to": ["a@x.io"], "body": fine}), {}, tools) is None
    # the prompt's data marker copied as a result: a placeholder too (planned again)
    assert dangling_problem(Call(2, "post", {"to": [Ref(1)], "body": "<<<DATA-...>>>"}), {1: calls[0]}, tools)


def test_a_dropped_action_a_clause_asks_for_is_not_replaced_by_one_sharing_its_title() -> None:
    """The first plan made the link and nothing else; told to schedule, the second scheduled and dropped the link
    (both called 'Design sync'): the request asks for both, so the first plan stays with the event added."""
    tools = ToolRegistry.from_openai([
        openai_fn("CreateVideoRoom", "Creates a video-call room and returns its join link.", {"topic": TEXT},
                  ["topic"]),
        openai_fn("ScheduleMeeting", "Schedules a meeting on the calendar.", {"title": TEXT, "venue": TEXT},
                  ["title"]),
    ])
    first = '1. CreateVideoRoom(topic="Design sync")\n2. join()\n<END_OF_PLAN>'
    second = '1. ScheduleMeeting(title="Design sync")\n2. join()\n<END_OF_PLAN>'
    result = Agent(tools, ScriptedModel([first, second])).plan_sync(
        "Make a video call link and schedule 'Design sync' tomorrow. Put the link in as the venue.", today=TODAY)
    assert [c.name for c in result.plan.calls] == ["CreateVideoRoom", "ScheduleMeeting"]


def test_a_plan_that_uses_a_later_steps_result_is_run_in_its_order() -> None:
    """Planning only: ``2. post(files=[$3])`` before ``3. find_doc(...)`` is planned in the order that runs; a
    cycle is still an error."""
    text = ('1. who_is(person="Leo")\n2. post(to=[$1], subject="Deck", body="Here", files=[$3])\n'
            '3. find_doc(words="deck")\n4. join()\n<END_OF_PLAN>')
    result = Agent(_tools(), ScriptedModel([text])).plan_sync("Email Leo the deck", today=TODAY)
    assert [c.name for c in result.plan.calls] == ["who_is", "find_doc", "post"]
    assert result.plan.calls[2].args["files"] == [Ref(2)] and result.plan.calls[2].args["to"] == [Ref(1)]
    cycle = ('1. find_doc(words=$2)\n2. post(to=["a@x.io"], subject="s", body="b", files=[$1])\n'
             '3. join()\n<END_OF_PLAN>')
    with pytest.raises(PlanValidationError):
        Agent(_tools(), ScriptedModel([cycle, cycle])).plan_sync("Email a@x.io the deck", today=TODAY)
