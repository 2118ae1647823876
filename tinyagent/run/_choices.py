"""The option the request names: an enum parameter set to the one value the request's words name.

"Find the Q3 budget spreadsheet" planned as ``find_file(query="Q3 budget", file_type="any")`` of ``file_type:
"any" | "pdf" | "doc" | "sheet" | ...``; "how long is the drive from Bristol" with no ``mode`` of ``"driving" |
"walking" | ...``. A value is named when a word of the request is it, shares its stem ("drive" and "driving",
"slides" and "slide") or ends with it ("spreadsheet" and "sheet"), and no negation rules it out ("exclude any that
are completed"). Where exactly one value of a parameter is named and the call passes none, the default or a value
that picks nothing (``any``, ``none``, ``default``), the named one is passed; a choice of the planner's own stands
("Tom's mobile number and Sarah's email address"). Nothing here knows a tool.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .._plan import Call
from .._tools import Tool

__all__ = ["named_choices"]

_NO_CHOICE = frozenset({"any", "all", "none", "default", "auto", "other", "unknown", "true", "false", "yes", "no"})
_SUFFIX = re.compile(r"(?:ing|ed|es|s|e)$")
_NEGATED = re.compile(r"\b(?:not|no|non|without|except|exclude|excluding|n't|never|other than)\b(?:\s+\w+){0,4}")
# ("exclude any that are completed", "not the PDF": a named value the request rules out)


def _stem(word: str) -> str:
    return _SUFFIX.sub("", word) if len(word) > 4 else word


def _named(value: str, words: set[str], stems: set[str]) -> bool:
    """Whether the request's ``words`` name the enum ``value`` (each of its words, of three letters or more: not
    ``"1"`` or ``"it-IT"``)."""
    parts = re.findall(r"[a-z0-9]+", value.lower())
    if not parts or value.lower() in _NO_CHOICE or any(len(p) < 3 or p.isdigit() for p in parts):
        return False
    for part in parts:
        if part in words or len(part) >= 4 and _stem(part) in stems:
            continue
        if len(part) >= 4 and any(len(w) > len(part) + 2 and w.endswith(part) for w in words):
            continue  # "spreadsheet" names "sheet"
        return False
    return True


def named_choices(call: Call, tools: Mapping[str, Tool], request: str) -> Call:
    """``call`` with each enum parameter set to the one value the request names, where it passes none, the default
    or a value that picks nothing (see the module docstring)."""
    tool = tools.get(call.name)
    if tool is None:
        return call
    words = set(re.findall(r"[a-z0-9]+", _NEGATED.sub(" ", request.lower())))
    stems = {_stem(w) for w in words}
    props: Mapping[str, Any] = tool.parameters.get("properties") or {}
    args = dict(call.args)
    for name, schema in props.items():
        options = schema.get("enum") if isinstance(schema, Mapping) else None
        if not options or len(options) < 2 or not all(isinstance(v, str) for v in options):
            continue
        named = [v for v in options if _named(v, words, stems)]
        current = args.get(name)
        if len(named) != 1 or current == named[0]:
            continue
        if current is not None and not (isinstance(current, str) and current.lower() in _NO_CHOICE
                                        or current == schema.get("default")):
            continue  # (the planner picked a choice of its own: the request may name the other for another step)
        args[name] = named[0]
    return call if args == dict(call.args) else Call(call.id, call.name, args)
