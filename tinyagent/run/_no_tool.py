"""The no-tool decision: after the first plan, whether its calls fit the request at all.

Small planners call a loosely related tool rather than none ("turn off the lights" -> a maps tool). P(``join``) at
step 1 alone does not separate the two kinds of request, so the decision combines four signals in a small logistic
model fitted by ``benchmarks/calibrate_no_tool.py`` (coefficients in :data:`~._settings.NO_TOOL_MODEL`):

* ``p_join``: the logit of the planner's probability of ``join`` as the first step (measured while planning);
* ``verify``: the log-odds of "yes" against "no" when the same model is asked whether the tools it called do what
  the request asks. The question continues the planner's conversation, so llama.cpp reuses the KV cache of the
  whole prompt and plan and evaluates only the question (about 60 tokens);
* ``grounded``: the share of the plan's literal argument values that appear in the request (invented values are a
  sign the tool does not fit);
* ``overlap``: the share of the request's content words found in the called tools' names, descriptions and
  parameters.

A request written mostly in another script than the tools' (Korean, Chinese, ...) shares no words with them, so
``overlap`` and ``named`` say nothing there and count as full support (:func:`plan_features`); on the even-indexed
BFCL calibration records that keeps the 3 plans of such requests that need a tool and still refuses the one that
does not ("你是谁?你能做什么" planned as a weather lookup: nothing in it is grounded).

All of them are schema and text driven; nothing is keyed to a tool's name. The question is asked only when its
answer could change the decision; the fitted model for qwen2.5-coder-1.5b gives it no weight (on even-indexed BFCL
the verifier says "yes" to its own plans about as readily whether or not a tool fits: P(yes) 0.6-0.75 for both), so
by default the decision is the three free signals and costs no model call. ``no_tool_check="measure"`` still asks,
so a larger planner can be calibrated with the question.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from .._events import NoToolCheck
from .._plan import Call, Ref
from .._provenance import leaves
from .._routing_base import RoutingHook
from .._tools import Tool
from ..errors import BudgetExceeded, ModelError
from ..models import Completion, Model, ModelRequest, Preference
from ._channels import asked_channel, asks_question
from ._clauses import action_clauses, name_words, named_groups
from ._lookups import lookup_kinds, speaks_of
from ._plan import call_model
from ._settings import NO_TOOL_MODEL, NO_TOOL_PREF, AgentSettings

__all__ = ["NoToolCheck", "VERIFY_QUESTION", "check_no_tool", "first_call_is_clear", "no_tool_probability",
           "SECOND_CHOICE_FLOOR", "join_probability", "second_choice_settings",
           "grounded_in", "lookups_for_nothing", "plan_features", "removal_unserved", "request_text", "unserved_action",
           "verify_feature", "verify_request"]

VERIFY_QUESTION = (
    "Check the plan before it runs. Does the tool you called really do what the request asks (not just something "
    "on a related topic)? If no listed tool can do it, answer no. Answer yes or no.")
_YES = ("yes", "Yes")
_NO = ("no", "No")
VERIFY_PREFS = tuple(Preference(f"verify:{word}", r"\A\Z", word) for word in _YES + _NO)
_CLIP = 6.0
_STOP = frozenset("""
the a an and or of to in on for with at by from is are be can you me my i it this that what which
how please do does will would could should about into as your our we us want need get give tell show
find some any all there their them they he she his her its was were has have had not no yes if then
than also just
""".split())  # noqa: SIM905 - a word list reads better as text
# Verbs and nouns that tool names use whatever they do: they say nothing about whether a tool fits a request.
_GENERIC = frozenset("""
calculate calc compute find get set retrieve fetch return determine search lookup look query list create make
make run execute perform do process handle check api tool function func info data value values result
""".split())  # noqa: SIM905


_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")


def _words(text: str) -> list[str]:
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", text)
    return [w for w in re.findall(r"[a-z0-9]+", spaced.lower().replace("_", " ")) if w not in _STOP]


def _stem(word: str) -> str:
    return word[:5] if len(word) > 5 else word


def _literals(value: Any) -> Iterable[Any]:
    """The literal scalars of an argument value: not references, None or booleans."""
    return (v for v in leaves(value) if not isinstance(v, Ref | bool) and v is not None)


def _grounded(value: Any, request: str, request_stems: set[str]) -> bool:
    if isinstance(value, int | float):
        number = float(value)
        text = str(int(number)) if number.is_integer() else str(number)
        return text in request
    text = str(value)
    if _EMAIL.fullmatch(text.strip()):  # an address made of a name the request says ("aisha@example.com"): the
        text = text.split("@")[0]  # domain is the address's form, the name what it was built from
    words = [_stem(w) for w in _words(text)]
    if not words:
        return True  # punctuation only: nothing invented
    return _appears(str(value), request) or sum(w in request_stems for w in words) >= len(words) / 2


def grounded_in(value: Any, request: str) -> bool:
    """Whether the literal ``value`` comes from ``request``: written in it as a whole, or (text) at least half of its
    words' stems are the request's; a number, written in it."""
    return _grounded(value, request, {_stem(w) for w in _words(request)})


def _appears(value: str, request: str) -> bool:
    """``value`` is written in the request as a whole (not inside a longer word: "Tom" is not in "tomato")."""
    return re.search(rf"(?<!\w){re.escape(value.strip())}(?!\w)", request, re.IGNORECASE) is not None


def _name_words(name: str) -> set[str]:
    """A tool name's words that say what it does (not the verbs every tool name uses)."""
    return {w for w in _words(name.replace(".", " ")) if w not in _GENERIC and len(w) > 2 and not w.isdigit()}


def _matches(word: str, stems: set[str], words: Iterable[str]) -> bool:
    """``word`` is among ``words``: the same stem, or one holds the other ("mail" in "email", "sms" in "smses")."""
    if _stem(word) in stems:
        return True
    return len(word) >= 4 and any(word in w or (len(w) >= 4 and w in word) for w in words)


def _named(request_words: Sequence[str], calls: Sequence[Call]) -> float:
    """The least share, over the called tools, of the tool name's words found in the request."""
    stems = {_stem(w) for w in request_words}
    shares = []
    for name in dict.fromkeys(c.name for c in calls):
        words = _name_words(name)
        if words:
            shares.append(sum(_matches(w, stems, request_words) for w in words) / len(words))
    return min(shares) if shares else 1.0


def plan_features(query: str, calls: Sequence[Call], tools: Mapping[str, Tool]) -> dict[str, float]:
    """``grounded``, ``overlap`` and ``named`` of a plan (pure text features, no model)."""
    request_words = _words(query)
    request_stems = {_stem(w) for w in request_words}
    values = [v for c in calls for v in _literals(c.args)]
    grounded = sum(_grounded(v, query, request_stems) for v in values) / len(values) if values else 1.0
    tool_words: set[str] = set()
    for name in {c.name for c in calls}:
        tool = tools.get(name)
        if tool is None:
            continue
        props = tool.parameters.get("properties", {})
        text = " ".join([tool.name, tool.description or "", *props,
                         *(str(p.get("description", "")) for p in props.values() if isinstance(p, Mapping))])
        tool_words |= set(_words(text))
    tool_stems = {_stem(w) for w in tool_words}
    content = [w for w in request_words if not w.isdigit() and len(w) > 2]
    overlap = sum(_matches(w, tool_stems, tool_words) for w in content) / len(content) if content else 0.0
    named = _named(request_words, calls)
    if _other_script(query):
        overlap = named = 1.0  # no shared words to compare: the words count neither way
    return {"grounded": round(grounded, 4), "overlap": round(overlap, 4), "named": round(named, 4)}


def _other_script(text: str) -> bool:
    """Most of the request's letters are not Latin (the script of the tools' names and descriptions)."""
    letters = [c for c in text if c.isalpha()]
    return bool(letters) and sum(not c.isascii() for c in letters) > len(letters) / 2


def verify_request(planner: ModelRequest, plan_text: str) -> ModelRequest:
    """The verification question as a follow-up of the planner's conversation (same prefix, so the KV is reused)."""
    messages = [*planner.messages, {"role": "assistant", "content": plan_text.strip()},
                {"role": "user", "content": VERIFY_QUESTION}]
    return ModelRequest(messages=messages, max_tokens=1, prefer=VERIFY_PREFS)


def verify_feature(completion: Completion) -> float | None:
    """log P(yes) - log P(no) of the answer's first token, clipped; None when nothing was measured."""
    probs = {name: p for name, p, _ in completion.preference_probs if name.startswith("verify:")}
    if not probs:
        return None
    yes = sum(probs.get(f"verify:{w}", 0.0) for w in _YES)
    no = sum(probs.get(f"verify:{w}", 0.0) for w in _NO)
    return max(-_CLIP, min(_CLIP, math.log(yes + 1e-6) - math.log(no + 1e-6)))


def _logit(p: float) -> float:
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


def no_tool_probability(features: Mapping[str, float], model: Mapping[str, float] | None = None) -> float:
    """The fitted probability that no tool is needed (``model``: coefficients, default the fitted
    ``NO_TOOL_MODEL``). ``features`` holds ``p_join`` as a probability; a missing ``verify`` counts as 0."""
    model = NO_TOOL_MODEL if model is None else model
    x = {"p_join": _logit(features.get("p_join", 0.0)), "verify": features.get("verify", 0.0),
         "grounded": features.get("grounded", 1.0), "overlap": features.get("overlap", 0.0),
         "named": features.get("named", 1.0)}
    z = model.get("bias", 0.0) + sum(model.get(k, 0.0) * v for k, v in x.items())
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def _could_refuse(features: Mapping[str, float], floor: float, model: Mapping[str, float]) -> bool:
    """Whether some answer to the question could lift the probability to the floor."""
    worst = _CLIP if model.get("verify", 0.0) > 0 else -_CLIP
    return no_tool_probability({**features, "verify": worst}, model) >= floor


def _worth_asking(features: Mapping[str, float], floor: float, model: Mapping[str, float]) -> bool:
    """Whether the answer could change the decision: some answer refuses and some keeps the plan (a model that
    gives the question no weight never asks)."""
    if model.get("verify", 0.0) == 0.0:
        return False
    best = -_CLIP if model.get("verify", 0.0) > 0 else _CLIP
    return _could_refuse(features, floor, model) and no_tool_probability({**features, "verify": best}, model) < floor


def request_text(planner: ModelRequest, query: str) -> str:
    """The request as the planner saw it: the query plus the values resolved from it (dates, times), which the
    planner may copy into arguments; without the conversation history."""
    last = str(planner.messages[-1].get("content", "")) if planner.messages else ""
    at = last.rfind("Request: " + query)
    return last[at + len("Request: "):] if at >= 0 else query


def join_probability(completion: Completion) -> float | None:
    """The planner's P(``join``) as the first step, as measured while planning (None: not measured)."""
    return next((p for name, p, _ in completion.preference_probs if name == NO_TOOL_PREF), None)


SECOND_CHOICE_FLOOR = 0.5
"""A second choice is kept only when the decision rates it more likely needed than not."""


def second_choice_settings(settings: AgentSettings) -> AgentSettings:
    """The decision's settings for the planner's second choice after a refusal: the call must be more likely needed
    than not (P(no tool) below :data:`SECOND_CHOICE_FLOOR`), not merely escape the refusal floor. After its first
    choice was refused, a second tool fits less often. Measured with the planner's own second choices (word-bounded
    grounding): the right ones on the personal-assistant proxy ("Do I have any meetings tomorrow / yesterday?": the
    agenda, not the free-slot check) scored 0.41-0.42, the ones for no-tool requests of the functions test split
    0.49 ("a synonym for 'happy'": directions to "Happy"), 0.76 and 0.94, for tool requests that were wrong anyway
    0.48-0.91."""
    return replace(settings, no_tool_floor=min(settings.no_tool_floor, SECOND_CHOICE_FLOOR))


def first_call_is_clear(call: Call, planner: ModelRequest, query: str, tools: Mapping[str, Tool],
                        settings: AgentSettings) -> bool:
    """True when the plan's first call alone rules out a refusal, whatever P(join) turns out to be: a planner that
    wrote a call gave ``join`` at most 1/2 (greedy took the call), and no answer to the question could lift the
    probability to the floor. Such plans keep streaming into the executor (and are not checked further)."""
    if settings.no_tool_check != "auto":
        return settings.no_tool_check == "off"
    if unserved_action(query, tools):  # (asked for what no offered tool does: the check refuses whatever the call)
        return False
    features = {"p_join": 0.5, **plan_features(request_text(planner, query), [call], tools)}
    return not _could_refuse(features, settings.no_tool_floor, NO_TOOL_MODEL)


async def check_no_tool(router: RoutingHook, model: Model, planner: ModelRequest, completion: Completion,
                        calls: Sequence[Call], query: str, tools: Mapping[str, Tool], settings: AgentSettings,
                        p_join: float | None, notes: list[str]) -> NoToolCheck | None:
    """Decide whether the first plan's calls should be dropped (None: the check is off or the plan has no calls).

    A plan whose first call is clear (:func:`first_call_is_clear`) is kept unchecked (``NoToolCheck()``, nothing
    measured). With ``settings.no_tool_check == "measure"`` every plan is measured and the question always asked,
    and the plan never changed (for calibration). A failed or unaffordable question counts as no answer.
    """
    if settings.no_tool_check == "off" or not calls:
        return None
    if settings.no_tool_check == "auto" and (unserved := unserved_action(query, tools)):
        notes.append(f"plan: no tool fits the request (it asks to {unserved}, and no offered tool does); dropped "
                     f"{', '.join(c.name for c in calls)}")
        return NoToolCheck(probability=1.0, refused=True)
    if settings.no_tool_check == "auto" and lookups_for_nothing(calls, query, tools):
        notes.append(f"plan: no tool fits the request (only {', '.join(c.name for c in calls)}, which look up "
                     "what the request never speaks of); dropped them")
        return NoToolCheck(probability=1.0, refused=True)
    if first_call_is_clear(calls[0], planner, query, tools, settings):
        return NoToolCheck(probability=0.0)
    called = {c.name for c in calls}
    if settings.no_tool_check == "auto" and sum(bool(g & called) for g in named_groups(query, tools)) >= 2:
        return NoToolCheck(probability=0.0)  # two clauses name tools the plan calls: "..., and remind me ..."
    if settings.no_tool_check == "auto" and len(called) >= 2 and len(action_clauses(query, tools)) >= 2 \
            and not asks_question(query):
        return NoToolCheck(probability=0.0)  # "Check whether I'm free ... and invite Grace ...": two tools, two asks
    started = time.perf_counter()
    features: dict[str, float] = {"p_join": p_join if p_join is not None else 0.0,
                                  **plan_features(request_text(planner, query), calls, tools)}
    floor = settings.no_tool_floor
    measure = settings.no_tool_check == "measure"
    asked = False
    if measure or _worth_asking(features, floor, NO_TOOL_MODEL):
        asked = True
        value = await _ask(router, model, verify_request(planner, completion.text), notes)
        if value is not None:
            features["verify"] = round(value, 4)
    probability = no_tool_probability(features, NO_TOOL_MODEL)
    refused = not measure and probability >= floor
    if refused:
        notes.append(f"plan: no tool fits the request (P(no tool) {probability:.2f} >= {floor}); "
                     f"dropped {', '.join(c.name for c in calls)}")
    return NoToolCheck(features, round(probability, 4), refused, asked, time.perf_counter() - started)


_OPENS = r"(?:^|[.!?;:,]\s+|\b(?:please|pls|and|then|you|u)\s+)"
# "Book 30 minutes with Maria", "book a call with Sid": time on the calendar, which a calendar tool does
_TIME_BOOKED = (r"(?:\s+(?:me|us))?\s+(?:(?:a|an|some|half\s+an?|\d+|one|two|three|an?\s+hour)\s+)?(?:minutes?|mins?|"
                r"hours?|hrs?|time|meeting|call|slot|session|catch-?up|sync)\b")
_REMOVAL_ASKED = re.compile(_OPENS + r"(?:cancel|delete|remove|erase|trash|call\s+off|get\s+rid\s+of|unsubscribe|"
                            r"take\s+(?:[\w'-]+\s+){1,6}?off\s+(?:my|the|our)\b)\b", re.IGNORECASE)  # (off my calendar)
_REMOVED_MESSAGES = re.compile(r"\b(?:cancel|delete|remove|erase|trash|get\s+rid\s+of)\s+(?:(?:all|every|each|any|the|"
                               r"my|these|those|that|this|of)\s+)*(?:e-?mails?|messages?|texts?|sms)\b", re.IGNORECASE)
_BOOKING = "book or reserve something"
_REMOVES = re.compile(r"\b(?:delet|remov|trash|discard|eras|cancel|purg|unsubscrib)", re.IGNORECASE)
# Actions a personal assistant is often asked for that need a tool made for them (English verbs and the words a tool
# that does them would use; no tool's name): (what is asked, how it opens a clause, what a tool that does it says).
_ACTIONS = (
    (_BOOKING, re.compile(_OPENS + r"(?:book|reserve)\b(?!" + _TIME_BOOKED + ")", re.IGNORECASE),
     re.compile(r"(?<!address )(?<!phone )(?<!note )(?<!e-)\bbook|\breserv", re.IGNORECASE)),  # not "address book"
    ("order or buy something", re.compile(_OPENS + r"(?:order|buy|purchase)\b(?!\s+(?:of|by)\b)", re.IGNORECASE),
     re.compile(r"\b(?:order|buy|purchas|shop|cart|checkout)", re.IGNORECASE)),
    ("pay or transfer money", re.compile(_OPENS + r"(?:pay|transfer)\b", re.IGNORECASE),
     re.compile(r"\b(?:pay|transfer|bank|invoice|bill)", re.IGNORECASE)),
    ("control a device", re.compile(_OPENS + r"(?:turn|switch|dim)\s+(?:\w+\s+){0,5}?(?:on|off|up|down)\b",
                                    re.IGNORECASE),
     re.compile(r"\b(?:turns?\s+(?:\w+\s+)?(?:on|off|up|down)\b|switch|dim|thermostat|heat|light|lamp|applianc"
                r"|audio|sound|brightness|speaker|mute|smart.?home|controls?\b)", re.IGNORECASE)),  # (not "devices")
)


def removal_unserved(query: str, tools: Mapping[str, Tool]) -> bool:
    """Whether the request asks to remove something ("Cancel my dentist appointment on Friday") and sends
    nothing, while no offered tool removes anything (by its name's words and description): a plan for it can only
    create or read, so no tool fits."""
    if not _REMOVAL_ASKED.search(query) or asked_channel(_REMOVED_MESSAGES.sub(" ", query)):
        return False  # ("Delete every email from Pottery Barn" removes messages; it sends none)
    return not any(_REMOVES.search(_words_of(name, tool)) for name, tool in tools.items())


def unserved_action(query: str, tools: Mapping[str, Tool]) -> str | None:
    """What the request asks for that no offered tool does, when that is all it asks: to remove something
    (:func:`removal_unserved`), or, in its one clause of action, to book, buy, pay or switch a device on ("Book us
    a table for four at Lucio's", "turn the heating up to 22"), while no offered tool's name or description speaks
    of doing so and nothing is to be sent. None when a tool may do it."""
    if removal_unserved(query, tools):
        return "remove something"
    if asked_channel(query) or len(action_clauses(query, tools)) > 1:
        return None
    for what, asked, done in _ACTIONS:
        if (found := asked.search(query)) and not any(
                done.search(words := _words_of(name, tool))
                and (what != _BOOKING or _of_the_object(query, found, words)) for name, tool in tools.items()):
            return what
    return None


def _of_the_object(query: str, found: re.Match[str], words: str) -> bool:
    """Whether a tool that books (its ``words``) books what the request does: a word of the four after the verb
    ("a single room at", "a Regular cab that") is one of the tool's ("a flight to Lisbon" is no "video-meeting
    room"); true when the request names nothing there."""
    said = {_stem(w) for w in _words(" ".join(query[found.end():].split()[:4]))}
    return not said or bool(said & {_stem(w) for w in _words(words)})


def _words_of(name: str, tool: Tool) -> str:
    return f"{' '.join(name_words(name))} {tool.description or ''}"


def lookups_for_nothing(calls: Sequence[Call], query: str, tools: Mapping[str, Tool]) -> bool:
    """Whether the plan only looks up identifiers (e-mail addresses, phone numbers: tools that find one and take
    none, read from the registry) of a kind the request never speaks of: "What's Apple's share price?" planned as
    an e-mail lookup of "Apple". Its results go nowhere, and nothing asked for them."""
    kinds = [lookup_kinds(tools.get(c.name)) for c in calls]
    if not calls or not all(kinds) or asked_channel(query):  # ("Text Jo: landed" as an e-mail lookup: _channels')
        return False
    return not any(speaks_of(k, query) for found in kinds for k in found)


async def _ask(router: RoutingHook, model: Model, request: ModelRequest, notes: list[str]) -> float | None:
    try:
        model, stream = await call_model(router, model, request, "verify", notes)
        completion: Completion | None = None
        async for item in stream:
            if isinstance(item, Completion):
                completion = item
    except (ModelError, BudgetExceeded) as exc:
        notes.append(f"no-tool check skipped: {exc}")
        return None
    return verify_feature(completion) if completion is not None else None
