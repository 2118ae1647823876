"""Results a plan makes and then does not pass where they go (tinyagent/run/_wiring.py), read from a made-up
registry's descriptions and schemas."""

from __future__ import annotations

from _helpers_tools import TEXT, openai_fn

from tinyagent import ToolRegistry
from tinyagent._plan import Call, Plan, Ref
from tinyagent.run._wiring import wire_results

ADDRESSES = {"type": "array", "items": {"type": "string"}, "description": "E-mail addresses of the recipients."}


def _tools() -> ToolRegistry:
    return ToolRegistry.from_openai([
        openai_fn("who", "Finds a person's e-mail address.", {"name": TEXT}, ["name"]),
        openai_fn("room", "Opens a video-conference room and returns its join URL.", {"topic": TEXT}, ["topic"]),
        openai_fn("map", "Shows a place on the map. Returns the map URL.", {"place": TEXT}, ["place"]),
        openai_fn("event", "Adds an event to the calendar.", {
            "title": TEXT, "guests": {**ADDRESSES, "description": "E-mail addresses to invite."},
            "where": {"type": "string", "description": "Physical location or video-conference URL."}}, ["title"]),
        openai_fn("mail", "Sends an e-mail.", {"to": ADDRESSES, "body": TEXT}, ["to", "body"]),
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


def test_made_up_identifiers_take_the_unused_lookups_and_a_lookup_of_the_other_kind_is_swapped() -> None:
    tools = ToolRegistry.from_openai([
        *(openai_fn(n, d, {"name": TEXT}, ["name"]) for n, d in (("who", "Finds a person's e-mail address."),
                                                           ("mobile", "Finds a person's mobile number."))),
        openai_fn("sms", "Sends an SMS.", {"to": {"type": "array", "items": {"type": "string"},
                                            "description": "Destination phone numbers."}, "body": TEXT},
            ["to", "body"]),
    ])
    plan = Plan(calls=(Call(1, "who", {"name": "Ellie"}), Call(2, "who", {"name": "Sam"}),
                       Call(3, "sms", {"to": ["123-456-7890", "098-765-4321"], "body": "picks"})))
    wired, _ = wire_results(plan, tools, "Text the picks to Ellie and Sam")
    assert [c.name for c in wired.calls] == ["mobile", "mobile", "sms"]
    assert wired.calls[2].args["to"] == [Ref(1), Ref(2)]
    one = Plan(calls=(plan.calls[0], plan.calls[2]))
    assert wire_results(one, tools, "Text the picks to Ellie and Sam")[0] == one  # two made up, one lookup


def test_stray_reads_and_repeated_calls_go() -> None:
    from tinyagent.run._tidy import reads_only, tidy_plan

    tools = ToolRegistry.from_openai([
        openai_fn("agenda_of_day", "Returns every calendar entry of a day.", {"day": TEXT}, ["day"]),
        openai_fn("add_event", "Adds an event to the calendar.", {"title": TEXT}, ["title"]),
        openai_fn("forward", "Forwards an existing message.", {"match": TEXT}, ["match"]),
    ])
    assert reads_only(tools["agenda_of_day"]) and not reads_only(tools["add_event"])
    plan = Plan(calls=(Call(1, "agenda_of_day", {"day": "2026-12-07"}), Call(2, "forward", {"match": "offsite"}),
                       Call(3, "add_event", {"title": "Offsite"}), Call(4, "add_event", {"title": "Offsite"})))
    tidy, notes = tidy_plan(plan, tools, "Forward the offsite email and put the offsite on my calendar Monday")
    assert [c.name for c in tidy.calls] == ["forward", "add_event"] and len(notes) == 2
    asked = "Check my agenda for Monday and forward the offsite email"  # the request says its distinctive word
    assert [c.name for c in tidy_plan(plan, tools, asked)[0].calls] == ["agenda_of_day", "forward", "add_event"]
    question = "What's on Monday? Forward the offsite email"  # a question: its result may be the answer
    assert len(tidy_plan(plan, tools, question)[0].calls) == 3


def test_a_getter_nobody_asked_for_goes_even_in_a_question() -> None:
    """A generated registry's descriptions open with the system the tool belongs to; what follows the label says
    what the tool itself does ("Gets the current speed")."""
    from tinyagent.run._tidy import tidy_plan

    system = "This tool belongs to the car system, which allows users to create routes and send alerts. "
    tools = ToolRegistry.from_openai([
        openai_fn("get_current_speed", system + "Tool description: Gets the current speed of the vehicle.", {}, []),
        openai_fn("lockDoors", system + "Tool description: Locks the doors of the vehicle.",
                  {"unlock": {"type": "boolean"}}, ["unlock"]),
        openai_fn("setLights", system + "Tool description: Sets the headlights.", {"mode": TEXT}, ["mode"]),
    ])
    plan = Plan(calls=(Call(1, "get_current_speed", {}), Call(2, "lockDoors", {"unlock": True}),
                       Call(3, "setLights", {"mode": "on"})))
    asks = "Could you unlock the doors? And switch the headlights on."
    tidy, notes = tidy_plan(plan, tools, asks)
    assert [c.name for c in tidy.calls] == ["lockDoors", "setLights"] and notes
    said = "How fast am I going? What is my current speed? Unlock the doors and switch the headlights on."
    assert tidy_plan(plan, tools, said)[0] == plan  # the request names the getter's noun
    alone = Plan(calls=(plan.calls[0],))
    assert tidy_plan(alone, tools, asks)[0] == alone  # nothing else would be left
    used = Plan(calls=(plan.calls[0], Call(2, "setLights", {"mode": Ref(1)})))
    assert tidy_plan(used, tools, asks)[0] == used  # its result is used


def test_a_result_wired_into_an_earlier_call_moves_its_step_before_it() -> None:
    tools = _tools()
    plan = Plan(calls=(Call(1, "who", {"name": "Aisha"}), Call(2, "event", {"title": "Retro", "guests": [Ref(1)]}),
                       Call(3, "room", {"topic": "Retro"})))
    wired, _ = wire_results(plan, tools)
    assert [c.name for c in wired.calls] == ["who", "room", "event"]
    assert wired.calls[2].args == {"title": "Retro", "guests": [Ref(1)], "where": Ref(2)}


def test_a_lookup_by_the_address_it_should_find_goes() -> None:
    from tinyagent.run._tidy import tidy_plan

    tools = _tools()
    plan = Plan(calls=(Call(1, "who", {"name": "Nora"}), Call(2, "who", {"name": "Nora@example.com"}),
                       Call(3, "mail", {"to": [Ref(1)], "body": "brief"})))
    assert [c.name for c in tidy_plan(plan, tools, "Email Nora the brief")[0].calls] == ["who", "mail"]


def test_a_recipient_that_is_another_steps_result_gets_a_lookup_of_the_one_name() -> None:
    tools = _tools()
    plan = Plan(calls=(Call(1, "room", {"topic": "Build"}), Call(2, "mail", {"to": [Ref(1)], "body": "green"})))
    wired, notes = wire_results(plan, tools, request="Email Priya that the build is green again")
    assert [c.name for c in wired.calls] == ["room", "who", "mail"]
    assert wired.calls[1].args == {"name": "Priya"} and wired.calls[2].args["to"] == [Ref(2)] and notes
    assert wire_results(plan, tools, request="Email Priya and Sam that it is green")[0] == plan  # which name?


def test_a_made_up_link_or_venue_takes_the_unused_rooms_url() -> None:
    tools = _tools()
    texted = Plan(calls=(Call(1, "room", {"topic": "Retro"}), Call(2, "mail", {
        "to": ["nina@x.io"], "body": "Join here: https://example.com/room/123"})))
    wired, notes = wire_results(texted, tools, known="Make a room for the retro and mail nina@x.io the link")
    assert wired.calls[1].args["body"] == Ref(1) and notes
    given = Plan(calls=(Call(1, "room", {"topic": "Retro"}), Call(2, "mail", {
        "to": ["nina@x.io"], "body": "Join https://meet.example.org/abc"})))
    request = "Make a room for the retro and mail nina@x.io https://meet.example.org/abc"
    assert wire_results(given, tools, known=request)[0] == given  # the request's own link stays
    zoom = Plan(calls=(Call(1, "room", {"topic": "Sync"}), Call(2, "event", {"title": "Sync", "where": "Zoom"})))
    assert wire_results(zoom, tools, known="Set up a video call for the sync")[0].calls[1].args["where"] == Ref(1)
    hq = Plan(calls=(Call(1, "room", {"topic": "Sync"}), Call(2, "event", {"title": "Sync", "where": "HQ"})))
    assert wire_results(hq, tools, known="A video room and a sync at HQ")[0] == hq  # the request says HQ


def test_a_message_that_repeats_the_events_invitations_goes_unless_the_request_names_a_channel() -> None:
    from tinyagent.run._tidy import tidy_plan

    tools = ToolRegistry.from_openai([
        openai_fn("who", "Finds a person's e-mail address.", {"name": TEXT}, ["name"]),
        openai_fn("event", "Creates an entry in the calendar and sends invitations to any attendees.",
                  {"title": TEXT, "guests": {**ADDRESSES, "description": "E-mail addresses to invite."}}, ["title"]),
        openai_fn("mail", "Composes an e-mail and delivers it.", {"to": ADDRESSES, "body": TEXT}, ["to", "body"]),
    ])
    plan = Plan(calls=(Call(1, "who", {"name": "Tom"}), Call(2, "event", {"title": "Lunch", "guests": [Ref(1)]}),
                       Call(3, "mail", {"to": [Ref(1)], "body": "Lunch on Friday!"})))
    tidy, notes = tidy_plan(plan, tools, "Schedule lunch with Tom on Friday and send him an invite")
    assert [c.name for c in tidy.calls] == ["who", "event"] and notes
    assert tidy_plan(plan, tools, "Schedule lunch with Tom on Friday and email him the menu")[0] == plan


def test_a_read_by_the_words_a_file_was_found_by_reads_the_found_file() -> None:
    path = {"type": "string", "description": "Path of the document, as returned by locate."}
    tools = ToolRegistry.from_openai([
        openai_fn("locate", "Searches the user's documents. Returns the absolute path of the best match.",
                  {"words": TEXT}, ["words"]),
        openai_fn("note_read", "Fetches a note and returns its full text.", {"title": TEXT}, ["title"]),
        openai_fn("doc_text", "Extracts and returns the full text of a document.", {"path": path}, ["path"]),
        openai_fn("doc_summary", "Produces a short summary of a document.", {"path": path}, ["path"]),
    ])
    plan = Plan(calls=(Call(1, "locate", {"words": "CV"}), Call(2, "note_read", {"title": "CV"})))
    wired, notes = wire_results(plan, tools)
    assert wired.calls[1] == Call(2, "doc_text", {"path": Ref(1)}) and notes
    other = Plan(calls=(Call(1, "locate", {"words": "CV"}), Call(2, "note_read", {"title": "Groceries"})))
    assert wire_results(other, tools)[0] == other  # read by other words: another item


def test_a_lookup_the_request_names_after_a_lists_word_goes_to_that_list_alone() -> None:
    tools = ToolRegistry.from_openai([
        openai_fn("who", "Finds a person's e-mail address.", {"name": TEXT}, ["name"]),
        openai_fn("mail", "Sends an e-mail.", {"to": ADDRESSES, "cc_list": {**ADDRESSES, "description": "Cc: e-mail "
                  "addresses."}, "body": TEXT}, ["to", "body"]),
    ])
    both = [Ref(1), Ref(2)]
    plan = Plan(calls=(Call(1, "who", {"name": "Derek"}), Call(2, "who", {"name": "Maya Chen"}),
                       Call(3, "mail", {"to": both, "cc_list": both, "body": "Attached."})))
    wired, notes = wire_results(plan, tools, request="Email Derek the NDA, and cc Maya Chen")
    assert wired.calls[2].args["to"] == [Ref(1)] and wired.calls[2].args["cc_list"] == [Ref(2)] and notes
    assert wire_results(plan, tools, request="Email Derek and Maya Chen the NDA")[0] == plan  # no list named


def test_what_was_read_is_sent_when_the_request_gives_no_message_of_its_own() -> None:
    numbers = {"type": "array", "items": {"type": "string"}, "description": "Destination phone numbers."}
    tools = ToolRegistry.from_openai([
        openai_fn("note_get", "Fetches a note and returns its text.", {"title": TEXT}, ["title"]),
        openai_fn("sms", "Sends an SMS.", {"to": numbers, "body": TEXT}, ["to", "body"]),
    ])
    plan = Plan(calls=(Call(1, "note_get", {"title": "Book club picks"}),
                       Call(2, "sms", {"to": ["+15550100"], "body": "Hey, check out our picks!"})))
    request = "Read my Book club picks note and text it to +15550100"
    wired, notes = wire_results(plan, tools, request, request)
    assert wired.calls[1].args["body"] == Ref(1) and notes
    given = "Read my Book club picks note and text +15550100 that we meet on Friday"  # the message is given
    assert wire_results(plan, tools, given, given)[0] == plan
    other = Plan(calls=(Call(1, "note_get", {"title": "Groceries"}), plan.calls[1]))  # not what the request names
    assert wire_results(other, tools, request, request)[0] == other


def test_a_removal_or_a_made_up_write_nobody_asked_for_goes() -> None:
    from tinyagent.run._tidy import tidy_plan

    tools = ToolRegistry.from_openai([
        openai_fn("note_get", "Fetches a note and returns its text.", {"title": TEXT}, ["title"]),
        openai_fn("note_bin", "Moves a note to the trash. Returns its title.", {"title": TEXT}, ["title"]),
        openai_fn("note_extend", "Appends text at the bottom of a note.", {"title": TEXT, "text": TEXT},
                  ["title", "text"]),
        openai_fn("mail", "Sends an e-mail.", {"to": ADDRESSES, "body": TEXT}, ["to", "body"]),
    ])
    plan = Plan(calls=(Call(1, "note_get", {"title": "Packing list"}),
                       Call(2, "note_extend", {"title": "Packing list", "text": "Laptop, camera, umbrella"}),
                       Call(3, "mail", {"to": ["jo@x.io"], "body": Ref(1)}),
                       Call(4, "note_bin", {"title": "Packing list"})))
    request = "Send my Packing list note to jo@x.io"
    tidy, notes = tidy_plan(plan, tools, request)
    assert [c.name for c in tidy.calls] == ["note_get", "mail"] and notes
    asked = "Send my Packing list note to jo@x.io, then delete it and append laptop to my Todo note"
    assert [c.name for c in tidy_plan(plan, tools, asked)[0].calls] == ["note_get", "note_extend", "mail", "note_bin"]


def test_calls_that_repeat_a_messages_words_beyond_the_clauses_that_ask_for_them_go() -> None:
    from tinyagent.run._tidy import tidy_plan

    numbers = {"type": "array", "items": {"type": "string"}, "description": "Destination phone numbers."}
    tools = ToolRegistry.from_openai([
        openai_fn("remindersAdd", "Adds a to-do item to a list.", {"task": TEXT, "due": TEXT}, ["task"]),
        openai_fn("sms", "Sends an SMS.", {"to": numbers, "body": TEXT}, ["to", "body"]),
    ])
    plan = Plan(calls=(Call(1, "remindersAdd", {"task": "Dinner at 8", "due": "2026-10-05 08:00:00"}),
                       Call(2, "remindersAdd", {"task": "Bring wine"}),
                       Call(3, "remindersAdd", {"task": "Buy dessert at 5pm"}),
                       Call(4, "sms", {"to": ["+15550100"], "body": "Dinner at 8 and to bring wine"})))
    request = "Text +15550100 that dinner's at 8 and to bring wine, and remind me to buy dessert today at 5pm."
    tidy, notes = tidy_plan(plan, tools, request)
    assert [c.args.get("task") for c in tidy.calls] == ["Buy dessert at 5pm", None] and notes
    two = "Text +15550100 that dinner's at 8, remind me about dinner at 8 and remind me to buy dessert"
    kept = [c.args.get("task") for c in tidy_plan(plan, tools, two)[0].calls]  # a clause asks for the dinner one
    assert kept == ["Dinner at 8", "Buy dessert at 5pm", None]


def test_a_path_from_a_step_that_finds_none_comes_from_the_paths_source() -> None:
    tools = ToolRegistry.from_openai([
        openai_fn("note_find", "Full-text search across notes. Returns matching notes with an excerpt each.",
                  {"words": TEXT}, ["words"]),
        openai_fn("doc_find", "Searches the user's documents. Returns the absolute path of the best match.",
                  {"terms": TEXT}, ["terms"]),
        openai_fn("digest", "Produces a short summary of a document.",
                  {"file": {"type": "string", "description": "Path of the document, as returned by doc_find."}},
                  ["file"]),
    ])
    plan = Plan(calls=(Call(1, "note_find", {"words": "Falcon proposal"}), Call(2, "digest", {"file": Ref(1)})))
    wired, notes = wire_results(plan, tools, "x", "Summarize the Falcon proposal")
    assert wired.calls[0] == Call(1, "doc_find", {"terms": "Falcon proposal"}) and notes
    shown = Plan(calls=(*plan.calls, Call(3, "digest", {"file": Ref(1)})))  # its result goes elsewhere too: kept
    assert wire_results(shown, tools, "x", "Summarize the Falcon proposal")[0].calls[0].name == "note_find"


def test_a_recipient_from_a_search_gets_the_lookup_of_the_one_person_not_of_a_notes_title() -> None:
    numbers = {"type": "array", "items": {"type": "string"}, "description": "Destination phone numbers."}
    tools = ToolRegistry.from_openai([
        openai_fn("note_find", "Full-text search across notes.", {"words": TEXT}, ["words"]),
        openai_fn("mobile", "Finds a person's mobile number.", {"name": TEXT}, ["name"]),
        openai_fn("sms", "Sends an SMS.", {"to": numbers, "body": TEXT}, ["to", "body"]),
    ])
    plan = Plan(calls=(Call(1, "note_find", {"words": "Home wifi"}), Call(2, "sms", {"to": [Ref(1)], "body": "pw"})))
    request = "text my brother Luis the wifi password from my Home wifi note"
    wired, _ = wire_results(plan, tools, request, request)
    assert any(c.name == "mobile" and c.args == {"name": "Luis"} for c in wired.calls)


def test_a_word_that_modifies_another_tools_noun_does_not_ask_for_the_read() -> None:
    from tinyagent.run._tidy import tidy_plan

    tools = ToolRegistry.from_openai([
        openai_fn("agenda_of_day", "Returns every calendar entry of a day.", {"day": TEXT}, ["day"]),
        openai_fn("mail_reply", "Sends a reply to an existing message.", {"match": TEXT, "body": TEXT},
                  ["match", "body"]),
    ])
    plan = Plan(calls=(Call(1, "agenda_of_day", {"day": "2026-12-04"}),
                       Call(2, "mail_reply", {"match": "Alex Chen", "body": "I'll take a look today"})))
    request = "Reply to Alex Chen's offsite agenda mail saying I'll take a look today"
    assert [c.name for c in tidy_plan(plan, tools, request)[0].calls] == ["mail_reply"]
    asked = "Check my agenda for Monday and reply to Alex Chen's mail saying I'll take a look"
    assert len(tidy_plan(plan, tools, asked)[0].calls) == 2


def test_a_side_call_on_a_made_up_value_goes_beside_a_call_the_request_grounds() -> None:
    from tinyagent.run._tidy import tidy_plan

    number = {"type": "integer", "description": "How many years."}
    tools = ToolRegistry.from_openai([
        openai_fn("herd.size_needed", "Estimates the herd size that keeps a breed healthy.",
                  {"breed": TEXT, "years": number}, ["breed", "years"]),
        openai_fn("pasture.forecast", "Forecasts how a breed's grazing land changes under a weather pattern.",
                  {"breed": TEXT, "pattern": {"type": "string", "description": "The weather pattern."}},
                  ["breed", "pattern"]),
    ])
    plan = Plan(calls=(Call(1, "pasture.forecast", {"breed": "highland", "pattern": "drought"}),
                       Call(2, "herd.size_needed", {"breed": "highland", "years": 40})))
    request = "How big must a highland herd be to stay healthy for 40 years?"
    tidy, notes = tidy_plan(plan, tools, request)
    assert [c.name for c in tidy.calls] == ["herd.size_needed"] and "made-up value" in notes[0]
    # the request gives the value, or names the tool: the call stays
    assert tidy_plan(plan, tools, request + " And in a drought?")[0] == plan
    assert tidy_plan(plan, tools, request + " Then forecast its pasture.")[0] == plan
    # every call has a made-up value: nothing to prefer, nothing goes
    vague = Plan(calls=(plan.calls[0], Call(2, "herd.size_needed", {"breed": "angus", "years": 40})))
    assert tidy_plan(vague, tools, request)[0] == vague


def _summary_tools() -> ToolRegistry:
    return ToolRegistry.from_openai([
        openai_fn("who", "Finds a person's e-mail address.", {"name": TEXT}, ["name"]),
        openai_fn("doc_find", "Searches documents by name. Returns the file path.", {"words": TEXT}, ["words"]),
        openai_fn("doc_digest", "Produces a short summary of a document.",
                  {"path": {"type": "string", "description": "File path of the document."}}, ["path"]),
        openai_fn("memo_new", "Stores a new memo.", {"heading": TEXT, "text": TEXT}, ["heading", "text"]),
        openai_fn("memo_get", "Fetches a memo and returns its text.", {"heading": TEXT}, ["heading"]),
        openai_fn("mail", "Sends an e-mail.", {"to": ADDRESSES, "body": TEXT, "files": {
            "type": "array", "items": {"type": "string"}, "description": "Paths of files to attach."}}, ["to", "body"]),
    ])


def test_a_summary_written_out_as_a_call_or_stored_first_is_what_the_message_sends() -> None:
    from tinyagent.run._tidy import tidy_plan

    tools = _summary_tools()
    request = "Summarize the lease report and email the summary to Walter"
    # the planner wrote the summary's call into the memo's text, stored it, read it back and sent the receipt
    plan = Plan(calls=(Call(1, "who", {"name": "Walter"}),
                       Call(2, "memo_new", {"heading": "Lease summary", "text": ">>DATA<<< doc_digest(path="}),
                       Call(3, "memo_get", {"heading": "Lease summary"}),
                       Call(4, "mail", {"to": [Ref(1)], "body": Ref(2)}),
                       Call(5, "doc_find", {"words": "lease report"}),
                       Call(6, "doc_digest", {"path": Ref(5)})))
    wired, notes = wire_results(plan, tools, request, request)
    assert any("writes step 6's call" in n for n in notes) and any("not the receipt" in n for n in notes)
    tidy, _ = tidy_plan(wired, tools, request)
    assert [c.name for c in tidy.calls] == ["who", "doc_find", "doc_digest", "mail"]
    assert tidy.calls[3].args["body"] == Ref(3) and tidy.calls[2].args["path"] == Ref(2)
    # asked to keep a memo of it: the memo stays
    kept = "Summarize the lease report, save it as a new memo and email the summary to Walter"
    assert "memo_new" in [c.name for c in tidy_plan(wire_results(plan, tools, kept, kept)[0], tools, kept)[0].calls]


def test_an_unused_summary_of_what_the_request_names_becomes_the_made_up_message() -> None:
    tools = _summary_tools()
    request = "Summarize the lease report and email the summary to Walter"
    plan = Plan(calls=(Call(1, "who", {"name": "Walter"}),
                       Call(2, "mail", {"to": [Ref(1)], "body": "Please find the summary attached."}),
                       Call(3, "doc_find", {"words": "lease report"}),
                       Call(4, "doc_digest", {"path": Ref(3)})))
    wired, notes = wire_results(plan, tools, request, request)
    assert [c.name for c in wired.calls] == ["who", "doc_find", "doc_digest", "mail"] and notes
    assert wired.calls[3].args["body"] == Ref(3)
    # a message that already sends a step's result keeps it
    sent = Plan(calls=(*plan.calls[:1], *plan.calls[2:], Call(5, "mail", {"to": [Ref(1)], "body": Ref(4)})))
    assert wire_results(sent, tools, request, request) == (sent, [])


def test_a_looked_up_address_sent_as_the_text_is_a_slip_for_the_unused_summary() -> None:
    """Lookups numbered first, then ``mail(to=[$1], body=$1)``: the address as the text is no message; the summary
    of what the request names, used nowhere, is."""
    tools = _summary_tools()
    request = "Summarize the lease report and email the summary to Walter"
    plan = Plan(calls=(Call(1, "who", {"name": "Walter"}), Call(2, "doc_find", {"words": "lease report"}),
                       Call(3, "doc_digest", {"path": Ref(2)}), Call(4, "mail", {"to": [Ref(1)], "body": Ref(1)})))
    wired, notes = wire_results(plan, tools, request, request)
    assert wired.calls[3].args == {"to": [Ref(1)], "body": Ref(3)} and "as body" in notes[0]


def test_the_file_a_sent_summary_was_made_from_is_attached_only_when_asked() -> None:
    tools = _summary_tools()
    plan = Plan(calls=(Call(1, "who", {"name": "Walter"}), Call(2, "doc_find", {"words": "lease report"}),
                       Call(3, "doc_digest", {"path": Ref(2)}),
                       Call(4, "mail", {"to": [Ref(1)], "body": Ref(3), "files": [Ref(2)]})))
    request = "Summarize the lease report and email the summary to Walter"
    wired, notes = wire_results(plan, tools, request, request)
    assert "files" not in wired.calls[3].args and "the file its text was made from" in notes[0]
    attach = "Summarize the lease report and email the summary to Walter with the report attached"
    assert wire_results(plan, tools, attach, attach)[0] == plan
    rewritten = Plan(calls=(*plan.calls[:3], Call(4, "doc_digest", {"path": Ref(3)}),  # (a summary of the summary)
                            Call(5, "mail", {"to": [Ref(1)], "body": Ref(4), "files": [Ref(2)]})))
    wired, _ = wire_results(rewritten, tools, request, request)
    assert "files" not in wired.calls[4].args  # made from the file at two removes
    # a memo's text sent, and a file found by the same words attached: the same content twice
    memo = Plan(calls=(Call(1, "memo_get", {"heading": "Packing list"}), Call(2, "doc_find", {"words": "Packing list"}),
                       Call(3, "mail", {"to": ["jo@x.io"], "body": Ref(1), "files": [Ref(2)]})))
    sent = "Send my Packing list memo to jo@x.io"
    assert "files" not in wire_results(memo, tools, sent, sent)[0].calls[2].args


def test_a_made_up_text_stored_beside_the_message_takes_the_same_result() -> None:
    from tinyagent.run._tidy import tidy_plan

    tools = _summary_tools()
    made_up = "Please find the summary of the lease report."
    plan = Plan(calls=(Call(1, "memo_new", {"heading": "Lease summary", "text": made_up}),
                       Call(2, "who", {"name": "Walter"}), Call(3, "mail", {"to": [Ref(2)], "body": made_up}),
                       Call(4, "doc_find", {"words": "lease report"}), Call(5, "doc_digest", {"path": Ref(4)})))
    request = "Summarize the lease report and email the summary to Walter"
    wired, notes = wire_results(plan, tools, request, request)
    assert any("same made-up text" in n for n in notes)
    assert [c.name for c in tidy_plan(wired, tools, request)[0].calls] == ["who", "doc_find", "doc_digest", "mail"]


def test_a_read_of_what_a_later_call_also_names_is_still_sent() -> None:
    tools = ToolRegistry.from_openai([
        openai_fn("memo_get", "Fetches a memo and returns its text.", {"heading": TEXT}, ["heading"]),
        openai_fn("event", "Adds an event to the calendar.", {"title": TEXT}, ["title"]),
        openai_fn("mail", "Sends an e-mail.", {"to": ADDRESSES, "body": TEXT}, ["to", "body"]),
    ])
    plan = Plan(calls=(Call(1, "memo_get", {"heading": "Book club picks"}),
                       Call(2, "mail", {"to": ["ellie@x.io"], "body": "Check out our picks!"}),
                       Call(3, "event", {"title": "Book club picks"})))
    request = "Read my Book club picks memo, mail it to ellie@x.io, and add book club to my calendar"
    assert wire_results(plan, tools, request, request)[0].calls[1].args["body"] == Ref(1)


def test_a_write_into_what_is_read_that_restates_another_write_goes() -> None:
    from tinyagent.run._tidy import tidy_plan

    tools = ToolRegistry.from_openai([
        openai_fn("note_get", "Fetches a note and returns its text.", {"title": TEXT}, ["title"]),
        openai_fn("note_extend", "Appends text at the bottom of a note.", {"title": TEXT, "text": TEXT},
                  ["title", "text"]),
        openai_fn("todo_add", "Adds a to-do item to a list.", {"task": TEXT, "list": TEXT}, ["task"]),
        openai_fn("mail", "Sends an e-mail.", {"to": ADDRESSES, "body": TEXT}, ["to", "body"]),
    ])
    plan = Plan(calls=(Call(1, "note_get", {"title": "Lasagna recipe"}),
                       Call(2, "note_extend", {"title": "Lasagna recipe", "text": "Add ricotta to the recipe."}),
                       Call(3, "todo_add", {"task": "Buy ricotta", "list": "Shopping"}),
                       Call(4, "mail", {"to": ["jo@x.io"], "body": Ref(1)})))
    request = "Mail jo@x.io the recipe from my Lasagna note, and add buy ricotta to my Shopping list."
    assert [c.name for c in tidy_plan(plan, tools, request)[0].calls] == ["note_get", "todo_add", "mail"]
    other = Plan(calls=(*plan.calls[:2], Call(3, "todo_add", {"task": "Buy basil", "list": "Shopping"}),
                        plan.calls[3]))
    assert tidy_plan(other, tools, request)[0] == other  # its words are its own: not a restatement


def _memo_tools() -> ToolRegistry:
    return ToolRegistry.from_openai([
        openai_fn("memos_search", "Full-text search across all memos. Returns the matching memos.", {"q": TEXT},
                  ["q"]),
        openai_fn("memos_open", "Fetches a memo and returns its text.", {"heading": TEXT}, ["heading"]),
        openai_fn("mail", "Sends an e-mail.", {"to": ADDRESSES, "body": TEXT}, ["to", "body"]),
    ])


def test_a_search_sent_as_the_text_of_one_named_item_becomes_its_read() -> None:
    tools = _memo_tools()
    plan = Plan(calls=(Call(1, "memos_search", {"q": "Home wifi memo"}),
                       Call(2, "mail", {"to": ["luis@x.io"], "body": Ref(1)})))
    request = "mail luis@x.io the wifi password from my Home wifi memo"
    wired, notes = wire_results(plan, tools, request, request)
    assert wired.calls[0] == Call(1, "memos_open", {"heading": "Home wifi"}) and notes
    about = "mail luis@x.io my memos about the wifi"  # no one item named: the search stays
    assert wire_results(plan, tools, about, about)[0] == plan


def test_of_two_unused_reads_of_the_named_item_the_read_not_the_search_is_sent() -> None:
    tools = _memo_tools()
    plan = Plan(calls=(Call(1, "memos_search", {"q": "Home wifi memo"}),
                       Call(2, "memos_open", {"heading": "Home wifi memo"}),
                       Call(3, "mail", {"to": ["luis@x.io"], "body": "The wifi password is [password]"})))
    request = "mail luis@x.io the wifi password from my Home wifi memo"
    assert wire_results(plan, tools, request, request)[0].calls[2].args["body"] == Ref(2)


def test_a_read_that_another_read_of_the_same_thing_narrows_goes() -> None:
    from tinyagent.run._tidy import tidy_plan

    pre = "This tool belongs to the file system, which allows users to create and move files. Tool description: "
    name = {"file_name": TEXT}
    tools = ToolRegistry.from_openai([
        openai_fn("cat", pre + "Display the contents of a file from the current directory.", name, ["file_name"]),
        openai_fn("tail", pre + "Display the last part of a file.", {**name, "lines": {"type": "integer"}},
                  ["file_name"]),
        openai_fn("wc", pre + "Count the characters of a file.", {**name, "mode": TEXT}, ["file_name"]),
    ])
    plan = Plan(calls=(Call(1, "cat", {"file_name": "log.txt"}), Call(2, "tail", {"file_name": "log.txt"})))
    tidy, notes = tidy_plan(plan, tools, "What does the last line of log.txt look like?")
    assert [c.name for c in tidy.calls] == ["tail"] and notes
    asked = "Show me the contents of log.txt and its last line"  # the request says what only cat does
    assert tidy_plan(plan, tools, asked)[0] == plan
    other = Plan(calls=(Call(1, "cat", {"file_name": "a.txt"}), Call(2, "tail", {"file_name": "b.txt"})))
    assert tidy_plan(other, tools, "What do a.txt and the end of b.txt say?")[0] == other  # other files


def test_a_reference_that_finds_no_number_gives_way_to_the_number_the_request_writes() -> None:
    from _helpers_tools import TEXT, openai_fn

    from tinyagent import ToolRegistry
    from tinyagent._plan import Call, Plan, Ref
    from tinyagent.run._wiring import wire_results

    numbers = {"type": "array", "items": {"type": "string"}, "description": "Recipient phone numbers."}
    tools = ToolRegistry.from_openai([
        openai_fn("geo.showPlace", "Shows a place on the map. Returns a link.", {"q": TEXT}, ["q"]),
        openai_fn("phone.sendText", "Send an SMS.", {"numbers": numbers, "msg": TEXT}, ["numbers", "msg"])])
    request = "Show me Kessler Stadium on the map and text it to +1 312 555 0144."
    plan = Plan(calls=(Call(1, "geo.showPlace", {"q": "Kessler Stadium"}),
                       Call(2, "phone.sendText", {"numbers": [Ref(1)], "msg": "Here it is"})))
    wired, notes = wire_results(plan, {k: tools[k] for k in tools}, request, request)
    assert wired.calls[1].args["numbers"] == ["+1 312 555 0144"] and notes


def test_a_summary_sent_on_is_not_the_receipt_of_a_store() -> None:
    """A tool whose description opens with a verb of working a value out ("Summarize a PDF document.") stores
    nothing: a message that sends its result keeps it."""
    from tinyagent.run._wiring import _stored_then_sent

    tools = ToolRegistry.from_openai([
        openai_fn("digest", "Summarize a PDF document. Returns the summary text.", {"path": TEXT}, ["path"]),
        openai_fn("TranslateText", "Machine translation.", {"text": TEXT}, ["text"]),
        openai_fn("save", "Saves a text as a new note.", {"text": TEXT}, ["text"]),
        openai_fn("mail", "Sends an e-mail.", {"to": ADDRESSES, "body": TEXT}, ["to", "body"]),
    ])
    calls = [Call(1, "digest", {"path": "/a.pdf"}), Call(2, "mail", {"to": ["a@b.co"], "body": Ref(1)})]
    args = {c.id: dict(c.args) for c in calls}
    assert _stored_then_sent(calls, args, tools) == [] and args[2]["body"] == Ref(1)
    translated = [Call(1, "digest", {"path": "/a.pdf"}), Call(2, "TranslateText", {"text": Ref(1)}),
                  Call(3, "mail", {"to": ["a@b.co"], "body": Ref(2)})]
    args = {c.id: dict(c.args) for c in translated}
    assert _stored_then_sent(translated, args, tools) == [] and args[3]["body"] == Ref(2)  # no verb of storing
    stored = [Call(1, "digest", {"path": "/a.pdf"}), Call(2, "save", {"text": Ref(1)}),
              Call(3, "mail", {"to": ["a@b.co"], "body": Ref(2)})]
    args = {c.id: dict(c.args) for c in stored}
    assert _stored_then_sent(stored, args, tools) and args[3]["body"] == Ref(1)  # the note's receipt: its text


def test_showing_an_events_place_on_a_map_is_not_a_read_back_of_the_event() -> None:
    from tinyagent.run._tidy import tidy_plan

    tools = ToolRegistry.from_openai([
        openai_fn("cal.newEvent", "Creates a calendar event.", {"title": TEXT, "where": TEXT}, ["title"]),
        openai_fn("geo.showPlace", "Shows a place on the map.", {"q": TEXT}, ["q"]),
        openai_fn("notes.create", "Creates a note.", {"title": TEXT, "text": TEXT}, ["title"]),
        openai_fn("notes.fetch", "Returns a note's text.", {"title": TEXT}, ["title"]),
    ])
    request = "Put lunch at Elm Dental on my calendar and show me where that is"
    plan = Plan(calls=(Call(1, "cal.newEvent", {"title": "Lunch", "where": "Elm Dental"}),
                       Call(2, "geo.showPlace", {"q": "Elm Dental"})))
    assert tidy_plan(plan, tools, request) == (plan, [])
    read_back = Plan(calls=(Call(1, "notes.create", {"title": "Trip", "text": "pack"}),
                            Call(2, "notes.fetch", {"title": "Trip"})))
    assert len(tidy_plan(read_back, tools, "Make a Trip note: pack")[0].calls) == 1


def test_a_route_read_and_not_sent_becomes_the_messages_text() -> None:
    """A tool that neither sends nor says it stores ("Route between two places ..., returned as text") is read
    for the message the request asks to send it by."""
    tools = ToolRegistry.from_openai([
        openai_fn("GetDirections", "Route between two places with step-by-step instructions, returned as text.",
                  {"startPoint": TEXT, "endPoint": TEXT}, ["startPoint", "endPoint"]),
        openai_fn("sms", "Sends an SMS.", {"to": {"type": "array", "items": {"type": "string"},
                                                  "description": "Phone numbers."}, "body": TEXT}, ["to", "body"]),
    ])
    request = "Get walking directions from the Meridian Hotel to Pier 39 and text them to +1 415 555 0100."
    plan = Plan(calls=(Call(1, "GetDirections", {"startPoint": "Meridian Hotel", "endPoint": "Pier 39"}),
                       Call(2, "sms", {"to": ["+1 415 555 0100"], "body": "Here's the route"})))
    wired, notes = wire_results(plan, tools, request, request)
    assert wired.calls[1].args["body"] == Ref(1) and notes
    told = request.replace("text them to", "text that I'm on my way to")  # a message of its own
    assert wire_results(plan, tools, told, told)[0] == plan


def test_a_message_written_after_whom_it_goes_to_is_the_requests_own() -> None:
    """"text my brother we'll meet there at 2" gives the message (no "that", no quotes): the route read beside it
    is not sent in its place."""
    tools = ToolRegistry.from_openai([
        openai_fn("route", "Turn-by-turn route with travel time.", {"dst": TEXT}, ["dst"]),
        openai_fn("sms", "Delivers one SMS.", {"to": {"type": "string", "description": "Recipient phone number."},
                                               "txt": TEXT}, ["to", "txt"]),
    ])
    plan = Plan(calls=(Call(1, "route", {"dst": "Tate Modern"}),
                       Call(2, "sms", {"to": "+44 7700 900461", "txt": "We'll meet there at 2."})))
    for request in ("Plan the route to the Tate Modern and text my brother we'll meet there at 2",
                    "Plan the route to the Tate Modern and let Bo know I'm on my way"):
        assert wire_results(plan, tools, request, request)[0] == plan
    asked = "Plan the route to the Tate Modern and text it to +44 7700 900461"
    assert wire_results(plan, tools, asked, asked)[0].calls[1].args["txt"] == Ref(1)


def test_a_result_in_an_optional_place_of_a_write_is_no_stored_copy_of_a_message() -> None:
    """A meeting link that the e-mail sends and the calendar entry takes as its place: the entry is asked for
    ("schedule it ... with the link as the location"), not a copy of the e-mail's text."""
    from tinyagent.run._tidy import tidy_plan

    tools = ToolRegistry.from_openai([
        openai_fn("bridge_open", "Opens a video-conference room and hands back its join link.", {"topic": TEXT},
                  ["topic"]),
        openai_fn("calendar_entry_insert", "Adds an entry to the user's calendar.",
                  {"title": TEXT, "loc": TEXT}, ["title"]),
        openai_fn("notebook_append", "Adds text to the bottom of an existing notebook page.",
                  {"page": TEXT, "txt": TEXT}, ["page", "txt"]),
        openai_fn("mail", "Sends an e-mail.", {"to": ADDRESSES, "body": TEXT}, ["to", "body"]),
    ])
    request = "Open a video room for the sync, schedule it with the link as the location, and email jo@x.io the link"
    plan = Plan(calls=(Call(1, "bridge_open", {"topic": "Sync"}),
                       Call(2, "calendar_entry_insert", {"title": "Sync", "loc": Ref(1)}),
                       Call(3, "mail", {"to": ["jo@x.io"], "body": Ref(1)})))
    assert tidy_plan(plan, tools, request) == (plan, [])
    copied = Plan(calls=(Call(1, "bridge_open", {"topic": "Sync"}),
                         Call(2, "notebook_append", {"page": "Sync", "txt": Ref(1)}),
                         Call(3, "mail", {"to": ["jo@x.io"], "body": Ref(1)})))
    assert len(tidy_plan(copied, tools, "Open a video room and email jo@x.io the link")[0].calls) == 2


def test_a_route_from_a_place_to_the_same_place_goes() -> None:
    """A replan kept beside the forecast it added: ``route(orig="Portland, Maine", dest="Portland, Maine")`` goes
    from a place to itself (origin and destination by their names or descriptions); a conversion between two units
    does not."""
    from tinyagent.run._tidy import tidy_plan

    tools = ToolRegistry.from_openai([
        openai_fn("route-get", "A route.", {"orig": TEXT, "b": {**TEXT, "description": "Destination address."}},
                  ["orig", "b"]),
        openai_fn("forecast", "Daily forecast.", {"where": TEXT}, ["where"]),
        openai_fn("convert", "Converts units.", {"qty": {"type": "number"}, "from_unit": TEXT, "to_unit": TEXT},
                  ["qty", "from_unit", "to_unit"]),
    ])
    request = "What's the weather going to be like in Portland, Maine this Saturday?"
    plan = Plan(calls=(Call(1, "route-get", {"orig": "Portland, Maine", "b": "portland, maine"}),
                       Call(2, "forecast", {"where": "Portland, Maine"})))
    assert [c.name for c in tidy_plan(plan, tools, request)[0].calls] == ["forecast"]
    kept = Plan(calls=(Call(1, "convert", {"qty": 3, "from_unit": "kg", "to_unit": "lb"}),
                       Call(2, "forecast", {"where": "Oslo"})))
    assert tidy_plan(kept, tools, "Convert 3 kg to lb, and the weather in Oslo")[0] == kept
