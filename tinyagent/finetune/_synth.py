"""Request synthesis: ask a teacher model for varied user requests, seeded from the tools' schemas and user examples.

The mix of request kinds is planned up front from a seed (so a resumed run asks for exactly the same batches):

* ``single``: one call to one tool (every tool is covered in turn);
* ``chain``: one tool's result feeds another (``$k`` references);
* ``fanout``: the same action several times, or independent actions, in one request;
* ``relative_date``: dates like "tomorrow" or "next Friday", resolved against a varying "today";
* ``typo``: casual, hurried requests, with typos added programmatically (names and numbers are left intact);
* ``no_tool``: greetings and general questions that need no tool (the plan is just ``join()``).
"""

from __future__ import annotations

import datetime as dt
import json
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._plan import Example
from .._prompts import describe_tool
from .._tools import Tool
from ..errors import ConfigurationError

__all__ = [
    "DEFAULT_MIX",
    "KINDS",
    "BatchSpec",
    "SynthRequest",
    "add_typos",
    "list_grammar",
    "parse_request_list",
    "plan_batches",
    "request_messages",
]

KINDS = ("single", "chain", "fanout", "relative_date", "typo", "no_tool")
DEFAULT_MIX: Mapping[str, float] = {
    "single": 0.25,
    "chain": 0.2,
    "fanout": 0.15,
    "relative_date": 0.15,
    "typo": 0.1,
    "no_tool": 0.15,
}
_DATE_PARAM = re.compile(r"date|time|start|end|when|due|day|deadline", re.IGNORECASE)
#: Tool names of lookups: their result is meant to feed another step (or the answer).
LOOKUP_NAME = re.compile(r"^(get|find|search|list|lookup|look_up|read|resolve|fetch|query|open|summari[sz]e)", re.I)
_MIN_CHARS, _MAX_CHARS = 6, 240


@dataclass(frozen=True)
class BatchSpec:
    """One request to the teacher for a few user requests of one kind.

    Attributes:
        id: a stable id (``"b0007"``).
        kind: one of :data:`KINDS`.
        tools: the tools the requests should need (empty for ``no_tool``).
        count: how many requests to ask for.
        today: the date the requests are written against.
    """

    id: str
    kind: str
    tools: tuple[str, ...]
    count: int
    today: dt.date


@dataclass(frozen=True)
class SynthRequest:
    """One synthesized user request.

    Attributes:
        id: a stable id (``"b0007-2"``).
        query: the request text.
        kind: its kind.
        tools: the tools it was written for (a hint; the teacher plans freely).
        today: the date it resolves against.
        source: ``"teacher"`` or ``"example"`` (a user example, with its own plan).
    """

    id: str
    query: str
    kind: str
    tools: tuple[str, ...]
    today: dt.date
    source: str = "teacher"

    def to_json(self) -> dict[str, Any]:
        """JSON-able fields."""
        return {"id": self.id, "query": self.query, "kind": self.kind, "tools": list(self.tools),
                "today": self.today.isoformat(), "source": self.source}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SynthRequest:
        """Inverse of :meth:`to_json`."""
        return cls(id=str(data["id"]), query=str(data["query"]), kind=str(data["kind"]),
                   tools=tuple(data.get("tools", ())), today=dt.date.fromisoformat(str(data["today"])),
                   source=str(data.get("source", "teacher")))


def _date_tools(tools: Sequence[Tool]) -> list[Tool]:
    return [t for t in tools if any(_DATE_PARAM.search(p) for p in t.parameters.get("properties", {}))]


def _chain_pairs(tools: Sequence[Tool]) -> list[tuple[Tool, Tool]]:
    """(producer, consumer) pairs: a lookup-like tool whose result another tool can take as a string or list."""
    producers = [t for t in tools if LOOKUP_NAME.match(t.name)] or list(tools)
    pairs = []
    for p in producers:
        for c in tools:
            if c.name == p.name:
                continue
            props: Mapping[str, Any] = c.parameters.get("properties", {})
            if any(s.get("type") in ("string", "array", None) for s in props.values()):
                pairs.append((p, c))
    return pairs


def plan_batches(
    tools: Sequence[Tool],
    n_requests: int,
    *,
    batch_size: int = 5,
    mix: Mapping[str, float] | None = None,
    seed: int = 0,
    date_range: tuple[dt.date, dt.date] = (dt.date(2026, 1, 5), dt.date(2027, 12, 20)),
) -> list[BatchSpec]:
    """The batches to ask the teacher for, chosen deterministically from ``seed``.

    Args:
        tools: the tools.
        n_requests: requests wanted in total (before verification drops some).
        batch_size: requests per teacher call.
        mix: weight per kind (see :data:`DEFAULT_MIX`); kinds the tools cannot support get no batches.
        seed: the random seed.
        date_range: the span "today" is drawn from.

    Raises:
        ConfigurationError: no tools, a negative count, or an unknown kind in ``mix``.
    """
    if n_requests < 0 or batch_size < 1:
        raise ConfigurationError("n_requests must be >= 0 and batch_size >= 1")
    weights = dict(mix if mix is not None else DEFAULT_MIX)
    unknown = [k for k in weights if k not in KINDS]
    if unknown:
        raise ConfigurationError(f"unknown request kind(s) {unknown}; use {list(KINDS)}")
    tool_list = list(tools)
    if not tool_list:
        raise ConfigurationError("distillation needs at least one tool")
    if not _date_tools(tool_list):
        weights.pop("relative_date", None)
    pairs = _chain_pairs(tool_list)
    if not pairs:
        weights.pop("chain", None)
    total_weight = sum(w for w in weights.values() if w > 0)
    if total_weight <= 0:
        raise ConfigurationError("the request mix has no positive weight")
    rng = random.Random(seed)
    n_batches = -(-n_requests // batch_size)
    # Largest-remainder apportionment of batches to kinds, then a seeded shuffle.
    quotas = {k: n_batches * w / total_weight for k, w in weights.items() if w > 0}
    counts = {k: int(q) for k, q in quotas.items()}
    for k in sorted(quotas, key=lambda k: quotas[k] - counts[k], reverse=True)[: n_batches - sum(counts.values())]:
        counts[k] += 1
    kinds = [k for k in KINDS if k in counts for _ in range(counts[k])]
    rng.shuffle(kinds)
    span = (date_range[1] - date_range[0]).days
    date_tools = _date_tools(tool_list)
    cursor = {"single": 0, "typo": 0, "fanout": 0, "relative_date": 0}
    order = list(tool_list)
    rng.shuffle(order)
    specs = []
    remaining = n_requests
    for i, kind in enumerate(kinds):
        count = min(batch_size, remaining)
        remaining -= count
        if count <= 0:
            break
        chosen: tuple[str, ...]
        if kind == "no_tool":
            chosen = ()
        elif kind == "chain":
            p, c = pairs[rng.randrange(len(pairs))]
            chosen = (p.name, c.name)
        elif kind == "relative_date":
            chosen = (date_tools[cursor[kind] % len(date_tools)].name,)
            cursor[kind] += 1
        elif kind == "fanout" and len(order) > 1 and rng.random() < 0.4:
            a, b = rng.sample(order, 2)
            chosen = (a.name, b.name)
        else:
            chosen = (order[cursor[kind] % len(order)].name,)
            cursor[kind] += 1
        today = date_range[0] + dt.timedelta(days=rng.randrange(max(1, span)))
        specs.append(BatchSpec(id=f"b{i:05d}", kind=kind, tools=chosen, count=count, today=today))
    return specs


_INSTRUCTIONS = {
    "single": "each need exactly one call to {tools}",
    "chain": "each need {first} first, and then use its result in {second} (for example, look something up and "
             "then act on it)",
    "fanout": "each ask for several actions at once with {tools}: the same action for two or three different people "
              "or items, or two independent actions",
    "relative_date": "each need {tools} and name the date or time relatively, for example 'tomorrow', 'next "
                     "Friday', 'in 3 days', 'this evening at 6', 'on Monday at 9am'",
    "typo": "each need {tools}, written casually and in a hurry, as someone would type on a phone (short, lower "
            "case, little punctuation)",
    "no_tool": "need no tool at all: greetings, thanks, small talk, or general knowledge questions that the "
               "assistant can answer directly",
}


def request_messages(
    spec: BatchSpec,
    tools: Mapping[str, Tool],
    examples: Sequence[Example] = (),
    hint: str = "",
) -> list[dict[str, Any]]:
    """The chat messages that ask the teacher for ``spec.count`` requests of ``spec.kind``.

    Args:
        spec: the batch.
        tools: every tool (all are described, so requests stay realistic for the whole assistant).
        examples: user examples, shown as the style to follow.
        hint: facts about the user's data (contact names, files …) that requests may mention.
    """
    described = "\n".join(describe_tool(t) for t in tools.values())
    named = [f"`{n}`" for n in spec.tools]
    instruction = _INSTRUCTIONS[spec.kind].format(
        tools=" and ".join(named) or "no tool", first=named[0] if named else "", second=named[-1] if named else ""
    )
    parts = [
        f"A personal assistant app can use these tools:\n{described}",
        f"Today is {spec.today.isoformat()} ({spec.today.strftime('%A')}).",
        f"Write {spec.count} different requests a user might type to the assistant that {instruction}.",
        "Vary the wording, the people, the topics and the length. Give concrete values (names, titles, times, "
        "texts) in the requests.",
        "Write each request in the user's own words, as they would say it to the assistant (\"Email Sid the Q4 "
        "report\"), never about a third person (\"They need to …\"). Never mention tool names, code or commands.",
    ]
    if hint:
        parts.append(f"Facts about the user's data you may use: {hint}")
    if examples:
        shown = "\n".join(f"- {e.query}" for e in examples[:4])
        parts.append(f"Requests users have written before (for style; do not copy them):\n{shown}")
    parts.append(f"Reply with a JSON list of {spec.count} strings and nothing else.")
    return [
        {"role": "system", "content": "You write realistic, varied user requests for testing an assistant. "
                                      "You reply with a JSON list of strings only."},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


def list_grammar(count: int, max_chars: int = _MAX_CHARS) -> str:
    """A GBNF grammar for a JSON list of 1 to ``count`` strings (for teachers that support grammars)."""
    more = f"{{0,{max(0, count - 1)}}}"
    return (
        f'root ::= "[" ws item ( "," ws item ){more} ws "]"\n'
        f'item ::= "\\"" char{{{_MIN_CHARS},{max_chars}}} "\\""\n'
        'char ::= [^"\\\\\\n\\x00-\\x1f] | "\\\\\\""\n'
        'ws ::= [ \\n]{0,2}\n'
    )


_LIST_LINE = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+(.*\S)\s*$")


def parse_request_list(text: str) -> list[str]:
    """The requests in a teacher's reply: a JSON list of strings, or failing that, a bulleted or numbered list.

    Strings that are too short, too long or span several lines are dropped; quotes around items are removed.
    """
    items: list[Any] = []
    start, end = text.find("["), text.rfind("]")
    if start != -1 and end > start:
        try:
            loaded = json.loads(text[start : end + 1])
            if isinstance(loaded, list):
                items = loaded
        except ValueError:
            items = []
    if not items:
        items = [m.group(1) for line in text.splitlines() if (m := _LIST_LINE.match(line))]
    out = []
    for item in items:
        if isinstance(item, Mapping):
            item = item.get("request") or item.get("query") or item.get("text") or ""
        if not isinstance(item, str):
            continue
        value = " ".join(item.strip().strip('"').strip("'").split())
        if _MIN_CHARS <= len(value) <= _MAX_CHARS:
            out.append(value)
    return out


_KEYBOARD = {
    "a": "qs", "b": "vn", "c": "xv", "d": "sf", "e": "wr", "f": "dg", "g": "fh", "h": "gj", "i": "uo", "j": "hk",
    "k": "jl", "l": "k", "m": "n", "n": "bm", "o": "ip", "p": "o", "q": "w", "r": "et", "s": "ad", "t": "ry",
    "u": "yi", "v": "cb", "w": "qe", "x": "zc", "y": "tu", "z": "x",
}
_PROTECTED = re.compile(r"[\d@/\\.:_$]|^[A-Z]")
_COMMON_STARTS = frozenset({
    "please", "can", "could", "send", "email", "text", "add", "create", "make", "remind", "what", "find", "show", "set",
    "tell", "put", "schedule", "write", "open", "read", "hi", "hello", "thanks",
})


def add_typos(text: str, rng: random.Random, n: int = 2) -> str:
    """``text`` with up to ``n`` typos (swapped, dropped, doubled or neighbouring keys) in plain lower-case words.

    Names (capitalised words), numbers, addresses and paths are left intact, so the request's arguments stay
    checkable. The first letter is lower-cased and a final full stop dropped, as in hurried typing.
    """
    words = text.split(" ")
    candidates = [i for i, w in enumerate(words) if len(w) >= 4 and w.isalpha() and not _PROTECTED.search(w)]
    rng.shuffle(candidates)
    for i in candidates[:n]:
        w = words[i]
        j = rng.randrange(1, len(w) - 1)
        op = rng.randrange(4)
        if op == 0:
            w = w[:j] + w[j + 1] + w[j] + w[j + 2:]
        elif op == 1:
            w = w[:j] + w[j + 1:]
        elif op == 2:
            w = w[:j] + w[j] + w[j:]
        else:
            near = _KEYBOARD.get(w[j].lower(), "")
            if near:
                w = w[:j] + rng.choice(near) + w[j + 1:]
        words[i] = w
    out = " ".join(words)
    first, sep, rest = out.partition(" ")
    if first.lower() in _COMMON_STARTS and rng.random() < 0.7:
        out = first.lower() + sep + rest
    if out.endswith(".") and rng.random() < 0.7:
        out = out[:-1]
    return out
