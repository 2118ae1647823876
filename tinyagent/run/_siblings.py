"""A call of the sibling tool the request did not ask for becomes the one it did.

Registries often hold tools that take the same arguments and differ in what they do: ``cp(source, destination)``
beside ``mv(source, destination)``, ``copy_note`` beside ``move_note``. A small planner picks the first it meets
("Move the report to temp" planned as ``cp``). The request's verb decides: when the verb a call's tool opens its
description with ("Copy a file ...") is not in the request, and exactly one sibling (the same two or more required
parameters, by name and type) opens with a verb the request says ("Move a file ..."), the call becomes the
sibling's, its arguments carried over. Likewise a one-number call of a converter whose parameter is not the unit
the request gives the number in ("20 liters") becomes the call of the converter whose parameter is ("liter").
And a one-text call for folders passed a file name ("Notes2023.txt" to ``mkdir(dir_name)``) becomes the call of the
tool for files that opens its description with the same verb (``touch(file_name)``: both "Create a new ...").
Nothing here is keyed to a tool's name: the verbs are the descriptions' own, the units the parameters'.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from .._plan import Call, Plan, find_refs
from .._tools import Tool
from ._clauses import name_words
from ._repair import without_steps
from ._tidy import acts, own_description

__all__ = ["drop_unasked_twins", "swap_siblings"]

_WORD = re.compile(r"[a-z]+")


def _verb(tool: Tool) -> str:
    """The first word of what the tool's description says of the tool itself, lower case ("copy")."""
    words = _WORD.findall(own_description(tool).lower()[:40])
    return words[0] if words else ""


_SUFFIX = re.compile(r"(?:ies|ing|ed|es|s|e)$")


def _root(word: str) -> str:
    """The word without its inflection ("moving", "moves", "move": "mov"; "copies": "cop", "copy": "copy")."""
    return _SUFFIX.sub("", word) if len(word) > 4 else word.rstrip("e")


def _same(a: str, b: str) -> bool:
    """One word, however inflected: the same root, at least three letters of it."""
    ra, rb = _root(a), _root(b)
    return a == b or (min(len(ra), len(rb)) >= 3 and (ra.startswith(rb) or rb.startswith(ra)))


def _says(verb: str, request_words: Sequence[str]) -> bool:
    return len(verb) >= 3 and any(_same(verb, w) for w in request_words)


def _shape(tool: Tool) -> list[tuple[str, str]]:
    """The required parameters' (name, type), in order."""
    props: Mapping[str, Any] = tool.parameters.get("properties") or {}
    return [(name, str((props.get(name) or {}).get("type", ""))) for name in tool.required]


def _siblings(tool: Tool, tools: Mapping[str, Tool]) -> list[Tool]:
    """The other tools that require the same parameters (names and types, two or more): what one takes, the
    other does."""
    shape = _shape(tool)
    if len(shape) < 2:
        return []
    return [other for other in tools.values() if other.name != tool.name and _shape(other) == shape]


def _carried(call: Call, other: Tool) -> dict[str, Any]:
    """``call``'s arguments that ``other`` takes (the required ones are the same)."""
    props = other.parameters.get("properties") or {}
    return {name: value for name, value in call.args.items() if name in props}


def _unit_after(value: Any, request: str) -> str:
    """The word the request writes right after the number ``value`` ("20 liters": "liters"); "" when none."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return ""
    number = float(value)
    text = str(int(number)) if number.is_integer() else str(number)
    found = re.search(rf"(?<![\w.]){re.escape(text)}(?:\.0+)?\s*([A-Za-z]+)", request)
    return found.group(1).lower() if found else ""


def _converts(tool: Tool, param: str) -> bool:
    """The tool's name has its one parameter's name: a converter from that unit (``liter_to_gallon(liter)``)."""
    return param.lower() in tool.name.lower()


def _unit_sibling(call: Call, tool: Tool, tools: Mapping[str, Tool], request: str,
                  called: set[str]) -> tuple[Tool, str] | None:
    """The one-parameter tool whose parameter names the unit the request gives the call's one number in, when
    the call's own parameter does not ("convert 20 liters into gallons" planned as ``gallon_to_liter(gallon=20)``
    beside ``liter_to_gallon(liter)``): the tool and its parameter."""
    shape = _shape(tool)
    if len(shape) != 1 or shape[0][1] not in ("number", "integer") or len(call.args) != 1:
        return None
    name, kind = shape[0]
    unit = _unit_after(call.args.get(name), request)
    if len(unit) < 3 or _same(unit, name.lower()) or not _converts(tool, name):
        return None
    found = [(other, _shape(other)[0][0]) for other in tools.values()
             if other.name not in called and len(_shape(other)) == 1 and _shape(other)[0][1] == kind
             and _same(unit, _shape(other)[0][0].lower()) and _converts(other, _shape(other)[0][0])]
    return found[0] if len(found) == 1 else None


_FILE_NAME = re.compile(r"^[^/\\]+\.[A-Za-z0-9]{1,5}$")
_FOLDER = re.compile(r"dir|folder", re.IGNORECASE)
_FILE = re.compile(r"file", re.IGNORECASE)


def _file_sibling(call: Call, tool: Tool, tools: Mapping[str, Tool], called: set[str]) -> tuple[Tool, str] | None:
    """The one-text-parameter tool for files that does what ``tool`` does for folders, when the call passes a file
    name (``mkdir(dir_name="Notes2023.txt")`` beside ``touch(file_name)``, both "Create a new ..."): the tool and
    its parameter."""
    shape = _shape(tool)
    if len(shape) != 1 or shape[0][1] != "string" or len(call.args) != 1:
        return None
    name = shape[0][0]
    value = call.args.get(name)
    if not isinstance(value, str) or not _FILE_NAME.match(value.strip()) or not _FOLDER.search(name) or _FILE.search(
            name):
        return None
    found = [(other, _shape(other)[0][0]) for other in tools.values()
             if other.name not in called and len(_shape(other)) == 1 and _shape(other)[0][1] == "string"
             and _FILE.search(_shape(other)[0][0]) and not _FOLDER.search(_shape(other)[0][0])
             and _same(_verb(other), _verb(tool))]
    return found[0] if len(found) == 1 else None


def swap_siblings(plan: Plan, tools: Mapping[str, Tool], request: str) -> tuple[Plan, list[str]]:
    """``plan`` with each call of a tool whose verb the request does not say, and whose one sibling's verb it says,
    made a call of that sibling (same step, arguments carried over); with notes."""
    words = _WORD.findall(request.lower())
    called = {c.name for c in plan.calls}
    calls, notes = [], []
    for call in plan.calls:
        tool = tools.get(call.name)
        unit = _unit_sibling(call, tool, tools, request, called) if tool is not None else None
        if unit is not None:
            other, param = unit
            calls.append(Call(call.id, other.name, {param: next(iter(call.args.values()))}))
            notes.append(f"plan: step {call.id} calls {other.name} (the request gives the number in {param}s)")
            continue
        file = _file_sibling(call, tool, tools, called) if tool is not None else None
        if file is not None:
            other, param = file
            calls.append(Call(call.id, other.name, {param: next(iter(call.args.values()))}))
            notes.append(f"plan: step {call.id} calls {other.name} (it passes a file name, and {call.name} takes "
                         "a folder)")
            continue
        verb = _verb(tool) if tool is not None else ""
        if tool is None or not verb or _says(verb, words):
            calls.append(call)
            continue
        # (a sibling the plan calls already does what its verb asks: this call does something else)
        said = [other for other in _siblings(tool, tools) if other.name not in called
                and not _same(_verb(other), verb) and _says(_verb(other), words)]
        if len(said) != 1:
            calls.append(call)
            continue
        other = said[0]
        calls.append(Call(call.id, other.name, _carried(call, other)))
        notes.append(f"plan: step {call.id} calls {other.name} (the request says {_verb(other)!r}, not "
                     f"{verb!r}: what {call.name} does)")
    if not notes:
        return plan, []
    return Plan(calls=tuple(calls), answer=plan.answer), notes


def _asked(tool: Tool, request_words: Sequence[str]) -> bool:
    """The request says what the tool does: its description's verb, or a word of its name ("reply" for
    ``mail_reply``, whose description opens "Sends a reply ...")."""
    return _says(_verb(tool), request_words) or any(
        len(w) >= 4 and _says(w, request_words) for w in name_words(tool.name))


def _twin_of(call: Call, tool: Tool, other: Call, other_tool: Tool) -> bool:
    """Both act on one thing: a parameter both tools require has the same value in both calls (a forward's and a
    reply's ``match_text="Coach Rivera"``)."""
    shared = set(tool.required) & set(other_tool.required)
    return any(call.args.get(name) == other.args.get(name) is not None for name in shared)


def drop_unasked_twins(plan: Plan, tools: Mapping[str, Tool], request: str) -> tuple[Plan, list[str]]:
    """``plan`` without a call whose verb the request does not say, beside a call of another tool on the same thing
    whose verb it says ("Reply to Coach Rivera's email ..." planned as a forward and a reply of that e-mail), and
    without the calls that only fed it (the forward's recipient lookup); with notes."""
    words = _WORD.findall(request.lower())
    unasked: set[int] = set()
    for call in plan.calls:
        tool = tools.get(call.name)
        if tool is None or not acts(tool) or _asked(tool, words):
            continue
        for other in plan.calls:
            other_tool = tools.get(other.name)
            if (other_tool is not None and other.name != call.name and acts(other_tool)
                    and _asked(other_tool, words) and _twin_of(call, tool, other, other_tool)):
                unasked.add(call.id)
                break
    used = {r.step for c in plan.calls for r in find_refs(c.args)}
    unasked -= used
    if not unasked:
        return plan, []
    fed = {r.step for c in plan.calls if c.id in unasked for r in find_refs(c.args)}
    fed -= {r.step for c in plan.calls if c.id not in unasked for r in find_refs(c.args)}
    gone = unasked | fed
    note = (f"plan: left out step {', '.join(map(str, sorted(gone)))} (the request asks for another action on the "
            "same thing, and not for this one)")
    return Plan(calls=without_steps(plan.calls, gone), answer=plan.answer), [note]
