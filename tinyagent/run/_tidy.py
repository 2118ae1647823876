"""Steps a long plan gains that nobody asked for: no model call.

Planning five or six steps, a small planner adds steps on its way: it checks the calendar before forwarding an
e-mail, or writes the same call again and again (``notes_new`` then ``notes_trash`` four times over). Two repairs:

* **A stray read.** A step whose tool only reads (its description opens with a verb of reading: "Returns every
  calendar entry ...", "Checks whether a slot ...") whose result no step uses, in a plan with other steps, when
  the request asks no question and says none of the words that set the tool's name apart from the other offered
  tools' names ("agenda", "availability"): its result would only reach the answer, which nobody asked for. A word
  right before a noun of another tool's name modifies that noun and does not count ("the offsite agenda email").
* **A lookup by an address.** An unused lookup of a contact by an e-mail address (``person_name="nora@example.com"``)
  looks up what it should have found.
* **A message that repeats an invitation.** A call that sends a message (:func:`~._channels.senders`) to exactly
  the people another call of the plan invites, whose tool says it sends invitations ("Creates an entry ... and
  sends invitations to any attendees"), when the request names no channel ("... and send them both invites"):
  the invitations were the message.
* **A removal nobody asked for.** An unused call whose tool removes (its name or its description's first sentence
  says delete, remove, trash, discard, erase or cancel) when the request asks to remove nothing: the 1.5B adds
  ``notes_trash`` after a note it did not need; a destructive step must come from the request.
* **A stray write.** An unused call that writes (not a reader, not a sender, not a lookup) into what another call
  reads (the same text under any parameter), whose name's distinctive words the request never says and whose
  longest text argument has no word of the request (a made-up packing list appended to the "Packing list" note the
  request only asked to send).
* **Another call's words, again.** Unused calls of a tool that the request's clauses name fewer times than the
  plan calls it, whose words all lie in one message's text and in none of those clauses: "Text Ines and Pablo
  that dinner's at 8 and to bring wine, and remind me to buy dessert" planned with reminders "Dinner at 8" and
  "Bring wine" beside the text message that says both.
* **A made-up side call.** An unused call whose tool the request does not name (its distinctive words), with a
  short text value that nothing gives (not in the request, not among the options its parameter lists, not a date,
  not an identifier, which a lookup gives), beside a call of another tool whose every text value is the
  request's: asked "the minimum population size of a wild tiger population for the next 100 generations", the
  1.5B also projects the tiger's range under climate scenario "future".
* **A read of what the plan wrote.** An unused read of the same thing (:func:`~._clauses.same_target`) that an
  earlier write of the plan writes: "summarise the board minutes and send the summary to Walter" planned with a
  new note of the summary and then a read of that note.
* **A stored copy nobody asked for.** An unused write (not a message, not a read) that stores a step's result that
  a message of the plan sends too, when the request says no word of the write's tool's name.
* **A repeated call.** A call equal to an earlier one (same tool, same arguments) is the earlier one: references
  to it go to the first, and it goes.

Nothing is keyed to a tool's name: readers come from their descriptions, distinctive words from the offered names.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from .._formats import identifier_kind
from .._plan import Call, Plan, Ref, find_refs, map_refs
from .._provenance import leaves
from .._text import folded
from .._tools import Tool
from ._channels import asked_channel, senders
from ._clauses import name_words, named_clauses, same_target, topic_words
from ._lookups import lookup_kind
from ._no_tool import grounded_in
from ._repair import drop_replaced

__all__ = ["acts", "distinctive_words", "own_description", "reads_only", "takes_identifier", "tidy_plan", "writes"]

_READ_VERBS = frozenset(re.findall(r"\w+", """
returns retrieves checks lists fetches searches finds gets looks reads extracts shows reports queries counts
computes calculates converts tells gives produces summarizes summarises""".lower()))
# A getter's description may say it in the imperative ("Return the current working directory path.").
_GETTER_VERBS = _READ_VERBS | frozenset(re.findall(r"\w+", """
displays views return retrieve check list fetch search find get look read extract show report query count
display view""".lower()))
# A tool that writes says so, in its name or description: a verb of storing (a tool of "Machine translation." or
# "Summarize a PDF document." stores nothing).
_STORES = re.compile(r"(?:\b|(?<=[a-z])(?=[A-Z])|_)(?:creat|add|append|stor|sav|writ|record|insert|new|put|log|"
                     r"upload|updat|edit|set)", re.IGNORECASE)
_STATE_WORDS = frozenset(["current", "all", "latest", "recent", "available", "now"])
_LABEL = re.compile(r"\bdescription:\s*", re.IGNORECASE)
_ACTS = re.compile(r"\b(?:sends?|deliver|creates?|adds?|stores?|saves?|deletes?|removes?|moves?|opens?|writes?|"
                   r"updates?|books?|schedules?|cancels?)\b", re.IGNORECASE)
_QUESTION = re.compile(r"\?|(?:^|[.!;]\s+)(?:what|which|who|whom|whose|when|where|why|how|is|are|am|do|does|did|"
                       r"can|could|will|should|any)\b", re.IGNORECASE)
_WORD = re.compile(r"[a-z]+")
_SEARCH_NOUN = re.compile(r"^(?:[\w-]+ ){0,2}(?:search|lookup|query)\b", re.IGNORECASE)
_INVITES = re.compile(r"\bsends? (?:an? |the )?invit", re.IGNORECASE)
_REMOVES = re.compile(r"\b(?:delet|remov|trash|discard|eras|cancel|purg)\w*", re.IGNORECASE)
_REMOVAL_ASKED = re.compile(r"\b(?:delet|remov|trash|discard|eras|cancel|purg|clear|drop|get rid|throw)\w*",
                            re.IGNORECASE)
_FIRST_SENTENCE = re.compile(r"^(.*?[.!?])(?:\s|$)", re.DOTALL)
_CHANNEL_WORDS = re.compile(r"\b(?:e-?mail|mail|text|sms|message)", re.IGNORECASE)


def reads_only(tool: Tool) -> bool:
    """Whether ``tool`` only reads, by its description: it opens with a verb of reading and says no verb of
    acting ("Returns every calendar entry scheduled on a given day")."""
    if tool.read_only:
        return True
    description = (tool.description or "").strip()
    first = _WORD.findall(description.lower()[:40])
    if not first or _ACTS.search(description):
        return False
    # "Returns every calendar entry ...", or a search named as a noun ("Full-text search across all notes. ...")
    return first[0] in _READ_VERBS or bool(_SEARCH_NOUN.search(description[:40]))


def acts(tool: Tool) -> bool:
    """Whether ``tool`` does something rather than read: not :func:`reads_only`, and what its description says of
    the tool itself does not open with a verb of reading."""
    if reads_only(tool):
        return False
    first = _WORD.findall(own_description(tool).lower()[:40])
    return bool(first) and first[0] not in _GETTER_VERBS


def _getter(tool: Tool) -> bool:
    """Whether ``tool`` reads state and takes nothing: no parameters, and what its description says of the tool
    itself opens with a verb of reading ("Return the current working directory path.", "Gets the current speed of
    the vehicle.") and names no act."""
    if tool.parameters.get("properties"):
        return False
    if tool.read_only:
        return True
    own = own_description(tool)
    first = _WORD.findall(own.lower()[:40])
    return bool(first) and first[0] in _GETTER_VERBS and not _ACTS.search(own)


def own_description(tool: Tool) -> str:
    """What the description says of the tool itself: after a "Tool description:" label when it has one (generated
    registries open with the system the tool belongs to: "This tool belongs to the ... system, which allows users
    to create, send ... Tool description: Get the current time.")."""
    description = tool.description or ""
    labels = list(_LABEL.finditer(description))
    return (description[labels[-1].end():] if labels else description).strip()


def distinctive_words(name: str, tools: Mapping[str, Tool]) -> set[str]:
    """The words of a tool's name that no other offered tool's name has."""
    others: set[str] = set()
    for other in tools:
        if other != name:
            others |= set(name_words(other))
    return {w for w in set(name_words(name)) - others if len(w) > 2}


def _without_modifiers(request: str, name: str, tools: Mapping[str, Tool]) -> str:
    """The request without the words that modify a noun another offered tool's name has: in "Reply to Alex Chen's
    offsite agenda email", "agenda" says which e-mail, not that the calendar's agenda is wanted."""
    nouns = {w for other in tools if other != name for w in name_words(other) if len(w) > 3}
    nouns -= set(name_words(name))
    if not nouns:
        return request
    return re.sub(rf"\b[a-z]+\s+(?=(?:{'|'.join(sorted(nouns))})\b)", " ", request, flags=re.IGNORECASE)


def _said(words: set[str], request: str) -> bool:
    said = _WORD.findall(request.lower())
    return any(w[:5] == s[:5] and min(len(w), len(s)) >= 4 or w == s for w in words for s in said)


def tidy_plan(plan: Plan, tools: Mapping[str, Tool], request: str) -> tuple[Plan, list[str]]:
    """``plan`` without repeated calls and stray reads (renumbered from 1; references follow), with notes."""
    calls: list[Call] = []
    numbers: dict[int, int] = {}
    first_of: dict[tuple[str, str], int] = {}
    notes: list[str] = []
    for call in plan.calls:
        args = map_refs(call.args, lambda r: Ref(numbers.get(r.step, r.step)))
        args = {k: _once(v) if isinstance(v, list) else v for k, v in args.items()}  # ([$3, $3]: [$3])
        key = (call.name, repr(sorted(args.items())))
        if key in first_of:
            numbers[call.id] = first_of[key]
            notes.append(f"plan: left out step {call.id} (the same call as step {first_of[key]})")
            continue
        numbers[call.id] = first_of[key] = len(calls) + 1
        calls.append(Call(len(calls) + 1, call.name, args))
    stray = _stray_reads(calls, tools, request) | _repeated_invitations(calls, tools, request) | _read_back(
        calls, tools) | _covered_reads(calls, tools, request)
    if stray:
        notes.append(f"plan: left out step {', '.join(str(s) for s in sorted(stray))} (its result is not used, "
                     "and the request does not ask for it: it only reads, reads back what the plan wrote, or "
                     "repeats an invitation)")
        calls = list(drop_replaced(calls, stray).calls)  # (nothing uses a stray read)
    unasked = _unasked_removals(calls, tools, request) | _stray_writes(calls, tools, request) | _echoes(
        calls, tools, request) | _made_up_extras(calls, tools, request) | _stored_copies(calls, tools, request) | \
        _to_itself(calls, tools)
    if unasked and len(unasked) < len(calls):
        notes.append(f"plan: left out step {', '.join(str(s) for s in sorted(unasked))} (the request does not ask "
                     "for it: it removes, writes made-up text, repeats another call's words, acts on a made-up "
                     "value, or goes from a place to the same place)")
        calls = list(drop_replaced(calls, unasked).calls)
    if not notes:
        return plan, []
    return Plan(calls=tuple(calls), answer=plan.answer), notes


_FROM = re.compile(r"^(?:orig(?:in)?|from|start(?:ing)?|source|src|departure)(?:_|$)|^starting point", re.IGNORECASE)
_TO = re.compile(r"^(?:dest(?:ination)?|to|target|end|arrival)(?:_|$)|^destination", re.IGNORECASE)


def _to_itself(calls: Sequence[Call], tools: Mapping[str, Tool]) -> set[int]:
    """Calls that go from a value to the same value: a route from "Portland, Maine" to "Portland, Maine" (an
    origin and a destination parameter, by their names or descriptions, passed the same words)."""
    return {call.id for call in calls if _side(call, tools, _FROM) & _side(call, tools, _TO)}


def _side(call: Call, tools: Mapping[str, Tool], pattern: re.Pattern[str]) -> set[str]:
    """The literal texts ``call`` passes to parameters whose name or description ``pattern`` opens."""
    props: Mapping[str, Any] = (tools[call.name].parameters.get("properties") or {}) if call.name in tools else {}
    return {folded(v) for name, v in call.args.items() if isinstance(v, str) and v.strip()
            and (pattern.search(name) or pattern.search(str((props.get(name) or {}).get("description", ""))))}


def _once(items: list[Any]) -> list[Any]:
    """A list with each step's reference once."""
    out: list[Any] = []
    for item in items:
        if not (isinstance(item, Ref) and item in out):
            out.append(item)
    return out


def _stray_reads(calls: Sequence[Call], tools: Mapping[str, Tool], request: str) -> set[int]:
    """Unused reads whose tool the request does not name; in a question, which asks for reads, only the getters
    (:func:`_getter`: ``pwd()``, ``get_current_time()`` beside the calls that serve it)."""
    if len(calls) < 2:
        return set()
    question = bool(_QUESTION.search(request))
    used = {r.step for c in calls for r in find_refs(c.args)}
    out = set()
    for call in calls:
        tool = tools.get(call.name)
        if tool is None or call.id in used:
            continue
        if _getter(tool):
            words = distinctive_words(call.name, tools) or {w for w in name_words(call.name) if len(w) > 2}
            nouns = words - _GETTER_VERBS - _STATE_WORDS or words  # get_current_time: "time", not "current"
            if nouns and not _said(nouns, request):
                out.add(call.id)
            continue
        if question:
            continue
        if lookup_kind(tool) is not None:  # (by a name: tinyagent.run._repair.stray_lookups)
            if any(isinstance(v, str) and "@" in v for v in call.args.values()):
                out.add(call.id)  # looks up by the address it should find: made up from a name
            continue
        if not reads_only(tool):
            continue
        words = distinctive_words(call.name, tools)
        if words and not _said(words, _without_modifiers(request, call.name, tools)):
            out.add(call.id)
    if len(out) == len(calls):
        return set()
    return out


def _reads(tool: Tool) -> bool:
    """``tool`` reads: :func:`reads_only`, or what its description says of the tool itself opens with a verb of
    reading and names no act ("Display the last part of a file.")."""
    if reads_only(tool):
        return True
    own = own_description(tool)
    first = _WORD.findall(own.lower()[:40])
    return bool(first) and first[0] in _GETTER_VERBS and not _ACTS.search(own)


def _stems(text: str) -> set[str]:
    """The first five letters of the text's words of four letters or more, less the function words."""
    return {w[:5] for w in _WORD.findall(text.lower()) if len(w) >= 4 and w not in _FUNCTION_WORDS}


_FUNCTION_WORDS = frozenset(["from", "with", "that", "this", "than", "into", "onto", "your", "their", "there",
                             "what", "when", "which", "also", "only", "each", "every", "some", "given", "will"])


def _covered_reads(calls: Sequence[Call], tools: Mapping[str, Tool], request: str) -> set[int]:
    """Unused reads of what another unused read reads more narrowly: its tool takes every parameter this one's
    takes and more, the call passes the same values, and the request says none of the words this one's
    description has and the other's lacks (``cat(file_name=X)``, "Display the contents of a file", beside
    ``tail(file_name=X)``, "Display the last part of a file", for "What does the last line look like?"; "peek the
    content ... and a character count" keeps both)."""
    used = {r.step for c in calls for r in find_refs(c.args)}
    reads = [c for c in calls if c.id not in used and c.name in tools and _reads(tools[c.name])]
    params = {c.name: set(tools[c.name].parameters.get("properties") or {}) for c in reads}
    said = _stems(request)
    return {a.id for a in reads for b in reads
            if a.name != b.name and a.args and params[a.name] < params[b.name]
            and all(k in b.args and b.args[k] == v for k, v in a.args.items())
            and (own := _stems(own_description(tools[a.name])) - _stems(own_description(tools[b.name])))
            and not own & said}


def _repeated_invitations(calls: Sequence[Call], tools: Mapping[str, Tool], request: str) -> set[int]:
    """Unused messages to exactly the people another call invites (whose tool sends the invitations), when the
    request names no channel to send by."""
    if _CHANNEL_WORDS.search(request) or asked_channel(request) is not None:
        return set()
    sending = senders(tools.values())
    used = {r.step for c in calls for r in find_refs(c.args)}
    invited = [frozenset(find_refs(c.args)) for c in calls
               if c.name in tools and _INVITES.search(tools[c.name].description or "") and c.name not in sending]
    out = set()
    for call in calls:
        if call.name in sending and call.id not in used:
            recipients = frozenset(r for v in call.args.values() if isinstance(v, list) for r in find_refs(v))
            if recipients and any(recipients <= refs for refs in invited):
                out.add(call.id)
    return out


def _removes(tool: Tool) -> bool:
    """Whether a tool removes things, by its name's words or its description's first sentence."""
    description = (tool.description or "").strip()
    first = _FIRST_SENTENCE.match(description)
    return bool(_REMOVES.search(" ".join(name_words(tool.name))) or _REMOVES.search(first.group(1) if first
                                                                                      else description))


def _unasked_removals(calls: Sequence[Call], tools: Mapping[str, Tool], request: str) -> set[int]:
    """Unused calls of tools that remove, when the request asks to remove nothing."""
    if _REMOVAL_ASKED.search(request):
        return set()
    used = {r.step for c in calls for r in find_refs(c.args)}
    return {c.id for c in calls if c.id not in used and c.name in tools and _removes(tools[c.name])}


def _stray_writes(calls: Sequence[Call], tools: Mapping[str, Tool], request: str) -> set[int]:
    """Unused writes the request does not name, into what another call of the plan reads, whose longest text is
    made up (no word of four letters or more of it in the request) or restates another write's text."""
    used = {r.step for c in calls for r in find_refs(c.args)}
    sending = senders(tools.values())
    said = set(_WORD.findall(request.lower()))
    out = set()
    for call in calls:
        tool = tools.get(call.name)
        if (tool is None or call.id in used or call.name in sending or reads_only(tool)
                or lookup_kind(tool) is not None or _said(distinctive_words(call.name, tools), request)):
            continue
        texts = [v for v in call.args.values() if isinstance(v, str)]
        longest = max(texts, key=len, default="")
        words = {w for w in _WORD.findall(longest.lower()) if len(w) >= 4}
        reread = [o for o in calls if o.id != call.id and o.name in tools and reads_only(tools[o.name])
                  and same_target(o, call)]
        if words and reread and (not words & said or _restates(call, words, reread, calls, tools)):
            out.add(call.id)
    return out


def _restates(call: Call, words: set[str], targets: Sequence[Call], calls: Sequence[Call],
              tools: Mapping[str, Tool]) -> bool:
    """Whether the words of ``call``'s text, less the words naming what it writes into, all lie in one text of
    another write of the plan (a reminder "Buy ricotta" restated as "Add ricotta to the recipe" in the recipe's
    note)."""
    named = {w for t in targets for v in t.args.values() if isinstance(v, str) for w in _WORD.findall(v.lower())}
    rest = words - named
    return bool(rest) and any(
        rest <= {w for v in o.args.values() if isinstance(v, str) for w in _WORD.findall(v.lower())}
        for o in calls if o.id != call.id and o.name != call.name and o.name in tools
        and not reads_only(tools[o.name]) and lookup_kind(tools[o.name]) is None)


_CONTENT = re.compile(r"[a-z][a-z0-9']{2,}")
_LETTERS = re.compile(r"[^\W\d_]")
_FILLER = frozenset(["the", "and", "for", "with", "that", "this", "from", "you", "your", "are", "our"])


def _content(value: object) -> set[str]:
    texts = [value] if isinstance(value, str) else [v for v in value if isinstance(v, str)] \
        if isinstance(value, list) else []
    return {w for t in texts for w in _CONTENT.findall(t.lower()) if w not in _FILLER}


def _echoes(calls: Sequence[Call], tools: Mapping[str, Tool], request: str) -> set[int]:
    """Unused calls of a tool the clauses name fewer times than the plan calls it, whose words (of its longest text)
    a message's longest text holds and none of those clauses says."""
    named = named_clauses(request, tools)
    sending = senders(tools.values())
    used = {r.step for c in calls for r in find_refs(c.args)}
    texts = {c.id: _content(max((v for v in c.args.values() if isinstance(v, str) and _LETTERS.search(v)),
                                key=len, default="")) for c in calls}
    out: set[int] = set()
    for name in dict.fromkeys(c.name for c in calls):
        clauses = [text for group, text in named if name in group]
        mine = [c for c in calls if c.name == name]
        if not clauses or len(mine) <= len(clauses):
            continue
        said = set().union(*(_content(t) for t in clauses))
        for call in mine:
            words = texts[call.id]
            if (call.id not in used and words and not words & said and len(mine) - len(out) > len(clauses)
                    and any(words <= texts[o.id] for o in calls if o.name != name and o.name in sending)):
                out.add(call.id)
    return out


_FREE_TEXT = re.compile(r"(?:^|[\W_])(?:text|content|body|message|note|title|subject|comment|description|summary|"
                        r"task|reason)s?(?:$|[\W_])", re.IGNORECASE)
_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}(?:[ T]\d{1,2}:\d{2}(?::\d{2})?)?|\d{1,2}:\d{2}(?::\d{2})?")


def made_up_values(call: Call, tool: Tool, request: str) -> list[str]:
    """The short text values of ``call`` that nothing gives: not the request's (:func:`~._no_tool.grounded_in`), not
    an option or default its parameter lists, not a date or time (resolved from the request's words), not a code
    of three letters or fewer (a conversion: "Euros" is EUR), not an identifier (a lookup gives those), not in a
    parameter of text to write (its name or description says text, content, body, message, title ...) and not a
    composed text of more than three words."""
    props = tool.parameters.get("properties") or {}
    out = []
    for name, value in call.args.items():
        found = props.get(name)
        schema: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        if identifier_kind(schema) is not None or _FREE_TEXT.search(f"{name} {schema.get('description', '')}"):
            continue  # an identifier comes from a lookup; a text is composed
        listed = str(schema.get("description", "")).lower()
        for v in leaves(value):
            if not isinstance(v, str) or len(v.strip()) <= 3 or len(v.split()) > 3 or _DATE_TIME.fullmatch(v.strip()):
                continue
            if v in (schema.get("enum") or []) or v == schema.get("default") or v.lower() in listed:
                continue
            if not grounded_in(v, request):
                out.append(v)
    return out


def _made_up_extras(calls: Sequence[Call], tools: Mapping[str, Tool], request: str) -> set[int]:
    """Unused calls of tools the request does not name that act on a made-up value, beside a call of another tool
    whose every value is the request's."""
    if len(calls) < 2 or any(c.name not in tools for c in calls):
        return set()
    used = {r.step for c in calls for r in find_refs(c.args)}
    made_up = {c.id: made_up_values(c, tools[c.name], request) for c in calls}
    clean = {c.name for c in calls if not made_up[c.id]}
    return {c.id for c in calls if made_up[c.id] and c.id not in used and c.name not in clean
            and not _said(distinctive_words(c.name, tools), request)} if clean else set()


def writes(tool: Tool, sending: Mapping[str, object]) -> bool:
    """Whether ``tool`` writes: not a reader, not a lookup, not one of the message ``sending`` tools
    (:func:`~._channels.senders`, computed once by the caller), and its name or description has a verb of storing."""
    if reads_only(tool) or lookup_kind(tool) is not None or tool.name in sending:
        return False
    return bool(_STORES.search(tool.name) or _STORES.search(tool.description or ""))


def takes_identifier(tool: Tool, name: str) -> bool:
    """Whether ``tool``'s parameter ``name`` takes e-mail addresses or phone numbers (by its schema)."""
    schema = (tool.parameters.get("properties") or {}).get(name)
    return isinstance(schema, Mapping) and identifier_kind(schema) is not None


def _read_back(calls: Sequence[Call], tools: Mapping[str, Tool]) -> set[int]:
    """Unused reads of what an earlier write of the plan writes (the same text under any parameter)."""
    used = {r.step for c in calls for r in find_refs(c.args)}
    sending = senders(tools.values())
    written = [c for c in calls if c.name in tools and writes(tools[c.name], sending)]
    return {c.id for c in calls if c.id not in used and c.name in tools and reads_only(tools[c.name])
            and lookup_kind(tools[c.name]) is None
            and any(w.id < c.id and same_target(w, c) and _same_thing(w.name, c.name) for w in written)}


def _same_thing(one: str, other: str) -> bool:
    """Whether two tools' names share a word of what they act on (``notes.create`` and ``notes.fetch``), not only
    a verb or a generic object: an event's place is not read back by showing that place on a map."""
    return bool({w[:5] for w in topic_words(one, 3)} & {w[:5] for w in topic_words(other, 3)})


def _stored_copies(calls: Sequence[Call], tools: Mapping[str, Tool], request: str) -> set[int]:
    """Unused writes of a step's result (as what they must store: a required parameter's value, not an optional
    place) that a message of the plan sends too, whose tool's name the request does not say."""
    used = {r.step for c in calls for r in find_refs(c.args)}
    sending = senders(tools.values())
    sent = {r.step for c in calls if c.name in sending for r in _content_refs(c, tools[c.name])}
    return {c.id for c in calls if c.id not in used and c.name in tools and writes(tools[c.name], sending)
            and any(r.step in sent for r in _content_refs(c, tools[c.name], required=True))
            and not _said(set(name_words(c.name)), request)}


def _content_refs(call: Call, tool: Tool, required: bool = False) -> list[Ref]:
    """The references ``call`` passes in parameters that take no identifier (what it writes or sends, not to whom;
    ``required``: in required parameters only)."""
    return [r for name, value in call.args.items() if not takes_identifier(tool, name)
            and (not required or name in tool.required) for r in find_refs(value)]
