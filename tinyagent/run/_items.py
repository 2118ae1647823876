"""New or existing: a tool that acts on an item already there, or one that makes a new one.

Small planners blur the two: "Email Omar: the client call moved to Thursday" becomes a forward of some message, and
"Add 'olive oil' to my Reading list note" a new note. Which tool does which comes from the registry's descriptions,
never from a tool's name: a tool acts on an *existing* item when the first sentence of its description says so
("Forwards an existing message", "Appends text at the bottom of an existing note"), and makes a *new* one when it
says "new" or "brand-new" of it ("Composes a brand-new e-mail message", "Stores a new note"). The item's kind is
the noun that follows, read through a few plain English synonyms (an e-mail is a message; a memo is a note).

A request points at an existing item when a determiner or a possessive is followed, within a few words, by the
item's noun: "the dinner on Friday email", "Alex Chen's offsite agenda email", "my Reading list note". "Email Omar
that ..." (a verb) and "a new note" (no determiner) point at none.

:func:`item_problem` refuses, as a reason to plan again (like a made-up address):

* a call of a tool that acts on an existing item of a kind the request points at nowhere, while an offered tool
  makes a new one of that kind;
* a call of a tool that makes a new item of a kind the request points at an existing one of, while an offered tool
  acts on an existing one of that kind.

:func:`ruled_out_items` names the offered tools so refused whatever their arguments; ``AgentSettings.ruled_out_tools``
leaves them out of the plan grammar from the start. A registry whose descriptions say neither "existing" nor "new"
is never affected.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache

from .._plan import Call
from .._tools import Tool
from ._channels import asks_question, senders
from ._clauses import name_words, spelled_out
from ._lookups import lookup_kinds

__all__ = ["attachment_slot", "existing_kinds", "item_makers", "item_problem", "item_users", "new_kinds",
           "pointed_kinds", "ruled_out_items", "sent_things_start", "unattached_problem", "unserved_item",
           "unserved_new_item"]

_KINDS: dict[str, tuple[str, ...]] = {
    "message": ("message", "messages", "email", "emails", "e-mail", "e-mails", "mail", "mails"),
    "note": ("note", "notes", "memo", "memos"),
    "document": ("document", "documents", "file", "files", "doc", "docs", "pdf", "pdfs"),
}
# (Not events or tasks: "set up the meeting with Bob" and "the reminder to call mom" ask for new ones.)
_KIND_OF = {word: kind for kind, words in _KINDS.items() for word in words}
_NOUN = "|".join(sorted((re.escape(w) for w in _KIND_OF), key=len, reverse=True))
_DESCRIBED = {
    "existing": re.compile(rf"\bexisting\s+(?:[\w-]+\s+)?({_NOUN})\b", re.IGNORECASE),
    "new": re.compile(rf"\b(?:brand-new|brand new|new)\s+(?:[\w-]+\s+)?({_NOUN})\b", re.IGNORECASE),
}
# A determiner or possessive, at most five plain words that are not a channel idiom or a clause break, and the
# last noun of a kind before any of those ("my Meeting notes note" is a note).
_NOT_THE_ITEM = (r"(?!-|\s+(?:address|addresses|account|accounts|app|client|id|path|paths|name|names|title|titles|"
                 r"folder|folders|server|signature|thread)\b)")
_POINTER = re.compile(
    r"\b(?:the|this|that|these|those|my|his|her|their|our|your|[\w-]+'s)\s+"
    r"(?:(?!(?:by|via|through|over|as|and|or|that|to|with|for|a|an|another|new)\b)[\w'-]+\s+){0,5}"
    rf"({_NOUN})\b{_NOT_THE_ITEM}",
    re.IGNORECASE,
)
_NAME_WORD = re.compile(r"[a-z]{4,}")
_SPEAKS_OF = re.compile(rf"\b({_NOUN})\b{_NOT_THE_ITEM}", re.IGNORECASE)
_CONTENT = re.compile(r":|\b(?:that|saying)\b")  # what a message says, not what the request acts on
_GENERIC = frozenset({"send", "sends", "gets", "returns", "makes", "creates", "takes", "uses", "lists", "finds",
                      "with", "from", "user", "users"})


@lru_cache(maxsize=1024)
def _described(description: str, which: str) -> frozenset[str]:
    """The kinds the description's first sentence (what the tool does) calls existing or new; a later sentence
    ("The user is prompted before an existing note with the same title is replaced") is about something else."""
    return frozenset(_KIND_OF[m.group(1).lower()] for m in _DESCRIBED[which].finditer(_first_sentence(description)))


def _first_sentence(description: str) -> str:
    """What the tool does: the description's first sentence."""
    return re.split(r"(?<=[.!?])\s+", description.strip(), maxsplit=1)[0]


def existing_kinds(tool: Tool) -> frozenset[str]:
    """The kinds of item ``tool`` acts on when they already exist (by its description's "existing ...")."""
    return _described(tool.description or "", "existing")


def new_kinds(tool: Tool) -> frozenset[str]:
    """The kinds of item ``tool`` makes anew (by its description's "new ..." / "brand-new ...")."""
    return _described(tool.description or "", "new") - existing_kinds(tool)


def pointed_kinds(request: str) -> dict[str, str]:
    """The kinds of existing item the request points at, each with the words that point at it."""
    out: dict[str, str] = {}
    for m in _POINTER.finditer(request):
        out.setdefault(_KIND_OF[m.group(1).lower()], m.group(0))
    return out


def item_problem(call: Call, tools: Mapping[str, Tool], request: str) -> str | None:
    """Why ``call`` acts on an existing item where the request asks for a new one, or the other way round (the note
    for planning again); None when it does not, or when no offered tool would do better."""
    tool = tools.get(call.name)
    if tool is None or not (existing_kinds(tool) or new_kinds(tool)):
        return None  # (most tools: no request text to read)
    request = spelled_out(request)  # "fwd the invoice email" names the forwarding tool
    pointed = pointed_kinds(request)
    for kind in sorted(existing_kinds(tool)):
        makers = _others(tools.values(), call.name, new_kinds, kind)
        if kind not in pointed and makers and not _named(tool, request):
            return (f"step {call.id}: {call.name} acts on an existing {kind}, but the request points at none; "
                    f"{_verb(makers, 'makes', 'make')} a new one")
    for kind in sorted(new_kinds(tool)):
        users = _others(tools.values(), call.name, existing_kinds, kind)
        if kind in pointed and users and not re.search(r"\bnew\b", request, re.IGNORECASE):
            return (f"step {call.id}: {call.name} makes a new {kind}, but the request speaks of an existing one "
                    f"({pointed[kind]!r}); {_verb(users, 'acts', 'act')} on an existing one")
    return None


def item_users(kind: str, tools: Mapping[str, Tool]) -> frozenset[str]:
    """The offered tools that act on an existing item of ``kind``: the first sentence of the description (what
    the tool does) says "existing" of it, or speaks of it and the tool neither makes a new one nor sends to
    addresses or numbers ("Fetches a note from the user's notebook"; not "Sends a short message")."""
    sending = senders(tools.values())
    out = set()
    for name, tool in tools.items():
        kinds = {_KIND_OF[m.group(1).lower()] for m in _SPEAKS_OF.finditer(_first_sentence(tool.description or ""))}
        if kind in existing_kinds(tool) or (kind in kinds and kind not in new_kinds(tool) and name not in sending):
            out.add(name)
    return frozenset(out)


def unserved_item(request: str, tools: Mapping[str, Tool], calls: Iterable[Call]) -> tuple[str, frozenset[str]] | None:
    """The note for planning again, and the tools one of which the plan must call, when a plan with calls acts on
    nothing of a kind of existing item the request points at ("Send Alex the contents of my Gift ideas note"
    planned as a lookup and an e-mail) while offered tools act on such items; None otherwise, and for a question
    (which may ask about the item rather than act on it)."""
    calls = list(calls)
    if not calls or asks_question(request):
        return None
    called = {c.name for c in calls}
    finds_addresses = any("email" in lookup_kinds(tools.get(name)) for name in called)
    for kind, words in sorted(pointed_kinds(_CONTENT.split(request, maxsplit=1)[0]).items()):
        users = item_users(kind, tools)
        if finds_addresses and re.search(r"mail\W*$", words, re.IGNORECASE):
            continue  # "I need the email for Maria Garcia", planned as an address lookup: the address
        if users and not called & users:
            return (f"the request points at an existing {kind} ({words!r}) and no step acts on it; "
                    f"{_verb(sorted(users), 'acts', 'act')} on one"), users
    return None


# "keep the summary as a new note", "stash it in a note titled ...": a note of the request's own making (messages
# are the channels', documents no offered tool makes).
_NEW_NOTE = re.compile(rf"\b(?:a|an|another|new)\s+(?:(?:new|brand-new|separate|quick|short)\s+)?"
                       rf"({'|'.join(_KINDS['note'])})\b(?!\s*-)", re.IGNORECASE)
_MAKES = re.compile(r"\b(?:new|create|creates|make|makes|add|adds|write|writes|save|saves|jot|start|starts)\b")


def item_makers(kind: str, tools: Mapping[str, Tool]) -> frozenset[str]:
    """The offered tools that make a new item of ``kind``: the first sentence of the description says "new" of it,
    or the tool's name has the kind's noun and a verb of making (``juno_new_note``, ``notes.create``) and the
    description says nothing of an existing one."""
    nouns = set(_KINDS.get(kind, ()))
    out = set()
    for name, tool in tools.items():
        words = set(name_words(name))
        if kind in new_kinds(tool) or (words & nouns and _MAKES.search(" ".join(words))
                                       and kind not in existing_kinds(tool)):
            out.add(name)
    return frozenset(out)


def unserved_new_item(request: str, tools: Mapping[str, Tool],
                      calls: Iterable[Call]) -> tuple[str, frozenset[str]] | None:
    """The note for planning again, and the tools one of which the plan must call, when the request asks for a new
    note ("... and keep the summary as a new note") and a plan with calls makes none while offered tools do."""
    calls = list(calls)
    match = _NEW_NOTE.search(request)
    if not calls or match is None:
        return None
    makers = item_makers("note", tools)
    if not makers or {c.name for c in calls} & makers:
        return None
    return (f"the request asks for {match.group().lower()!r} and no step makes one; "
            f"{_verb(sorted(makers), 'makes', 'make')} one"), makers


def ruled_out_items(request: str, tools: Mapping[str, Tool]) -> frozenset[str]:
    """The offered tools :func:`item_problem` refuses for this request whatever their arguments."""
    return frozenset(name for name in tools if item_problem(Call(1, name, {}), tools, request))


def _named(tool: Tool, request: str) -> bool:
    """Whether the request uses a word of the tool's name or the verb its description opens with, other than an
    item's noun or a generic verb ("Forward the latest from HR to Sid" asks for a forwarding tool, whatever it
    points at); a word matches its inflections."""
    words = re.findall(r"[a-z'-]+", request.lower())
    own = _NAME_WORD.findall(tool.name.lower()) + _NAME_WORD.findall((tool.description or "").lower())[:1]
    stems = [w[: max(4, len(w) - 2)] for w in own if w not in _KIND_OF and w not in _GENERIC]
    return any(word.startswith(stem) for stem in stems for word in words)


def _others(tools: Iterable[Tool], name: str, kinds: Callable[[Tool], frozenset[str]], kind: str) -> list[str]:
    return sorted(t.name for t in tools if t.name != name and kind in kinds(t))


def _verb(names: list[str], one: str, many: str) -> str:
    return f"{names[0]} {one}" if len(names) == 1 else f"{', '.join(names)} {many}"


# "Email Derek the signed NDA", "send her my CV", "email him the updated pitch deck": a sending verb, its recipient
# (a few words, not "that": "Email Sydney that the slides are ready" sends news, not a file) and a thing with a
# determiner or possessive.
_SENDS_THING = re.compile(r"\b(?:e-?mail|mail|send|forward|share)\b(?:\s+(?!that\b)[\w.@'-]+){0,3}?\s+"
                          r"((?:the|my|our|his|her|their|this|these|those)\s+(?!know\b|about\b|that\b)\w+)",
                          re.IGNORECASE)  # ("letting her know the contract is signed" sends no "know")
_SAYS_ATTACHED = re.compile(r"\b(?:attached|attaching|enclosed|attachments?)\b", re.IGNORECASE)
_ATTACH = re.compile(r"attach", re.IGNORECASE)


def sent_things_start(request: str) -> int | None:
    """Where the things the request sends start ("Email Derek the signed NDA": at "the"), or None."""
    match = _SENDS_THING.search(request)
    return None if match is None else match.start(1)


def attachment_slot(tool: Tool) -> str | None:
    """The tool's parameter for attachments, by its name or description (the first, if several)."""
    props = tool.parameters.get("properties") or {}
    return next((name for name, schema in props.items()
                 if _ATTACH.search(name) or _ATTACH.search(str((schema or {}).get("description", "")))), None)


def unattached_problem(call: Call, tools: Mapping[str, Tool], request: str) -> str | None:
    """Why a message must not go as planned: the request sends a thing ("Email Derek the signed NDA"), the message's
    text says it is attached, and the parameter for attachments (by its name or description) is empty."""
    tool = tools.get(call.name)
    if tool is None or not _SENDS_THING.search(request):
        return None
    slot = attachment_slot(tool)
    if slot is None or call.args.get(slot):
        return None
    if not any(isinstance(v, str) and _SAYS_ATTACHED.search(v) for v in call.args.values()):
        return None
    return (f"step {call.id}'s message says a file is attached but {slot} is empty: find each file the request "
            f"sends first and pass its result in {slot}")
