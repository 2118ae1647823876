"""The template answer: one plain line per step, written from the tool's description and effects, the call's
arguments and its result, with no model call; and the rule that says when that answer is the whole answer.

A line reads like ``Sent a new email: "Standup notes" to sid@example.com (queued in outbox).``: the first clause of
the tool's description in the past tense, then what the call was about (a title, subject or name; else what was
said, when the user said it), where it went (its targets, :attr:`Tool.target_params`), when (ISO dates and times in
the arguments), how long, and what the result adds (a status, records it reports such as overlapping events). A
read's line gives its value: ``The email address for Sid: sid@example.com.``

Tool results are data written by others (:mod:`tinyagent._provenance`). The template never copies free text from
them as its own words: values from results are flattened to one line, stripped of control characters, cut short
and put in quotes, and what a step sent that came from tool data (a note's text mailed on) is not repeated at all.

The rule (:func:`template_covers`) reads only effects, schemas and result shapes, never a tool's name: the template
is the answer when every step succeeded and every read whose result no later step used (so it answers a question)
returned a short atom (an address, a number, a path, a date: see :mod:`tinyagent._provenance`). Reads that fed
later steps are the lookups behind the actions, and the action lines already show what they found.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from .._events import StepRecord
from .._plan import Ref
from .._provenance import leaves
from .._text import as_text
from .._tools import CONTENT_PARAMS, Tool

__all__ = ["template_answer", "template_covers"]

LABEL_KEYS = ("title", "subject", "name")
"""Arguments (or result fields) that name what a call is about."""

_WHEN_PARAMS = frozenset({"start", "date", "time", "when", "day", "at", "on"})
_UNITS = ("minute", "hour", "second", "day", "week")
_MAX_LABEL = 60
_MAX_VALUE = 120
_MAX_ATOM = 200
_MAX_WORDS = 4
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u200b-\u200f\u2028\u2029\u202a-\u202e]+")
_ISO = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}))?(?::\d{2})?$")
_ADDRESS = re.compile(r"[^@\s<>]+@[^@\s<>]+\.[^@\s<>]+|^\+?[\d\s().-]{7,}$")
_IRREGULAR = {
    "send": "sent", "put": "put", "make": "made", "get": "got", "find": "found", "read": "read", "set": "set",
    "write": "wrote", "take": "took", "run": "ran", "buy": "bought", "give": "gave", "begin": "began",
    "keep": "kept", "leave": "left", "build": "built", "pay": "paid", "say": "said", "tell": "told",
    "bring": "brought", "draw": "drew", "hold": "held", "meet": "met", "speak": "spoke", "choose": "chose",
    "cut": "cut", "shut": "shut", "upload": "uploaded", "do": "did", "go": "went", "see": "saw", "sell": "sold",
    "spend": "spent", "lose": "lost", "win": "won", "feed": "fed", "lead": "led", "forbid": "forbade",
}
_NOT_VERBS = frozenset({"a", "an", "the", "this", "that", "it", "tool", "function", "api", "endpoint", "returns",
                        "used", "use", "for", "to", "given", "when"})
_CLAUSE_CUT = re.compile(r",|;|:| and | or | optionally| if | so that | then ")


# -- the rule -------------------------------------------------------------------------------------------------------
def template_covers(records: Sequence[StepRecord], tools: Mapping[str, Tool], *,
                    running: bool = False) -> str | None:
    """None when the template answer says everything the results say; else why a model must write the answer.

    Args:
        records: the steps to answer from (the last attempt's).
        tools: the registry, for each step's effects.
        running: the steps may still run: judge by the finished ones so far (none finished is no reason yet).
    """
    used = {d for r in records for d in _refs(r.args)}
    if running:
        records = [r for r in records if r.status not in ("pending", "running")]
    elif not records:
        return "nothing was run"
    failed = [r.id for r in records if not r.ok]
    if failed:
        return f"step(s) {failed} did not succeed"
    for record in records:
        tool = tools.get(record.name)
        if tool is None:
            return f"step {record.id} calls an unknown tool"
        if tool.read_only and record.id not in used and _atoms(record.result) is None:
            return f"the answer must be composed from what step {record.id} read"
    return None


# -- the answer -----------------------------------------------------------------------------------------------------
def template_answer(records: Sequence[StepRecord], tools: Mapping[str, Tool] | None = None) -> str:
    """An answer built from the results: one short line per step (reads that only fed later steps are left out).

    Args:
        records: every step of the run.
        tools: the registry (descriptions, effects, schemas); without it, lines name the tools.
    """
    if not records:
        return "I could not make a plan for that request."
    tools = tools or {}
    by_id = {r.id: r for r in records}
    used = {d for r in records if r.ok for d in _refs(r.args)}
    lines = []
    for record in sorted(records, key=lambda r: r.id):
        tool = tools.get(record.name)
        if record.ok and record.id in used and (tool is None or tool.read_only):
            continue  # a lookup: the line of the step that used it shows what it found
        lines.append(describe_step(record, tool, by_id))
    if all(r.ok for r in records):
        return "\n".join(lines) or "Done."
    return "Some steps did not succeed.\n" + "\n".join(lines)


def describe_step(record: StepRecord, tool: Tool | None, records: Mapping[int, StepRecord]) -> str:
    """One plain sentence for one step (see the module docstring)."""
    clause = _past_clause(tool) if tool is not None else None
    if not record.ok:
        what = _present_clause(tool) if tool is not None else None
        what = what[0].lower() + what[1:] if what else f"run {record.name}"
        if record.status == "skipped":
            return f"Did not {what}, because a step it needed did not succeed."
        args = _arg_summary(record, tool, records)
        return f"Could not {what}{f' ({args})' if args else ''}: {_clean(record.error or record.status, 160)}."
    if tool is not None and tool.read_only:
        return _read_line(record, tool, records, clause)
    return _action_line(record, tool, records, clause or f"Ran {record.name}")


def _read_line(record: StepRecord, tool: Tool, records: Mapping[int, StepRecord], clause: str | None) -> str:
    atoms = _atoms(record.result)
    value = ", ".join(_show(a) for a in atoms) if atoms is not None else _quote(_text(record.result), _MAX_VALUE)
    args = _arg_summary(record, tool, records)
    returns = tool.returns.strip().rstrip(".")
    if returns and len(returns.split()) <= 6 and not re.search(r"[\"'(),;:]", returns):
        head = returns[0].upper() + returns[1:] + (f" for {args}" if args else "")
    else:
        head = f"{clause} ({args})" if clause and args else (clause or args or tool.name)
    return f"{head}: {value}."


def _action_line(record: StepRecord, tool: Tool | None, records: Mapping[int, StepRecord], clause: str) -> str:
    props: Mapping[str, Any] = tool.parameters.get("properties", {}) if tool is not None else {}
    args = {k: _resolve(v, records) for k, v in record.args.items()}
    result = record.result
    label_key, label = _label(record, args, result)
    parts: list[str] = [f'{clause}: "{label}"' if label else clause]
    shown = {label_key} if label_key else set()
    targets = tool.target_params if tool is not None else ()
    when, other = _when_and_other(args, props, shown | set(targets), record)
    parts += when
    for name in targets:
        values = [v for v in _strings(args.get(name)) if v]
        if not values or (label and all(v.casefold() in label.casefold() for v in values)):
            continue
        schema = props.get(name, {})
        if not any(p.startswith("to ") for p in parts) and all(_ADDRESS.search(v) for v in values) and (
                name == "to" or "recipient" in f"{name} {schema.get('description', '')}".lower()):
            parts.append("to " + ", ".join(_show(v) for v in values))
        else:
            parts.append(f"{_words(name)}: " + ", ".join(_show(_basename(v)) for v in values))
    parts += other
    return _join_parts(parts) + _result_note(result, args) + "."


def _join_parts(parts: list[str]) -> str:
    out = parts[0]
    for part in parts[1:]:
        out += (" " if part.startswith(("to ", "on ", "for ", "due ")) else ", ") + part
    return out


def _when_and_other(args: Mapping[str, Any], props: Mapping[str, Any], shown: set[str],
                    record: StepRecord) -> tuple[list[str], list[str]]:
    """Dates, times and durations; and the other short arguments that differ from their defaults."""
    parts: list[str] = []
    other: list[str] = []
    for name, value in args.items():
        if name in shown or value in (None, "", [], ()):
            continue
        schema = props.get(name, {})
        if isinstance(value, str) and (when := _human_time(value)) is not None:
            parts.append(f"on {when}" if name.lower() in _WHEN_PARAMS else f"{_words(name)} {when}")
            continue
        if name.lower() in CONTENT_PARAMS or record.provenance.get(name, "user").startswith("tool"):
            continue  # what was said is in the item itself; data from tools is never repeated as ours
        if "default" in schema and schema["default"] == value:
            continue
        unit = _unit(name, schema)
        if isinstance(value, int | float) and not isinstance(value, bool) and unit:
            parts.append(f"for {value:g} {unit}{'' if value == 1 else 's'}")
        elif isinstance(value, str | int | float | bool):
            other.append(f"{_words(name)}: {_show(str(value))}")
    return parts, other


def _result_note(result: Any, args: Mapping[str, Any]) -> str:
    """What the result adds: a status, records it reports (overlaps, say), or a short value."""
    if isinstance(result, Mapping):
        note = ""
        status = result.get("status")
        if isinstance(status, str) and status.strip():
            note += f" — {_clean(status, 80)}"
        for key, value in result.items():
            if key in args or not isinstance(value, list) or not value:
                continue
            labels = [lab for item in value if isinstance(item, Mapping) and (lab := _item_label(item))]
            if labels:
                note += f"; {_words(str(key))}: " + ", ".join(labels[:5])
        return note
    if result is None or isinstance(result, bool):
        return ""
    atoms = _atoms(result)
    if atoms is not None:
        return " → " + ", ".join(_show(a) for a in atoms)
    return ": " + _quote(_text(result), _MAX_VALUE)


def _item_label(item: Mapping[str, Any]) -> str:
    """``"Design review" (2026-12-02 14:00)`` for a record in a result."""
    label = next((item[k] for k in LABEL_KEYS if isinstance(item.get(k), str) and item[k].strip()), None)
    if label is None:
        return ""
    when = next((h for v in item.values() if isinstance(v, str) and (h := _human_time(v, short=True))), None)
    return _quote(label, _MAX_LABEL) + (f" ({when})" if when else "")


def _label(record: StepRecord, args: Mapping[str, Any], result: Any) -> tuple[str | None, str]:
    """What the call is about: a title, subject or name (from the arguments, else the result), else what the user
    said (a short content argument that did not come from tool data)."""
    for key in LABEL_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return key, _clean(value, _MAX_LABEL)
    for record_like in (result, *(v for v in result.values() if isinstance(v, Mapping))) \
            if isinstance(result, Mapping) else ():
        for key in LABEL_KEYS:
            value = record_like.get(key)
            if isinstance(value, str) and value.strip():
                return None, _clean(value, _MAX_LABEL)
    for key, value in args.items():
        if (key.lower() in CONTENT_PARAMS and isinstance(value, str) and value.strip()
                and not record.provenance.get(key, "user").startswith("tool")):
            return key, _clean(value, _MAX_LABEL)
    return None, ""


# -- wording helpers ------------------------------------------------------------------------------------------------
def _present_clause(tool: Tool) -> str | None:
    """The first clause of the description (``Send a new email``), or None when it does not start with a verb."""
    text = tool.description.strip().split("\n")[0]
    text = re.split(r"(?<=[a-z0-9)])\.(?:\s|$)", text, maxsplit=1)[0]
    text = re.sub(r"\s*\([^)]*\)", "", text)
    text = _CLAUSE_CUT.split(text, maxsplit=1)[0].strip().rstrip(".")
    words = text.split()
    if not words or words[0].lower() in _NOT_VERBS or not words[0].isalpha():
        return None
    first = words[0]
    if first.lower().endswith("s") and not first.lower().endswith(("ss", "us", "is")) and len(first) > 3:
        first = first[:-1]  # "Sends an email" -> "Send an email"
    return " ".join([first[0].upper() + first[1:].lower(), *words[1:]])


def _past_clause(tool: Tool) -> str | None:
    """The first clause of the description in the past tense (``Sent a new email``)."""
    clause = _present_clause(tool)
    if clause is None:
        return None
    verb, _, rest = clause.partition(" ")
    past = _past(verb.lower())
    return past[0].upper() + past[1:] + (f" {rest}" if rest else "")


def _past(verb: str) -> str:
    if verb in _IRREGULAR:
        return _IRREGULAR[verb]
    if verb.endswith("e"):
        return verb + "d"
    if len(verb) > 1 and verb.endswith("y") and verb[-2] not in "aeiou":
        return verb[:-1] + "ied"
    if re.fullmatch(r"[^aeiou]*[aeiou][bcdfgklmnprstvz]", verb):
        return verb + verb[-1] + "ed"  # stop -> stopped, plan -> planned
    return verb + "ed"


def _human_time(value: str, short: bool = False) -> str | None:
    """``Tue 12 Jan 2027 at 11:00`` for an ISO date or date-time, else None."""
    match = _ISO.match(value.strip())
    if match is None:
        return None
    try:
        day = dt.date.fromisoformat(match.group(1))
    except ValueError:
        return None
    text = f"{day:%Y-%m-%d}" if short else f"{day:%a} {day.day} {day:%b %Y}"
    return text + (f" {'' if short else 'at '}{match.group(2)}" if match.group(2) else "")


def _unit(name: str, schema: Mapping[str, Any]) -> str | None:
    text = f"{name} {schema.get('description', '')}".lower()
    return next((u for u in _UNITS if u in text), None)


def _arg_summary(record: StepRecord, tool: Tool | None, records: Mapping[int, StepRecord]) -> str:
    """The call's short, non-default argument values (``Sid``, ``the Louvre, walking``)."""
    props: Mapping[str, Any] = tool.parameters.get("properties", {}) if tool is not None else {}
    shown = []
    for name, raw in record.args.items():
        value = _resolve(raw, records)
        schema = props.get(name, {})
        if value in (None, "", [], ()) or ("default" in schema and schema["default"] == value):
            continue
        if record.provenance.get(name, "user").startswith("tool") and not isinstance(raw, Ref):
            continue
        shown += [_clean(_basename(v), _MAX_LABEL) for v in _strings(value)][:3]
    return ", ".join(shown[:4])


def _words(name: str) -> str:
    return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name).replace("_", " ").replace("-", " ").lower()


def _basename(value: str) -> str:
    return value.rsplit("/", 1)[-1] if "/" in value and " " not in value.split("/")[0] else value


def _clean(text: str, limit: int) -> str:
    """One line, no control characters, straight quotes made single, at most ``limit`` characters."""
    text = " ".join(_CONTROL.sub(" ", text).split()).replace('"', "'")
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _quote(text: str, limit: int) -> str:
    return f'"{_clean(text, limit)}"'


def _show(value: str) -> str:
    """A value as it appears in a line: quoted when it is words, as it is when it is an address, number or date."""
    words = [w for w in value.split() if re.search(r"[^\W\d_]", w)]
    return _quote(value, _MAX_LABEL) if len(words) >= 2 else _clean(value, _MAX_ATOM)


_text = as_text


def _strings(value: Any) -> list[str]:
    return [str(v) for v in leaves(value) if v is not None and not isinstance(v, Ref)]


def _resolve(value: Any, records: Mapping[int, StepRecord]) -> Any:
    """``value`` with each reference replaced by the result it points to."""
    if isinstance(value, Ref):
        record = records.get(value.step)
        return record.result if record is not None else None
    if isinstance(value, list | tuple):
        out: list[Any] = []
        for item in value:
            resolved = _resolve(item, records)
            out += list(resolved) if isinstance(item, Ref) and isinstance(resolved, list | tuple) else [resolved]
        return out
    if isinstance(value, Mapping):
        return {k: _resolve(v, records) for k, v in value.items()}
    return value


def _refs(value: Any) -> Iterator[int]:
    for leaf in leaves(value):
        if isinstance(leaf, Ref):
            yield leaf.step


def _atoms(value: Any) -> list[str] | None:
    """The strings of a short atomic result (an address, a number, a path, a date), else None."""
    def atom(text: str) -> bool:
        return "\n" not in text.strip() and len(text) <= _MAX_ATOM and len(text.split()) <= _MAX_WORDS

    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return [f"{value:g}" if isinstance(value, float) else str(value)]
    if isinstance(value, str):
        return [value.strip()] if value.strip() and atom(value) else None
    if isinstance(value, list | tuple) and 0 < len(value) <= 20 and all(isinstance(v, str) and atom(v) for v in value):
        return [str(v).strip() for v in value]
    return None
