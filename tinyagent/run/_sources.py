"""Where a parameter's values come from, by the registry's own words: a parameter (or its tool's description) that
names the tool its values are returned by ("Absolute path of the document, as returned by files_locate", "The
messageId comes from SearchMailbox."), and the values of a call that did not come from there."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .._plan import Call, Ref, find_refs
from .._provenance import leaves
from .._tools import Tool

__all__ = ["documented_source", "swap_sourced_refs", "unsourced_values"]

_SOURCE = re.compile(
    r"(?:\b(?:(?:returned|given|produced|found|obtained|output|provided) (?:by|from|with)|comes? from|taken from"
    r"|get (?:it|them|one|this) from)"  # "Needs the msg_id of the message (get it from inbox-search)"
    r"|(?i:id|ids|identifier|path|paths|handle|token|key|url)\b from"  # "File id from drive_files_find", "fileId from"
    r"|\(from) "  # "messageId of the message being answered (from mail__inbox-search)"
    r"(?:a call to |an? |the )?`?([A-Za-z_][\w-]*(?:\.[\w-]+)*)")
# "Place name, or a meeting URL from meet.createLink": not the only source ("as typed by the user or as returned by
# X" is: values the request holds pass anyway)
_ALTERNATIVE = re.compile(r"\bor\b[^.;()]*$")
_THE_USERS = re.compile(r"\b(?:user|typed|request)\b", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def documented_source(schema: Mapping[str, Any], tools: Mapping[str, Tool], owner: Tool | None = None,
                      name: str = "") -> str | None:
    """The offered tool a parameter's description says its values come from ("Absolute path of the document, as
    returned by files_locate"), or a sentence of its tool's (``owner``'s) description that names the parameter
    ``name`` ("The messageId comes from SearchMailbox.", "Call juno_find_file first to get file_id."), or the one
    other tool whose description says it feeds ``owner`` ("Pass an id to juno_reply_mail", "fileId feeds
    docs__digest") when ``name`` is ``owner``'s only identifier parameter; None when they name none."""
    own = [s for s in _SENTENCE.split(owner.description or "") if re.search(rf"\b{re.escape(name)}\b", s)] \
        if owner is not None and name else []
    text = " ".join([str(schema.get("description", "")), str((schema.get("items") or {}).get("description", "")),
                     *own])
    for match in _SOURCE.finditer(text):
        before = text[:match.start()]
        if match.group(1) in tools and not (_ALTERNATIVE.search(before) and not _THE_USERS.search(before)):
            return match.group(1)
    for match in _FIRST.finditer(" ".join(own)):
        if match.group(1) in tools:
            return match.group(1)
    if owner is None or not name or _id_params(owner) != [name]:
        return None
    feeders = [t.name for t in tools.values() if t.name != owner.name and _feeds(t.description or "", owner.name)]
    return feeders[0] if len(feeders) == 1 else None


_FIRST = re.compile(r"\b(?:[Cc]all|[Uu]se|[Rr]un) `?([A-Za-z_][\w-]*(?:\.[\w-]+)*)`? first\b")
_FEED_VERB = re.compile(r"\b(?:pass|passed|feeds?|hand|use|used|takes?|needs?|give|input)\b", re.IGNORECASE)
_INSTEAD = re.compile(r"\b(?:instead|not for|rather than)\b", re.IGNORECASE)  # "Use appendTextToNote instead when"
_ID_PARAM = re.compile(r"(?:^|_)(?:id|ids)$|[a-z](?:Id|ID|Ids|IDs)$")
_ID_WORDS = re.compile(r"^(?:the )?(?:id|identifier)\b|\bid of\b", re.IGNORECASE)


def _id_params(tool: Tool) -> list[str]:
    """The parameters of ``tool`` that take an identifier by their name or description ("message_id", "fileId",
    "Id of the file.")."""
    props: Mapping[str, Any] = tool.parameters.get("properties") or {}
    return [n for n, s in props.items() if isinstance(s, Mapping) and s.get("type", "string") in ("string", "array")
            and (_ID_PARAM.search(n) or _ID_WORDS.search(str(s.get("description") or "")))
            and not re.search(r"(?:^|_)or_|[a-z]Or[A-Z]", n)]  # "note_title_or_id" takes a title too


def _feeds(description: str, consumer: str) -> bool:
    """Whether a sentence of ``description`` hands its result to ``consumer`` ("Pass an id to juno_reply_mail to
    answer a message.", "its messageId is what mail__reply takes")."""
    named = re.compile(rf"(?<![\w.-]){re.escape(consumer)}(?![\w-])")
    return any(named.search(s) and _FEED_VERB.search(s) and not _INSTEAD.search(s)
               for s in _SENTENCE.split(description))


_PHRASE = re.compile(r"\s*[A-Za-z][a-z']*(?:\s+[A-Za-z0-9][\w']*[,.!?]?){2,}\s*")  # "I'll be there", not "Q3.pdf"


def unsourced_values(call: Call, earlier: Mapping[int, Call], tools: Mapping[str, Tool],
                     known: str) -> list[tuple[str, str, str]]:
    """The ``(parameter, value, source)`` of ``call`` where a parameter documents the tool its values come from,
    that tool is offered, and the value is a literal found nowhere in ``known`` or a reference to a step of another
    tool: a made-up path or id the planner should have asked the source tool for."""
    tool = tools.get(call.name)
    if tool is None:
        return []
    text = known.lower()
    out = []
    for name, value in call.args.items():
        source = documented_source(tool.parameters.get("properties", {}).get(name, {}), tools, tool, name)
        if source is None or source == call.name:
            continue
        for ref in find_refs(value):
            if ref.step in earlier and earlier[ref.step].name != source:
                out.append((name, f"${ref.step}", source))
        for leaf in leaves(value):
            if isinstance(leaf, str) and leaf.strip() and (leaf.lower() not in text or _PHRASE.fullmatch(leaf)):
                out.append((name, leaf, source))  # (a phrase of the request, in an id's place, is no id)
    return out


def swap_sourced_refs(call: Call, earlier: Mapping[int, Call], tools: Mapping[str, Tool]) -> Call:
    """``call`` with references that went to another tool's place put right, where a parameter documents its
    source (a message id "taken from searchMailInbox's result", a file id "as returned by searchStoredFiles") and
    was passed the result of another tool:

    * another parameter of the call was passed the source's result: the two are exchanged ("reply to Kofi's last
      mail with the survey's summary" planned as ``reply(message_id=$2, body=$3)``, $2 the summary and $3 the mail
      search);
    * else the plan has one earlier step of the source that no step uses yet: the parameter takes it (contact
      lookups numbered first, then ``summarize(file_id=$1)`` with $1 a lookup and $3 the file search)."""
    tool = tools.get(call.name)
    if tool is None:
        return call
    props = tool.parameters.get("properties", {})
    single = {name: ref for name, value in call.args.items()
              if (ref := _one_ref(value)) is not None and ref.step in earlier}

    def put(name: str, ref: Ref) -> Any:  # (in a list where the call passed one: ``attach_ids=[$3]``)
        return [ref] if isinstance(call.args[name], list) else ref

    for name, ref in single.items():
        source = documented_source(props.get(name, {}), tools, tool, name)
        if source is None or earlier[ref.step].name == source:
            continue
        for other, theirs in single.items():
            if other == name or earlier[theirs.step].name != source:
                continue
            back = documented_source(props.get(other, {}), tools, tool, other)
            if back is None or back == earlier[ref.step].name:
                return Call(call.id, call.name, {**call.args, name: put(name, theirs), other: put(other, ref)})
        steps = [k for k, c in earlier.items() if c.name == source]
        used = {r.step for c in [*earlier.values(), call] for r in find_refs(c.args)}
        if len(steps) == 1 and steps[0] not in used:
            return Call(call.id, call.name, {**call.args, name: put(name, Ref(steps[0]))})
    return call


def _one_ref(value: Any) -> Ref | None:
    """The reference a value is (``$3``), or holds alone (``[$3]``)."""
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    return value if isinstance(value, Ref) else None
