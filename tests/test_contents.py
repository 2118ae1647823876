"""An item's title passed where its contents go (tinyagent.run._contents), on a made-up registry."""

from __future__ import annotations

from _helpers_tools import TEXT, openai_fn

from tinyagent import ToolRegistry
from tinyagent._plan import Call, Plan, Ref
from tinyagent.run._contents import read_named_items


def _tools() -> ToolRegistry:
    return ToolRegistry.from_openai([
        openai_fn("readMemoText", "Returns the full text of one of the user's memos, by its title.",
                  {"memo_title": TEXT}, ["memo_title"]),
        openai_fn("appendToMemo", "Adds text to the end of a memo.", {"memo_title": TEXT, "text": TEXT},
                  ["memo_title", "text"]),
        openai_fn("translatePassage", "Translates text into another language.",
                  {"text_to_translate": {**TEXT, "description": "The text to translate."}, "language": TEXT},
                  ["text_to_translate", "language"]),
    ])


def test_a_title_passed_as_the_text_to_work_on_is_read_first() -> None:
    plan = Plan(calls=(Call(1, "translatePassage", {"text_to_translate": "Welcome letter", "language": "French"}),
                       Call(2, "appendToMemo", {"memo_title": "Tenants", "text": "Sent."})))
    for request in ("Translate my memo 'Welcome letter' into French and note it in my Tenants memo",
                    "translate my Welcome letter memo into French, then add Sent. to my Tenants memo"):
        read, notes = read_named_items(plan, _tools(), request)
        assert [c.name for c in read.calls] == ["readMemoText", "translatePassage", "appendToMemo"], request
        assert read.calls[0].args == {"memo_title": "Welcome letter"} and notes
        assert read.calls[1].args["text_to_translate"] == Ref(1)
    # words the request gives to translate, and a title where a title goes, stay as they are
    assert read_named_items(plan, _tools(), "Translate 'Welcome letter' into French") == (plan, [])
