"""What a message says is attached gets attached (tinyagent/run/_attach.py), on a made-up registry."""

from __future__ import annotations

from _helpers_tools import TEXT, openai_fn

from tinyagent import ToolRegistry
from tinyagent._plan import Call, Plan, Ref
from tinyagent.run._attach import attach_sent_things, drop_double_sends, drop_message_topics, sent_things

PATHS = {"type": "array", "items": {"type": "string"}, "description": "Paths of files to attach, from docs_seek."}


def _tools() -> ToolRegistry:
    return ToolRegistry.from_openai([
        openai_fn("docs_seek", "Searches the documents. Returns the path of the best match.", {"words": TEXT},
                  ["words"]),
        openai_fn("post_new", "Sends a new letter.", {"to": TEXT, "body": TEXT, "enclosures": PATHS}, ["to", "body"]),
        openai_fn("memo_open", "Opens a memo by its title.", {"title": TEXT}, ["title"]),
    ])


def test_the_things_a_request_sends() -> None:
    assert sent_things("Email Derek the signed NDA and the statement of work, and cc Maya.") == [
        "signed NDA", "statement of work"]
    assert sent_things("Email Sid the menu PDF and invite him to lunch") == ["menu PDF"]
    assert sent_things("Reply to Ana's email with my passport scan and the visa letter attached") == [
        "passport scan", "visa letter"]
    assert sent_things("Text Sid that I'm late") == []


def test_a_message_that_says_attached_gets_the_files_looked_up() -> None:
    plan = Plan(calls=(Call(1, "post_new", {"to": "derek@x.io", "body": "Attached: the NDA and the SOW."}),))
    request = "Email derek@x.io the signed NDA and the statement of work."
    kept, notes = attach_sent_things(plan, _tools(), request)
    assert [c.name for c in kept.calls] == ["docs_seek", "docs_seek", "post_new"] and notes
    assert kept.calls[0].args == {"words": "signed NDA"} and kept.calls[2].args["enclosures"] == [Ref(1), Ref(2)]


def test_the_plans_own_unused_search_is_attached_instead_of_a_new_one() -> None:
    plan = Plan(calls=(Call(1, "docs_seek", {"words": "NDA"}),
                       Call(2, "post_new", {"to": "derek@x.io", "body": "Please find the NDA attached."})))
    kept, _ = attach_sent_things(plan, _tools(), "Email derek@x.io the signed NDA.")
    assert [c.name for c in kept.calls] == ["docs_seek", "post_new"] and kept.calls[1].args["enclosures"] == [Ref(1)]


def test_nothing_changes_without_a_claim_of_attachment_or_for_another_tools_item() -> None:
    plain = Plan(calls=(Call(1, "post_new", {"to": "derek@x.io", "body": "The NDA is signed."}),))
    assert attach_sent_things(plain, _tools(), "Email derek@x.io the signed NDA.") == (plain, [])
    memo = Plan(calls=(Call(1, "post_new", {"to": "derek@x.io", "body": "My packing list is attached."}),))
    assert attach_sent_things(memo, _tools(), "Send derek@x.io my packing list memo.") == (memo, [])


def test_an_attachment_that_sends_the_messages_text_again_goes() -> None:
    plan = Plan(calls=(Call(1, "memo_open", {"title": "Packing list"}), Call(2, "docs_seek", {"words": "Packing list"}),
                       Call(3, "post_new", {"to": "jo@x.io", "body": Ref(1), "enclosures": [Ref(2)]})))
    kept, notes = drop_double_sends(plan, _tools(), "Send my Packing list memo to jo@x.io.")
    assert [c.name for c in kept.calls] == ["memo_open", "post_new"] and notes
    assert kept.calls[1].args == {"to": "jo@x.io", "body": Ref(1)}
    assert drop_double_sends(plan, _tools(), "Send my Packing list memo to jo@x.io, attach it too.") == (plan, [])
    other = Plan(calls=(*plan.calls[:1], Call(2, "docs_seek", {"words": "photo"}), plan.calls[2]))
    assert drop_double_sends(other, _tools(), "Send my Packing list memo and the photo to jo@x.io.") == (other, [])


def test_a_file_the_request_speaks_of_only_in_its_message_is_not_attached() -> None:
    plan = Plan(calls=(Call(1, "docs_seek", {"words": "contract"}),
                       Call(2, "post_new", {"to": "priya@x.io", "body": "The contract is signed.",
                                            "enclosures": [Ref(1)]})))
    request = "Send a letter to priya@x.io letting her know the contract is signed and I'll post the originals."
    kept, notes = drop_message_topics(plan, _tools(), request)
    assert [c.name for c in kept.calls] == ["post_new"] and "enclosures" not in kept.calls[0].args and notes
    assert sent_things(request) == []
    for keeps in ("Find the contract and send it to priya@x.io saying it is signed",  # named outside the message
                  "Send priya@x.io the contract, attached, saying it is signed",
                  "Write to Ann that I'm late, and send priya@x.io the contract"):  # the message ends at its clause
        assert drop_message_topics(plan, _tools(), keeps) == (plan, []), keeps
