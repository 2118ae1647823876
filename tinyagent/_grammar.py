"""GBNF grammars generated from the tools offered for one request.

The plan grammar allows only the offered tool names, each tool's own parameter names (required ones required, in
schema order), values of each parameter's JSON type (enums as enums, strings with a length cap, or in the shape
their description states: :mod:`tinyagent._formats`), and ``$k``
references only to earlier steps. Steps are unrolled up to ``max_steps`` so that step numbers are exact.

Given the identifiers a request writes (``identifiers``), a parameter that holds e-mail addresses or phone numbers
(by its schema and description: :func:`tinyagent._formats.identifier_kind`) takes only those, as written, or a
``$k`` reference: a planner cannot invent a recipient. A tool whose required identifier has neither yet (no such
identifier in the request, no earlier step) is not offered at that step, so a lookup comes first.

An invalid GBNF can crash llama.cpp, so every grammar is checked by :func:`check_gbnf` before it is returned.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ._formats import identifier_kind, string_shapes
from ._plan import END_OF_PLAN, JOIN
from ._tools import Tool
from .errors import ConfigurationError

__all__ = ["GrammarOptions", "check_gbnf", "gbnf_literal", "joiner_grammar", "plan_grammar"]

_RULE_NAME = re.compile(r"^[a-zA-Z0-9-]+$")


@dataclass(frozen=True)
class GrammarOptions:
    """Limits of a generated plan grammar.

    Attributes:
        max_steps: the most tool calls in one plan.
        max_string_chars: the cap on a string argument's length.
        max_array_items: the cap on a list argument's length.
        max_depth: nesting depth of free-form JSON values.
        value_shapes: hold string values to the shape their schema or description states ("in the format of
            'City, State'", ``'YYYY-MM-DD'``, "email addresses": :func:`tinyagent._formats.string_shapes`).
    """

    max_steps: int = 10
    max_string_chars: int = 300
    max_array_items: int = 8
    max_depth: int = 3
    value_shapes: bool = True


def gbnf_literal(text: str) -> str:
    """``text`` as a GBNF string literal."""
    out = []
    for ch in text:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


@dataclass
class _Builder:
    options: GrammarOptions
    rules: dict[str, str] = field(default_factory=dict)
    _names: dict[str, int] = field(default_factory=dict)
    _memo: dict[tuple[str, str], str] = field(default_factory=dict)

    def name(self, hint: str) -> str:
        base = re.sub(r"[^a-zA-Z0-9]+", "-", hint).strip("-").lower()[:40] or "r"
        n = self._names.get(base, 0)
        self._names[base] = n + 1
        return base if n == 0 else f"{base}-{n}"

    def add(self, hint: str, body: str) -> str:
        name = self.name(hint)
        self.rules[name] = body
        return name

    def value(self, schema: Mapping[str, Any], ref: str | None, hint: str, depth: int = 0) -> str:
        """A rule name matching a value of ``schema`` (or, where ``ref`` is set, a reference)."""
        key = (json.dumps(schema, sort_keys=True, default=str), ref or "")
        if key in self._memo:
            return self._memo[key]
        body = self._value_body(schema, ref, hint, depth)
        if ref:
            body = f"{ref} | {body}"
        rule = self.add(hint, body)
        self._memo[key] = rule
        return rule

    def _value_body(self, schema: Mapping[str, Any], ref: str | None, hint: str, depth: int) -> str:
        opts = self.options
        alts: list[str] = []
        if schema.get("nullable"):
            alts.append('"null"')
        if "enum" in schema and schema["enum"]:
            alts.extend(gbnf_literal(json.dumps(v, ensure_ascii=False)) for v in schema["enum"])
            return " | ".join(alts)
        if "const" in schema:
            alts.append(gbnf_literal(json.dumps(schema["const"], ensure_ascii=False)))
            return " | ".join(alts)
        variants = schema.get("anyOf") or schema.get("oneOf")
        if variants:
            alts.extend(self.value(v, ref, f"{hint}-alt", depth) for v in variants)
            return " | ".join(alts)
        typ = schema.get("type")
        if typ == "string" and opts.value_shapes and (shapes := string_shapes(schema)):
            alts.append(f'"\\"" ( {" | ".join(shapes)} ) "\\""')
        elif typ == "string":
            cap = opts.max_string_chars
            max_len = schema.get("maxLength")
            if isinstance(max_len, int) and 0 < max_len < cap:
                cap = max_len
            alts.append(self.string_rule(cap))
        elif typ == "integer":
            alts.append("integer")
        elif typ == "number":
            alts.append("float")  # a float parameter gets a float literal (3.0, not 3); integers have their own type
        elif typ == "boolean":
            alts.append('"true" | "false"')
        elif typ == "null":
            alts.append('"null"')
        elif typ == "array":
            items = schema.get("items") or {}
            if items.get("type") == "string" and "description" not in items and schema.get("description"):
                items = {**items, "description": schema["description"]}  # "the recipients' email addresses"
            item = self.value(items, ref, f"{hint}-item", depth + 1) if depth < opts.max_depth else "json-scalar"
            more = max(0, opts.max_array_items - 1)
            alts.append(f'"[" ( {item} ( ", " {item} ){{0,{more}}} )? "]"')
        elif typ == "object" and schema.get("properties") and depth < opts.max_depth:
            alts.append(self.object_rule(schema, ref, hint, depth))
        else:
            alts.append("json-value")
        return " | ".join(alts)

    def string_rule(self, cap: int) -> str:
        name = f"string-{cap}"
        if name not in self.rules:
            self.rules[name] = f'"\\"" char{{0,{cap}}} "\\""'
        return name

    def object_rule(self, schema: Mapping[str, Any], ref: str | None, hint: str, depth: int) -> str:
        props: Mapping[str, Any] = schema["properties"]
        required = set(schema.get("required", []))
        items = [
            (gbnf_literal(json.dumps(k, ensure_ascii=False) + ": "), self.value(v, ref, f"{hint}-{k}", depth + 1),
             k in required)
            for k, v in props.items()
        ]
        chain = self.chain(items, hint)
        return f'"{{" {chain} "}}"'

    def chain(self, items: Sequence[tuple[str, str, bool]], hint: str) -> str:
        """An expression for ``key value`` items in order, separated by ', ', required ones mandatory.

        No empty rules are produced: optional tails use ``( … )?``.
        """

        def rest(i: int) -> str:
            parts = []
            for key, val, req in items[i:]:
                seq = f'", " {key} {val}'
                parts.append(seq if req else f"( {seq} )?")
            return " ".join(parts)

        def first(i: int) -> str:
            if i == len(items):
                return ""
            key, val, req = items[i]
            head = f"{key} {val} {rest(i + 1)}".strip()
            if req:
                return head
            tail = first(i + 1)
            return f"( {head} | {tail} )" if tail and not _all_optional(items[i + 1:]) else (
                f"( {head} | {tail} )?" if tail else f"( {head} )?")

        expr = first(0)
        return expr if expr else '""'


def _all_optional(items: Sequence[tuple[str, str, bool]]) -> bool:
    return all(not req for _, _, req in items)


_COMMON = r"""
ws ::= [ ]?
char ::= [^"\\\x00-\x1f] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
integer ::= "-"? ([0-9] | [1-9] [0-9]{1,15})
number ::= integer ("." [0-9]{1,10})? ([eE] [-+]? [0-9]{1,3})?
float ::= integer "." [0-9]{1,10} ([eE] [-+]? [0-9]{1,3})?
json-string ::= "\"" char{0,300} "\""
json-scalar ::= json-string | number | "true" | "false" | "null"
json-list ::= "[" ( json-scalar ( ", " json-scalar ){0,15} )? "]"
json-object ::= "{" ( json-string ": " json-scalar ( ", " json-string ": " json-scalar ){0,15} )? "}"
json-value ::= json-scalar | json-list | json-object
"""


def plan_grammar(
    tools: Iterable[Tool] | Mapping[str, Tool],
    *,
    options: GrammarOptions | None = None,
    first_step: int = 1,
    prior_steps: Sequence[int] = (),
    identifiers: Mapping[str, Sequence[str]] | None = None,
    required: Collection[str] | Sequence[Collection[str]] = (),
    names: Mapping[str, str] | None = None,
) -> str:
    """The GBNF grammar of a plan over ``tools``.

    Args:
        tools: the tools offered for this request.
        options: caps on steps, strings, lists and nesting.
        first_step: the number of the first step (a replan continues the previous numbering).
        prior_steps: earlier steps whose results the new plan may reference.
        identifiers: the identifiers the request (and conversation) writes, by kind (``"email"``, ``"phone"``):
            the only literals an identifier parameter then takes. None: any value of the right shape.
        required: the plan calls at least one of these tools before ``join`` (ignored when none is offered); or
            several such groups, each of which the plan serves (a text and a reminder).
        names: the name the planner writes for a tool, where it is not the tool's own
            (:func:`~tinyagent._names.shown_names` over the offered tools).

    Raises:
        ConfigurationError: the generated grammar failed its check (a bug: please report it with the tool schemas).
    """
    opts = options or GrammarOptions()
    tool_list = list(tools.values()) if isinstance(tools, Mapping) else list(tools)
    names = names or {}
    tool_list = [replace(t, name=names[t.name]) if t.name in names else t for t in tool_list]
    b = _Builder(opts)
    offered = {t.name for t in tool_list}
    groups = [g for g in (frozenset(names.get(n, n) for n in g) for g in _groups(required)) if g & offered]
    full = (1 << len(groups)) - 1

    def state(k: int, mask: int) -> str:  # step k, with the groups in ``mask`` still unserved
        return f"step-{k}" if not mask else f"step-{k}-need{mask}"

    lines = [f"root ::= {state(first_step, full)}"]
    last = first_step + opts.max_steps
    end = gbnf_literal(f"{JOIN}()\n{END_OF_PLAN}")
    for k in range(first_step, last + 1):
        prefix = gbnf_literal(f"{k}. ")
        if k == last or not tool_list:
            b.rules[f"step-{k}"] = f"{prefix} {end}"
            if not tool_list:
                break
            continue
        refs = list(prior_steps) + list(range(first_step, k))
        ref_rule = None
        if refs:
            ref_rule = f"ref-{k}"
            b.rules[ref_rule] = " | ".join(gbnf_literal(f"${r}") for r in sorted(set(refs), reverse=True))
        named = [(t.name, c) for t in tool_list if (c := _call_rule(b, t, ref_rule, k, identifiers)) is not None]
        calls = [c for _, c in named]
        if not calls:
            for mask in range(full + 1):
                b.rules[state(k, mask)] = f"{prefix} {end}"
            continue
        call_rule = b.add(f"call-{k}", " | ".join(calls))
        b.rules[f"step-{k}"] = f'{prefix} ( {call_rule} "\\n" step-{k + 1} | {end} )'
        for mask in range(1, full + 1):  # groups not yet served: no join, each served by the last step at latest
            after: dict[int, list[str]] = {}
            for name, call in named:
                left = mask & ~sum(1 << i for i, g in enumerate(groups) if name in g)
                after.setdefault(left, []).append(call)
            alts = [f'( {" | ".join(cs)} ) "\\n" {state(k + 1, left)}' for left, cs in sorted(after.items())
                    if bin(left).count("1") <= last - k - 1]
            b.rules[state(k, mask)] = f"{prefix} ( {' | '.join(alts)} )" if alts else f"{prefix} {end}"
    body = "\n".join(lines + [f"{name} ::= {rule}" for name, rule in b.rules.items()]) + _COMMON
    check_gbnf(body)
    return body


def _groups(required: Collection[str] | Sequence[Collection[str]]) -> list[frozenset[str]]:
    """``required`` as groups of tool names (one group when it is a plain collection of names)."""
    items = list(required)
    if not items:
        return []
    if all(isinstance(i, str) for i in items):
        return [frozenset(str(i) for i in items)]
    return [frozenset(g) for g in items if not isinstance(g, str) and g]


def _call_rule(b: _Builder, t: Tool, ref: str | None, step: int,
               identifiers: Mapping[str, Sequence[str]] | None = None) -> str | None:
    """The rule for one call of ``t`` at ``step``; None when a required identifier has no allowed value yet."""
    props: Mapping[str, Any] = t.parameters.get("properties", {})
    required = set(t.parameters.get("required", []))
    hint = f"{t.name}-{step}"
    items = []
    for pname, pschema in props.items():
        kind = identifier_kind(pschema) if identifiers is not None else None
        if kind is None:
            val: str | None = b.value(pschema, ref, f"{hint}-{pname}")
        else:
            val = _identifier_rule(b, pschema, ref, (identifiers or {}).get(kind, ()), f"{hint}-{pname}")
        if val is None:
            if pname in required:
                return None
            continue
        items.append((gbnf_literal(f"{pname}="), val, pname in required))
    chain = b.chain(items, hint)
    return b.add(f"{hint}-call", f"{gbnf_literal(t.name + '(')} {chain} \")\"")


def _identifier_rule(b: _Builder, schema: Mapping[str, Any], ref: str | None, written: Sequence[str],
                     hint: str) -> str | None:
    """An identifier parameter's value: one of the ``written`` identifiers or a reference (a list: at least one of
    them); None when there is neither."""
    alts = ([ref] if ref else []) + [gbnf_literal(json.dumps(w, ensure_ascii=False)) for w in dict.fromkeys(written)]
    if not alts:
        return None
    item = b.add(f"{hint}-id", " | ".join(alts))
    if schema.get("type") != "array":
        return item
    more = max(0, b.options.max_array_items - 1)
    body = f'"[" {item} ( ", " {item} ){{0,{more}}} "]"'
    return b.add(hint, f"{ref} | {body}" if ref else body)


def joiner_grammar(allow_replan: bool, max_chars: int = 600) -> str:
    """Grammar of the joiner's reply: ``Answer: …`` (and ``Replan: …`` when a replan is allowed)."""
    head = '("Answer: " | "Replan: ")' if allow_replan else '"Answer: "'
    body = f"root ::= {head} line\nline ::= [^\\n\\x00]{{1,{max_chars}}}\n"
    check_gbnf(body)
    return body


# -- checking -----------------------------------------------------------------------------------------------------
_TOKEN = re.compile(
    r'"(?:\\.|[^"\\])*"'  # string literal
    r"|\[(?:\\.|[^\]\\])*\]"  # character class
    r"|\{\d+(?:,\d*)?\}"  # repetition
    r"|::="
    r"|[a-zA-Z0-9-]+"  # rule name
    r"|[()|*+?]"
    r"|\s+"
)


def check_gbnf(grammar: str) -> None:
    """Check a GBNF grammar's structure before llama.cpp sees it.

    Checks: every rule is defined once with a valid name, ``root`` exists, every referenced rule exists,
    literals, classes and parentheses are well formed, and no rule is left-recursive.

    Raises:
        ConfigurationError: the grammar is invalid; the message names the problem.
    """
    rules: dict[str, list[str]] = {}
    current: str | None = None
    for raw in grammar.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if "::=" in line and _RULE_NAME.match(line.split("::=", 1)[0].strip() or "!"):
            name, body = line.split("::=", 1)
            name = name.strip()
            if name in rules:
                raise ConfigurationError(f"grammar defines rule {name!r} twice")
            rules[name] = _tokens(body, name)
            current = name
        elif current is not None:
            rules[current].extend(_tokens(line, current))
        else:
            raise ConfigurationError(f"grammar line is not a rule: {line[:80]!r}")
    if "root" not in rules:
        raise ConfigurationError("grammar has no 'root' rule")
    for name, toks in rules.items():
        depth = 0
        for tok in toks:
            if tok == "(":
                depth += 1
            elif tok == ")":
                depth -= 1
                if depth < 0:
                    raise ConfigurationError(f"grammar rule {name!r} has an unmatched ')'")
            elif _RULE_NAME.match(tok) and tok not in rules:
                raise ConfigurationError(f"grammar rule {name!r} references undefined rule {tok!r}")
        if depth != 0:
            raise ConfigurationError(f"grammar rule {name!r} has an unmatched '('")
        if not toks:
            raise ConfigurationError(f"grammar rule {name!r} is empty")
    _check_left_recursion(rules)


def _tokens(body: str, rule: str) -> list[str]:
    out: list[str] = []
    pos = 0
    while pos < len(body):
        m = _TOKEN.match(body, pos)
        if not m:
            raise ConfigurationError(f"grammar rule {rule!r}: cannot read {body[pos:pos + 30]!r}")
        tok = m.group(0)
        pos = m.end()
        if tok.isspace():
            continue
        if tok.startswith('"'):
            try:
                # GBNF escapes are a superset of JSON's; \x.. is allowed too.
                json.loads(re.sub(r"\\x([0-9a-fA-F]{2})", r"\\u00\1", tok))
            except ValueError as exc:
                raise ConfigurationError(f"grammar rule {rule!r}: bad literal {tok[:40]!r}") from exc
            out.append('"lit"' if tok != '""' else '""')
            continue
        if tok.startswith("["):
            out.append("[class]")
            continue
        out.append(tok)
    return out


def _first_symbols(toks: list[str]) -> list[list[str]]:
    """For each alternative, the leading rule names up to the first symbol that must consume input."""
    alts: list[list[str]] = [[]]
    for tok in toks:
        if tok == "|":
            alts.append([])
        else:
            alts[-1].append(tok)
    return alts


def _check_left_recursion(rules: Mapping[str, list[str]]) -> None:
    nullable: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, toks in rules.items():
            if name in nullable:
                continue
            for alt in _first_symbols(toks):
                if all(t == '""' or t in nullable or t.startswith("{0") or t in "?*" for t in alt if t not in "()"):
                    nullable.add(name)
                    changed = True
                    break
    edges: dict[str, set[str]] = {n: set() for n in rules}
    for name, toks in rules.items():
        for alt in _first_symbols(toks):
            for tok in alt:
                if tok in "()?*+" or tok.startswith("{"):
                    continue
                if _RULE_NAME.match(tok) and tok in rules:
                    edges[name].add(tok)
                    if tok in nullable:
                        continue
                if tok == '""':
                    continue
                break
    visiting: set[str] = set()
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> None:
        if node in done:
            return
        if node in visiting:
            raise ConfigurationError(f"grammar is left-recursive through {' -> '.join(path + [node])}")
        visiting.add(node)
        for nxt in edges[node]:
            visit(nxt, path + [node])
        visiting.discard(node)
        done.add(node)

    for n in rules:
        visit(n, [])
