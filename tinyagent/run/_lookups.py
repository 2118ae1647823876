"""A lookup of the wrong kind: an e-mail address looked up where a phone number is passed, or the other way round.

"Text Jordan and Omar: landed" planned as two e-mail lookups whose results go to a text message's phone numbers.
What a tool finds, and what a parameter takes, come from the registry (:func:`tinyagent._formats.identifier_kind`
over descriptions and schemas), never from a tool's name:

* :func:`swap_lookups`: in a whole plan, a lookup whose result goes only to parameters of the other kind becomes
  the one offered lookup that finds that kind and takes the same arguments (``contacts_lookup_email(person_name=
  "Jordan")`` → ``contacts_lookup_phone(person_name="Jordan")``);
* :func:`mismatched_refs`: where no such swap is possible (a streamed plan whose lookup already ran), a call that
  passes such a result is a reason to plan again.

A lookup may find both kinds: one contact card with an e-mail and a mobile field (:func:`lookup_kinds`). Its result
goes to either kind's parameters, so it is never of the wrong kind.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .._formats import NAME_WORDS, affirmed, described_kind, identifier_kind
from .._plan import Call, find_refs
from .._tools import Tool
from ._channels import KIND_WORDS as _KIND

__all__ = ["KIND_NAMES", "channel_choices", "finds_kind", "finds_kinds", "kind_choices", "lookup_kind", "lookup_kinds",
           "mismatched_refs", "one_text_param", "speaks_of", "swap_lookups"]


def finds_kind(tool: Tool | None) -> str | None:
    """The identifier kind a tool finds, by its description and what it returns (a contact lookup: ``"email"``)."""
    if tool is None:
        return None
    text = affirmed(f"{tool.description} {tool.returns or ''}")
    return identifier_kind({"type": "string", "description": text}) or described_kind(text)


_MAIL_WORD = re.compile(r"\be-?mails?\b", re.IGNORECASE)
_PHONE_WORD = re.compile(r"\b(?:phone|mobile|cell|telephone)\b", re.IGNORECASE)
KIND_NAMES = {"email": _MAIL_WORD, "phone": _PHONE_WORD}
"""The words that name each identifier kind in a description or an enum value."""


def finds_kinds(tool: Tool | None) -> frozenset[str]:
    """The identifier kinds a tool finds: the one its description names (:func:`finds_kind`), or both for a contact
    card ("returns the matching contact card, with `email` and `mobile` fields"; "returns the contact's e-mail
    address and phone number"): a description that speaks of e-mail and of a phone, of a tool whose only required
    required parameter that is free text names someone ("A name or a saved relation"; others may pick from an enum:
    ``want: "email" | "phone"``)."""
    if tool is not None and _picks_either(tool):
        return frozenset({"email", "phone"})
    one = finds_kind(tool)
    if one is not None or tool is None:
        return frozenset({one} if one else ())
    text = affirmed(f"{tool.description} {tool.returns or ''}")
    if not (_MAIL_WORD.search(text) and _PHONE_WORD.search(text)):
        return frozenset()
    props: Mapping[str, Any] = tool.parameters.get("properties") or {}
    texts = [(name, schema) for name in tool.required if isinstance(schema := props.get(name), Mapping)
             and schema.get("type", "string") == "string" and "enum" not in schema]  # (an enum picks, names none)
    if len(texts) != 1 or not NAME_WORDS.search(f"{texts[0][0]} {texts[0][1].get('description', '')}"):
        return frozenset()
    return frozenset({"email", "phone"})


def _picks_either(tool: Tool) -> bool:
    """A lookup whose one free-text required parameter names someone and whose other required parameters pick
    the kind to return, e-mail or phone (``ret_field: "email" | "phone"``), whatever its description says first."""
    found = [c for kind in KIND_NAMES if (c := channel_choices(tool, kind)) is not None and c[1]]
    if len(found) < len(KIND_NAMES):
        return False
    person = found[0][0]
    props: Mapping[str, Any] = tool.parameters.get("properties") or {}
    return bool(NAME_WORDS.search(f"{person} {(props.get(person) or {}).get('description', '')}"))


_SPEAKS_OF = {"email": re.compile(r"e-?mail|\baddress|\bcontact|\breach\b", re.IGNORECASE),
              "phone": re.compile(r"\bphone|\bnumber|\bmobile|\bcell\b|\bcontact|\breach\b|\bcall\b|\btext|\bsms\b",
                                  re.IGNORECASE)}


def speaks_of(kind: str, text: str) -> bool:
    """Whether ``text`` speaks of identifiers of ``kind`` (``"email"``, ``"phone"``) or of reaching someone."""
    return bool(_SPEAKS_OF[kind].search(text)) if kind in _SPEAKS_OF else False


def lookup_kinds(tool: Tool | None) -> frozenset[str]:
    """The identifier kinds a *lookup* finds: a tool that finds some (:func:`finds_kinds`) and takes none (a sender
    to phone numbers speaks of them too, but takes them)."""
    kinds = finds_kinds(tool)
    if not kinds or tool is None:
        return frozenset()
    props: Mapping[str, Any] = tool.parameters.get("properties") or {}
    takes = any(isinstance(s, Mapping) and identifier_kind(s) for s in props.values())
    return frozenset() if takes else kinds


def lookup_kind(tool: Tool | None) -> str | None:
    """The identifier kind a lookup finds (:func:`lookup_kinds`): ``"email"``, ``"phone"``, ``"contact"`` for both,
    None for a tool that is no lookup."""
    kinds = lookup_kinds(tool)
    return None if not kinds else next(iter(kinds)) if len(kinds) == 1 else "contact"


def kind_choices(tool: Tool, person: str, kind: str) -> dict[str, Any] | None:
    """The values a lookup's required parameters other than ``person`` take to find ``kind`` (``want="phone"`` of
    ``want: "email" | "phone"``): each an enum with one value that names the kind; None when one has none."""
    props: Mapping[str, Any] = tool.parameters.get("properties") or {}
    words = KIND_NAMES.get(kind)
    out: dict[str, Any] = {}
    for name in tool.required:
        if name == person:
            continue
        fits = [v for v in (props.get(name) or {}).get("enum") or () if words and words.search(str(v))]
        if len(fits) != 1:
            return None
        out[name] = fits[0]
    return out


def one_text_param(tool: Tool, *, choices: bool = False) -> str | None:
    """The tool's only required parameter, when it takes text; with ``choices``, its only required parameter that
    takes free text, the others picking from an enum."""
    props: Mapping[str, Any] = tool.parameters.get("properties") or {}
    required = [n for n in tool.required if not (choices and "enum" in (props.get(n) or {}))]
    if len(required) != 1 or (props.get(required[0]) or {}).get("type", "string") != "string":
        return None
    return required[0]


def channel_choices(tool: Tool, kind: str) -> tuple[str, dict[str, Any]] | None:
    """A lookup's one free-text required parameter (:func:`one_text_param` with choices) and what its other
    required parameters take to find ``kind`` (:func:`kind_choices`); None when it has no such parameter, or they
    pick nothing."""
    person = one_text_param(tool, choices=True)
    choices = kind_choices(tool, person, kind) if person is not None else None
    return None if choices is None else (str(person), choices)


def _wanted_kinds(step: int, calls: Iterable[Call], tools: Mapping[str, Tool]) -> set[str | None]:
    """The identifier kinds of the parameters that take step ``step``'s result (None: one that is no identifier)."""
    out: set[str | None] = set()
    for call in calls:
        props: Mapping[str, Any] = (tools[call.name].parameters.get("properties") or {}) if call.name in tools else {}
        for name, value in call.args.items():
            if any(r.step == step for r in find_refs(value)):
                schema = props.get(name)
                out.add(identifier_kind(schema) if isinstance(schema, Mapping) else None)
    return out


def _takes_same_arguments(tool: Tool, args: Mapping[str, Any]) -> bool:
    props: Mapping[str, Any] = tool.parameters.get("properties") or {}
    return set(args) <= set(props) and set(tool.required) <= set(args)


def swap_lookups(calls: Sequence[Call], tools: Mapping[str, Tool]) -> tuple[list[Call], list[str]]:
    """The plan with each lookup whose result goes only to identifiers of the other kind made the lookup of that
    kind (when exactly one offered tool finds it and takes the same arguments), or asked for that kind where its
    arguments pick it (``field="email"`` → ``field="phone"`` of ``field: "email" | "phone"``); with a note per
    swap."""
    out, notes = list(calls), []
    for i, call in enumerate(calls):
        found = lookup_kinds(tools.get(call.name))
        wanted = _wanted_kinds(call.id, calls[i + 1 :], tools)
        if not found or len(wanted) != 1 or None in wanted:
            continue
        kind = next(k for k in wanted if k is not None)
        if kind in found:
            if (picked := _picked(call, tools[call.name], kind)) is not None:
                out[i] = picked
                notes.append(f"plan: step {call.id} asks {call.name} for {_KIND[kind]} (its result goes where "
                             f"{_KIND[kind]} go)")
            continue
        right = [t.name for t in tools.values() if lookup_kinds(t) == {kind} and _takes_same_arguments(t, call.args)]
        if len(right) == 1:
            out[i] = Call(call.id, right[0], dict(call.args))
            notes.append(f"plan: step {call.id} looks up {_KIND[kind]} with {right[0]}, not {_KIND[next(iter(found))]} "
                         f"with {call.name} (its result goes where {_KIND[kind]} go)")
    return out, notes


def _picked(call: Call, tool: Tool, kind: str) -> Call | None:
    """``call`` of a lookup whose enum arguments pick the kind it finds, asking for ``kind``; None when it already
    does, or its arguments pick nothing."""
    found = channel_choices(tool, kind)
    choices = found[1] if found is not None else None
    if not choices or all(call.args.get(k) == v for k, v in choices.items()):
        return None
    return Call(call.id, call.name, {**call.args, **choices})


def mismatched_refs(call: Call, earlier: Mapping[int, Call], tools: Mapping[str, Tool]) -> str | None:
    """Why ``call`` passes a lookup's result where identifiers of another kind go (the note for planning again);
    None when it does not."""
    tool = tools.get(call.name)
    if tool is None:
        return None
    props: Mapping[str, Any] = tool.parameters.get("properties") or {}
    for name, value in call.args.items():
        schema = props.get(name)
        want = identifier_kind(schema) if isinstance(schema, Mapping) else None
        if want is None:
            continue
        for ref in find_refs(value):
            source = earlier.get(ref.step)
            found = lookup_kinds(tools.get(source.name)) if source is not None else frozenset()
            if source is not None and want in found and _picked(source, tools[source.name], want) is not None:
                return (f"step {call.id} passes {ref} to {name}, which takes {_KIND[want]}, but step {ref.step} "
                        f"asks {source.name} for another kind; ask it for {_KIND[want]}")
            if found and want not in found and source is not None:
                right = sorted(t.name for t in tools.values() if want in lookup_kinds(t))
                hint = f"; {', '.join(right)} {'finds' if len(right) == 1 else 'find'} those" if right else ""
                return (f"step {call.id} passes {ref} to {name}, which takes {_KIND[want]}, but step "
                        f"{ref.step} ({source.name}) finds {_KIND[next(iter(found))]}{hint}")
    return None

