"""The missing step a value needs, written into the plan: no model call.

A small planner often skips the step that gives a value and makes the value up instead:
``send(to=["priya@example.com"], ...)`` for "Email Priya ...", ``attachment_paths=["trip_itinerary.pdf"]`` for
"attach the trip itinerary". Planning again with the reason comes first (told why, the planner often fixes more
than the value: a stray step beside it), but the 1.5B often writes the same value again. Where the last plan still
passes one, and the plan itself says what the missing step must be, that step is written in:

* **an identifier the request does not give** (an e-mail address or a phone number, by the parameter's schema and
  description: :func:`tinyagent._formats.identifier_kind`): the one offered tool that finds that kind and takes
  none (:func:`~._lookups.lookup_kind`), with one required text parameter, is called with the name the made-up
  value was built from, when the request writes it as a name ("Priya" for ``priya@example.com``, "Alex Kim" for
  ``alexkim@...``);
* **a value whose parameter names its source** ("Local paths of files to attach, as returned by files_locate":
  :func:`~._repair.documented_source`): the source tool, with one required text parameter, is called with the words
  of the made-up value that the request says, as the request says them ("trip itinerary" for
  ``trip_itinerary.pdf``).

The value becomes a reference to the new step, placed just before the call. A made-up identifier in an *optional*
parameter that no request word explains (``attendee_emails=["your_email@example.com"]``) is left out: the tool's
default is the better value. Anything else stays, for the planner to be told and plan again.

Nothing here is keyed to a tool's name: the producer is found by what tools' descriptions and schemas say.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

from .._formats import identifier_kind, written_identifiers
from .._plan import Call, Plan, Ref, find_refs, map_refs
from .._tools import Tool
from ._channels import channel_clauses
from ._clauses import named_clauses
from ._lookups import channel_choices, lookup_kind, lookup_kinds, one_text_param
from ._repair import invented_identifiers
from ._sources import documented_source

__all__ = ["dropped_actions", "insert_producers", "merge_lookups", "merge_served", "name_in_request", "object_of",
           "pair_numbers", "path_source", "people", "person_lists", "request_names", "sole_finder",
           "swap_literals", "terms_in_request"]

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
_SENTENCE_END = re.compile(r"[.!?:;]\s*$")
_SPLIT = re.compile(r"[^a-z]+")
_POSSESSIVE = re.compile(r"['’]s$", re.IGNORECASE)
_FILE_PATHS = re.compile(r"\b(?:file|document|attach\w*)s?\b.*\bpaths?\b|\bpaths?\b.*\b(?:file|document|attach\w*)s?\b",
                         re.IGNORECASE)
_RETURNS_PATH = re.compile(r"\breturns?\b[^.]*\bpaths?\b", re.IGNORECASE)


def _fold(text: str) -> str:
    """Lower case without accents ("Zoë" → "zoe")."""
    return "".join(c for c in unicodedata.normalize("NFKD", text.lower()) if not unicodedata.combining(c))


def _name_runs(request: str) -> list[list[str]]:
    """The runs of capitalised words in ``request`` (possessives cut), each with its sentence's opening word left
    out ("Email Priya ..." gives ``["Priya"]``)."""
    runs: list[list[str]] = []
    run: list[str] = []
    last_end = 0
    for match in _WORD.finditer(request):
        word = _POSSESSIVE.sub("", match.group())
        opening = not request[:match.start()].strip() or bool(_SENTENCE_END.search(request[:match.start()]))
        gap = request[last_end:match.start()]
        last_end = match.end()
        if not word[:1].isupper() or opening or (run and gap.strip() not in ("", "-")):
            if run:
                runs.append(run)
            run = [] if opening or not word[:1].isupper() else [word]
            continue
        run.append(word)
        if word != match.group():  # "Alex Chen's offsite": the possessive ends the name
            runs.append(run)
            run = []
    if run:
        runs.append(run)
    return runs


def request_names(request: str) -> list[str]:
    """The names the request writes (runs of capitalised words, a sentence's opening word left out)."""
    return list(dict.fromkeys(" ".join(run) for run in _name_runs(request)))


_NOT_PEOPLE = frozenset("""
monday tuesday wednesday thursday friday saturday sunday january february march april may june july august
september october november december today tomorrow tonight
""".split())  # noqa: SIM905 - a word list reads better as text
_DETERMINER = re.compile(r"\b(?:my|our|your|his|her|their|the|a|an|this|that|these|those)\s+$", re.IGNORECASE)
_NAME = r"[A-Z][^\W\d_]*(?:\s+[A-Z][^\W\d_]*)?"
_NAME_LIST = re.compile(rf"(?<![\w'’])({_NAME}(?:\s*,\s*{_NAME})*\s*,?\s+(?:and|&)\s+{_NAME})(?![\w'’])")
_LIST_SPLIT = re.compile(r"\s*,\s*(?:and\s+|&\s+)?|\s+(?:and|&)\s+")


def _is_person(name: str, request: str) -> bool:
    """Whether a name the request writes is someone's: not a day or month, and not opened by a determiner or a
    possessive ("my Lasagna note", "the Spanish consulate")."""
    if _fold(name.split()[0]) in _NOT_PEOPLE:
        return False
    at = re.search(rf"(?<![\w'’]){re.escape(name)}(?![\w'’])", request)
    return at is None or not _DETERMINER.search(request[:at.start()])


_RELATIONS = re.compile(r"\b(?:my|our)\s+(" + "|".join("""
mum mom mother mommy mummy dad father daddy parents sister sis brother bro wife husband partner spouse fianc[ée]e?
boyfriend girlfriend son daughter kids grandma grandmother granny gran nana grandpa grandfather aunt auntie uncle
cousin niece nephew boss manager landlord landlady assistant secretary dentist doctor accountant lawyer therapist
neighbou?r roommate flatmate housemate babysitter nanny cleaner trainer coach tutor teacher mechanic
""".split()) + r")\b(?!\s+(?-i:[A-Z]))", re.IGNORECASE)  # noqa: SIM905 - a word list reads better as text


def relations(request: str) -> list[tuple[int, str]]:
    """The people the request names by their relation to the user ("text my sister", "our landlord"), each with
    where it is written: the word as written, which is what an address book saves them under (not where a name
    follows: "my brother Luis" is Luis)."""
    return [(m.start(1), m.group(1)) for m in _RELATIONS.finditer(request)]


def people(request: str) -> list[str]:
    """The request's names (:func:`request_names`) that are people's (:func:`_is_person`), and the people it names
    by a relation (:func:`relations`), in the request's order."""
    named = [(request.find(n), n) for n in request_names(request) if _is_person(n, request)]
    return list(dict.fromkeys(n for _, n in sorted(named + relations(request))))


def person_lists(request: str) -> list[list[str]]:
    """The lists of people the request joins with commas and "and" ("text Marta and Diego", "Chloe, Ravi and
    Omar"), each in the request's order."""
    out = []
    for match in _NAME_LIST.finditer(request):
        names = [n.strip() for n in _LIST_SPLIT.split(match.group(1)) if n.strip()]
        before = request[:match.start()]
        if not before.strip() or _SENTENCE_END.search(before):  # "Text Ines, Pablo and ...": the verb opens it
            names[0] = names[0].partition(" ")[2]
            names = [n for n in names if n]
        if len(names) >= 2 and all(_is_person(n, request) for n in names):
            out.append(names)
    return out


def pair_numbers(made_up: Sequence[tuple[str, Any]], request: str) -> dict[str, str]:
    """The person each made-up number of one call was meant for: with n such numbers in one parameter and one
    list of n people in the request, the numbers in order to the people in order; none otherwise."""
    by_param: dict[str, list[str]] = {}
    for name, value in made_up:
        if isinstance(value, str) and not re.search(r"[^\W\d_]", value):
            by_param.setdefault(name, []).append(value)
    out: dict[str, str] = {}
    for values in by_param.values():
        fits = {tuple(names) for names in person_lists(request) if len(names) == len(values) >= 2}
        if len(fits) == 1:
            out.update(zip(values, next(iter(fits)), strict=True))
    return out


def path_source(schema: Mapping[str, Any], tools: Mapping[str, Tool], owner: Tool | None = None,
                name: str = "") -> str | None:
    """The offered tool a file-path parameter's values come from: the one its description or its tool's (``owner``)
    names (:func:`~._sources.documented_source`), else, for a parameter described as paths of files or documents
    ("Local paths of files to attach"), the one offered tool that returns a path and takes one text argument (a file
    search); None when there is none, or more than one."""
    source = documented_source(schema, tools, owner, name)
    if source is not None:
        return source
    items: Mapping[str, Any] = schema.get("items") or {}
    if not _FILE_PATHS.search(f"{schema.get('description', '')} {items.get('description', '')}"):
        return None
    finders = [t.name for t in tools.values()
               if one_text_param(t) and _RETURNS_PATH.search(f"{t.description} {t.returns or ''}")]
    return finders[0] if len(finders) == 1 else None


def sole_finder(kind: str, tools: Mapping[str, Tool]) -> tuple[str, str, dict[str, Any]] | None:
    """The one offered tool that finds identifiers of ``kind`` and takes one text argument, with that argument's
    name and what its other required parameters take for the kind (:func:`~._lookups.channel_choices`); None when
    there is none, or more than one."""
    finders = [(t.name, *found) for t in tools.values() if kind in lookup_kinds(t)
               and (found := channel_choices(t, kind)) is not None]
    return finders[0] if len(finders) == 1 else None


def name_in_request(value: str, request: str) -> str | None:
    """The name in ``request`` that a made-up identifier was built from, as the request writes it: a run of
    capitalised words one of which is a part of the value's local part (``priya.s@...`` and "Priya Sharma"), or
    whose words joined are the local part (``alexkim@...`` and "Alex Kim"), or a full name whose surname ends the
    local part (``danielcruz@...`` and "Dana Cruz"); else the first relation the request names by which the local part
    is built (``fiancée's_email@...`` and "my fiancée"). None when no run, or more than one, fits, and no relation."""
    local = _fold(value.split("@")[0])
    parts = {p for p in _SPLIT.split(local) if len(p) >= 2}
    joined = _SPLIT.sub("", local)
    fits = []
    for run in _name_runs(request):
        words = [_fold(w) for w in run]
        if parts & set(words) or (joined and joined == "".join(words)) or (
                len(words) > 1 and len(words[-1]) >= 4 and joined.endswith(words[-1])):  # danielcruz@: "Dana Cruz"
            fits.append(" ".join(run))
    fits = list(dict.fromkeys(fits))
    if len(fits) == 1:
        return fits[0]
    return next((word for _, word in relations(request) if _fold(word) in local), None)


def terms_in_request(value: str, request: str) -> str | None:
    """The request's own words for a made-up path or name (``/docs/trip_itinerary.pdf`` → "trip itinerary"): the
    shortest span of the request that holds every word of the value's file name (its folder and extension left
    out); None when one of them is not in the request."""
    stem = re.sub(r"\.[A-Za-z0-9]{1,5}$", "", value.replace("\\", "/").rsplit("/", 1)[-1])
    wanted = [w for w in re.split(r"[\W_]+", _fold(stem)) if w]
    words = list(_WORD.finditer(request))
    folded = [_fold(_POSSESSIVE.sub("", m.group())) for m in words]
    if not wanted or not set(wanted) <= set(folded):
        return None
    best: tuple[int, int] | None = None
    for i, word in enumerate(folded):
        if word not in wanted:
            continue
        seen: set[str] = set()
        for j in range(i, len(folded)):
            if folded[j] in wanted:
                seen.add(folded[j])
            if seen == set(wanted):
                if best is None or j - i < best[1] - best[0]:
                    best = (i, j)
                break
    if best is None or best[1] - best[0] > 2 * len(wanted) + 2:
        return None
    return request[words[best[0]].start():words[best[1]].end()]


def _named_for_channel(names: Sequence[str], kind: str, request: str) -> str | None:
    """The one of ``names`` that the request's clauses of sending by ``kind`` name ("Text Priya that ..., and
    email Tom ...": Priya, for a phone number), or None."""
    texts = [t.lower() for t in channel_clauses(request).get(kind, [])]
    inside = [n for n in names if any(re.search(rf"\b{re.escape(n.lower())}\b", t) for t in texts)]
    return inside[0] if len(inside) == 1 else None


def _producer(name: str, value: str, tool: Tool, tools: Mapping[str, Tool], request: str,
              paired: Mapping[str, str] | None = None) -> Call | None:
    """The call that gives ``value`` for ``tool``'s parameter ``name`` (step number 0, set by the caller), or
    None. ``paired``: the person each of the call's made-up numbers was meant for (:func:`pair_numbers`)."""
    paired = paired or {}
    schema: Mapping[str, Any] = (tool.parameters.get("properties") or {}).get(name) or {}
    kind = identifier_kind(schema)
    if kind is not None:
        finder = sole_finder(kind, tools)
        person = name_in_request(value, request) if finder is not None else None
        if person is None and finder is not None and not re.search(r"[^\W\d_]", value):
            # A made-up number is no one's name: the person it was meant for, paired in order when the call made
            # up one for each of a list ("text Marta and Diego"), else the request's one person, if one.
            person = paired.get(value)
            if person is None:
                names = people(request)
                person = names[0] if len(names) == 1 else _named_for_channel(names, kind, request)
        if finder is None or person is None:
            return None
        return Call(0, finder[0], {finder[1]: person, **finder[2]})
    source = path_source(schema, tools, tool, name)
    if source is None or source == tool.name or (param := one_text_param(tools[source])) is None:
        return None
    terms = terms_in_request(value, request) if value.strip() else object_of(tool.name, tools, request)
    return None if terms is None else Call(0, source, {param: terms})


_LEADING_DETERMINERS = re.compile(r"^(?:(?:the|a|an|my|our|your|his|her|their|this|that|these|those)\s+)+",
                                  re.IGNORECASE)
_OBJECT_END = re.compile(r"\s+(?:and|then|to|into|in|on|for|with|from|as|by|at|so|because)\b.*$", re.IGNORECASE)


def object_of(name: str, tools: Mapping[str, Tool], request: str) -> str | None:
    """What the request's clause that names tool ``name`` acts on ("Summarize the car insurance policy and ..."
    gives "car insurance policy" for a summarizer): the clause's words after its verb, up to a preposition or a
    conjunction, without determiners; None when no one clause names the tool or nothing is left."""
    clauses = [text for group, text in named_clauses(request, tools) if name in group]
    if len(clauses) != 1:
        return None
    words = clauses[0].split(None, 1)
    rest = _OBJECT_END.sub("", _LEADING_DETERMINERS.sub("", words[1] if len(words) > 1 else "")).strip(" ,.;:!?'\"")
    return rest or None


def insert_producers(plan: Plan, tools: Mapping[str, Tool], request: str, known: str) -> tuple[Plan, list[str]]:
    """``plan`` with the step each made-up value needs written in before the call that passes it, and with
    made-up identifiers no request word explains left out of optional parameters; with notes of what changed.

    Args:
        plan: a whole plan (steps numbered from 1).
        tools: the tools the planner may call (a producer is one of them).
        request: the user's request (where names and terms are read).
        known: what a literal may come from (the request, the conversation).
    """
    out: list[Call] = []
    numbers: dict[int, int] = {}
    notes: list[str] = []
    made: dict[tuple[str, str], int] = {}  # (tool, arguments) -> the step that gives it (the plan's own first)

    def renumber(ref: Ref) -> Ref:
        return Ref(numbers.get(ref.step, ref.step))

    made_up = {c.id: _made_up(c, tools, known) for c in plan.calls}
    targets = _targets(plan, tools, request, made_up)
    for call in plan.calls:
        tool = tools.get(call.name)
        bad = made_up[call.id]
        args = dict(map_refs(call.args, renumber))
        if tool is not None and bad:
            paired = pair_numbers(bad, request)
            for name, value in bad:
                producer = _producer(name, value, tool, tools, request, paired)
                if producer is not None and name not in tool.required and any(
                        step != call.id and person in producer.args.values() and _once(person, request)
                        for step, person in targets):
                    producer = None  # "text it to Ellie and Sam, and add book club to my calendar": not invited
                if producer is not None:
                    key = (producer.name, repr(sorted(producer.args.items())))
                    if key not in made:
                        made[key] = len(out) + 1
                        out.append(Call(len(out) + 1, producer.name, producer.args))
                        notes.append(f"plan: step {call.id} passed {name}={value!r}, which nothing gives; added "
                                     f"{_call_text(producer)} for it")
                    else:
                        notes.append(f"plan: step {call.id} passed {name}={value!r}; passed step {made[key]}'s "
                                     "result instead")
                    args[name] = swap_literals(args[name], {value: Ref(made[key])})
                elif name not in tool.required:
                    args[name] = swap_literals(args[name], {value: None})
                    notes.append(f"plan: step {call.id} left out {name}={value!r} (made up, and optional)")
                elif _kept_beside(args[name], value, bad, name, request):
                    # (a recipient list with the request's address and one made of its phone number: the rest go)
                    args[name] = swap_literals(args[name], {value: None})
                    notes.append(f"plan: step {call.id} left {value!r} out of {name} (made up; nothing gives it)")
            args = {k: v for k, v in args.items() if not (k not in tool.required and v in ([], None))}
        numbers[call.id] = len(out) + 1
        out.append(Call(len(out) + 1, call.name, args))
        made.setdefault((call.name, repr(sorted(args.items()))), len(out))
    if not notes:
        return plan, []
    return Plan(calls=tuple(out), answer=plan.answer), notes


def _kept_beside(current: Any, value: str, bad: Sequence[tuple[str, Any]], name: str, request: str) -> bool:
    """Whether a made-up item of a required list can go: it is made of a phone number the request writes for
    something else ("+447700900123@twilio.com" among the recipients of an e-mail, the number being the text
    message's), and the list holds another item that is not made up (written in the request, or a step's
    result). A made-up address of someone the request names ("team@corp.io" for "the team") stays, for the
    planner or the user to be told."""
    if not isinstance(current, list) or value not in current:
        return False
    digits = "".join(c for c in value if c.isdigit())
    numbers = ["".join(c for c in n if c.isdigit()) for n in written_identifiers(request)["phone"]]
    if not any(len(n) >= 7 and n in digits for n in numbers):
        return False
    made_up = {v for n, v in bad if n == name}
    return any(item not in made_up for item in current)


def _targets(plan: Plan, tools: Mapping[str, Tool], request: str,
             made_up: Mapping[int, list[tuple[str, str]]]) -> set[tuple[int, str]]:
    """``(step, person)`` for each person a call of ``plan`` acts on by a required identifier: made up from the
    person's name, or passed from a lookup of it. A person the request names once is one call's target; a made-up
    identifier of that person in another call's optional parameter is left out, not looked up."""
    by_id = {c.id: c for c in plan.calls}
    out: set[tuple[int, str]] = set()
    for call in plan.calls:
        tool = tools.get(call.name)
        if tool is None:
            continue
        bad = made_up[call.id]  # (each call's made-up values: _made_up)
        paired = pair_numbers(bad, request)
        for name, value in bad:
            producer = _producer(name, value, tool, tools, request, paired) if name in tool.required else None
            out |= {(call.id, str(v)) for v in (producer.args.values() if producer is not None else ())}
        for name in tool.required:
            for ref in find_refs(call.args.get(name)):
                source = by_id.get(ref.step)
                if source is not None and lookup_kind(tools.get(source.name)) is not None:
                    out |= {(call.id, v) for v in source.args.values() if isinstance(v, str)}
    return out


def _once(name: str, request: str) -> bool:
    """Whether the request writes ``name`` once ("invite Omar" after "Email Omar" acts on him twice)."""
    return len(re.findall(rf"(?<![\w'’]){re.escape(name)}(?![\w’])", request, re.IGNORECASE)) <= 1


def _made_up(call: Call, tools: Mapping[str, Tool], known: str) -> list[tuple[str, str]]:
    """The ``(parameter, value)`` literals of ``call`` that nothing gives: identifiers not in ``known``, and values
    of parameters that name their source tool or hold file paths (:func:`path_source`), not in ``known``."""
    tool = tools.get(call.name)
    if tool is None:
        return []
    out = list(invented_identifiers(call, tools, known))
    text = known.lower()
    props: Mapping[str, Any] = tool.parameters.get("properties") or {}
    for name, value in call.args.items():
        source = path_source(props.get(name) or {}, tools, tool, name)
        if source is None or source == call.name or identifier_kind(props.get(name) or {}) is not None:
            continue
        leaves = value if isinstance(value, list) else [value]
        out += [(name, v) for v in leaves if isinstance(v, str) and (v.lower() not in text or not v.strip())
                and (v.strip() or name in tool.required)]
    return out


def swap_literals(value: Any, new: Mapping[str, Ref | None]) -> Any:
    """``value`` with each literal in ``new`` replaced by its reference (None: removed from a list, or the value
    gone)."""
    if isinstance(value, list):
        return [swap_literals(v, new) for v in value if not (isinstance(v, str) and v in new and new[v] is None)]
    return new.get(value, value) if isinstance(value, str) else value


def _call_text(call: Call) -> str:
    """``name(args)`` of a call, without its step number."""
    return call.to_text().split(". ", 1)[-1]


def dropped_actions(first: Plan, second: Plan, tools: Mapping[str, Tool], ruled_out: frozenset[str]) -> list[str]:
    """The tools ``first`` calls that ``second`` (planned again, told why) no longer does, other than lookups and
    the tools the request rules out: planning again answered only the reason ("first call a tool that finds
    it") and lost the rest of the request."""
    kept = {c.name for c in second.calls}
    return sorted({c.name for c in first.calls if c.name not in kept and c.name not in ruled_out
                   and lookup_kind(tools.get(c.name)) is None})


def merge_lookups(first: Plan, second: Plan, tools: Mapping[str, Tool], known: str) -> Plan | None:
    """``first`` with the identifiers it made up taken from the lookups ``second`` added, matched in order by
    kind (the made-up numbers of "text the link to Leo and Sofia", and the second plan's lookups of Leo and
    Sofia); None unless each kind has as many new lookups as made-up values."""
    def key(call: Call) -> tuple[str, str]:
        return call.name, repr(sorted(call.args.items()))

    have = {key(c) for c in first.calls}
    new = [c for c in second.calls if lookup_kind(tools.get(c.name)) and key(c) not in have]
    values: dict[str, list[str]] = {}
    for call in first.calls:
        props: Mapping[str, Any] = (tools[call.name].parameters.get("properties") or {}) if call.name in tools else {}
        for name, value in invented_identifiers(call, tools, known):
            kind = identifier_kind(props.get(name) or {})
            if kind is not None and value not in values.setdefault(kind, []):
                values[kind].append(value)
    lookups: list[Call] = []
    refs: dict[str, Ref] = {}
    for kind, made_up in values.items():
        finds = [c for c in new if kind in lookup_kinds(tools.get(c.name))]
        if len(finds) != len(made_up):
            return None
        for value, found in zip(made_up, finds, strict=True):
            lookups.append(Call(len(lookups) + 1, found.name, dict(found.args)))
            refs[value] = Ref(len(lookups))
    if not lookups:
        return None
    shift = len(lookups)

    def renumber(ref: Ref) -> Ref:
        return Ref(ref.step + shift)

    calls = [Call(c.id + shift, c.name, {k: swap_literals(v, refs) for k, v in map_refs(c.args, renumber).items()})
             for c in first.calls]
    return Plan(calls=(*lookups, *calls), answer=first.answer)


def merge_served(first: Plan, second: Plan, groups: Sequence[frozenset[str]],
                 named: Sequence[tuple[frozenset[str], str]] = ()) -> Plan | None:
    """``first`` with what ``second`` added for the needs it was planned again for: for each group of tools
    ``first`` calls none of and ``second`` does, the ``second`` call of that group whose words best match the
    group's clause (the first of ``named``, the request's clauses with the tools each names; without one, any),
    with the steps it passes. From each call's texts go the words of a clause that names tools another call of the
    merged plan calls: "... bring wine, and remind me to buy dessert" was one text message. None when nothing is
    added.

    Told "the request asks to remind, and no step does", the 1.5B often writes only the reminders, and of every
    clause ("Dinner at 8", "Bring wine", "Buy dessert"): the text message it dropped was right.
    """
    called = {c.name for c in first.calls}
    by_id = {c.id: c for c in second.calls}
    calls = list(first.calls)
    have = {(c.name, repr(sorted(c.args.items()))): c.id for c in calls}
    numbers: dict[int, int] = {}

    def take(step: int) -> int:
        """The step of the merged plan that gives ``second``'s step ``step`` (taken along, with its own inputs)."""
        if step not in numbers:
            call = by_id[step]
            args = dict(map_refs(call.args, lambda r: Ref(take(r.step)) if r.step in by_id else r))
            key = (call.name, repr(sorted(args.items())))
            if key not in have:
                calls.append(Call(len(calls) + 1, call.name, args))
                have[key] = len(calls)
            numbers[step] = have[key]
        return numbers[step]

    for group in groups:
        options = [c for c in second.calls if c.name in group]
        if called & group or not options:
            continue
        wanted = _content_words(next((text for tools, text in named if tools == group), ""))
        best = max(options, key=lambda c: len(_content_words(repr(c.args)) & wanted))  # (ties: the first)
        take(best.id)
    if len(calls) == len(first.calls):
        return None
    trimmed = []
    for call in calls:
        others = [text for group, text in named if call.name not in group
                  and any(o.name in group for o in calls if o.id != call.id)]
        trimmed.append(Call(call.id, call.name, {k: _cut_clauses(v, others) for k, v in call.args.items()}))
    return Plan(calls=tuple(trimmed), answer=first.answer)


_CONTENT = re.compile(r"[a-z0-9]{3,}")
_FILLER = frozenset(["the", "and", "for", "with", "that", "this", "from", "you", "your", "me", "my", "to"])


def _content_words(text: str) -> set[str]:
    return {w for w in _CONTENT.findall(text.lower()) if w not in _FILLER}


def _cut_clauses(value: Any, clauses: Sequence[str]) -> Any:
    """A text without another clause of the request that it wrote out whole (and the "and" before it)."""
    if not isinstance(value, str):
        return value
    for clause in clauses:
        cut = re.sub(rf"[,;]?\s*(?:and\s+|then\s+)?{re.escape(clause)}[.!]?", "", value, flags=re.IGNORECASE)
        value = cut.strip() or value
    return value
