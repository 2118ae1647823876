"""The channel a request asks for: a text message goes to phone numbers, an e-mail to e-mail addresses.

Small planners blur the two: "Text Bob 'happy birthday!'" becomes an e-mail lookup and an e-mail, or no plan at
all. Which tools send what comes from the registry, never from a tool's name: a tool *sends* when its description
says it sends, delivers, forwards or composes, and it sends to the identifier kinds of its required parameters
(:func:`tinyagent._formats.identifier_kind`: e-mail addresses or phone numbers, by schema and description). The
request asks for one channel when it speaks of texting ("text", "SMS") and not of e-mail, or the other way round;
with neither word, the one kind of identifier it writes decides (an address, or a number that is not a date).

* :func:`channel_problem`: a call that sends by the other channel while an offered tool sends by the one asked
  for, and no call so far does, is a reason to plan again (like a made-up address);
* :func:`unserved_channel`: a first plan with no call (as written, or after the no-tool decision dropped its
  calls), or with calls none of which sends anything ("Text Jordan and Omar: landed" planned as
  two e-mail lookups), for a request to send by a channel an offered tool sends by is planned again once (with a
  call first when it had none), told which tools send that way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .._formats import identifier_kind
from .._plan import Call, Ref
from .._tools import Tool

__all__ = ["KIND_WORDS", "asked_channel", "asks_question", "channel_clauses", "channel_problem", "channel_senders",
           "echoed_messages", "other_channel_senders", "repeated_messages", "senders", "unserved_channel"]

_WORDS = {
    "phone": re.compile(r"(?<![./\\])\b(?:text(?:ed|ing)?|sms(?:es)?|txt)\b"  # (not "notes.txt": a file's extension)
                        r"(?!\s*(?:file|files|document|note|box|field))", re.IGNORECASE),
    "email": re.compile(r"(?<![./\\])\b(?:e-?mail(?:ed|s)?|mail)\b", re.IGNORECASE),
}
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2})?)?\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b")
_GIVEN = {"phone": re.compile(r"(?<![\w.])\+?\d[\d ().-]{5,}\d\b"),
          "email": re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")}
_WHAT = {"phone": "a text message (to phone numbers)", "email": "an e-mail (to e-mail addresses)"}
KIND_WORDS = {"phone": "phone numbers", "email": "e-mail addresses"}
"""How a note to the planner names each identifier kind."""
# "email" with two letters swapped, one dropped or one doubled (not "mail", "emails", "female")
_EMAIL_TYPO = re.compile(r"\b(?:emial|eamil|meail|emali|emai|emal|eail|emil|e-mial|e-mal|eemail|emmail|emaill)"
                         r"(?:ed|s)?\b", re.IGNORECASE)
_SENDS = re.compile(r"\b(?:sends?|deliver(?:s|ed)?|forwards?|compose[sd]?|dispatch(?:es|ed)?)\b", re.IGNORECASE)
# A name that says it sends ("sms-message-send", "sendSmsText", "DispatchEmail"), where the description does not.
_SENDS_BY_NAME = re.compile(r"(?:^|[^a-z])(?:send|deliver|forward|dispatch)(?:[^a-z]|$)|^(?:send|dispatch)",
                            re.IGNORECASE)
# A clause that opens with a verb of sending ("Text Jordan ...", "... and email her the menu", "Let Dariusz know by
# text"), not a mention of the channel ("I need the email for Maria", "Invite ann@x.org to lunch"), nor a note to the
# user ("ping me at 7pm to pack": a reminder).
_SEND_VERB = re.compile(r"(?:^|[,;:.!?]\s*|\b(?:and|then|please|pls|plz|also|you|u|both)\s+)"
                        r"(?:text|sms|e-?mail|mail|message|send|forward|write\s+to|notify|inform|ping|"
                        r"let\s+[\w.'-]+(?:\s+[\w.'-]+){0,2}\s+know)\b(?!\s+(?:me|myself)\b)", re.IGNORECASE)
# A request that opens by sending a thing to a named person, by no channel: "Send the Q4 budget to Maria Garcia".
_SEND_TO_SOMEONE = re.compile(r"^\W*(?:[Pp]lease\s+)?(?:[Ss]end|[Ff]orward|[Ss]hare|[Pp]ass)\b[^.;?!]*?\bto\s+"
                              r"(?!(?:The|My|Our|A|An|This|That|All|Everyone)\b)[A-Z][a-z]")
# A sentence or clause that sends a thing to someone: a name, or "my assistant Kai", "my boss".
_SEND_CLAUSE = re.compile(r"(?:^|[.;!?]\s+|\b(?:and|then|also)\s+)\W*(?:please\s+)?(?:send|forward|pass)\b[^.;?!]*?"
                          r"\bto\s+(?:(?:my|our)\s+[a-z]+"  # (a name is capitalised: "to me" is no one else)
                          r"|(?-i:(?!(?:The|My|Our|A|An|This|That|All|Everyone)\b)[A-Z][a-z]))", re.IGNORECASE)
_POLITE = re.compile(r"^\W*(?:can|could|would|will)\s+(?:you|u)\b", re.IGNORECASE)
_QUESTION = re.compile(r"^\W*(?:what|which|who|whom|whose|when|where|why|how|is|are|do|does|did|can|could)\b",
                       re.IGNORECASE)


def asked_channel(request: str) -> str | None:
    """``"phone"`` or ``"email"`` when the request speaks of exactly one of the two channels (by its words, else by
    the one kind of identifier it writes: an address or a number), and sends to no identifier of the other ("Send
    my note to jo@x.io and text the same list to +44 ..." asks for both); else None."""
    found = _spoken_channels(request)
    if not found:
        undated = _DATE.sub(" ", request)
        found = [kind for kind, shape in _GIVEN.items()
                 if any(kind == "email" or sum(c.isdigit() for c in m) >= 7 for m in shape.findall(undated))]
    found += [kind for kind in _sent_to_given(request) if kind not in found]
    return found[0] if len(found) == 1 else None


def senders(tools: Iterable[Tool]) -> dict[str, frozenset[str]]:
    """The tools that send messages (by their description, else their name), each with the identifier kinds its
    required parameters take."""
    out = {}
    for tool in tools:
        if not _SENDS.search(tool.description or "") and not _SENDS_BY_NAME.search(tool.name):
            continue
        props: Mapping[str, Any] = tool.parameters.get("properties") or {}
        kinds = frozenset(k for name in tool.required if isinstance(s := props.get(name), Mapping)
                          and (k := identifier_kind(s)))
        if kinds:
            out[tool.name] = kinds
    return out


def channel_problem(call: Call, earlier: Mapping[int, Call], tools: Mapping[str, Tool], request: str) -> str | None:
    """Why ``call`` sends by the wrong channel (the note for planning again); None when it does not."""
    want = asked_channel(request)
    if want is None:
        return None
    sending = senders(tools.values())
    kinds = sending.get(call.name)
    right = sorted(name for name, k in sending.items() if want in k)
    if not kinds or want in kinds or not right:
        return None
    if any(want in sending.get(c.name, frozenset()) for c in earlier.values()):
        return None
    return (f"step {call.id}: the request asks for {_WHAT[want]}, but {call.name} sends to "
            f"{' and '.join(KIND_WORDS[k] for k in sorted(kinds))}; {_names(right)} that")


def channel_senders(request: str, tools: Mapping[str, Tool], calls: Iterable[Call] = ()) -> frozenset[str]:
    """The offered tools that send by the channel the request asks for, or by either where it asks for both
    (empty: it names neither); where it asks for both and ``calls`` send by one, those that send by the other."""
    sending = senders(tools.values())
    wants = set(_asked_channels(request))
    calls = list(calls)
    if _sends_by_no_channel(request, wants, calls, sending):
        return frozenset(sending)  # (no channel named: any sender)
    wants = (wants - _sent(calls, sending)) or wants
    return frozenset(name for name, k in sending.items() if k & wants) if wants else frozenset()


def _sent(calls: Iterable[Call], sending: Mapping[str, frozenset[str]]) -> set[str]:
    """The channels ``calls`` send by."""
    return {kind for c in calls for kind in sending.get(c.name, frozenset())}


def other_channel_senders(request: str, tools: Mapping[str, Tool]) -> frozenset[str]:
    """The offered tools that send only by another channel than the one the request asks for, when an offered
    tool sends by that one (empty otherwise): what :func:`channel_problem` would refuse."""
    right, sending = _by_channel(request, tools)
    return frozenset(sending) - right if right else frozenset()


def _by_channel(request: str, tools: Mapping[str, Tool]) -> tuple[frozenset[str], dict[str, frozenset[str]]]:
    """The offered senders by the channel the request asks for (empty: none, or it names no one channel), and
    every offered sender with its kinds."""
    want = asked_channel(request)
    sending = senders(tools.values()) if want is not None else {}
    return frozenset(name for name, k in sending.items() if want in k), sending


def unserved_channel(request: str, tools: Mapping[str, Tool], calls: Iterable[Call] = ()) -> str | None:
    """The note for planning again when a plan (``calls``: none at all, or none that sends anything) leaves a
    request to send by a channel unserved (None: the request is a question, names no one channel, no offered tool
    sends by it, or a call sends, unless the request asks for both and a clause opens with the verb of the one no
    call sends by; with calls, also when no clause opens with a verb of sending: "Invite ann@x.org to lunch"
    planned as an event only mentions the channel)."""
    wants = _asked_channels(request)
    calls = list(calls)
    sending = senders(tools.values())
    if _sends_by_no_channel(request, wants, calls, sending):
        # "Send the Q4 budget to Maria Garcia": no channel named, and nothing sent by any
        right = sorted(sending)
        return f"the request asks to send something to someone, and no step does; {_names(right)} that" if right \
            else None
    if not wants or asks_question(request):
        return None
    if (calls or len(wants) > 1) and not _SEND_VERB.search(request.strip()):
        return None  # (a plan that does something else for a request that only mentions the channel)
    right = sorted(name for name, k in sending.items() if k & set(wants))
    if not right:
        return None
    sent = _sent(calls, sending)
    missing = [w for w in wants if w not in sent]
    # "Text Victor that ..., and email him the deck": a clause opens with the unsent channel's verb
    if sent and len(wants) > 1 and missing and (missing[0] in _sent_to_given(request) or any(
            _WORDS[missing[0]].fullmatch(m.group().split()[-1].strip(",;:.!")) for m in _SEND_VERB.finditer(request))):
        right = sorted(name for name, k in sending.items() if k & set(missing))
        return (f"the request asks to send {' and '.join(_WHAT[w] for w in wants)}, and no step sends "
                f"{_WHAT[missing[0]]}; {_names(right)} that") if right else None
    if sent:  # (one that sends by the other: channel_problem)
        return None
    return f"the request asks to send {' and '.join(_WHAT[w] for w in wants)}, and no step does; {_names(right)} that"


def asks_question(request: str) -> bool:
    """Whether the request is a question (it opens with a question word, or ends with "?"), and not a polite request
    to send ("Could you email Ana and text Bo ...?", "can u check my calendar and text the list to Priyanka?")."""
    if _POLITE.search(request) and _SEND_VERB.search(request):
        return False
    return bool(_QUESTION.search(request)) or request.rstrip().endswith("?")


def _asked_channels(request: str) -> list[str]:
    """The one channel the request asks for, or both where it speaks of both ("Text Victor ..., and email him
    ..."), or where it speaks of one and sends to an identifier of the other ("Send my Packing list note to
    jo@x.io and text the same list to +44 ...")."""
    one = asked_channel(request)
    found = [one] if one is not None else _spoken_channels(request)
    return found + [kind for kind in _sent_to_given(request) if kind not in found]


_PLAIN_SEND = re.compile(r"\b(?:send|forward|share)\b(.*?)(?=,|;|\.\s|\band\b|\bthen\b|$)", re.IGNORECASE)


def _sent_to_given(request: str) -> list[str]:
    """The identifier kinds written in a clause that sends by a verb naming no channel ("Send my note to
    jo@x.io")."""
    kinds = []
    for match in _PLAIN_SEND.finditer(_DATE.sub(" ", request)):
        for kind, shape in _GIVEN.items():
            if any(kind == "email" or sum(c.isdigit() for c in m) >= 7 for m in shape.findall(match.group(1))):
                kinds.append(kind)
    return list(dict.fromkeys(kinds))


def _spoken_channels(request: str) -> list[str]:
    """The channels the request's words name ("by emial" and "eamil him" too)."""
    request = _EMAIL_TYPO.sub("email", request)
    return [kind for kind, words in _WORDS.items() if words.search(request)]


def _sends_by_no_channel(request: str, wants: Iterable[str], calls: Iterable[Call],
                         sending: Mapping[str, frozenset[str]]) -> bool:
    """A request that names no channel and opens by sending a thing to a named person ("Send the Q4 budget to Maria
    Garcia"), and is no question, planned empty; or one with a sentence or clause that does so ("What have I got
    tomorrow? Send the rundown to my assistant Kai and ..."), planned with no step that sends."""
    if wants:
        return False
    calls = list(calls)
    if not calls:
        return not asks_question(request) and bool(_SEND_TO_SOMEONE.search(request))
    return not _sent(calls, sending) and any(not asks_question(m.group()) for m in _SEND_CLAUSE.finditer(request))


def _names(names: list[str]) -> str:
    return f"{names[0]} sends" if len(names) == 1 else f"{', '.join(names)} send"


def channel_clauses(request: str) -> dict[str, list[str]]:
    """The request's clauses that open with a channel's verb, by channel, each from after the verb to the next
    such clause: "Text Victor that the review moved, and email him the deck" gives the phone's "Victor that the
    review moved, and" and the e-mail's "him the deck"."""
    out: dict[str, list[str]] = {}
    matches = list(_SEND_VERB.finditer(request))
    for i, match in enumerate(matches):
        verb = match.group().split()[-1].strip(",;:.!")
        kind = next((k for k, words in _WORDS.items() if words.fullmatch(verb)), None)
        if kind is not None:
            out.setdefault(kind, []).append(request[match.end():matches[i + 1].start() if i + 1 < len(matches)
                                                   else len(request)])
    return out


def echoed_messages(calls: Sequence[Call], tools: Mapping[str, Tool], request: str) -> set[int]:
    """Messages of a channel beyond the clauses that ask for it, to the same people as another message by it, that
    say what a clause of the other channel asks ("Text Victor that the review moved to 4pm, and email him the
    updated pitch deck" planned with two e-mails: the one titled "Review moved to 4pm" goes)."""
    clauses = channel_clauses(request)
    if len(clauses) < 2:
        return set()
    sending = senders(tools.values())
    out: set[int] = set()
    for kind, own in clauses.items():
        mine = [c for c in calls if kind in sending.get(c.name, frozenset())]
        if len(mine) <= len(own):
            continue
        own_words = _content(" ".join(own))
        other_words = _content(" ".join(t for k, texts in clauses.items() if k != kind for t in texts)) - own_words
        words = {c.id: _content(" ".join(v for v in c.args.values() if isinstance(v, str))) for c in mine}
        echo = {c.id: len(words[c.id] & other_words) - len(words[c.id] & own_words) for c in mine}
        for call in sorted(mine, key=lambda c: echo[c.id], reverse=True)[:len(mine) - len(own)]:
            to = _people(call, tools.get(call.name))
            same_people = [o for o in mine
                           if o.id != call.id and o.id not in out and _people(o, tools.get(o.name)) == to]
            if same_people and words[call.id] & other_words:
                out.add(call.id)
    return out


def repeated_messages(calls: Sequence[Call], tools: Mapping[str, Tool], request: str) -> dict[int, Ref]:
    """Messages by one tool to the same people, beyond the clauses that ask for that channel (at least one), that
    pass no step's result as their text while another of them does ("text the list to Priyanka" planned as one text
    of the agenda's result and a second of "Here is your calendar for tomorrow"), each with the result the other
    sends."""
    sending = senders(tools.values())
    clauses = channel_clauses(request)
    out: dict[int, Ref] = {}
    groups: dict[tuple[str, str], list[Call]] = {}
    for call in calls:
        if call.name in sending:
            groups.setdefault((call.name, _people(call, tools.get(call.name))), []).append(call)
    for (name, _), same in groups.items():
        asked = max(1, sum(len(clauses.get(kind, [])) for kind in sending[name]))
        carried = {c.id: _carried(c, tools[name]) for c in same}
        sent = [r for r in carried.values() if r is not None]
        if len(same) > asked and sent:
            out.update({step: sent[0] for step, r in carried.items() if r is None})
    return out


def _carried(call: Call, tool: Tool) -> Ref | None:
    """The step's result ``call`` passes as what it sends (not as whom it sends to), if any."""
    props: Mapping[str, Any] = tool.parameters.get("properties") or {}
    return next((v for k, v in call.args.items()
                 if isinstance(v, Ref) and not (isinstance(props.get(k), Mapping) and identifier_kind(props[k]))), None)


def _people(call: Call, tool: Tool | None) -> str:
    """Who the call sends to: its required identifier arguments, as one comparable text."""
    props: Mapping[str, Any] = (tool.parameters.get("properties") or {}) if tool is not None else {}
    return repr(sorted((k, repr(call.args.get(k))) for k in (tool.required if tool is not None else ())
                       if isinstance(s := props.get(k), Mapping) and identifier_kind(s)))


_CONTENT = re.compile(r"[a-z0-9]{3,}")
_STOP = frozenset(["the", "and", "that", "this", "with", "for", "him", "her", "them", "too", "also", "please", "find",
                   "attached", "has", "have", "been", "was", "were", "are", "you", "your", "our", "its", "from"])


def _content(text: str) -> set[str]:
    return {w for w in _CONTENT.findall(text.lower()) if w not in _STOP}
