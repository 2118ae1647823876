"""Values that stand for a step the plan does not have, or that hold plan text.

"Send Kenji the contents of my Meeting notes note by email" planned as a lookup and ``mail_compose_and_send(...,
message_body=">$2")``: the planner meant the note's text, a result of a step it never wrote. And a planner that
writes the end of the plan inside a value (``message_body=">$1. join() <END_OF_PLAN> **Note:** ..."``) has lost the
plan's thread. Both are reasons to plan again (like a made-up address), told which, unless the value says what it
meant: a value that opens with a reference to an earlier step (``">$1. join() ..."``, ``">$1"``) is that step's
result, and one that opens with a sentence before the plan text keeps the sentence (:func:`cut_plan_text`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .._plan import END_OF_PLAN, Call, Ref
from .._provenance import leaves

__all__ = ["cut_plan_text", "dangling_problem"]

_STEP_TEXT = re.compile(r"[^\w$]*\$(\d+)[^\w]*")  # the whole value: "$2", ">$2" (not "lunch is $25")
_PLAN_TEXT = re.compile(rf"{re.escape(END_OF_PLAN)}|\bjoin\(\)|(?:^|\n)\s*\d+\.\s+\w+\(")
_QUOTED_STEP = re.compile(r"\s*[>\[]?\s*\$(\d+)\b")  # ">$1", "[$1]", "$1" opening a value
_ENDS_SENTENCE = re.compile(r"[.!?)]\s*$")


def cut_plan_text(call: Call, earlier: Mapping[int, Call]) -> Call:
    """``call`` with each text value that holds plan text, or is an earlier step's reference quoted (``">$1"``),
    made what it meant: the step's result where the value opens with its reference, else the text before the
    plan text when that is a whole sentence. Other values are left for :func:`dangling_problem`."""
    def fix(value: Any) -> Any:
        if isinstance(value, list):
            return [fix(v) for v in value]
        if not isinstance(value, str):
            return value
        plan_text = _PLAN_TEXT.search(value)
        opening = _QUOTED_STEP.match(value)
        if opening and int(opening.group(1)) in earlier and int(opening.group(1)) < call.id and (
                plan_text or _STEP_TEXT.fullmatch(value)):
            return Ref(int(opening.group(1)))
        if plan_text and plan_text.start() > 0:
            head = value[:plan_text.start()].rstrip()
            if head and _ENDS_SENTENCE.search(head) and not _QUOTED_STEP.match(head):
                return head
        return value

    args = {k: fix(v) for k, v in call.args.items()}
    return call if args == dict(call.args) else Call(call.id, call.name, args)


def dangling_problem(call: Call, earlier: Mapping[int, Call]) -> str | None:
    """Why a value of ``call`` stands for a step the plan lacks (``"$2"`` in a text with no step 2 before it) or
    holds plan text (the note for planning again); None when none does."""
    for name, value in call.args.items():
        for text in (v for v in leaves(value) if isinstance(v, str)):
            if _PLAN_TEXT.search(text):
                return (f"step {call.id} writes plan text into {name}; a value holds only what the request asks "
                        "for, or $k alone for a step's result")
            ref = _STEP_TEXT.fullmatch(text)
            k = int(ref.group(1)) if ref else 0
            if 0 < k <= call.id and (k == call.id or k not in earlier):  # (``earlier`` may hold the whole plan)
                return (f"step {call.id} passes {text!r} in {name}, but no step {k} before it gives that; first call "
                        f"the listed tool that gets it and pass that step's result as $k")
    return None
