"""Results the plan makes and then does not pass where they go: no model call.

A small planner writing a long plan often makes a value in one step and forgets it in the next: "Make a video room
for the board sync and put it on my calendar" planned as ``1. video_create_room(...)`` and ``2.
calendar_add_event(...)`` with no venue; or it passes the wrong steps: ``recipient_addresses=[$1, $4]`` where
``$1`` is the room and ``$4`` the event, beside two unused contact lookups. Two repairs, each read from the tools'
descriptions and schemas:

* **An unused result where it goes.** A step whose result no step uses, whose tool's description says what it
  returns with a noun that a later call's unset parameter describes too (``"returns its join URL"`` of a
  video-conference room, and a venue that is a "Physical location or video-conference URL"; or a parameter whose
  description names the tool as its source): that parameter gets the step's result. The descriptions must share at
  least two content words, so a map URL is not a meeting's venue.
* **What was read, sent.** A read of something the request names ("text my Book club picks note to Ellie", "send
  Carla the recipe from my Lasagna note") whose result no step uses, in a request that gives no message of its own
  (no "that ...", "saying ...", or quoted text): the text of each later message (:func:`~._channels.senders`, its
  longest text argument) is that result.
* **One item read, not searched.** A search whose only use is a message's text, for one item the request names by
  its title and kind ("the wifi password from my Home wifi note"), becomes the read of that item by its title: the
  one offered tool that reads, searches nothing, takes one text and shares the kind of item in its name.
* **A summary that reaches the message.** A value that writes out another step's call is that step's result; a
  message whose text is the receipt of a step that stored a result sends the result; the file a sent summary was
  made from is attached only when the request says to attach.
* **A path from a step that finds none.** A file-path parameter (its source by :func:`~._producers.path_source`)
  passed the result of another text search ("Summarize the Project Falcon proposal" planned as a note search and a
  summary of its result), used nowhere else: that step becomes the source, with the same words.
* **References of the wrong kind in an identifier list.** Where a parameter takes e-mail addresses or phone numbers
  and some of its references point at steps that find no such identifier, and the plan has exactly as many other
  lookups of that kind, those lookups take their places; with no such lookup, the identifiers of that kind the
  request writes do ("... and text it to +1 312 555 0144" planned with the map's link as the number).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .._formats import identifier_kind, written_identifiers
from .._plan import Call, Plan, Ref, find_refs, map_refs
from .._tools import Tool
from ._channels import senders
from ._clauses import name_words, same_target
from ._lookups import lookup_kind, lookup_kinds, one_text_param, swap_lookups
from ._places import to_the_found_place
from ._producers import path_source, people, sole_finder, swap_literals
from ._repair import invented_identifiers
from ._sources import documented_source
from ._tidy import reads_only, takes_identifier, writes

__all__ = ["wire_results"]

_ATTACH = re.compile(r"\battach|\benclos", re.IGNORECASE)
_RESULT_NOUN = re.compile(r"\b(url|link|path|id)\b", re.IGNORECASE)
_RETURNS = re.compile(r"\breturns?\b([^.]*)", re.IGNORECASE)
_STOP = frozenset(re.findall(r"\S+", "the a an of to or and its it for with by as in on is be from this that any "
                                    "user user's returns return"))


def _content(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z][a-z-]+", text.lower()) if w not in _STOP}


def _returned_noun(tool: Tool) -> str | None:
    """The noun the tool's description says it returns ("join URL" → ``"url"``), among URLs, links, paths and ids."""
    for match in _RETURNS.finditer(f"{tool.description or ''} {tool.returns or ''}"):
        noun = _RESULT_NOUN.search(match.group(1))
        if noun:
            return noun.group(1).lower()
    return None


def _takes(tool: Tool, producer: Tool, tools: Mapping[str, Tool]) -> str | None:
    """The parameter of ``tool`` that takes what ``producer`` returns, when exactly one does."""
    noun = _returned_noun(producer)
    props: Mapping[str, Any] = tool.parameters.get("properties") or {}
    fits = []
    for name, schema in props.items():
        if not isinstance(schema, Mapping) or identifier_kind(schema) is not None:
            continue
        description = str(schema.get("description") or "")
        if documented_source(schema, tools, tool, name) == producer.name or (
                noun is not None and re.search(rf"\b{noun}s?\b", description, re.IGNORECASE)
                and len(_content(description) & _content(producer.description or "")) >= 2):
            fits.append(name)
    return fits[0] if len(fits) == 1 else None


def wire_results(plan: Plan, tools: Mapping[str, Tool], known: str = "", request: str = "") -> tuple[Plan, list[str]]:
    """``plan`` with unused results passed where a later call's unset parameter takes them, references of the
    wrong kind in identifier lists replaced by the plan's lookups of the right kind, and made-up identifiers
    (not in ``known``) by its unused lookups; with notes."""
    calls = list(plan.calls)
    args = {c.id: dict(c.args) for c in calls}  # what changes, by step
    notes: list[str] = _calls_in_values(calls, args) + _stored_then_sent(calls, args, tools)
    for call in calls:
        notes += _rewire_identifiers(call, args[call.id], calls, tools, known)
        notes += _split_shared(call, args[call.id], calls, tools, request)
    calls, found = _lookup_for_the_one_name(calls, args, tools, request)
    notes += found
    for call in calls:
        notes += _fill_made_up(call, args, calls, tools, known)
    calls, read = _read_located(calls, args, tools)
    notes += read
    calls, found = _found_by_the_source(calls, args, tools)
    notes += found
    calls, read = _one_item_read(calls, args, tools, request)
    notes += read
    notes += _read_into_message(calls, args, tools, request)
    notes += _derived_attachments(calls, args, tools, request)
    notes += to_the_found_place(calls, args, tools, request)
    used = {r.step for a in args.values() for r in find_refs(a)}
    for step in calls:
        producer = tools.get(step.name)
        if producer is None or step.id in used or lookup_kind(producer) is not None:
            continue
        for call in calls:
            tool = tools.get(call.name)
            if call.id == step.id or tool is None or _depends(step.id, call.id, args):
                continue  # (a later step is moved before the call: see _in_order)
            name = _takes(tool, producer, tools)
            if name is None and _returned_noun(producer) in ("url", "link"):
                name = _made_up_url(args[call.id], known)  # "Join here: https://example.com/room/123"
            if name is not None and _unset_or_made_up(args[call.id].get(name), known):
                schema = (tool.parameters.get("properties") or {}).get(name) or {}
                args[call.id][name] = [Ref(step.id)] if schema.get("type") == "array" else Ref(step.id)
                used.add(step.id)
                notes.append(f"plan: step {call.id} takes step {step.id}'s result as {name}")
                break
    if not notes:
        return plan, []
    swapped, swaps = swap_lookups(_in_order([Call(c.id, c.name, args[c.id]) for c in calls]), tools)
    return Plan(calls=tuple(swapped), answer=plan.answer), notes + swaps


def _read_located(calls: list[Call], args: dict[int, dict[str, Any]],
                  tools: Mapping[str, Tool]) -> tuple[list[Call], list[str]]:
    """Where a step finds a file's path by some words and no step uses it, and a later call reads something else by
    the same words (``notes_read(note_title="CV")`` after ``files_locate(search_terms="CV")``): that call is made
    the offered reader of paths from the finder that is most like it by description ("returns the full text")."""
    out, notes = list(calls), []
    used = {r.step for a in args.values() for r in find_refs(a)}
    for finder in calls:
        words = {str(v).strip().lower() for v in args[finder.id].values() if isinstance(v, str) and v.strip()}
        if finder.id in used or not words or finder.name not in tools:
            continue
        readers = {name: param for name, tool in tools.items() if (param := _path_param(tool, finder.name, tools))}
        for i, call in enumerate(out):
            tool = tools.get(call.name)
            same = any(isinstance(v, str) and v.strip().lower() in words for v in args[call.id].values())
            if call.id <= finder.id or tool is None or call.name in readers or not same:
                continue
            scores = {name: len(_content(tools[name].description or "") & _content(tool.description or ""))
                      for name in readers}
            best = sorted(scores, key=lambda n: -scores[n])
            if best and scores[best[0]] >= 2 and (len(best) == 1 or scores[best[0]] > scores[best[1]]):
                out[i] = Call(call.id, best[0], {})
                args[call.id] = {readers[best[0]]: Ref(finder.id)}
                notes.append(f"plan: step {call.id} reads the file step {finder.id} finds with {best[0]}, not "
                             f"{call.name}")
                break
    return out, notes


def _found_by_the_source(calls: list[Call], args: dict[int, dict[str, Any]],
                         tools: Mapping[str, Tool]) -> tuple[list[Call], list[str]]:
    """Steps whose one text argument searches for what a later call's path parameter takes, by a tool other than
    that parameter's source, used nowhere else: called with the source instead, with the same words."""
    out, notes = list(calls), []
    at = {c.id: i for i, c in enumerate(out)}
    uses: dict[int, int] = {}
    for a in args.values():
        for ref in find_refs(a):
            uses[ref.step] = uses.get(ref.step, 0) + 1
    for call in calls:
        props: Mapping[str, Any] = (tools[call.name].parameters.get("properties") or {}) if call.name in tools else {}
        for name, value in args[call.id].items():
            source = path_source(props.get(name) or {}, tools, tools.get(call.name), name)
            param = one_text_param(tools[source]) if source is not None and source != call.name else None
            for ref in find_refs(value) if param is not None else ():
                step = out[at[ref.step]] if ref.step in at else None
                texts = [v for v in args[step.id].values() if isinstance(v, str)] if step is not None else []
                if step is None or step.name == source or uses.get(step.id) != 1 or len(texts) != 1 \
                        or len(args[step.id]) != 1 or lookup_kind(tools.get(step.name)) is not None:
                    continue
                out[at[step.id]] = Call(step.id, str(source), {})
                args[step.id] = {str(param): texts[0]}
                notes.append(f"plan: step {step.id} finds the path step {call.id} takes with {source}, not "
                             f"{step.name}")
    return out, notes


def _path_param(tool: Tool, finder: str, tools: Mapping[str, Tool]) -> str | None:
    """The one required parameter of ``tool`` when it takes paths from ``finder``."""
    required = list(tool.required)
    props: Mapping[str, Any] = tool.parameters.get("properties") or {}
    if len(required) != 1 or tool.name == finder:
        return None
    return required[0] if path_source(props.get(required[0]) or {}, tools, tool, required[0]) == finder else None


_URL = re.compile(r"\bhttps?://[^\s\"'<>)]+", re.IGNORECASE)


def _made_up_url(args: Mapping[str, Any], known: str) -> str | None:
    """The one text parameter whose value writes a URL that ``known`` does not: the planner wrote a link where a
    step's URL goes."""
    names = [name for name, value in args.items() if isinstance(value, str)
             and any(url.lower() not in known.lower() for url in _URL.findall(value))]
    return names[0] if len(names) == 1 else None


def _unset_or_made_up(value: Any, known: str) -> bool:
    """Whether a parameter's value is unset, or a text no word of ``known`` gives (a venue "Zoom" for "a video
    meeting"): either way, a result the plan made and left unused is the better value."""
    if value in (None, "", []):
        return True
    return bool(known) and isinstance(value, str) and value.strip().lower() not in known.lower()


def _lookup_for_the_one_name(calls: list[Call], args: dict[int, dict[str, Any]], tools: Mapping[str, Tool],
                             request: str) -> tuple[list[Call], list[str]]:
    """Where an identifier (or a list of them) still passes one step that finds no identifier (a document search's
    path as the recipient of "Email Priya that ...", a route as the number of "Text my brother that ..."), the plan
    has no lookup of that kind, and the request writes exactly one person: a lookup of that person, added (moved
    before the call by :func:`_in_order`). "my Home wifi note" is no one's name (:func:`~._producers.people`)."""
    names = people(request)
    if len(names) != 1:
        return calls, []
    by_id = {c.id: c for c in calls}
    for call in calls:
        tool = tools.get(call.name)
        props: Mapping[str, Any] = (tool.parameters.get("properties") or {}) if tool is not None else {}
        for name, value in args[call.id].items():
            kind = identifier_kind(props.get(name) or {})
            if kind is None or not isinstance(value, list | Ref):
                continue
            wrong = [v for v in (value if isinstance(value, list) else [value]) if isinstance(v, Ref)
                     and v.step in by_id and lookup_kind(tools.get(by_id[v.step].name)) is None]
            finder = sole_finder(kind, tools)
            if len(wrong) != 1 or finder is None or any(kind in lookup_kinds(tools.get(c.name)) for c in calls):
                continue
            new = Call(max(by_id) + 1, finder[0], {finder[1]: names[0], **finder[2]})
            args[new.id] = dict(new.args)
            args[call.id][name] = [Ref(new.id) if v == wrong[0] else v for v in value] \
                if isinstance(value, list) else Ref(new.id)
            return [*calls, new], [f"plan: step {call.id} passed {wrong[0]} as {name}, which finds none; added "
                                   f"{new.name}({finder[1]}={names[0]!r}) for it"]
    return calls, []


def _by_name(call: Call) -> bool:
    """Whether a lookup looks up by a name, not by an address or a number (``name="Nora@example.com"`` looks up
    what it should have found)."""
    return not any(isinstance(v, str) and ("@" in v or sum(ch.isdigit() for ch in v) >= 5)
                   for v in call.args.values())


def _depends(step: int, on: int, args: Mapping[int, Mapping[str, Any]]) -> bool:
    """Whether ``step`` uses ``on``'s result, directly or through other steps."""
    seen, todo = set(), [step]
    while todo:
        current = todo.pop()
        if current == on:
            return True
        if current in seen:
            continue
        seen.add(current)
        todo += [r.step for r in find_refs(args.get(current, {}))]
    return False


def _in_order(calls: list[Call]) -> list[Call]:
    """``calls`` with each step after the steps it uses, otherwise in the plan's order, numbered from 1 (references
    follow): a result wired into an earlier call moves its step before it."""
    if all(r.step < c.id for c in calls for r in find_refs(c.args)):
        return calls
    by_id = {c.id: c for c in calls}
    order: list[int] = []
    left = [c.id for c in calls]
    while left:
        ready = next((i for i in left if all(r.step in order for r in find_refs(by_id[i].args)
                                             if r.step in by_id)), left[0])
        order.append(ready)
        left.remove(ready)
    numbers = {old: new for new, old in enumerate(order, start=1)}
    return [Call(numbers[i], by_id[i].name, map_refs(by_id[i].args, lambda r: Ref(numbers.get(r.step, r.step))))
            for i in order]


def _fill_made_up(call: Call, args: dict[int, dict[str, Any]], calls: list[Call], tools: Mapping[str, Tool],
                  known: str) -> list[str]:
    """Made-up identifiers of ``call`` (no name in them: :mod:`._producers` could not write their lookup) replaced,
    in order, by the lookups no step uses, when there are exactly as many ("text the picks to Ellie and Sam"
    planned with two unused lookups and two made-up numbers; a lookup of the other kind is swapped after)."""
    made_up = [value for _, value in invented_identifiers(Call(call.id, call.name, args[call.id]), tools, known)]
    if not made_up:
        return []
    used = {r.step for a in args.values() for r in find_refs(a)}
    spare = [c.id for c in calls if c.id != call.id and c.id not in used and lookup_kind(tools.get(c.name))
             and not _depends(c.id, call.id, args)]
    if len(spare) != len(set(made_up)):
        return []
    refs = dict(zip(dict.fromkeys(made_up), (Ref(s) for s in spare), strict=True))

    tool = tools[call.name]
    props: Mapping[str, Any] = tool.parameters.get("properties") or {}
    for name, value in args[call.id].items():
        if identifier_kind(props.get(name) or {}) is not None:
            args[call.id][name] = swap_literals(value, refs)
    return [f"plan: step {call.id} passes the unused lookups {', '.join(f'${s}' for s in spare)} instead of "
            f"{', '.join(repr(v) for v in refs)}"]


def _rewire_identifiers(call: Call, args: dict[str, Any], calls: list[Call], tools: Mapping[str, Tool],
                        known: str = "") -> list[str]:
    tool = tools.get(call.name)
    if tool is None:
        return []
    by_id = {c.id: c for c in calls}
    notes = []
    props: Mapping[str, Any] = tool.parameters.get("properties") or {}
    for name, value in list(args.items()):
        kind = identifier_kind(props.get(name) or {})
        if kind is None or not isinstance(value, list):
            continue
        wrong = [v for v in value if isinstance(v, Ref) and v.step in by_id
                 and lookup_kind(tools.get(by_id[v.step].name)) is None]
        if not wrong:
            continue
        spare = [c.id for c in calls if c.id < call.id and Ref(c.id) not in value
                 and kind in lookup_kinds(tools.get(c.name)) and _by_name(c)]
        written = [] if spare else [w for w in written_identifiers(known)[kind] if w not in value]
        if written:  # "text it to +1 312 555 0144" planned with the place's link, and no lookup to pass instead
            args[name] = [v for v in value if v not in wrong] + written
            notes.append(f"plan: step {call.id} passes {', '.join(written)} (the request's) as {name} instead of "
                         f"{', '.join(str(w) for w in wrong)}, which find none")
            continue
        if len(spare) != len(wrong):
            continue
        swap = dict(zip(wrong, (Ref(s) for s in spare), strict=True))
        args[name] = [swap.get(v, v) if isinstance(v, Ref) else v for v in value]
        notes.append(f"plan: step {call.id} passes the lookups {', '.join(f'${s}' for s in spare)} as {name} "
                     f"instead of {', '.join(str(w) for w in wrong)}")
    return notes


def _split_shared(call: Call, args: dict[str, Any], calls: list[Call], tools: Mapping[str, Tool],
                  request: str) -> list[str]:
    """Where two identifier lists of one call pass the same lookups ("Email Derek ..., and cc Maya Chen" planned
    with both lookups as To and as Cc), and the request writes a word of one list's name right before a looked-up
    name ("cc Maya Chen"): that lookup goes to that list alone, and the others leave it."""
    props: Mapping[str, Any] = (tools[call.name].parameters.get("properties") or {}) if call.name in tools else {}
    lists = [n for n, v in args.items() if isinstance(v, list) and identifier_kind(props.get(n) or {}) is not None]
    by_id = {c.id: c for c in calls}
    notes = []
    for one in lists:
        for other in lists:
            shared = [r for r in args[one] if isinstance(r, Ref) and r in args[other] and r.step in by_id]
            if one == other or len(shared) < 2:
                continue
            words = [w for w in name_words(other) if len(w) >= 2 and w not in name_words(one)]
            named = [r for r in shared if any(
                re.search(rf"\b{re.escape(w)}:?\s+{re.escape(str(v))}\b", request, re.IGNORECASE)
                for w in words for v in by_id[r.step].args.values() if isinstance(v, str) and v.strip())]
            if named and len(named) < len(shared):
                args[other] = [v for v in args[other] if not isinstance(v, Ref) or v not in shared or v in named]
                args[one] = [v for v in args[one] if v not in named]
                notes.append(f"plan: step {call.id} passes {', '.join(str(r) for r in named)} as {other} only")
    return notes


# A message the request writes: after "that", "saying", "tell", in quotes, or as a sentence of its own after whom it
# goes to ("text my brother we'll meet there at 2", "let my sister know I've landed").
_GIVEN_MESSAGE = re.compile(r"\b(?:that|saying|says?|tell(?:ing)?)\b|[\"“‘][^\"”’]{3,}[\"”’]|(?:^|\s)'[^']{3,}'"
                            r"|\b(?:text|txt|sms|message|e-?mail|ping|know)\s+(?:(?:my|our|the)\s+)?(?:[\w'’.-]+\s+)?"
                            r"(?:I|we|he|she|they)(?:['’](?:m|ll|re|ve|d))?\s+[a-z]", re.IGNORECASE)


def _calls_in_values(calls: list[Call], args: dict[int, dict[str, Any]]) -> list[str]:
    """A text value that writes out another step's call (``content=">>DATA-<<<summarize(path="``): the planner
    meant that step's result (the first such step that does not use this one)."""
    notes: list[str] = []
    for call in calls:
        for name, value in list(args[call.id].items()):
            if not isinstance(value, str):
                continue
            other = next((o for o in calls if o.id != call.id and not _depends(o.id, call.id, args)
                          and re.search(rf"(?<![\w.]){re.escape(o.name)}\s*\(", value)), None)
            if other is not None:
                args[call.id][name] = Ref(other.id)
                notes.append(f"plan: step {call.id} writes step {other.id}'s call into {name}; it takes that "
                             "step's result")
    return notes


def _stored_then_sent(calls: list[Call], args: dict[int, dict[str, Any]], tools: Mapping[str, Tool]) -> list[str]:
    """A message whose text is the receipt of a step that stored another step's result (``3. new_note(content=$2)``,
    ``4. send(body=$3)``) sends that result: the receipt says only that it was stored."""
    sending = senders(tools.values())
    notes: list[str] = []
    for call in calls:
        tool = tools.get(call.name)
        if call.name not in sending or tool is None:
            continue
        for name, value in list(args[call.id].items()):
            store = next((c for c in calls if isinstance(value, Ref) and c.id == value.step), None)
            store_tool = tools.get(store.name) if store is not None else None
            if store is None or store_tool is None or not writes(store_tool, sending) or takes_identifier(tool, name):
                continue
            stored = [v for k, v in args[store.id].items()
                      if isinstance(v, Ref) and not takes_identifier(store_tool, k)]
            if len(stored) == 1:
                args[call.id][name] = stored[0]
                notes.append(f"plan: step {call.id} sends step {stored[0].step}'s result as {name}, not the receipt "
                             f"of step {store.id}, which stored it")
    return notes


def _names(step: int, args: Mapping[int, Mapping[str, Any]], request: str, depth: int = 2) -> bool:
    """Whether the request names what ``step`` acts on: one of its texts, or (through its references) the text of
    a step it takes its input from ("Summarize the home inspection report": a summary of a found file)."""
    values = list(args[step].values())
    if any(isinstance(v, str) and _named(v, request) for v in values):
        return True
    return depth > 0 and any(r.step in args and _names(r.step, args, request, depth - 1) for r in find_refs(values))


def _read_into_message(calls: list[Call], args: dict[int, dict[str, Any]], tools: Mapping[str, Tool],
                       request: str) -> list[str]:
    """An unused read (a tool that neither sends nor says it stores: "Route between two places ..., returned as
    text") of what the request names (not of what the plan itself writes), as the text of every message that has no
    step's result for its text yet, when the request gives no message of its own."""
    if not request or _GIVEN_MESSAGE.search(request):
        return []
    sending = senders(tools.values())
    used = {r.step for a in args.values() for r in find_refs(a)}
    written = [c for c in calls if c.name in tools and writes(tools[c.name], sending)]
    names = {c.id: c.name for c in calls}
    notes: list[str] = []
    # (a read of one item before a search: "my Home wifi note" is read, not searched for)
    for step in sorted(calls, key=lambda c: c.name not in tools or bool(_SEARCHES.search(tools[c.name].description
                                                                                          or ""))):
        tool = tools.get(step.name)
        if (tool is None or step.id in used or lookup_kind(tool) is not None or step.name in sending
                or writes(tool, sending) or not _names(step.id, args, request)
                or any(w.id < step.id and same_target(Call(step.id, step.name, args[step.id]),
                                                      Call(w.id, w.name, args[w.id])) for w in written)):
            continue
        for call in calls:
            if call.name not in sending:
                continue
            # (a looked-up address as a message's text is a slip, as good as no text: "body=$2", the summary at $4)
            slips = [k for k, v in args[call.id].items()
                     if isinstance(v, Ref) and v.step in names and not takes_identifier(tools[call.name], k)
                     and lookup_kind(tools.get(names[v.step])) is not None]
            view = {k: "" if k in slips else v for k, v in args[call.id].items()}
            body = slips[0] if len(slips) == 1 else _body(tools[call.name], view)
            if body is None or call.id == step.id or _depends(step.id, call.id, args) or any(
                    isinstance(v, Ref) and not takes_identifier(tools[call.name], k) for k, v in view.items()):
                continue
            made_up = view[body]
            args[call.id][body] = Ref(step.id)
            notes.append(f"plan: step {call.id} sends step {step.id}'s result as {body} (the request names what "
                         "was read, and gives no message of its own)")
            for other in written:  # the same made-up text stored elsewhere stood for the same content
                for name, value in list(args[other.id].items()):
                    if made_up and value == made_up and other.id not in used and not _depends(step.id, other.id, args):
                        args[other.id][name] = Ref(step.id)
                        notes.append(f"plan: step {other.id} takes step {step.id}'s result as {name} (it wrote the "
                                     f"same made-up text as step {call.id})")
    return notes


_SEARCHES = re.compile(r"\bsearch", re.IGNORECASE)


def _one_item_read(calls: list[Call], args: dict[int, dict[str, Any]], tools: Mapping[str, Tool],
                   request: str) -> tuple[list[Call], list[str]]:
    """A search sent as a message's text, for one item the request names by its title and kind ("text Luis the
    password from my Home wifi note" planned as a notes search): the item's reader (the one tool that reads,
    searches nothing, shares the search's kind of item by its name and takes one text) reads it by that title."""
    sending = senders(tools.values())
    sent = {r.step for c in calls if c.name in sending and c.name in tools
            for k, v in args[c.id].items() if not takes_identifier(tools[c.name], k) for r in find_refs(v)}
    used = [r.step for a in args.values() for r in find_refs(a)]
    notes: list[str] = []
    out = []
    for call in calls:
        tool = tools.get(call.name)
        texts = [v for v in args[call.id].values() if isinstance(v, str)]
        reader = _reader_of(tool, tools) if tool is not None and _SEARCHES.search(tool.description or "") else None
        if reader is None or call.id not in sent or used.count(call.id) != 1 or len(texts) != 1:
            out.append(call)
            continue
        kinds = {_singular(w) for w in name_words(call.name)} & {_singular(w) for w in name_words(reader.name)}
        title = re.sub(rf"\s+(?:{'|'.join(map(re.escape, kinds))})s?\s*$", "", texts[0], flags=re.IGNORECASE)
        if not title.strip() or not re.search(rf"\b{re.escape(title.strip())}\s+(?:{'|'.join(map(re.escape, kinds))})"
                                              rf"\b", request, re.IGNORECASE):
            out.append(call)
            continue
        args[call.id] = {str(one_text_param(reader)): title.strip()}  # (one text: by _reader_of)
        out.append(Call(call.id, reader.name, args[call.id]))
        notes.append(f"plan: step {call.id} reads the {' '.join(sorted(kinds))} the request names "
                     f"({reader.name}), not a search")
    return out, notes


def _reader_of(search: Tool, tools: Mapping[str, Tool]) -> Tool | None:
    """The one offered tool that reads one item of the kind ``search``'s name says, by one text."""
    kinds = {_singular(w) for w in name_words(search.name) if len(w) > 3}
    found = [t for t in tools.values() if t.name != search.name and reads_only(t) and lookup_kind(t) is None
             and not _SEARCHES.search(t.description or "") and one_text_param(t) is not None
             and kinds & {_singular(w) for w in name_words(t.name)}]
    return found[0] if len(found) == 1 else None


def _singular(word: str) -> str:
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def _derived_attachments(calls: list[Call], args: dict[int, dict[str, Any]], tools: Mapping[str, Tool],
                         request: str) -> list[str]:
    """A message that sends a result made from a step's file (the summary of a found document, or its translation),
    or read by the same words (the "Packing list" note's text and a file found by "Packing list"), attaches that
    file only when the request says to attach: the optional parameter loses the reference."""
    if not request or _ATTACH.search(request):
        return []
    sending = senders(tools.values())
    notes: list[str] = []
    for call in calls:
        tool = tools.get(call.name)
        if tool is None or call.name not in sending:
            continue
        bodies = [v.step for k, v in args[call.id].items() if isinstance(v, Ref) and not takes_identifier(tool, k)]
        made_from = _ancestors(bodies, args) | {
            c.id for c in calls for b in bodies if c.id != b and b in args
            and same_target(Call(c.id, c.name, args[c.id]), Call(b, "", args[b]))}
        for name, value in list(args[call.id].items()):
            if name in tool.required or not isinstance(value, list) or takes_identifier(tool, name):
                continue
            kept = [v for v in value if not (isinstance(v, Ref) and v.step in made_from)]
            if len(kept) < len(value):
                if kept:
                    args[call.id][name] = kept
                else:
                    del args[call.id][name]
                notes.append(f"plan: step {call.id} no longer passes in {name} the file its text was made from "
                             "(the request does not say to attach it)")
    return notes


def _ancestors(steps: list[int], args: Mapping[int, Mapping[str, Any]]) -> set[int]:
    """The steps whose results ``steps`` were made from, at any remove (the file a translated summary came from)."""
    out: set[int] = set()
    todo = [r.step for s in steps for r in find_refs(args.get(s, {}))]
    while todo:
        step = todo.pop()
        if step not in out:
            out.add(step)
            todo += [r.step for r in find_refs(args.get(step, {}))]
    return out


def _named(value: str, request: str) -> bool:
    """Whether the request writes every word of ``value`` ("Book club picks" in "my Book club picks note")."""
    words = re.findall(r"\w+", value.lower())
    said = set(re.findall(r"\w+", request.lower()))
    return bool(words) and all(w in said for w in words)


def _body(tool: Tool, args: Mapping[str, Any]) -> str | None:
    """A message call's text: its required text argument with the longest literal value (not an identifier)."""
    props: Mapping[str, Any] = tool.parameters.get("properties") or {}
    texts = [(len(value), name) for name, value in args.items() if name in tool.required and isinstance(value, str)
             and isinstance(schema := props.get(name), Mapping) and schema.get("type", "string") == "string"
             and identifier_kind(schema) is None and "enum" not in schema and "format" not in schema]
    return max(texts)[1] if texts else None
