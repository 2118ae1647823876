"""An item's title passed where its contents go.

"Translate my note 'Welcome letter' into French" was planned as ``translate(text="Welcome letter", ...)``: the
note's title as the text to translate, with no read of the note. :func:`read_named_items` reads the item first
and passes its result. The item's kind is a word of the reader's name ("note" in ``readNoteContents``); the reader
is the one offered tool of that kind that only reads, searches nothing and takes one text; a parameter that holds a
title, a name, an id or a query, or that speaks of the item's kind, keeps the title. Nothing is keyed to a tool's name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .._plan import Call, Plan, Ref, map_refs
from .._tools import Tool
from ._clauses import name_words
from ._lookups import lookup_kind, one_text_param
from ._tidy import reads_only

__all__ = ["read_named_items"]

_SEARCHES = re.compile(r"\bsearch", re.IGNORECASE)
_TITLE_PARAM = re.compile(r"title|name|\bids?\b|_id\b|query|search|subject|topic|heading|keyword", re.IGNORECASE)
_QUOTE = "'\"\u2018\u2019\u201c\u201d"


def read_named_items(plan: Plan, tools: Mapping[str, Tool], request: str) -> tuple[Plan, list[str]]:
    """``plan`` with each literal that is the title of an item the request names by kind ("my note 'Welcome
    letter'", "my Welcome letter note"), passed where a text that is no title goes, replaced by a read of that
    item written just before the call; with notes."""
    readers = _readers(tools)
    if not readers:
        return plan, []
    out: list[Call] = []
    numbers: dict[int, int] = {}
    notes: list[str] = []
    for call in plan.calls:
        args = dict(map_refs(call.args, lambda r: Ref(numbers.get(r.step, r.step))))
        tool = tools.get(call.name)
        props: Mapping[str, Any] = (tool.parameters.get("properties") or {}) if tool is not None else {}
        for name, value in list(args.items()):
            schema = props.get(name) or {}
            if not isinstance(value, str) or schema.get("type", "string") != "string" \
                    or _TITLE_PARAM.search(f"{name} {schema.get('description', '')}"):
                continue
            kind = next((k for k in readers if _names_item(request, value, k)
                         and k not in f"{name} {schema.get('description', '')}".lower()), None)
            reader = readers.get(kind or "")
            if reader is None or reader.name == call.name:
                continue
            out.append(Call(len(out) + 1, reader.name, {str(one_text_param(reader)): value.strip(_QUOTE + " ")}))
            args[name] = Ref(len(out))
            notes.append(f"plan: step {call.id}'s {name} is the {kind} the request names, read first with "
                         f"{reader.name} (not its title)")
        numbers[call.id] = len(out) + 1
        out.append(Call(len(out) + 1, call.name, args))
    if not notes:
        return plan, []
    return Plan(calls=tuple(out), answer=plan.answer), notes


def _readers(tools: Mapping[str, Tool]) -> dict[str, Tool]:
    """Kind of item -> the one offered tool that reads one item of that kind by one text."""
    found: dict[str, list[Tool]] = {}
    for tool in tools.values():
        if not reads_only(tool) or lookup_kind(tool) is not None or _SEARCHES.search(tool.description or "") \
                or one_text_param(tool) is None:
            continue
        for word in name_words(tool.name):
            if len(word) > 3 and word not in ("read", "open", "fetch", "show", "contents", "content", "text"):
                found.setdefault(word.rstrip("s"), []).append(tool)
    return {kind: ts[0] for kind, ts in found.items() if len(ts) == 1}


def _names_item(request: str, title: str, kind: str) -> bool:
    """Whether the request names an item of ``kind`` by ``title``: "my note 'Welcome letter'", "my Welcome letter
    note", "the note called Welcome letter"."""
    title = title.strip(_QUOTE + " ")
    if len(title) < 3 or re.search(r"\d", title):  # (an id, not a title: "vulnerability ef903ac-893")
        return False
    t, k, q = re.escape(title), rf"{re.escape(kind)}s?", f"[{_QUOTE}]?"
    return bool(re.search(rf"\b{k}\s+(?:called\s+|named\s+|titled\s+)?{q}{t}{q}(?!\w)|(?<!\w){q}{t}{q}\s+{k}\b",
                          request, re.IGNORECASE))
