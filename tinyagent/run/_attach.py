"""What a message says is attached gets attached.

"Email Derek the signed NDA and the statement of work, and cc Maya Chen" was planned as one message whose text says
"Please find attached the signed NDA and the statement of work" and whose attachments are empty; planned again
after being told so (:func:`~._items.unattached_problem`), the planner still found no file. The things the request
sends are the words after the sending verb and its recipient, from the first determiner up to the clause's end
("the signed NDA", "the statement of work"). Each is looked up with the tool the attachment parameter's values come
from (its description names it, or the one offered tool that returns a path from one text argument:
:func:`~._producers.path_source`), and the results are attached. Unused calls of that tool already in the plan
are attached instead of new ones.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._plan import Call, Plan, Ref, find_refs, map_refs
from .._tools import Tool
from ._clauses import name_words
from ._items import attachment_slot, sent_things_start, unattached_problem
from ._lookups import one_text_param
from ._producers import path_source
from ._repair import used_steps, without_orphans

__all__ = ["attach_sent_things", "drop_double_sends", "drop_message_topics", "sent_things"]

_DETERMINER = re.compile(r"^(?:(?:the|a|an|my|our|your|his|her|their|this|that|these|those)\s+)+", re.IGNORECASE)
# Where the list of things ends: the clause's end, or a preposition that starts saying something else of it.
_LIST_END = re.compile(r"[,;.!?]|\s+(?:to|with|for|by|before|after|on|at|from|so|because|too|also|as well|please"
                       r"|and\s+(?:cc|bcc|then|also|remind|text|call|add|put|set|schedule|tell|ask|let)\b)\b",
                       re.IGNORECASE)
_WORD = re.compile(r"[a-z0-9]{3,}")
_ATTACH_WORD = re.compile(r"\battach", re.IGNORECASE)
_TRAILING = re.compile(r"\s+(?:attached|enclosed|included)\s*$", re.IGNORECASE)
_SEPARATOR = re.compile(r"\s*(?:,|\band\b|&|\bplus\b)\s*", re.IGNORECASE)


def sent_things(request: str) -> list[str]:
    """The things the request sends ("Email Derek the signed NDA and the statement of work" gives "signed NDA"
    and "statement of work"), without determiners; empty when it sends none."""
    start = sent_things_start(request)
    if start is None:
        return []
    rest = request[start:]
    end = _LIST_END.search(rest)
    parts = _SEPARATOR.split(rest[:end.start()] if end else rest)
    # the first part opens with a determiner; a later one without is another clause ("and invite him")
    parts = parts[:1] + [p for p in parts[1:] if _DETERMINER.match(p + " ")]
    things = [_TRAILING.sub("", _DETERMINER.sub("", part)).strip(" '\"") for part in parts]
    return [t for t in things if len(t) >= 3]


def attach_sent_things(plan: Plan, tools: Mapping[str, Tool], request: str) -> tuple[Plan, list[str]]:
    """``plan`` with each message that says a file is attached, and attaches none, given the request's things
    (looked up first, or the plan's own unused lookups of them); with notes."""
    things = sent_things(request)
    if not things:
        return plan, []
    for call in plan.calls:
        if unattached_problem(call, tools, request) is None:
            continue
        tool = tools[call.name]
        slot = attachment_slot(tool)
        schema: Mapping[str, Any] = (tool.parameters.get("properties") or {}).get(slot or "") or {}
        source = path_source(schema, tools, tool, slot) if slot else None
        param = one_text_param(tools[source]) if source is not None else None
        if slot is None or source is None or param is None:
            continue
        # "Send my Packing list note": a thing another offered tool's name says it holds is no file
        others = {w for name in tools if name != source for w in name_words(name) if len(w) >= 4}
        things = [t for t in things if not any(
            t.split()[-1].lower()[:4] == w[:4] or t.split()[-1].lower().endswith(w) for w in others)]
        if not things:
            return plan, []
        return _attached(plan, call, slot, source, param, things), [
            f"plan: step {call.id}'s message says a file is attached but attached none; looked up "
            f"{', '.join(repr(t) for t in things)} with {source} and attached them"]
    return plan, []


def _attached(plan: Plan, message: Call, slot: str, source: str, param: str, things: Sequence[str]) -> Plan:
    """The plan with ``message`` given the lookups of ``things`` in ``slot``: the plan's own unused lookups before
    it that share a word with a thing, and new ones written just before it for the rest."""
    used = used_steps(plan.calls)
    unused = [c for c in plan.calls if c.name == source and c.id < message.id and c.id not in used]
    mine: dict[str, int] = {}
    for thing in things:
        words = set(_WORD.findall(thing.lower()))
        match = next((c.id for c in unused if c.id not in mine.values()
                      and words & set(_WORD.findall(str(c.args.get(param, "")).lower()))), None)
        if match is not None:
            mine[thing] = match
    out: list[Call] = []
    numbers: dict[int, int] = {}
    for call in plan.calls:
        args = dict(map_refs(call.args, lambda r: Ref(numbers.get(r.step, r.step))))
        if call.id == message.id:
            refs = []
            for thing in things:
                if thing in mine:
                    refs.append(Ref(numbers[mine[thing]]))
                else:
                    out.append(Call(len(out) + 1, source, {param: thing}))
                    refs.append(Ref(len(out)))
            args[slot] = refs
        numbers[call.id] = len(out) + 1
        out.append(Call(len(out) + 1, call.name, args))
    return Plan(calls=tuple(out), answer=plan.answer)


def drop_double_sends(plan: Plan, tools: Mapping[str, Tool], request: str) -> tuple[Plan, list[str]]:
    """``plan`` without attachments that send again what the same message's text already sends: "Send my Packing
    list note to jo@x.io" planned as a read of the note as the text and a file search for "Packing list" as an
    attachment. Kept when the request says attach. The searches nothing uses then go; with notes."""
    if _ATTACH_WORD.search(request):
        return plan, []
    by_id = {c.id: c for c in plan.calls}

    def sent_again(call: Call, slot: str, item: Any) -> bool:
        sent = {_text_of(by_id.get(r.step)) for k, v in call.args.items() if k != slot for r in find_refs(v)} - {""}
        return isinstance(item, Ref) and _text_of(by_id.get(item.step)) in sent

    return _drop_attachments(plan, tools, sent_again, "it attaches what the message's text already sends")


# Where a message the request gives starts: "... letting her know the contract is signed", "saying ...", "that ..."
_MESSAGE_START = re.compile(r"\b(?:that|saying|says|tell(?:ing)?\s+\w+|let(?:ting)?\s+\w+\s+know)\b", re.IGNORECASE)
# ... and where it ends: the clause's end, or another sending verb ("Text Priya that I'm late, and email Tom ...")
_MESSAGE_END = re.compile(r"[,;]|\.\s|\b(?:then|also|e-?mail|send|text|forward|share|attach)\b", re.IGNORECASE)


def drop_message_topics(plan: Plan, tools: Mapping[str, Tool], request: str) -> tuple[Plan, list[str]]:
    """``plan`` without attachments of files that the request speaks of only inside the message it gives: "Send an
    email to Priya letting her know the contract is signed" planned with a search for "contract" attached. The
    contract is what the message is about, not a thing sent. Kept when the request says attach, or names the file
    outside the message ("find the contract and send it to Priya saying ...", "Text Priya that I'm late, and email
    Tom the meeting notes": the message runs to its clause's end). The searches nothing uses then go; with notes."""
    start = _MESSAGE_START.search(request)
    if start is None or _ATTACH_WORD.search(request):
        return plan, []
    rest = request[start.end():]
    end = _MESSAGE_END.search(rest)
    inside = set(_WORD.findall(rest[:end.start() if end else len(rest)].lower()))
    outside = set(_WORD.findall((request[:start.start()] + " " + (rest[end.start():] if end else "")).lower()))
    by_id = {c.id: c for c in plan.calls}

    def topic(call: Call, slot: str, item: Any) -> bool:
        words = set(_WORD.findall(_text_of(by_id.get(item.step)))) if isinstance(item, Ref) else set()
        return bool(words & inside) and not words & outside

    return _drop_attachments(plan, tools, topic, "the request speaks of that file only in its message")


def _drop_attachments(plan: Plan, tools: Mapping[str, Tool], unwanted: Callable[[Call, str, Any], bool],
                      why: str) -> tuple[Plan, list[str]]:
    """``plan`` without the attachments ``unwanted`` (call, attachment parameter, item) names, and without the
    steps nothing uses then; with a note (``why``) per message changed."""
    notes: list[str] = []
    calls: list[Call] = []
    for call in plan.calls:
        tool = tools.get(call.name)
        slot = attachment_slot(tool) if tool is not None else None
        value = call.args.get(slot or "")
        if not slot or not isinstance(value, list):
            calls.append(call)
            continue
        kept = [item for item in value if not unwanted(call, slot, item)]
        if len(kept) == len(value):
            calls.append(call)
            continue
        notes.append(f"plan: left step {call.id}'s {slot} out: {why}")
        args = {k: v for k, v in call.args.items() if k != slot}
        calls.append(Call(call.id, call.name, {**args, slot: kept} if kept else args))
    if not notes:
        return plan, []
    return Plan(calls=without_orphans(plan.calls, calls), answer=plan.answer), notes


def _text_of(call: Call | None) -> str:
    """The one text a call was given (a read's title, a search's words), lower case; "" for none or several."""
    texts = [v for v in call.args.values() if isinstance(v, str)] if call is not None else []
    return texts[0].strip().lower() if len(texts) == 1 else ""
