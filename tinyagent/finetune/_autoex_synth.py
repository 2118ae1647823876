"""Schema-driven requests with known plans, for a registry that ships no worked examples.

Every request is written from a template over the tools' own descriptions and parameter schemas, and its plan is
built with it (so it is right by construction, unlike a teacher's guess):

* ``single``: one call per tool, once with the required arguments and once with an optional one too;
* ``chain``: a lookup whose result feeds a parameter of another tool (the parameter names or describes what the
  lookup's name says it gets: ``get_zipcode(city)`` feeds ``estimate_distance(zip_a: "zipcode of ...")``), so the
  consumer gets ``$k`` and never a literal;
* ``fanout``: the same tool twice with different values, and two unrelated tools in one request;
* ``no_tool``: a greeting (empty plan).

No name or phrase here belongs to one registry: values come from the schema (enums, defaults, formats) or from the
parameter's name and description (an e-mail address for ``email``, a path for ``path`` ...).
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._plan import Call, Plan, Ref
from .._tools import Tool

__all__ = ["SynthExample", "synthesize"]

_STOP = frozenset(("a", "an", "the", "of", "to", "for", "in", "on", "by", "and", "or", "with", "from", "based",
                   "this", "that", "is", "it", "be", "as", "at", "its", "given", "specified", "current", "all"))
_VERBS = re.compile(r"^(get|find|search|list|lookup|look|read|resolve|fetch|query|retrieve|show|display|check|"
                    r"estimate|compute|calculate|convert|count)$")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[A-Za-z][a-z]*|[0-9]+")


@dataclass(frozen=True)
class SynthExample:
    """A synthesized request, its plan and what it was built from.

    Attributes:
        query: the request.
        plan: the plan built with it.
        kind: ``single``, ``chain``, ``fanout`` or ``no_tool``.
        expected: the tool names the request asks for, one per call (the completeness check's reference).
    """

    query: str
    plan: Plan
    kind: str
    expected: tuple[str, ...]


def name_words(text: str) -> list[str]:
    """Lower-case words of an identifier or phrase (``getZipcode_based`` -> ``get zipcode based``)."""
    return [w.lower() for w in _WORD.findall(text.replace("_", " ").replace(".", " "))]


def _content_words(name: str) -> set[str]:
    return {w for w in name_words(name) if w not in _STOP and not _VERBS.match(w) and len(w) > 2}


def tool_phrase(tool: Tool) -> str:
    """The tool's action as an imperative phrase, from its description (``"Returns the x."`` -> ``"return the x"``)."""
    text = " ".join(tool.description.split())
    marker = re.search(r"description:\s*", text, re.IGNORECASE)
    if marker:
        text = text[marker.end():]
    sentences = [s.strip() for s in _SENTENCE.split(text) if s.strip()]
    words = set(name_words(tool.name))
    pick = next((s for s in sentences if words & set(name_words(s))), sentences[0] if sentences else "")
    pick = re.split(r"[.;:!?](?:\s|$)", pick)[0].strip().rstrip(".")
    if not pick or len(pick) > 140:
        return " ".join(name_words(tool.name))
    head, _, rest = pick.partition(" ")
    low = head.lower()
    if low.endswith("ies") and len(low) > 4:
        low = low[:-3] + "y"
    elif re.search(r"(ch|sh|x|ss)es$", low):
        low = low[:-2]
    elif low.endswith("s") and not low.endswith("ss") and len(low) > 3:
        low = low[:-1]
    if low in ("thi", "a", "an", "the", "function", "tool", "api", "method", "use", "used"):
        return " ".join(name_words(tool.name))
    return f"{low} {rest}".strip()


# -- values ----------------------------------------------------------------------------------------------------

_TEXT_VALUES = (
    (re.compile(r"e-?mail"), ("dana.lee@example.com", "sam.ortiz@example.org")),
    (re.compile(r"phone|mobile"), ("+1 415 555 0134", "+44 20 7946 0958")),
    (re.compile(r"zip ?code|postal"), ("94016", "10001")),
    (re.compile(r"url|link|website"), ("https://example.com/report", "https://example.org/notes")),
    (re.compile(r"date|day|deadline|birthday"), ("2026-03-05", "2026-04-12")),
    (re.compile(r"\btime\b|datetime|start|end|when"), ("2026-03-05T10:00", "2026-04-12T15:30")),
    (re.compile(r"file|path"), ("report.txt", "notes.md")),
    (re.compile(r"folder|dir|directory"), ("documents", "archive")),
    (re.compile(r"city|town|location|place|destination|origin|address"), ("Lisbon", "Denver")),
    (re.compile(r"country"), ("Canada", "Japan")),
    (re.compile(r"airport"), ("JFK", "LAX")),
    (re.compile(r"symbol|ticker|stock"), ("NVDA", "MSFT")),
    (re.compile(r"currency"), ("EUR", "JPY")),
    (re.compile(r"language|lang"), ("French", "German")),
    (re.compile(r"username|user name|handle"), ("dlee42", "sortiz")),
    (re.compile(r"\bids?\b|identifier|number|code"), ("A1042", "B2207")),
    (re.compile(r"name|person|contact|recipient|user|author|owner"), ("Dana Lee", "Sam Ortiz")),
    (re.compile(r"title|subject|topic"), ("Quarterly review", "Team offsite")),
    (re.compile(r"message|text|content|body|comment|note|description|reason"),
     ("the budget is approved", "lunch moved to noon")),
    (re.compile(r"query|keyword|search|term|pattern"), ("budget", "invoice")),
    (re.compile(r"color|colour"), ("blue", "green")),
    (re.compile(r"tag|category|label|type|status|mode"), ("urgent", "personal")),
)


def _param_text(name: str, schema: Mapping[str, Any]) -> str:
    return " ".join(name_words(name)) + " | " + str(schema.get("description") or "").lower()


def _string_value(name: str, schema: Mapping[str, Any], variant: int) -> str:
    fmt = str(schema.get("format") or "")
    if fmt in ("date", "date-time"):
        return ("2026-03-05", "2026-04-12")[variant % 2] + ("T10:00" if fmt == "date-time" else "")
    own = " ".join(name_words(name))
    for text in (own, _param_text(name, schema)):  # the name decides first; the description breaks ties
        for pattern, values in _TEXT_VALUES:
            if pattern.search(text):
                return values[variant % 2]
    return ("alpha", "beta")[variant % 2]


_QUOTED = re.compile(r"""['"]([A-Za-z][\w .-]{0,30})['"]""")


def described_choices(schema: Mapping[str, Any]) -> list[str]:
    """Values a string parameter's description lists in quotes (``"Possible values: 'on', 'off'"``)."""
    if schema.get("type") not in ("string", None):
        return []
    found = list(dict.fromkeys(_QUOTED.findall(str(schema.get("description") or ""))))
    return found if len(found) >= 2 else []


def value_for(name: str, schema: Mapping[str, Any], variant: int = 0) -> Any:
    """A plausible value for parameter ``name`` with ``schema`` (None: none can be made, e.g. an object)."""
    options = list(schema.get("enum") or []) or described_choices(schema)
    if options:
        return options[variant % len(options)]
    variants = schema.get("anyOf") or schema.get("oneOf")
    if variants:
        return value_for(name, variants[0], variant)
    typ = schema.get("type")
    if typ == "boolean":
        return True
    if typ == "integer":
        lo = schema.get("minimum", 1)
        return int(max(lo, (3, 12)[variant % 2]))
    if typ == "number":
        return (12.5, 40.0)[variant % 2]
    if typ == "array":
        item = value_for(name.rstrip("s") or name, schema.get("items") or {"type": "string"}, variant)
        other = value_for(name.rstrip("s") or name, schema.get("items") or {"type": "string"}, variant + 1)
        if item is None:
            return None
        return [item] if other == item else [item, other]
    if typ in ("string", None):
        return _string_value(name, schema, variant)
    return None


def _spoken(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return " and ".join(_spoken(v) for v in value)
    if isinstance(value, str) and (" " in value or "." in value or "/" in value) and "@" not in value:
        return f"'{value}'"
    return str(value)


def _arg_phrase(name: str, value: Any) -> str:
    words = " ".join(name_words(name))
    if isinstance(value, bool):
        return f"{words} turned {'on' if value else 'off'}"
    return f"{words} {_spoken(value)}"


def _args_for(tool: Tool, variant: int, extra_optional: bool, skip: frozenset[str] = frozenset()
              ) -> dict[str, Any] | None:
    props: Mapping[str, Any] = tool.parameters.get("properties") or {}
    required = [p for p in tool.required if p in props]
    names = [p for p in props if p in required]
    if extra_optional:
        optional = [p for p in props if p not in required and value_for(p, props[p], variant) is not None]
        if not optional:
            return None
        names.append(optional[0])
    args: dict[str, Any] = {}
    for p in names:
        if p in skip:
            continue
        value = value_for(p, props[p], variant)
        if value in args.values():  # two parameters of one kind (from/to) get different values
            value = value_for(p, props[p], variant + 1)
        if value is None:
            return None
        args[p] = value
    return args


def _sentence(tool: Tool, args: Mapping[str, Any], lead: str = "") -> str:
    phrase = tool_phrase(tool)
    parts = [_arg_phrase(k, v) for k, v in args.items() if not isinstance(v, Ref)]
    text = f"{lead}{phrase}"
    if parts:
        text += ", with " + (", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0])
    return text


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


# -- kinds -----------------------------------------------------------------------------------------------------


def _singles(tools: Sequence[Tool]) -> list[SynthExample]:
    out = []
    for tool in tools:
        for variant, optional in ((0, False), (1, True)):
            args = _args_for(tool, variant, optional)
            if args is None:
                continue
            query = _capital(_sentence(tool, args, "Please ")) + "."
            out.append(SynthExample(query, Plan((Call(1, tool.name, args),)), "single", (tool.name,)))
    return out


def _feeds(producer: Tool, consumer: Tool) -> list[str]:
    """The consumer's parameters that the producer's result fills (by what its name says it gets)."""
    if producer.name == consumer.name:
        return []
    got = _content_words(producer.name)
    if not got or not _VERBS.match((name_words(producer.name) or [""])[0]):
        return []
    props: Mapping[str, Any] = consumer.parameters.get("properties") or {}
    hits = []
    for p, schema in props.items():
        if schema.get("type") not in ("string", "integer", None) or "enum" in schema:
            continue
        if got <= _content_words(p) | _content_words(str(schema.get("description") or "")):
            hits.append(p)
    return hits[:2]


def _chains(tools: Sequence[Tool], limit: int) -> list[SynthExample]:
    out = []
    for consumer in tools:
        made = 0
        for producer in tools:
            params = _feeds(producer, consumer)
            if not params or made >= 2:
                continue
            calls: list[Call] = []
            leads = []
            for i, _ in enumerate(params):
                args = _args_for(producer, i, False)
                if args is None:
                    break
                calls.append(Call(len(calls) + 1, producer.name, args))
                leads.append(_sentence(producer, args))
            else:
                rest = _args_for(consumer, 0, False, skip=frozenset(params))
                if rest is None:
                    continue
                args = {**rest, **{p: Ref(i + 1) for i, p in enumerate(params)}}
                props = consumer.parameters.get("properties") or {}
                args = {k: args[k] for k in props if k in args}
                calls.append(Call(len(calls) + 1, consumer.name, args))
                first = " and ".join(leads)
                query = _capital(f"{first}, then {_sentence(consumer, rest)} using the result") + "."
                out.append(SynthExample(query, Plan(tuple(calls)), "chain", tuple(c.name for c in calls)))
                made += 1
    return out[:limit]


def _fanouts(tools: Sequence[Tool], rng: random.Random, limit: int) -> list[SynthExample]:
    out = []
    pool = list(tools)
    rng.shuffle(pool)
    for tool in pool[: limit // 2 + 1]:
        a, b = _args_for(tool, 0, False), _args_for(tool, 1, False)
        if not a or not b or a == b:
            continue
        query = _capital(f"{_sentence(tool, a, 'Please ')}, and also {_sentence(tool, b)}") + "."
        out.append(SynthExample(query, Plan((Call(1, tool.name, a), Call(2, tool.name, b))), "fanout",
                                (tool.name, tool.name)))
    for first, second in zip(pool[::2], pool[1::2], strict=False):
        if len(out) >= limit:
            break
        a, b = _args_for(first, 0, False), _args_for(second, 1, False)
        if a is None or b is None:
            continue
        query = _capital(f"{_sentence(first, a, 'Please ')}; also {_sentence(second, b)}") + "."
        out.append(SynthExample(query, Plan((Call(1, first.name, a), Call(2, second.name, b))), "fanout",
                                (first.name, second.name)))
    return out[:limit]


_GREETINGS = ("Hello! How are you today?", "Thanks, that is all for now.")


def synthesize(tools: Sequence[Tool], *, seed: int = 0, max_chains: int | None = None,
               max_fanouts: int | None = None) -> list[SynthExample]:
    """Requests with known plans over ``tools`` (see the module docstring), singles first.

    Args:
        tools: the registry's tools.
        seed: picks which tools are paired in fan-out requests.
        max_chains: at most this many chain requests (default: one per tool).
        max_fanouts: at most this many fan-out requests (default: one per two tools, at least 2).
    """
    rng = random.Random(seed)
    n = len(tools)
    out = _singles(tools)
    out += _chains(tools, n if max_chains is None else max_chains)
    out += _fanouts(tools, rng, max(2, n // 2) if max_fanouts is None else max_fanouts)
    out += [SynthExample(q, Plan(()), "no_tool", ()) for q in _GREETINGS]
    return out
