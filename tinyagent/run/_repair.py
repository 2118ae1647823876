"""Plan repairs that need no model: identifiers the user wrote are used as written, dates stay dates, and a step
that only tells today's date (which the prompt states) goes.

A small planner often looks up what the request already gives: "Send an email to jane@corp.com" becomes
``1. get_email_address(name="Jane")`` and ``2. send_email(to=[$1], ...)``. Where a reference to an earlier step
lands in a parameter that holds an identifier (an email address or a phone number, read from the parameter's schema
and description by :func:`tinyagent._formats.identifier_kind`), and the request writes such an identifier that the
plan uses nowhere and that belongs to what the step looked up (the step's argument words are in it, or it is in the
step's arguments), the reference becomes that identifier. A step whose every use was replaced so is dropped from the
plan (in a streamed run it may already have run: it only looked something up).

Dates are held to the days the request names (:mod:`~._days`). A call to a tool that takes no arguments and tells
the current date, whose result no step uses, is dropped from a whole plan unless the request asks for the date or
time. Nothing here is keyed to a tool's name: what a parameter holds comes from its schema and description, what the
request gives from :func:`tinyagent._grounding.ground`.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .._formats import identifier_kind, written_identifiers
from .._grounding import ground
from .._plan import Call, Plan, Ref, find_refs, renumbered
from .._provenance import leaves
from .._tools import Tool
from ..models import ModelRequest
from ._channels import asked_channel, channel_problem
from ._choices import named_choices
from ._clauses import topic_words
from ._dangling import cut_plan_text, dangling_problem, hoist_named_steps
from ._days import RequestDays, date_only, in_the_named_year, on_the_12_hour_clock, on_the_named_day
from ._durations import fix_durations
from ._items import item_problem, unattached_problem
from ._lookups import finds_kinds, lookup_kind, lookup_kinds, mismatched_refs, speaks_of, swap_lookups
from ._no_tool import _grounded, _stem, _words, request_text
from ._plan import known_text
from ._sources import documented_source, swap_sourced_refs, unsourced_values

__all__ = ["GivenIdentifiers", "call_problem", "documented_source", "drop_replaced",
           "drop_ungrounded_optionals", "invented_identifiers", "invented_note", "invented_refs", "known_text",
           "quoted_refs", "redundant_date_steps", "repair_call", "repair_plan", "request_numbers", "ruled_out",
           "stray_lookups", "unfit_calls", "unsourced_note", "unsourced_values",
           "use_given_identifiers", "used_steps", "without_orphans", "without_steps", "wrap_bare_refs"]

_TOKEN = re.compile(r"[a-z0-9]{2,}")
_SPOKEN_AT = re.compile(r"\s*(?:\[\s*at\s*\]|\(\s*at\s*\)|\{\s*at\s*\}|\bat\b)\s*")
_TELLS_TODAY = re.compile(r"\b(?:current|today'?s|present)\b[^.;]{0,30}\b(?:date|day)\b", re.IGNORECASE)
_ASKS_DATE = re.compile(
    r"\b(?:what|which)\b[^?.!]{0,20}\b(?:date|day|time|year|month)\b|\btoday'?s date\b|\bday of the week\b"
    r"|\bhow (?:many|long)\b[^?.!]{0,20}\b(?:days?|weeks?|until|till|since|left)\b|\b(?:date|time) (?:is it|now)\b",
    re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w.])(\d[\d,]*(?:\.\d+)?|\.\d+)\s*"
                     r"(%|percent\b|k\b|thousand\b|million\b|m\b|billion\b|bn\b)?", re.IGNORECASE)
_SCALE = {"k": 1e3, "thousand": 1e3, "million": 1e6, "m": 1e6, "billion": 1e9, "bn": 1e9}
_SMALL_NUMBERS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
                  "sixteen seventeen eighteen nineteen twenty")
_NUMBER_WORDS = {w: float(i) for i, w in enumerate(_SMALL_NUMBERS.split())} | {
    "thirty": 30.0, "forty": 40.0, "fifty": 50.0, "hundred": 100.0, "thousand": 1e3, "million": 1e6, "dozen": 12.0,
    "half": 0.5, "quarter": 0.25, "twice": 2.0, "double": 2.0, "triple": 3.0, "once": 1.0, "single": 1.0,
    "pair": 2.0, "couple": 2.0, "noon": 12.0, "midday": 12.0, "midnight": 0.0}
_DEFAULT_IN_TEXT = re.compile(r"\bdefault(?:s)?(?:\s+(?:value|is|to|of))*\s*[:=]?\s*(-?\d+(?:\.\d+)?)", re.IGNORECASE)
_SPOKEN_DOT = re.compile(r"\s*(?:\[\s*dot\s*\]|\(\s*dot\s*\)|\{\s*dot\s*\}|\bdot\b)\s*")


class GivenIdentifiers:
    """The identifiers a request writes, by kind, and which of them a plan has used so far."""

    def __init__(self, request: str, today: dt.date) -> None:
        self.request = request
        self.by_kind: dict[str, list[str]] = {}
        for value in ground(request, today):
            if value.kind in ("email", "phone") and value.value not in self.by_kind.get(value.kind, []):
                self.by_kind.setdefault(value.kind, []).append(value.value)
        self.used: set[str] = set()
        self.replaced: set[int] = set()

    def note_used(self, call: Call, tools: Mapping[str, Tool]) -> None:
        """Mark the literals ``call`` passes where an identifier goes as used (not those it looks up by: a lookup
        of "nina.r@example.org" does not use the address as an address)."""
        tool = tools.get(call.name)
        props: Mapping[str, Any] = tool.parameters.get("properties", {}) if tool is not None else {}
        for name, value in call.args.items():
            if identifier_kind(props.get(name, {})) is not None:
                self.used |= {str(v).lower() for v in leaves(value) if isinstance(v, str)}

    def unused(self, kind: str) -> list[str]:
        return [lit for lit in self.by_kind.get(kind, []) if lit.lower() not in self.used]


def use_given_identifiers(call: Call, earlier: Mapping[int, Call], given: GivenIdentifiers,
                          tools: Mapping[str, Tool]) -> Call:
    """``call`` with each reference to a lookup of an identifier the request already gives replaced by it.

    Args:
        call: the call just planned.
        earlier: the plan's earlier calls by step.
        given: the request's identifiers (updated: the ones used, the steps replaced).
        tools: the offered tools (the parameters' schemas).
    """
    given.note_used(call, tools)
    tool = tools.get(call.name)
    if tool is None or not given.by_kind:
        return call
    props: Mapping[str, Any] = tool.parameters.get("properties", {})
    args = dict(call.args)
    changed = False
    for name, value in call.args.items():
        kind = identifier_kind(props.get(name, {}))
        if kind is None or not given.unused(kind) or not any(True for _ in find_refs(value)):
            continue
        new = _replace(value, kind, earlier, given)
        if new != value:
            args[name], changed = new, True
    return Call(call.id, call.name, args) if changed else call


def _replace(value: Any, kind: str, earlier: Mapping[int, Call], given: GivenIdentifiers) -> Any:
    if isinstance(value, list | tuple):
        return [_replace(v, kind, earlier, given) for v in value]
    if not isinstance(value, Ref) or value.step not in earlier:
        return value
    looked_up = earlier[value.step]
    matches = [lit for lit in given.unused(kind) if _belongs(lit, looked_up)]
    if not matches and len(given.unused(kind)) == 1 and not _proper_name(looked_up, given.request):
        matches = list(given.unused(kind))  # "text it to her at 555-0198" planned as a lookup of "Sister"
    if len(matches) != 1:
        return value
    given.used.add(matches[0].lower())
    given.replaced.add(value.step)
    return matches[0]


def _proper_name(lookup: Call, request: str) -> bool:
    """Whether the request writes one of the lookup's texts as a name, capitalised as given ("Sister" is not in
    "my sister")."""
    return any(isinstance(v, str) and v.strip()[:1].isupper() and re.search(rf"\b{re.escape(v.strip())}\b", request)
               for v in leaves(lookup.args))


def _belongs(literal: str, lookup: Call) -> bool:
    """Whether ``literal`` is what ``lookup`` looked up: it is in the lookup's arguments, or shares a word with
    them ("Jane" and ``jane@corp.com``)."""
    texts = [str(v).lower() for v in leaves(lookup.args) if isinstance(v, str)]
    if any(literal.lower() in t for t in texts):
        return True
    words = {w for t in texts for w in _TOKEN.findall(t)}
    return bool(words & set(_TOKEN.findall(literal.lower().split("@")[0])))


def drop_ungrounded_optionals(call: Call, tools: Mapping[str, Tool], request: str) -> Call:
    """``call`` without the optional arguments whose values the request does not support.

    Small planners fill optional parameters with values nobody asked for (``year=2026``, ``price_min=100``,
    ``rounding=2``); the tool's own default is then the better value. An optional argument is dropped when it is a
    number or a short text (at most four words, an enum value included) and none of it is in ``request`` (the
    request with its resolved dates: the grounding of :mod:`tinyagent.run._no_tool`). Required arguments,
    references, booleans, lists and longer texts (composed content) are kept.
    """
    tool = tools.get(call.name)
    if tool is None:
        return call
    required = set(tool.required)
    stems = {_stem(w) for w in _words(request)}
    keep = {k: v for k, v in call.args.items()
            if k in required or not _droppable(v) or _grounded(v, request, stems)}
    return call if len(keep) == len(call.args) else Call(call.id, call.name, keep)


def _droppable(value: Any) -> bool:
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, int | float):
        return True
    return isinstance(value, str) and 0 < len(value.split()) <= 4


def wrap_bare_refs(call: Call, tools: Mapping[str, Tool]) -> Call:
    """``call`` with a bare ``$k`` where a parameter takes a list written as ``[$k]`` (the executor splices a list
    result into it)."""
    tool = tools.get(call.name)
    if tool is None:
        return call
    props: Mapping[str, Any] = tool.parameters.get("properties", {})
    args = {k: [v] if isinstance(v, Ref) and props.get(k, {}).get("type") == "array" else v
            for k, v in call.args.items()}
    return call if args == dict(call.args) else Call(call.id, call.name, args)


def stray_lookups(calls: Sequence[Call], tools: Mapping[str, Tool], request: str,
                  given: GivenIdentifiers | None) -> set[int]:
    """Steps whose result no step uses and that look up what nobody asked for, when the plan has other steps: the
    step's tool finds an email address or a phone number (by its description), every argument is a short text, and

    * none of them is in the request ("John Doe" for "Text +1 415 555 0199 ...");
    * or the step looks up an identifier of that kind the request gives and another step already passes ("Jane",
      or the address itself, beside ``jane@corp.com``);
    * or the request speaks neither of that kind nor of a channel ("Is it going to rain in Porto?" planned with an
      e-mail lookup of "Porto" beside a route);
    * or no step takes an identifier of that kind and the request asks for none ("Kofi emailed asking about the
      survey: reply to his latest message with its summary" planned with a lookup of Kofi's address beside the
      reply, which takes a message id).

    Their results would only reach the answer, and they answer nothing."""
    if len(calls) < 2:
        return set()
    used = used_steps(calls)
    stems = {_stem(w) for w in _words(request)}
    taken = {kind for c in calls for kind, _ in _identifier_params(c, tools)}
    out = set()
    for call in calls:
        values = list(leaves(call.args))
        if call.id in used or not values or not all(isinstance(v, str) and 0 < len(v.split()) <= 4 for v in values):
            continue
        finds = finds_kinds(tools.get(call.name))
        if not finds:
            continue
        if not any(_grounded(v, request, stems) for v in values) or given is not None and any(
                _belongs(lit, call) and _passed_elsewhere(lit, call, calls)
                for kind in finds for lit in given.by_kind.get(kind, [])
        ) or not any(speaks_of(kind, request) for kind in finds) and not asked_channel(request) or lookup_kinds(
                tools.get(call.name)) and not (finds & taken or any(_ASKS_FOR[k].search(request) for k in finds)):
            out.add(call.id)
    return out


_ASKS_FOR = {"email": re.compile(r"\baddress|\bcontact", re.IGNORECASE),
             "phone": re.compile(r"\bnumbers?\b|\bcontact", re.IGNORECASE)}  # (the identifier itself, as an answer)


def _identifier_params(call: Call, tools: Mapping[str, Tool]) -> list[tuple[str, Any]]:
    """The ``(kind, value)`` of each of ``call``'s arguments whose parameter takes identifiers (by its schema)."""
    props: Mapping[str, Any] = (tools[call.name].parameters.get("properties") or {}) if call.name in tools else {}
    return [(kind, value) for name, value in call.args.items()
            if isinstance(props.get(name), Mapping) and (kind := identifier_kind(props[name])) is not None]


def used_steps(calls: Iterable[Call]) -> set[int]:
    """The steps whose results some call references."""
    return {r.step for c in calls for r in find_refs(c.args)}


def _passed_elsewhere(literal: str, call: Call, calls: Sequence[Call]) -> bool:
    """Whether a step other than ``call`` passes ``literal``."""
    return any(c.id != call.id and literal.lower() in {str(v).lower() for v in leaves(c.args)} for c in calls)


def redundant_date_steps(calls: Sequence[Call], tools: Mapping[str, Tool], request: str) -> set[int]:
    """The steps that only tell the current date, which the planner's prompt already states: a tool with no
    parameters whose description says it gives the current date or day, when no step uses its result and the
    request does not ask for the date or the time."""
    if _ASKS_DATE.search(request):
        return set()
    used = used_steps(calls)
    out = set()
    for call in calls:
        tool = tools.get(call.name)
        if (tool is not None and call.id not in used and not call.args and not tool.parameters.get("properties")
                and _TELLS_TODAY.search(f"{tool.description} {tool.returns or ''}")):
            out.add(call.id)
    return out


def request_numbers(request: str) -> frozenset[float]:
    """The numbers ``request`` gives: digits (``300,000``, ``2.5k``, ``5%`` also as 0.05) and number words."""
    out: set[float] = set()
    for digits, unit in _NUMBER.findall(request):
        try:
            value = float(digits.replace(",", ""))
        except ValueError:
            continue
        unit = unit.lower()
        out.add(value)
        if unit in ("%", "percent"):
            out.add(value / 100)
        elif unit:
            out.add(value * _SCALE[unit])
    out.update(v for w, v in _NUMBER_WORDS.items() if re.search(rf"\b{w}\b", request, re.IGNORECASE))
    return frozenset(out)


def _number_given(value: float, numbers: frozenset[float], schema: Mapping[str, Any]) -> bool:
    """``value`` is in the request (also as a percentage either way), or is the parameter's documented default."""
    candidates = set(numbers)
    default = schema.get("default")
    if isinstance(default, int | float) and not isinstance(default, bool):
        candidates.add(float(default))
    candidates.update(float(m) for m in _DEFAULT_IN_TEXT.findall(str(schema.get("description") or "")))
    def same(a: float, b: float) -> bool:
        return math.isclose(a, b, abs_tol=1e-9)

    return any(same(value, n) or same(value * 100, n) or same(value, n * 100) for n in candidates)


def unfit_calls(calls: Sequence[Call], tools: Mapping[str, Tool], request: str) -> set[int]:
    """Steps of a tool the request does not fit, beside steps of other tools that it does: a step that takes no
    result and gives none to another step, one of whose required numeric arguments the request does not give (nor
    is it the parameter's documented default) or that passes an identifier where its tool takes none
    (:func:`_misplaced_identifier`), when a step of a different tool stays.

    A small planner offered related tools calls one more than asked and invents its numbers ("find a 3 bedroom
    villa in San Diego" also valued a property of ``age=0``)."""
    if len({c.name for c in calls}) < 2:
        return set()
    numbers = request_numbers(request)
    used = used_steps(calls)
    taken = {v.strip() for c in calls for _, value in _identifier_params(c, tools)
             for v in (value if isinstance(value, list) else [value]) if isinstance(v, str)}

    def invents(call: Call) -> bool:
        tool = tools.get(call.name)
        if tool is None or call.id in used or any(True for _ in find_refs(call.args)):
            return False
        props: Mapping[str, Any] = tool.parameters.get("properties") or {}
        return any(isinstance(v, int | float) and not isinstance(v, bool)
                   and not _number_given(float(v), numbers, props.get(k) or {})
                   for k, v in call.args.items() if k in tool.required) or _misplaced_identifier(call, tool, taken)

    bad = {c.id for c in calls if invents(c)}
    kept = {c.name for c in calls if c.id not in bad}
    return {c.id for c in calls if c.id in bad and kept and c.name not in kept}


def _misplaced_identifier(call: Call, tool: Tool, taken: set[str]) -> bool:
    """Whether ``call`` passes a whole e-mail address or phone number that another step passes as one (``taken``)
    where its tool takes and finds none (a route "to" ``yuki@corvid.dev`` beside the event that invites her): the
    planner reached for the request's identifiers with the wrong tool."""
    props: Mapping[str, Any] = tool.parameters.get("properties") or {}
    if finds_kinds(tool) or any(isinstance(p, Mapping) and identifier_kind(p) for p in props.values()):
        return False
    return any(isinstance(v, str) and v.strip() in taken and ("@" in v or v.strip().startswith("+"))
               and v.strip() in {i for ids in written_identifiers(v).values() for i in ids}
               for v in call.args.values())  # (an address, or a number written "+...": not "docket 12345")



def invented_identifiers(call: Call, tools: Mapping[str, Tool], known: str) -> list[tuple[str, str]]:
    """The ``(parameter, value)`` pairs of ``call`` that pass an email address or phone number found nowhere in
    ``known`` (the request, the conversation, the results so far), also read as spoken ("sid at example dot com")
    and with a phone number's punctuation ignored: values the planner made up. A reference is never one (its
    value comes from a step)."""
    tool = tools.get(call.name)
    if tool is None:
        return []
    props: Mapping[str, Any] = tool.parameters.get("properties", {})
    text, digits = known.lower(), re.sub(r"\D", "", known)
    spoken = _SPOKEN_DOT.sub(".", _SPOKEN_AT.sub("@", text))  # "sid at example dot com", "sid [at] example [dot] com"
    out = []
    for name, value in call.args.items():
        kind = identifier_kind(props.get(name, {}))
        if kind is None:
            continue
        for leaf in leaves(value):
            if not isinstance(leaf, str) or not leaf.strip():
                continue
            seen = (re.sub(r"\D", "", leaf) in digits) if kind == "phone" else \
                leaf.lower() in text or leaf.lower() in spoken
            if not seen:
                out.append((name, leaf))
    return out


def unsourced_note(step: int, unsourced: Sequence[tuple[str, str, str]]) -> str:
    """What the planner is told when a step passes values its parameters say come from another tool."""
    parts = [f"{name}={value!r} (it takes what {source} returns)" for name, value, source in unsourced]
    sources = ", ".join(dict.fromkeys(source for _, _, source in unsourced))
    return (f"step {step} passes {', '.join(parts)}; first call {sources} and pass that step's result as $k")


def invented_note(step: int, invented: Sequence[tuple[str, str]]) -> str:
    """What the planner is told when a step passes made-up identifiers."""
    shown = ", ".join(f"{name}={value!r}" for name, value in invented)
    return (f"step {step} passes {shown}, which the request does not give; first call a listed tool that finds it "
            "and pass that step's result as $k")


def call_problem(call: Call, earlier: Mapping[int, Call], tools: Mapping[str, Tool], known: str,
                 request: str | None = None) -> str | None:
    """Why ``call`` must not run as planned (:func:`invented_identifiers`, :func:`unsourced_values`, and with the
    ``request`` :func:`~._channels.channel_problem`, :func:`~._items.item_problem` and
    :func:`~._items.unattached_problem`), as the note the planner is
    given to plan again; None when nothing is wrong."""
    notes = []
    if request is not None and (wrong := channel_problem(call, earlier, tools, request)):
        notes.append(wrong)
    if request is not None and (wrong := item_problem(call, tools, request)):
        notes.append(wrong)
    if request is not None and (wrong := unattached_problem(call, tools, request)):
        notes.append(wrong)
    if wrong := mismatched_refs(call, earlier, tools):
        notes.append(wrong)
    if wrong := dangling_problem(call, earlier, tools):
        notes.append(wrong)
    if invented := invented_identifiers(call, tools, known):
        notes.append(invented_note(call.id, invented))
    if unsourced := unsourced_values(call, earlier, tools, known):
        notes.append(unsourced_note(call.id, unsourced))
    return "; ".join(notes) or None


def ruled_out(call: Call, earlier: Mapping[int, Call], tools: Mapping[str, Tool], request: str) -> bool:
    """Whether the request rules ``call``'s tool out altogether (it sends by the other channel, or acts on an
    existing item where a new one is asked for, or the other way round), so that planning again leaves it out."""
    return bool(channel_problem(call, earlier, tools, request) or item_problem(call, tools, request))


def drop_replaced(calls: Sequence[Call], replaced: Iterable[int]) -> Plan:
    """The plan without the replaced steps nobody references any more, renumbered from 1 (references follow)."""
    referenced = used_steps(calls)
    return Plan(calls=without_steps(calls, {s for s in replaced if s not in referenced}))


def without_orphans(old: Sequence[Call], new: Sequence[Call]) -> tuple[Call, ...]:
    """``new`` (``old`` with arguments taken out) without the steps ``old`` referenced and ``new`` no longer does
    (a lookup whose only user dropped it), renumbered from 1."""
    return without_steps(new, used_steps(old) - used_steps(new))


def without_steps(calls: Sequence[Call], gone: Iterable[int]) -> tuple[Call, ...]:
    """``calls`` without the steps ``gone`` (which the caller knows nothing kept references), renumbered from 1;
    references follow."""
    gone = set(gone)
    return renumbered(c for c in calls if c.id not in gone) if gone else tuple(calls)


_QUOTED_REF = re.compile(r"\$(?:(\d+)|[({](\d+)[)}])(?:@[\w.-]*)?")  # ("$(1)": a shell's way of writing it)
_EMBEDDED_REF = re.compile(r"\$(\d+)")
_TEXT_REF = re.compile(r"(?<![\w$])\$(?:[({](\d{1,2})[)}]|(\d{1,2})(?![\w.,$]\d|\w))")  # not "$2.50", "$2,000"


def quoted_refs(call: Call, earlier: Mapping[int, Call], tools: Mapping[str, Tool], request: str = "") -> Call:
    """``call`` with an earlier step's reference written inside a string of an identifier parameter made a
    reference again: ``attendee_emails=["$1@example.com"]`` or ``to="$2"`` after a lookup at step 1 or 2; in a
    list, a string that names several (``"$1$2@acme.io"``, ``"$1,marta@example.com"``) gives each once. A text
    that names one earlier step that is no lookup and whose result no other step takes (``messageBody="Here's your
    agenda for Jan 22. $2"``), and whose tool's name the request speaks of (``request``: a word of it past the
    generic ones), passes that step's result: nothing fills in a reference written inside a text."""
    tool = tools.get(call.name)
    if tool is None:
        return call
    props: Mapping[str, Any] = tool.parameters.get("properties") or {}

    def fix(value: Any) -> Any:
        if isinstance(value, list):
            out: list[Any] = []
            for item in value:
                named = [Ref(int(k)) for k in _EMBEDDED_REF.findall(item)] if isinstance(item, str) else []
                named = [r for r in named if r.step in earlier]
                fixed = named or [fix(item)]  # (a reference listed twice is listed once)
                out += [r for r in fixed if not (isinstance(r, Ref) and r in out)]
            return out
        if isinstance(value, str) and (m := _QUOTED_REF.fullmatch(value.strip())) and int(
                step := m.group(1) or m.group(2)) in earlier:
            return Ref(int(step))
        return value

    taken = {r.step for c in earlier.values() for r in find_refs(c.args)}

    def embedded(value: Any) -> Any:
        named = {int(a or b) for a, b in _TEXT_REF.findall(value)} if isinstance(value, str) else set()
        step = earlier.get(next(iter(named))) if len(named) == 1 else None
        # (not a lookup's, nor a result another step already takes: ">$1 (PDF summary)" meant the summary)
        return Ref(step.id) if step is not None and step.id not in taken and lookup_kind(
            tools.get(step.name)) is None and _asked_for(step.name, request) else value

    args = {k: fix(v) if isinstance(props.get(k), Mapping) and identifier_kind(props[k]) else embedded(v)
            for k, v in call.args.items()}
    return call if args == dict(call.args) else Call(call.id, call.name, args)


def _asked_for(name: str, request: str) -> bool:
    """Whether the request says a word of the tool's name past the generic ones (the first five letters)."""
    said = {w[:5] for w in re.findall(r"[a-z]+", request.lower()) if len(w) >= 4}
    return any(w[:5] in said for w in topic_words(name))


def invented_refs(call: Call, earlier: Mapping[int, Call], tools: Mapping[str, Tool], known: str) -> Call:
    """``call`` with a made-up identifier replaced by the lookup that finds it: the plan looked the contact up,
    then wrote an address of its own (``1. lookup_email(name="Zoë")``, ``2. send(to=["zoë@example.com"])``).

    A string in an identifier parameter that ``known`` (the request) does not hold (:func:`invented_identifiers`)
    becomes ``$k`` when exactly one earlier step finds identifiers of that kind (by its tool's description), no
    step uses its result yet, and it looked up this value (:func:`_belongs`: ``zoë`` is in the lookup's
    arguments)."""
    invented = invented_identifiers(call, tools, known)
    tool = tools.get(call.name)
    if not invented or tool is None:
        return call
    props: Mapping[str, Any] = tool.parameters.get("properties") or {}
    used = used_steps([*earlier.values(), call])
    bad = {value for _, value in invented}

    def fix(value: Any, kind: str) -> Any:
        if isinstance(value, list):
            return [fix(v, kind) for v in value]
        if not isinstance(value, str) or value not in bad:
            return value
        lookups = [c for c in earlier.values() if c.id not in used and kind in finds_kinds(tools.get(c.name))
                   and _belongs(value, c)]
        if len(lookups) != 1:
            return value
        used.add(lookups[0].id)
        return Ref(lookups[0].id)

    args = {}
    for name, value in call.args.items():
        schema = props.get(name)
        kind = identifier_kind(schema) if isinstance(schema, Mapping) else None
        args[name] = fix(value, kind) if kind is not None else value
    return call if args == dict(call.args) else Call(call.id, call.name, args)


def repair_call(call: Call, earlier: Mapping[int, Call], given: GivenIdentifiers | None, tools: Mapping[str, Tool],
                grounding: str | None, days: RequestDays | None = None) -> Call:
    """One call through the repairs that are on: :func:`~._dangling.cut_plan_text`, :func:`quoted_refs` and
    :func:`~._sources.swap_sourced_refs` (always), :func:`invented_refs` and :func:`use_given_identifiers`
    (``given``), :func:`drop_ungrounded_optionals` (``grounding``: the request as the planner saw it, with its
    resolved dates), then :func:`~._days.on_the_12_hour_clock`, :func:`~._days.on_the_named_day` and
    :func:`~._days.date_only` (``days``: the request's)."""
    call = quoted_refs(cut_plan_text(call, earlier, tools), earlier, tools, given.request if given is not None else "")
    call = swap_sourced_refs(call, earlier, tools)
    if given is not None:
        call = use_given_identifiers(invented_refs(call, earlier, tools, given.request), earlier, given, tools)
    if grounding is not None:
        call = drop_ungrounded_optionals(call, tools, grounding)
    days = days or RequestDays()
    call = on_the_12_hour_clock(in_the_named_year(wrap_bare_refs(call, tools), days, tools), tools)
    return date_only(on_the_named_day(call, days, tools), tools, days)


def repair_plan(plan: Plan, planner: ModelRequest, query: str, today: dt.date, tools: Mapping[str, Tool], *,
                identifiers: bool = True, optionals: bool = True) -> tuple[Plan, list[str]]:
    """:func:`repair_call` over a whole plan, then :func:`drop_replaced`; with notes of what changed."""
    given = GivenIdentifiers(query, today) if identifiers else None
    grounding = request_text(planner, query) if optionals else None
    days = RequestDays.of(query, today)
    done: dict[int, Call] = {}
    out: list[Call] = []
    calls, notes = hoist_named_steps(plan.calls, tools)
    if identifiers:
        calls, swapped = swap_lookups(calls, tools)
        notes += swapped
    for call in calls:
        fixed = repair_call(call, done, given, tools, grounding, days)
        done[call.id] = fixed
        out.append(fixed)
    notes += [f"plan: step {new.id} left out {', '.join(sorted(set(old.args) - set(new.args)))} (not in the request)"
              for old, new in zip(calls, out, strict=True) if set(new.args) < set(old.args)]
    if grounding is not None:  # (a tool called twice may take each named option once: "a sine and a square wave")
        once = {c.name for c in out if sum(o.name == c.name for o in out) == 1}
        out = [named_choices(c, tools, grounding) if c.name in once else c for c in out]
    out, lengths = fix_durations(out, tools, query)
    notes += lengths
    gone = redundant_date_steps(out, tools, query)
    if gone:
        notes.append(f"plan: left out step {', '.join(str(s) for s in sorted(gone))} (today's date is known)")
    stray = stray_lookups([c for c in out if c.id not in gone], tools, grounding or query, given) \
        if identifiers else set()
    if stray:
        notes.append(f"plan: left out step {', '.join(str(s) for s in sorted(stray))} (its result is not used and "
                     "it looks up what the request does not ask for)")
        gone |= stray
    unfit = unfit_calls([c for c in out if c.id not in gone], tools, grounding or query) if optionals else set()
    if unfit:
        notes.append(f"plan: left out step {', '.join(str(s) for s in sorted(unfit))} (the request does not give "
                     "all of its numbers, and another tool does what it asks)")
        gone |= unfit
    replaced = given.replaced if given is not None else set()
    if replaced:
        notes.append(f"plan: used the identifiers the request gives instead of looking them up (steps "
                     f"{', '.join(str(s) for s in sorted(replaced))})")
    if not gone and not replaced:
        return Plan(calls=tuple(out), answer=plan.answer), notes
    return Plan(calls=drop_replaced(out, replaced | gone).calls, answer=plan.answer), notes
