"""A clause of the request whose verb names a tool the plan never calls.

"Text Alex Chen that I'm outside and remind me to pay the electricity bill next week" was planned as a lookup and
one text message that says all of it: the second request went into the first one's words. Each clause of a
request that opens with a verb ("..., and remind me to ...", "Summarize the Falcon proposal") asks for an action;
when that verb names offered tools (a word of a tool's name: "remind" and ``reminders_add_task``, "summarize"
and ``pdf_summarize``), or the verb names many things and the word after it names tools ("set up a video meeting",
"add a reminder"), and the plan calls none of them, the plan is planned again with one of them required.

Verbs that name many things (add, get, send, make, read ...) name no tool here, and the channels' own verbs (text,
email) are :mod:`tinyagent.run._channels`'s. Nothing is keyed to a tool's name: the tools come from their names'
words.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

from .._plan import Call
from .._tools import Tool

__all__ = ["GENERIC_NAME_WORDS", "action_clauses", "clause_heads", "clause_spans", "clause_verbs", "name_words",
           "named_clauses", "named_groups", "near_search_tools", "same_target", "spelled_out", "topic_words",
           "unserved_clause", "verb_tools"]

# A clause opens the request, or follows a conjunction, a semicolon or a sentence's end.
_CLAUSE = re.compile(r"(?:^|[;.!?]\s+|\s+[-\u2013\u2014]\s+|,?\s+(?:and|then|also|plus)\s+|,\s+)"  # (" - reply that")
                     r"(?:(?:also|then|and|please|pls|now|can you|could you"
                     r"|if (?:so|yes|any|there is one|there's one|there are any),?)\s+)*([a-z]+)\b"  # ("If so reply")
                     r"(?:\s+(?:(?:up|a|an|the|my|me|new|some|us)\s+)*([a-z]+))?", re.IGNORECASE)
_GENERIC = frozenset(re.findall(r"[a-z]+", """
add adds get gets set sets put make makes create creates new open read send sends take show tell let give check
find look see do go use bring pay call buy pick keep try need want ask have has be is are was were will would
can could should may might must shall i me my you your we our it its this that the a an to for with from in on
at by of and or text email mail message sms write list lists search note notes file files event events task
tasks item items user update change move remove delete start stop run return returns current date time day
"""))
_NAME_WORD = re.compile(r"[a-z]+")
GENERIC_NAME_WORDS = frozenset(_NAME_WORD.findall("""
add get set create make new send list search find update delete remove event events item items task tasks the for
with info data
"""))
"""Words of tool names that say nothing of what a tool is about (its verb, a generic object)."""
_FIRST_SENTENCE = re.compile(r"(?<=[.!?])\s")
# Chat shorthand for verbs ("fwd the invoice email to Grace"), read as the words they stand for.
_SHORT = {"fwd": "forward", "fw": "forward", "msg": "message", "sched": "schedule", "rmnd": "remind",
          "txt": "text", "summarise": "summarize"}


_SHORT_WORD = re.compile(rf"(?<![./\\])\b(?:{'|'.join(_SHORT)})\b", re.IGNORECASE)  # (not "notes.txt")


def spelled_out(request: str) -> str:
    """``request`` with its chat shorthand for verbs written out ("fwd the invoice" -> "forward the invoice")."""
    return _SHORT_WORD.sub(lambda m: _SHORT[m.group().lower()], request)


def clause_verbs(request: str) -> list[str]:
    """The words that open the request's clauses, lower case ("remind" in "..., and remind me to ...")."""
    return [verb for verb, _ in clause_heads(request)]


def clause_heads(request: str) -> list[tuple[str, str]]:
    """Each clause's opening word and the first word of what follows it past a particle, an article or a
    possessive ("set up a video meeting" gives ``("set", "video")``; "" where nothing follows)."""
    return [_head(m) for m in _CLAUSE.finditer(request)]


def _head(match: re.Match[str]) -> tuple[str, str]:
    """A clause match's opening word (chat shorthand read as its verb) and the word after it, lower case."""
    verb = match.group(1).lower()
    return _SHORT.get(verb, verb), (match.group(2) or "").lower()


def _clause_tools(verb: str, head: str, tools: Mapping[str, Tool]) -> tuple[str, frozenset[str]]:
    """What a clause asks for ("remind"; after a verb that names many things, "set video") and the offered tools
    it names (:func:`verb_tools`; none for the next word but by the tools' names)."""
    if verb in _GENERIC:
        return f"{verb} {head}", verb_tools(head, tools, by_name=True)
    return verb, verb_tools(verb, tools)


def clause_spans(request: str, tools: Mapping[str, Tool]) -> list[tuple[int, int, str, frozenset[str]]]:
    """Every clause of the request: where it starts (its verb) and ends (the next clause), its words, and the
    offered tools its verb names (or, after a verb that names many things, the next word; often none; for a search
    near a place, "find a winery near Napa", the tools that find places near one)."""
    matches = list(_CLAUSE.finditer(request))
    out = []
    for i, match in enumerate(matches):
        _, named = _clause_tools(*_head(match), tools)
        end = matches[i + 1].start() if i + 1 < len(matches) else len(request)
        text = request[match.start(1):end].strip(" ,;.!?")
        if not named and _NEAR_SEARCH.match(text):
            named = near_search_tools(tools)
        out.append((match.start(1), end, text, named))
    return out


# "find a winery near Napa", "look for a pharmacy close to the office": a search for places near one (English words)
_NEAR_SEARCH = re.compile(r"(?:find|locate|look\s+for|search\s+for|get)\s+(?:me\s+)?(?:\w+\s+){1,4}?"
                          r"(?:near|nearby|close\s+to|around)\b", re.IGNORECASE)
def near_search_tools(tools: Mapping[str, Tool]) -> frozenset[str]:
    """The offered tools that find places near one: by a word of the name ("nearby") or the description ("points
    of interest", "near a location")."""
    return frozenset(name for name, tool in tools.items()
                     if {"near", "nearby"} & set(name_words(name)) or _NEAR_TOOL.search(tool.description or ""))


_NEAR_TOOL = re.compile(r"\b(?:nearby|near\s+(?:a|an|the)\s+(?:location|place|address|point)|points?\s+of\s+interest"
                        r"|around\s+(?:a|an|the)\s+(?:location|place|address))\b", re.IGNORECASE)


_MIN_WORDS = 3
_HEDGE = re.compile(r"\bif\s+(?:you\s+can|possible|you\s+could|it'?s\s+possible|there\s+is\s+one)\W*$",
                    re.IGNORECASE)  # ("..., window seat if you can": a wish about the one action, not another)
# Words that open no request for an action: a list's next item ("..., and the statement of work"), a statement
# ("I'm looking into ...", "It's getting late", "luxury's the name of the game"), a question or a condition
# ("Would you ...", "While it's a secret file"), or a request for the answer itself ("tell me ...": the joiner's).
# English words.
_NOT_ACTIONS = frozenset(re.findall(r"[\w']+", """
the a an my his her their our your its this that these those it them him me us i i'm i've i'd i'll im ive id it's
we we're we've you you're he she they there here which who whom whose what when where why how while for if as
since because so but after afterwards before in on at with from by to of would could can will should may might
must do does did is are was were am be been has have had tell let under over about into through without during via
per near like than
"""))
_SENTENCE_END = re.compile(r"[.!?:;]\s*$")


def action_clauses(query: str, tools: Mapping[str, Tool]) -> list[tuple[str, frozenset[str]]]:
    """The request's clauses that ask for an action, each with the offered tools its verb names
    (:func:`clause_spans`): of three words or more, opening with what may be a verb, not a list's next item ("...,
    and the statement of work"), a statement ("I'm looking into ..."), a question ("Would you ..."), a request for
    the answer ("tell me ...") or a sentence about someone ("Alex Johnson will be ...")."""
    out = []
    for start, _, text, named in clause_spans(query, tools):
        words = text.split()
        first = words[0].lower().replace("\u2019", "'") if words else ""
        if len(words) < _MIN_WORDS or first in _NOT_ACTIONS or first.endswith("'s") or _HEDGE.search(text):
            continue
        if start and words[0][:1].isupper() and (not _SENTENCE_END.search(query[:start])
                                                 or words[1][:1].isupper()):
            continue  # a name (in a list, or a sentence about someone), not a new request
        out.append((text, named))
    return out


def named_clauses(request: str, tools: Mapping[str, Tool]) -> list[tuple[frozenset[str], str]]:
    """The request's clauses that name offered tools by their verbs (or, after a verb that names many things, by
    the next word), each with the tools it names and its words from the verb to the next clause: "Text Ines that
    dinner's at 8, and remind me to buy dessert at 5pm" gives the reminder tools and "remind me to buy dessert at
    5pm"."""
    return [(named, text) for _, _, text, named in clause_spans(request, tools) if named]


def named_groups(request: str, tools: Mapping[str, Tool]) -> set[frozenset[str]]:
    """The groups of offered tools the request's clauses name (:func:`named_clauses`)."""
    return {group for group, _ in named_clauses(request, tools)}


def same_target(one: Call, other: Call) -> bool:
    """Whether two calls act on the same thing: they pass the same text, under any parameter names (a forward's
    ``match_text="Invoice #4471"`` and a new e-mail's ``subject_line="Invoice #4471"``)."""
    def texts(call: Call) -> set[str]:
        return {v.strip().lower() for v in call.args.values() if isinstance(v, str) and len(v.strip()) >= 3}

    return bool(texts(one) & texts(other))


def topic_words(name: str, shortest: int = 4) -> set[str]:
    """The words of a tool's name that say what it is about: not its verb or a generic object
    (:data:`GENERIC_NAME_WORDS`), of ``shortest`` letters or more."""
    return {w for w in name_words(name) if len(w) >= shortest and w not in GENERIC_NAME_WORDS}


def name_words(name: str) -> list[str]:
    """A tool name's words, lower case (``reminderAdd`` and ``reminders_add_task`` alike)."""
    return _NAME_WORD.findall(re.sub(r"(?<=[a-z])(?=[A-Z])", "_", name).lower())


def verb_tools(verb: str, tools: Mapping[str, Tool], *, by_name: bool = False) -> frozenset[str]:
    """The offered tools a word of whose name is ``verb`` or shares its first five letters or more with it
    ("remind" and ``reminders_add_task``); where no name says it and not ``by_name`` (a noun after a verb that
    names many things), those whose description's first sentence has it as a noun of action (:func:`_actions`:
    "invite" and "... and sends invitations"); none for a verb that names many things."""
    if verb in _GENERIC or len(verb) < 4:
        return frozenset()
    out = {name for name in tools if _says(verb, name_words(name))}
    if not out:  # ("remind" and ``alerts_ping_schedule``)
        same = _SAME_ACT.get(_BRITISH.sub(r"iz\1", verb), ())
        out = {name for name in tools if any(_says(other, name_words(name)) for other in same)}
        if verb in _MAKES:  # ("block Friday 9 to 11": an entry made, not the day read)
            out = {name for name in out if _MAKING & set(name_words(name))} or out
    if not out and not by_name:
        out = {name for name, tool in tools.items() if _says(verb, _actions(tool.description or ""))}
    return frozenset(out)


# Idioms that ask for an act without its verb (English words, no tool's name): "how do you say X in Portuguese".
_IDIOMS = ((re.compile(r"\bhow (?:do|would|can|to) (?:you |i |we )?say\b", re.IGNORECASE), "translate"),
           (re.compile(r"\b(?:ping|nudge|buzz)\s+me\b", re.IGNORECASE), "remind"))  # ("ping me Friday at 2:45")
# Verbs whose act vendors name with other words (English words, no tool's name).
_SAME_ACT = {"remind": ("alert", "alarm", "notify", "notification"), "summarize": ("digest", "condense"),
             "answer": ("reply", "respond"), "respond": ("reply",),
             "block": ("calendar", "schedule")}  # ("block 9 to 11 this Friday")
_MAKES = frozenset({"block"})  # verbs of _SAME_ACT that make an entry
_MAKING = frozenset({"create", "add", "new", "insert", "schedule", "make", "book", "set", "put"})


def _actions(description: str) -> list[str]:
    """The words of a description's first sentence that name what the tool does: its nouns of action ("sends
    invitations"); not every word ("the address book", "entries scheduled on"), nor its opening verb, which names
    what it does in another tool's words ("Initiates a payment request" for "initiate a payment")."""
    words = _NAME_WORD.findall(_FIRST_SENTENCE.split(description.strip(), 1)[0].lower())
    return [w for w in words[1:] if re.search(r"(?:tion|sion)s?$", w)]


def _says(verb: str, words: Iterable[str]) -> bool:
    """Whether a word of ``words`` is ``verb``, or shares its stem: a common start of five letters or more that
    leaves at most one letter of the shorter word ("remind" and "reminders", "invite" and "invitation"; not
    "transit" and "translate")."""
    verb = _BRITISH.sub(r"iz\1", verb)
    return any(w == verb or len(os.path.commonprefix([_BRITISH.sub(r"iz\1", w), verb])) >= max(
        5, min(len(w), len(verb)) - 1) for w in words if w not in _GENERIC)


_BRITISH = re.compile(r"is(e|ed|es|ing|ation|ations)$")  # "summarise" says "summarize"


def unserved_clause(request: str, tools: Mapping[str, Tool],
                    calls: Iterable[Call]) -> tuple[str, frozenset[str]] | None:
    """The note for planning again, and the tools one of which the plan must call, when a clause of the request
    opens with a verb that names offered tools and a plan with calls calls none of them (or a plan with no call,
    when two clauses name different tools: "Set up a video call ..., and remind me ..."); None otherwise."""
    called = {c.name for c in calls}
    if not called and len(named_groups(request, tools)) < 2:
        return None  # (a plan with no call is the no-tool decision's, unless two clauses name different tools)
    heads = [(verb, "") for pattern, verb in _IDIOMS if pattern.search(request)] + clause_heads(request)
    asks = [_clause_tools(verb, head, tools) for verb, head in dict.fromkeys(heads)]
    if any(_NEAR_SEARCH.match(text) for _, _, text, _ in clause_spans(request, tools)):
        asks.append(("find a place near one", near_search_tools(tools)))
    asks += [(f"know the {topic}", frozenset(name for name in tools if topic in topic_words(name)))
             for topic in map(str.lower, _ASKED_TOPIC.findall(request))]
    for verb, named in asks:
        if named and not called & named:
            names = sorted(named)
            return (f"the request asks to {verb} (a clause opens with it), and no step does; "
                    f"{names[0] if len(names) == 1 else ', '.join(names)} {'does' if len(names) == 1 else 'do'} "
                    "that"), named
    return None


# A question about a thing a tool is named for: "What's the weather going to be like in Portland" (English words)
_ASKED_TOPIC = re.compile(r"\b(?:what(?:'s|\u2019s|\s+is|\s+will\s+be)|how(?:'s|\u2019s|\s+is)|check)\s+the\s+"
                          r"([a-z]{4,})\b", re.IGNORECASE)
