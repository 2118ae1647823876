"""Values that stand for a step the plan does not have, or that hold plan text.

"Send Kenji the contents of my Meeting notes note by email" planned as a lookup and ``mail_compose_and_send(...,
message_body=">$2")``: the planner meant the note's text, a result of a step it never wrote. And a planner that
writes the end of the plan inside a value (``message_body=">$1. join() <END_OF_PLAN> **Note:** ..."``) has lost the
plan's thread. Both are reasons to plan again (like a made-up address), told which, unless the value says what it
meant: a value that opens with a reference to an earlier step (``">$1. join() ..."``, ``">$1"``) is that step's
result, and one that opens with a sentence before the plan text keeps the sentence (:func:`cut_plan_text`).

A value can also hold a placeholder for a tool's result: the prompt's own ``$k``, or the tool's name
(``message_body="Join URL: $k</k> (use the result from generateVideoMeetingLink ...)"``). It is that tool's result
when an earlier step calls the tool; a later step that calls it and needs nothing from here on moves before it
(:func:`hoist_named_steps`: the planner wanted a forward reference); else it is a reason to plan again.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from .._names import shown_names
from .._plan import END_OF_PLAN, Call, Ref, find_refs, leaves, renumbered
from .._tools import Tool

__all__ = ["cut_plan_text", "dangling_problem", "hoist_named_steps"]

_STEP_TEXT = re.compile(r"[^\w$]*\$(\d+)[^\w]*")  # the whole value: "$2", ">$2" (not "lunch is $25")
_PLAN_TEXT = re.compile(rf"{re.escape(END_OF_PLAN)}|\bjoin\(\)|(?:^|\n)\s*\d+\.\s+\w+\(")
_QUOTED_STEP = re.compile(r"\s*[>\[\]]{0,3}\s*\$(\d+)\b")  # ">$1", "[$1]", "][$1]", "$1" opening a value
_CODE_AFTER = re.compile(r"\]?\s*(?:\)|,\s*\w+\s*=|#)")  # "][$1], words=1000)  # Adjust ...": the plan's own text
_ENDS_SENTENCE = re.compile(r"[.!?)]\s*$")
# "$k": the prompt's name for a reference, no value; "<<<DATA-...>>>": the prompt's marker around results, copied
_PLACEHOLDER = re.compile(r"(?<![\w$])\$[A-Za-z](?!\w)|<<<(?:END )?DATA-")
_WORD = re.compile(r"[A-Za-z][a-z]*")  # a name that could be a word of a text ("translate", "Send")


def named_tools(text: str, tools: Mapping[str, Tool]) -> list[str]:
    """The offered tools whose names ``text`` spells out, as the registry or the planner writes them
    (:func:`~tinyagent._names.shown_names`), where a name cannot be a word of a text (it has a separator, a digit or
    an inner capital: ``generateVideoMeetingLink``, ``mail__send``, ``files_find``)."""
    shown = shown_names(tools.values())
    return [name for name in tools if any(
        not _WORD.fullmatch(said) and re.search(rf"(?<![\w.-]){re.escape(said)}(?![\w-])", text)
        for said in {name, shown.get(name, name)})]


def placeholder(text: str, tools: Mapping[str, Tool]) -> tuple[str, ...] | None:
    """The tools a value's placeholder names (empty: ``$k`` alone), or None when the value holds none."""
    named = named_tools(text, tools)
    return tuple(named) if named or _PLACEHOLDER.search(text) else None


def hoist_named_steps(calls: Sequence[Call], tools: Mapping[str, Tool]) -> tuple[list[Call], list[str]]:
    """``calls`` with each later step that a value's placeholder names (no earlier step calls its tool) moved
    right before the step that holds the placeholder, when it needs no result from that step on; renumbered
    (references follow), with notes."""
    order, notes = list(calls), []
    for call in calls:
        at = next(i for i, c in enumerate(order) if c.id == call.id)
        named = {n for v in leaves(call.args) if isinstance(v, str) for n in placeholder(v, tools) or ()}
        if not named or any(c.name in named for c in order[:at]):
            continue
        later = next((i for i, c in enumerate(order) if i > at and c.name in named), None)
        if later is None or _needs(order[later], order, {c.id for c in order[at:]} - {order[later].id}):
            continue
        notes.append(f"plan: step {order[later].id} moved before step {call.id}, whose {order[later].name} "
                     "placeholder it fills")
        order.insert(at, order.pop(later))
    return (list(renumbered(order)), notes) if notes else (list(calls), [])


def _needs(call: Call, calls: Sequence[Call], steps: set[int]) -> bool:
    """Whether ``call`` takes, directly or through other steps, a result of one of ``steps``."""
    by_id = {c.id: c for c in calls}
    todo, seen = [r.step for r in find_refs(call.args)], set()
    while todo:
        step = todo.pop()
        if step in steps:
            return True
        if step not in seen and step in by_id:
            seen.add(step)
            todo += [r.step for r in find_refs(by_id[step].args)]
    return False


def cut_plan_text(call: Call, earlier: Mapping[int, Call], tools: Mapping[str, Tool] | None = None) -> Call:
    """``call`` with each text value that holds plan text, or is an earlier step's reference quoted (``">$1"``),
    made what it meant: the step's result where the value opens with its reference, else the text before the
    plan text when that is a whole sentence; with ``tools``, a placeholder that names the tool of one earlier step
    is that step's result. Other values are left for :func:`dangling_problem`."""
    def fix(value: Any) -> Any:
        if isinstance(value, list):
            return [fix(v) for v in value]
        if not isinstance(value, str):
            return value
        named = placeholder(value, tools) if tools else None
        steps = [c.id for c in earlier.values() if named and c.name in named and c.id < call.id]
        if len(steps) == 1:
            return Ref(steps[0])
        plan_text = _PLAN_TEXT.search(value)
        opening = _QUOTED_STEP.match(value)
        if opening and int(opening.group(1)) in earlier and int(opening.group(1)) < call.id and (
                plan_text or _STEP_TEXT.fullmatch(value) or _CODE_AFTER.match(value, opening.end())):
            return Ref(int(opening.group(1)))
        if plan_text and plan_text.start() > 0:
            head = value[:plan_text.start()].rstrip()
            if head and _ENDS_SENTENCE.search(head) and not _QUOTED_STEP.match(head):
                return head
        return value

    args = {k: fix(v) for k, v in call.args.items()}
    return call if args == dict(call.args) else Call(call.id, call.name, args)


def dangling_problem(call: Call, earlier: Mapping[int, Call], tools: Mapping[str, Tool] | None = None) -> str | None:
    """Why a value of ``call`` stands for a step the plan lacks (``"$2"`` in a text with no step 2 before it), holds
    plan text, or (with ``tools``) holds a placeholder for a tool's result (the note for planning again); None when
    none does."""
    for name, value in call.args.items():
        for text in (v for v in leaves(value) if isinstance(v, str)):
            if tools and (named := placeholder(text, tools)) is not None:
                what = f"{' or '.join(named)}'s result" if named else "a result"
                return (f"step {call.id} writes a placeholder for {what} into {name}; a value is $ and the number of "
                        f"an earlier step that gets it" + (f" (call {named[0]} first)" if named else ""))
            if _PLAN_TEXT.search(text):
                return (f"step {call.id} writes plan text into {name}; a value holds only what the request asks "
                        "for, or $k alone for a step's result")
            ref = _STEP_TEXT.fullmatch(text)
            k = int(ref.group(1)) if ref else 0
            if 0 < k <= call.id and (k == call.id or k not in earlier):  # (``earlier`` may hold the whole plan)
                return (f"step {call.id} passes {text!r} in {name}, but no step {k} before it gives that; first call "
                        f"the listed tool that gets it and pass that step's result as $k")
    return None
