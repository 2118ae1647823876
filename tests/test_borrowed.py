"""People named for one call are not invited by another (tinyagent/run/_borrowed.py), on a made-up registry."""

from __future__ import annotations

from _helpers_tools import TEXT, openai_fn

from tinyagent import ToolRegistry
from tinyagent._plan import Call, Plan, Ref
from tinyagent.run._borrowed import (
    drop_borrowed_people,
    drop_made_up_people,
    drop_owners,
    drop_twin_lookups,
    keep_in_named_list,
)

EMAILS = {"type": "array", "items": {"type": "string"}, "description": "E-mail addresses."}


def _tools() -> ToolRegistry:
    return ToolRegistry.from_openai([
        openai_fn("people_find", "Finds a person's e-mail address in the address book.", {"who": TEXT}, ["who"]),
        openai_fn("diary_book", "Books an entry in the diary.",
                  {"title": TEXT, "when": TEXT, "guests": EMAILS}, ["title", "when"]),
        openai_fn("post_forward", "Forwards a received letter to new recipients.",
                  {"match": TEXT, "to": EMAILS}, ["match", "to"]),
        openai_fn("post_answer", "Answers a received letter.", {"match": TEXT, "body": TEXT}, ["match", "body"]),
    ])


def _forward_and_book(guests: list[object]) -> Plan:
    return Plan(calls=(Call(1, "people_find", {"who": "Lena"}), Call(2, "people_find", {"who": "Marcus"}),
                       Call(3, "post_forward", {"match": "offsite agenda", "to": [Ref(1), Ref(2)]}),
                       Call(4, "diary_book", {"title": "Offsite", "when": "2026-11-23 09:00:00", "guests": guests})))


def test_people_named_for_the_forward_are_not_the_entrys_guests() -> None:
    request = "Forward the offsite agenda to Lena and Marcus, and put the offsite in my diary Monday at 9am."
    kept, notes = drop_borrowed_people(_forward_and_book([Ref(1), Ref(2)]), _tools(), request)
    assert "guests" not in kept.calls[3].args and len(notes) == 2
    assert kept.calls[2].args["to"] == [Ref(1), Ref(2)]  # the forward keeps them


def test_a_lookup_only_the_guest_list_used_goes_with_it() -> None:
    request = "Answer Coach Rivera's letter saying Mia can make the game, and put the game in my diary Saturday at 10."
    plan = Plan(calls=(Call(1, "people_find", {"who": "Mia"}),
                       Call(2, "diary_book", {"title": "Game", "when": "2026-11-28 10:00:00", "guests": [Ref(1)]}),
                       Call(3, "post_answer", {"match": "Coach Rivera", "body": "Mia can make the game."})))
    kept, notes = drop_borrowed_people(plan, _tools(), request)
    assert [c.name for c in kept.calls] == ["diary_book", "post_answer"] and notes
    assert "guests" not in kept.calls[0].args


def test_guests_the_entrys_own_clause_brings_in_stay() -> None:
    plan = _forward_and_book([Ref(1), Ref(2)])
    for request in ("Forward the offsite agenda to Lena and Marcus, and put the offsite in my diary with them.",
                    "Forward the offsite agenda to Lena and Marcus and invite both to the offsite in my diary.",
                    # no clause says the diary: nothing to judge by
                    "Forward the offsite agenda to Lena and Marcus, and set up the offsite Monday at 9am."):
        assert drop_borrowed_people(plan, _tools(), request) == (plan, []), request
    request = "Forward the offsite agenda to Lena and Marcus, and book the offsite in my diary for Lena."
    kept, _ = drop_borrowed_people(plan, _tools(), request)
    assert kept.calls[3].args["guests"] == [Ref(1)]  # the entry's own clause names Lena, not Marcus


def test_a_person_named_only_in_the_entrys_clause_stays() -> None:
    plan = Plan(calls=(Call(1, "people_find", {"who": "Lena"}),
                       Call(2, "post_forward", {"match": "agenda", "to": [Ref(1)]}),
                       Call(3, "diary_book", {"title": "Sync", "when": "2026-11-23 09:00:00", "guests": [Ref(1)]})))
    request = "Forward the agenda to Lena, and put a sync with Lena in my diary Monday at 9am."
    assert drop_borrowed_people(plan, _tools(), request) == (plan, [])


def _mail_tools() -> ToolRegistry:
    return ToolRegistry.from_openai([
        openai_fn("people_find", "Finds a person's e-mail address in the address book.", {"who": TEXT}, ["who"]),
        openai_fn("post_new", "Sends a new letter.", {"to": EMAILS, "copy_to": EMAILS, "body": TEXT}, ["to", "body"]),
    ])


def test_a_person_the_request_copies_in_is_left_out_of_the_to_list() -> None:
    plan = Plan(calls=(Call(1, "people_find", {"who": "Derek"}), Call(2, "people_find", {"who": "Maya Chen"}),
                       Call(3, "post_new", {"to": [Ref(1), Ref(2)], "copy_to": [Ref(2)], "body": "Hi"})))
    kept, notes = keep_in_named_list(plan, _mail_tools(), "Write Derek that the NDA is signed, and copy Maya Chen.")
    assert kept.calls[2].args["to"] == [Ref(1)] and kept.calls[2].args["copy_to"] == [Ref(2)] and notes
    # the request says nothing of either list before her name: both stay
    for request in ("Write Derek and Maya Chen that the NDA is signed.", "Write to Derek and Maya Chen, copy all."):
        assert keep_in_named_list(plan, _mail_tools(), request) == (plan, []), request


def test_an_owner_is_not_a_recipient() -> None:
    plan = Plan(calls=(Call(1, "people_find", {"who": "Jun"}), Call(2, "people_find", {"who": "Alex"}),
                       Call(3, "post_forward", {"match": "kitchen remodel", "to": [Ref(1), Ref(2)]})))
    kept, notes = drop_owners(plan, _tools(), "Forward Jun's email about the kitchen remodel to my partner Alex.")
    assert [c.name for c in kept.calls] == ["people_find", "post_forward"] and notes
    assert kept.calls[1].args["to"] == [Ref(1)] and kept.calls[0].args == {"who": "Alex"}
    # named plainly too, or alone in the list: kept
    assert drop_owners(plan, _tools(), "Forward Jun's email to Jun and Alex.") == (plan, [])
    alone = Plan(calls=(Call(1, "people_find", {"who": "Jun"}),
                        Call(2, "post_forward", {"match": "x", "to": [Ref(1)]})))
    assert drop_owners(alone, _tools(), "Forward Jun's email.") == (alone, [])


def test_a_file_found_for_another_clause_is_not_attached_here() -> None:
    files = ToolRegistry.from_openai([
        *(_tools()[n].to_openai() for n in _tools()),
        openai_fn("docs_seek", "Searches the documents. Returns the path of the best match.", {"words": TEXT},
                  ["words"]),
        openai_fn("post_reply", "Replies to a received letter.",
                  {"match": TEXT, "body": TEXT, "files": {"type": "array", "items": TEXT}}, ["match", "body"]),
        openai_fn("post_pass_on", "Forwards a received letter.",
                  {"match": TEXT, "files": {"type": "array", "items": TEXT}}, ["match"]),
    ])
    plan = Plan(calls=(Call(1, "docs_seek", {"words": "signed quote"}),
                       Call(2, "post_reply", {"match": "remodel", "body": "We accept.", "files": [Ref(1)]}),
                       Call(3, "post_pass_on", {"match": "remodel", "files": [Ref(1)]})))
    request = "Reply to the remodel letter saying we accept and attach the signed quote, and pass on the letter."
    kept, notes = drop_borrowed_people(plan, files, request)
    assert kept.calls[1].args["files"] == [Ref(1)] and "files" not in kept.calls[2].args and notes
    said_it = "Reply to the remodel letter saying we accept and attach the signed quote, and pass it on with it."
    assert drop_borrowed_people(plan, files, said_it) == (plan, [])


def test_an_unused_lookup_of_a_person_another_lookup_finds_goes() -> None:
    tools = ToolRegistry.from_openai([
        *(_tools()[n].to_openai() for n in _tools()),
        openai_fn("people_phone", "Finds a person's mobile phone number.", {"who": TEXT}, ["who"]),
    ])
    plan = Plan(calls=(Call(1, "people_find", {"who": "Rosa"}), Call(2, "people_phone", {"who": "Rosa"}),
                       Call(3, "post_forward", {"match": "lease", "to": [Ref(1)]})))
    kept, notes = drop_twin_lookups(plan, tools, "Forward the lease to Rosa.")
    assert [c.name for c in kept.calls] == ["people_find", "post_forward"] and notes
    alone = Plan(calls=(Call(1, "people_phone", {"who": "Rosa"}),))  # "What's Rosa's number?": the answer
    assert drop_twin_lookups(alone, tools, "What's Rosa's number?") == (alone, [])


def test_a_guest_the_request_never_names_is_not_invited() -> None:
    """A lookup of a person copied from elsewhere (a description's example) leaves the optional guest list, and
    goes; a named guest, or a made-up person in a required list, stays."""
    plan = Plan(calls=(Call(1, "people_find", {"who": "Ruth Adeyemi"}), Call(2, "people_find", {"who": "Omar"}),
                       Call(3, "diary_book", {"title": "Tax paperwork", "when": "2027-01-16 10:00:00",
                                              "guests": [Ref(1), Ref(2)]})))
    kept, notes = drop_made_up_people(plan, _tools(), "Block Saturday 10 to 12 for tax paperwork with Omar")
    assert [c.name for c in kept.calls] == ["people_find", "diary_book"] and notes
    assert kept.calls[1].args["guests"] == [Ref(1)] and kept.calls[0].args["who"] == "Omar"
    required = Plan(calls=(Call(1, "people_find", {"who": "Ruth"}),
                           Call(2, "post_forward", {"match": "agenda", "to": [Ref(1)]})))
    assert drop_made_up_people(required, _tools(), "Forward the agenda") == (required, [])


def test_a_second_message_to_the_same_person_without_the_result_goes_and_its_receipt_is_not_sent() -> None:
    """"text the list to Priyanka? email it to her as well": two texts to her (one sends the agenda, one a made-up
    line) and an e-mail of the made-up text's receipt: one text, and the e-mail sends the agenda."""
    from tinyagent.run._borrowed import drop_repeated_messages

    tools = ToolRegistry.from_openai([
        openai_fn("agenda", "Returns the day's calendar entries.", {"day": TEXT}, ["day"]),
        openai_fn("phone_of", "Finds a person's mobile phone number.", {"who": TEXT}, ["who"]),
        openai_fn("people_find", "Finds a person's e-mail address in the address book.", {"who": TEXT}, ["who"]),
        openai_fn("sms", "Sends an SMS.", {"to": {"type": "array", "items": {"type": "string"},
                                                  "description": "Phone numbers."}, "body": TEXT}, ["to", "body"]),
        openai_fn("mail", "Sends an e-mail.", {"to": EMAILS, "body": TEXT}, ["to", "body"]),
    ])
    plan = Plan(calls=(Call(1, "agenda", {"day": "2027-01-14"}), Call(2, "phone_of", {"who": "Priyanka"}),
                       Call(3, "sms", {"to": [Ref(2)], "body": Ref(1)}),
                       Call(4, "sms", {"to": [Ref(2)], "body": "Here is your calendar"}),
                       Call(5, "people_find", {"who": "Priyanka"}),
                       Call(6, "mail", {"to": [Ref(5)], "body": Ref(4)})))
    request = "can u check my calendar for tomorrow and text the list to Priyanka? email it to her as well"
    kept, notes = drop_repeated_messages(plan, tools, request)
    assert [c.name for c in kept.calls] == ["agenda", "phone_of", "sms", "people_find", "mail"] and notes
    assert kept.calls[4].args["body"] == Ref(1)
    twice = "text the list to Priyanka, and text her again that it's final"  # two texts asked: both stay
    assert drop_repeated_messages(Plan(calls=plan.calls[:4]), tools, twice)[0].calls == plan.calls[:4]
