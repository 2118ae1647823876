"""People borrowed from another clause are not invited.

"Forward the offsite agenda email to Lena and Marcus, and put Team offsite on my calendar next Monday at 9am for 8
hours" was planned with Lena and Marcus as the event's attendees as well as the forward's recipients; "Reply to
Coach Rivera's email saying Mia can make Saturday's game, add the game to my calendar Saturday at 10am, ..." with a
lookup of Mia as an attendee. Each person belongs to the clause that names them: a clause whose verb names another
tool the plan calls (the forward, the reply). A looked-up person passed in an *optional* parameter of a call whose
own clause (the one that says a word of its tool's name: "calendar") names nobody, and holds no pronoun or other
word that could bring a person in ("with", "him", "them", "everyone"), is taken out of that parameter; a lookup
that nothing uses afterwards goes too.

The same clause reading keeps a found file on the call whose clause names it, a person the request cc's out of the
To list (:func:`keep_in_named_list`), an owner ("Jun's email") out of a list of recipients (:func:`drop_owners`),
and drops a second message that says another channel's clause (:func:`drop_echoed_messages`) and an unused lookup of
someone another lookup finds (:func:`drop_twin_lookups`).

The clauses and the tools they name come from :mod:`tinyagent.run._clauses`; nothing is keyed to a tool's name.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .._plan import Call, Plan, Ref, map_refs
from .._tools import Tool
from ._channels import echoed_messages, repeated_messages
from ._clauses import clause_spans, name_words, topic_words
from ._lookups import lookup_kind
from ._no_tool import grounded_in
from ._repair import used_steps, without_orphans, without_steps
from ._tidy import reads_only

__all__ = ["drop_borrowed_people", "drop_echoed_messages", "drop_made_up_people", "drop_owners",
           "drop_repeated_messages", "drop_twin_lookups", "keep_in_named_list"]

# Words that can bring a person into a clause without naming them.
_BRINGS_PEOPLE = re.compile(
    r"\b(?:with|him|her|them|us|he|she|they|both|everyone|everybody|all|together|guests?|attendees?|participants?"
    r"|invitees?|each|invite|invites|inviting)\b", re.IGNORECASE)
_BRINGS_THINGS = re.compile(r"\b(?:with|it|them|both|these|those|attach\w*|enclos\w*|includ\w*)\b", re.IGNORECASE)
_WORD = re.compile(r"[a-z]+")


def _own_clauses(call: Call, clauses: Sequence[tuple[int, int, str, frozenset[str]]]) -> list[str]:
    """The clauses that say a word of the call's tool name (one that says what it is, not a verb every tool has)."""
    words = topic_words(call.name)
    return [text for _, _, text, _ in clauses if any(
        w == s or len(os.path.commonprefix([w, s])) >= 5 for w in words for s in _WORD.findall(text.lower()))]


def _said_value(step: Call, request: str) -> str | None:
    """The text of a step's arguments that the request says, as written (a lookup's person, a search's words), if
    any."""
    for value in step.args.values():
        if isinstance(value, str) and len(value.strip()) >= 2 and re.search(
                rf"\b{re.escape(value.strip())}\b", request, re.IGNORECASE):
            return value.strip()
    return None


def _belongs_elsewhere(person: str, call: Call, calls: Sequence[Call],
                       clauses: Sequence[tuple[int, int, str, frozenset[str]]], request: str) -> bool:
    """Every place the request names ``person`` is in a clause (or the list continuing one: "to Lena, Marcus and
    Tom") whose verb names a tool that another call of the plan calls, and not ``call``'s tool."""
    called = {c.name for c in calls if c.id != call.id} - {call.name}
    places = [m.start() for m in re.finditer(rf"\b{re.escape(person)}\b", request, re.IGNORECASE)]
    if not places:
        return False
    for at in places:
        inside = [i for i, (start, end, _, _) in enumerate(clauses) if start <= at < end]
        if not inside:
            return False
        named: frozenset[str] = frozenset()
        for i in range(inside[0], -1, -1):  # the nearest clause, at or before this one, that names tools
            named = clauses[i][3]
            if named:
                break
        if not named & called or call.name in named:
            return False
    return True


def drop_borrowed_people(plan: Plan, tools: Mapping[str, Tool], request: str) -> tuple[Plan, list[str]]:
    """``plan`` with looked-up people taken out of optional parameters of calls whose own clause does not bring
    them in (module docstring), and the lookups nothing uses then left out; with notes."""
    if len(plan.calls) < 3:
        return plan, []
    clauses = clause_spans(request, tools)
    by_id = {c.id: c for c in plan.calls}
    notes: list[str] = []
    calls: list[Call] = []
    for call in plan.calls:
        tool = tools.get(call.name)
        own = _own_clauses(call, clauses) if tool is not None else []
        if tool is None or not own:
            calls.append(call)
            continue
        brings_people = any(_BRINGS_PEOPLE.search(text) for text in own)
        brings_things = any(_BRINGS_THINGS.search(text) for text in own)
        required = set(tool.parameters.get("required") or ())
        args = dict(call.args)
        for param, value in call.args.items():
            if param in required or not isinstance(value, (list, Ref)):
                continue
            items: list[Any] = list(value) if isinstance(value, list) else [value]
            kept = []
            for item in items:
                step = by_id.get(item.step) if isinstance(item, Ref) else None
                found = tools.get(step.name) if step is not None else None
                # a looked-up person, or a thing a search found (a file to attach)
                brought = brings_people if lookup_kind(found) else brings_things if found and reads_only(found) \
                    else True
                said = _said_value(step, request) if step is not None and not brought else None
                if said and not any(said.lower() in text.lower() for text in own) and _belongs_elsewhere(
                        said, call, plan.calls, clauses, request):
                    notes.append(f"plan: took {said} (step {item.step}) out of step {call.id}'s {param}: the "
                                 "request names it for another call, not this one")
                    continue
                kept.append(item)
            if len(kept) != len(items):
                if kept:
                    args[param] = kept if isinstance(value, list) else kept[0]
                else:
                    del args[param]
        calls.append(Call(call.id, call.name, args) if args != call.args else call)
    if not notes:
        return plan, []
    return Plan(calls=without_orphans(plan.calls, calls), answer=plan.answer), notes


def keep_in_named_list(plan: Plan, tools: Mapping[str, Tool], request: str) -> tuple[Plan, list[str]]:
    """``plan`` with a person passed in two list parameters of one call ("recipient_addresses" and
    "cc_addresses") kept only in the one whose name's word the request says just before the person ("and cc Maya
    Chen"); with notes."""
    by_id = {c.id: c for c in plan.calls}
    notes: list[str] = []
    calls: list[Call] = []
    for call in plan.calls:
        lists = {k: v for k, v in call.args.items() if isinstance(v, list)}
        args = dict(call.args)
        for param, value in lists.items():
            for item in value:
                others = [k for k, v in lists.items() if k != param and item in v]
                said = _said_as(item, by_id, request, tools)
                if not others or said is None:
                    continue
                chosen = [k for k in others if _said_before(k, param, said, request)]
                if len(chosen) == 1 and not _said_before(param, chosen[0], said, request):
                    args[param] = [x for x in args[param] if x != item]
                    notes.append(f"plan: left {said} out of step {call.id}'s {param}: the request puts them in "
                                 f"{chosen[0]}")
        args = {k: v for k, v in args.items() if v != [] or call.args[k] == []}
        calls.append(Call(call.id, call.name, args) if args != call.args else call)
    if not notes:
        return plan, []
    return Plan(calls=tuple(calls), answer=plan.answer), notes


def _said_as(item: Any, by_id: Mapping[int, Call], request: str, tools: Mapping[str, Tool]) -> str | None:
    """How the request writes a list item: a literal it says, or the person a lookup it references was given."""
    if isinstance(item, Ref):
        step = by_id.get(item.step)
        return _said_value(step, request) if step is not None and lookup_kind(tools.get(step.name)) else None
    if isinstance(item, str) and item.strip() and item.lower() in request.lower():
        return item
    return None


def _said_before(param: str, other: str, said: str, request: str) -> bool:
    """Whether a word of the parameter's name that the ``other`` parameter's name lacks ("cc", not "addresses")
    is said within the three words before ``said``."""
    words = [w for w in name_words(param) if len(w) >= 2 and w not in name_words(other)]
    at = request.lower().find(said.lower())
    if at < 0 or not words:
        return False
    before = _WORD.findall(request[:at].lower())[-3:]
    return any(w in before for w in words)


def drop_owners(plan: Plan, tools: Mapping[str, Tool], request: str) -> tuple[Plan, list[str]]:
    """``plan`` without looked-up people the request names only as an owner ("forward Jun's email to my partner
    Alex": Jun wrote the e-mail and does not get it) in the lists that send or invite, when someone else stays in
    the list; the lookups nothing uses then go; with notes."""
    by_id = {c.id: c for c in plan.calls}
    notes: list[str] = []
    calls: list[Call] = []
    for call in plan.calls:
        args = dict(call.args)
        for param, value in call.args.items():
            if not isinstance(value, list) or len(value) < 2:
                continue
            kept = []
            for item in value:
                step = by_id.get(item.step) if isinstance(item, Ref) else None
                person = _said_value(step, request) if step is not None and lookup_kind(tools.get(step.name)) else None
                if person and _only_as_owner(person, request):
                    notes.append(f"plan: took {person} (step {item.step}) out of step {call.id}'s {param}: the "
                                 f"request names them only as the owner of something ({person}'s)")
                    continue
                kept.append(item)
            if kept and len(kept) != len(value):
                args[param] = kept
        calls.append(Call(call.id, call.name, args) if args != call.args else call)
    if not notes:
        return plan, []
    return Plan(calls=without_orphans(plan.calls, calls), answer=plan.answer), notes


def _only_as_owner(person: str, request: str) -> bool:
    """Whether every place the request names ``person`` is a possessive ("Jun's", "Jun’s")."""
    places = list(re.finditer(rf"\b{re.escape(person)}\b", request, re.IGNORECASE))
    return bool(places) and all(re.match(r"['’]s\b", request[m.end():]) for m in places)


def drop_echoed_messages(plan: Plan, tools: Mapping[str, Tool], request: str) -> tuple[Plan, list[str]]:
    """``plan`` without messages that say what the other channel's clause asks, beyond the clauses that ask for
    their channel (:func:`~._channels.echoed_messages`); the lookups only they used go too; with notes."""
    used = used_steps(plan.calls)
    echoed = echoed_messages(plan.calls, tools, request) - used
    if not echoed:
        return plan, []
    kept = [c for c in plan.calls if c.id not in echoed]
    still = used_steps(kept)
    orphans = {c.id for c in kept if c.id in used and c.id not in still and lookup_kind(tools.get(c.name))}
    return Plan(calls=without_steps(plan.calls, echoed | orphans), answer=plan.answer), [
        f"plan: left out step {', '.join(str(s) for s in sorted(echoed))} (a second message by the same channel to "
        "the same people, saying what the request asks of the other channel)"]


def drop_repeated_messages(plan: Plan, tools: Mapping[str, Tool], request: str) -> tuple[Plan, list[str]]:
    """``plan`` without messages that repeat another's to the same people without the result it sends
    (:func:`~._channels.repeated_messages`; run after the results are wired); a repeat's receipt passed as another
    message's text becomes what the repeat stood for; with notes."""
    repeated = repeated_messages(plan.calls, tools, request)
    if not repeated:
        return plan, []
    calls = tuple(Call(c.id, c.name, map_refs(c.args, lambda r: repeated.get(r.step, r))) for c in plan.calls)
    gone = set(repeated) - used_steps(calls)
    if not gone:
        return plan, []
    return Plan(calls=without_steps(calls, gone), answer=plan.answer), [
        f"plan: left out step {', '.join(str(s) for s in sorted(gone))} (a second message by the same tool to the "
        "same people, without the result another sends)"]


def drop_twin_lookups(plan: Plan, tools: Mapping[str, Tool], request: str) -> tuple[Plan, list[str]]:
    """``plan`` without unused lookups of a person another lookup of the plan finds for a call that uses it ("Email
    Rosa ..." planned with Rosa's e-mail address, used, and her phone number, not); with notes."""
    del request
    used = used_steps(plan.calls)

    def who(call: Call) -> str:
        return " ".join(str(v).strip().lower() for v in call.args.values() if isinstance(v, str))

    lookups = [c for c in plan.calls if lookup_kind(tools.get(c.name))]
    found = {who(c) for c in lookups if c.id in used}
    twins = {c.id for c in lookups if c.id not in used and who(c) in found}
    if not twins:
        return plan, []
    return Plan(calls=without_steps(plan.calls, twins), answer=plan.answer), [
        f"plan: left out step {', '.join(str(s) for s in sorted(twins))} (an unused lookup of a person another "
        "lookup finds for the plan)"]


def drop_made_up_people(plan: Plan, tools: Mapping[str, Tool], request: str) -> tuple[Plan, list[str]]:
    """``plan`` with the lookups of people the request never names taken out of the optional lists that pass them,
    and those lookups left out when nothing uses them then; with notes.

    "Block out Saturday from 10 to 12 for tax paperwork" was planned with a lookup of "Ruth Adeyemi" (the example
    in the lookup's parameter description) as the event's attendee: nobody asked for a guest. A lookup counts when
    none of its texts comes from the request (:func:`~._no_tool.grounded_in`)."""
    made_up = {c.id for c in plan.calls if lookup_kind(tools.get(c.name)) and (texts := [
        v for v in c.args.values() if isinstance(v, str) and v.strip()]) and not any(
        grounded_in(v, request) for v in texts)}
    if not made_up:
        return plan, []
    calls: list[Call] = []
    taken: set[int] = set()
    for call in plan.calls:
        tool = tools.get(call.name)
        required = set(tool.parameters.get("required") or ()) if tool is not None else set()
        args = dict(call.args)
        for param, value in call.args.items():
            gone = {v.step for v in value if isinstance(v, Ref) and v.step in made_up} \
                if param not in required and isinstance(value, list) else set()
            if gone:
                kept = [v for v in value if not (isinstance(v, Ref) and v.step in gone)]
                taken |= gone
                if kept:
                    args[param] = kept
                else:
                    del args[param]
        calls.append(Call(call.id, call.name, args) if args != call.args else call)
    if not taken:
        return plan, []
    return Plan(calls=without_orphans(plan.calls, calls), answer=plan.answer), [
        f"plan: took the lookups of people the request does not name (step {', '.join(map(str, sorted(taken)))}) "
        "out of the lists that passed them"]
