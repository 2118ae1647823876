"""A schema-driven test double: valid LLMCompiler plans from the tools a request offers, with no weights.

Like pydantic-ai's ``TestModel``: it reads the offered tools from the planner's prompt (the ``Tools:`` section), calls
each of them (or the first) with arguments built from their JSON schemas, and ends with ``join()``. Joiner requests
get ``Answer: …`` with the results it was shown. It lives in ``models`` (below the core), so it takes tools as
anything with a ``name`` and a JSON-schema ``parameters`` mapping, the way :class:`tinyagent.Tool` has them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal, Protocol

from ._base import ModelRequest, Pricing
from ._scripted import LogprobScript, PreferenceScript, ScriptedModel

__all__ = ["SchemaTool", "TestModel", "example_value"]

_TOOL_LINE = re.compile(r"^- (\w[\w.-]*)\((.*?)\)(?::|$)")
_FROM_STEP = re.compile(r"numbered from (\d+)")
_JOINER_MARK = "Actions and results:\n"  # only the joiner is shown the results
_FORMAT_VALUES = {"date": "2026-01-01", "date-time": "2026-01-01T09:00", "time": "09:00", "email": "a@example.com",
                  "uri": "https://example.com", "uuid": "00000000-0000-0000-0000-000000000000"}
_TYPE_VALUES: dict[str, Any] = {"str": "a", "int": 0, "float": 0.0, "bool": False, "dict": {}, "null": None,
                                "any": "a"}


class SchemaTool(Protocol):
    """What :class:`TestModel` needs of a tool: its name and its parameters' JSON schema."""

    @property
    def name(self) -> str: ...

    @property
    def parameters(self) -> Mapping[str, Any]: ...


def example_value(schema: Mapping[str, Any]) -> Any:
    """A small value that validates against ``schema`` (enum, const, default, format, bounds, nested objects).

    Patterns are not solved: a string with a ``pattern`` gets its ``examples[0]`` or ``default`` where there is one.
    """
    for key in ("const", "default"):
        if key in schema:
            return schema[key]
    if schema.get("enum"):
        return schema["enum"][0]
    if schema.get("examples"):
        return schema["examples"][0]
    variants = schema.get("anyOf") or schema.get("oneOf") or schema.get("allOf")
    if variants:
        usable = [v for v in variants if v.get("type") != "null"] or list(variants)
        return example_value(usable[0])
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "string":
        text = _FORMAT_VALUES.get(str(schema.get("format", "")), "a")
        return text * max(1, -(-int(schema.get("minLength", 1)) // len(text)))
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        value = low + 1 if "exclusiveMinimum" in schema and "minimum" not in schema else low
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return False
    if kind == "array":
        count = max(1, int(schema.get("minItems", 1))) if schema.get("maxItems", 1) else 0
        return [example_value(schema.get("items") or {"type": "string"}) for _ in range(count)]
    if kind == "object" or "properties" in schema:
        return required_args(schema)
    if kind == "null":
        return None
    return "a"


def required_args(schema: Mapping[str, Any]) -> dict[str, Any]:
    """An example value for every required property of an object schema."""
    props: Mapping[str, Any] = schema.get("properties", {})
    return {name: example_value(props.get(name, {})) for name in schema.get("required", ())}


class TestModel(ScriptedModel):
    """Writes a valid plan over the offered tools for every planner request, and ``Answer: …`` for the joiner.

    Args:
        tools: the tools to take schemas from. Only those the request offers (named in its prompt) are called, so
            tool retrieval is respected; without ``tools`` the parameters are read from the prompt's tool lines.
        call: ``"all"`` calls every offered tool, in the prompt's order; ``"first"`` only the first.
        answer: the joiner's reply (``{results}`` is replaced by the result lines it was shown).
        name: the model name.
        mean_logprob: as :class:`ScriptedModel`.
        preference_probs: as :class:`ScriptedModel`.
        pricing: as :class:`ScriptedModel`.

    Attributes:
        plans: every plan text written, in order.
    """

    __test__ = False  # not a pytest test class, though its name starts with "Test"

    def __init__(
        self,
        tools: Iterable[SchemaTool] | None = None,
        *,
        call: Literal["all", "first"] = "all",
        answer: str = "Answer: done. {results}",
        name: str = "test",
        mean_logprob: LogprobScript = -0.1,
        preference_probs: PreferenceScript = None,
        pricing: Pricing | None = None,
    ) -> None:
        super().__init__(self._reply, name=name, pricing=pricing, mean_logprob=mean_logprob,
                         preference_probs=preference_probs)
        self.tools = {t.name: t for t in tools} if tools is not None else None
        self.call = call
        self.answer = answer
        self.plans: list[str] = []

    def _reply(self, request: ModelRequest) -> str:
        text = "\n".join(str(m.get("content", "")) for m in request.messages)
        last = str(request.messages[-1].get("content", "")) if request.messages else ""
        if _JOINER_MARK in last:
            results = last.split(_JOINER_MARK, 1)[1].split("\n\n", 1)[0].strip()
            return self.answer.replace("{results}", " ".join(results.split()))
        plan = self.plan_text(text, start=int(m.group(1)) if (m := _FROM_STEP.search(last)) else 1)
        self.plans.append(plan)
        return plan

    def offered(self, prompt: str) -> list[tuple[str, dict[str, Any]]]:
        """The tools the prompt offers, in its order, each with example arguments."""
        found: list[tuple[str, dict[str, Any]]] = []
        for name, params in _tool_lines(prompt):
            if self.tools is not None:
                if name in self.tools:
                    found.append((name, required_args(self.tools[name].parameters)))
            else:
                found.append((name, _args_from_signature(params)))
        if not found and self.tools:  # a prompt without a tool list: take the given tools
            found = [(t.name, required_args(t.parameters)) for t in self.tools.values()]
        return found[:1] if self.call == "first" else found

    def plan_text(self, prompt: str, start: int = 1) -> str:
        """The plan for ``prompt``: one call per offered tool from step ``start``, then ``join()``."""
        lines = []
        step = start
        for name, args in self.offered(prompt):
            rendered = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items())
            lines.append(f"{step}. {name}({rendered})")
            step += 1
        lines.append(f"{step}. join()")
        return "\n".join(lines) + "\n<END_OF_PLAN>"

    def __repr__(self) -> str:
        return f"TestModel(name={self.name!r}, call={self.call!r})"


def _tool_lines(prompt: str) -> list[tuple[str, str]]:
    """``(name, parameter text)`` for each ``- name(...)`` line of the prompt's ``Tools:`` section."""
    if "Tools:\n" not in prompt:
        return []
    section = prompt.split("Tools:\n", 1)[1].split("\n\n", 1)[0]
    return [(m.group(1), m.group(2)) for line in section.splitlines() if (m := _TOOL_LINE.match(line))]


def _args_from_signature(params: str) -> dict[str, Any]:
    """Example arguments from a prompt signature such as ``to: list[str], when: str = optional``."""
    args: dict[str, Any] = {}
    for part in _split_top_level(params):
        name, _, typ = part.partition(": ")
        if not typ or typ.endswith("= optional"):
            continue
        args[name.strip()] = _value_for_type(typ.strip())
    return args


def _value_for_type(typ: str) -> Any:
    first = _split_top_level(typ, " | ")[0].strip()
    if first.startswith("list[") and first.endswith("]"):
        return [_value_for_type(first[5:-1])]
    if first[:1] in "\"-0123456789tfn[{":  # an enum value written as JSON
        try:
            return json.loads(first)
        except json.JSONDecodeError:
            pass
    return _TYPE_VALUES.get(first, "a")


def _split_top_level(text: str, sep: str = ", ") -> list[str]:
    """Split on ``sep`` outside brackets and JSON strings."""
    parts: list[str] = []
    depth, quoted, begin, i = 0, False, 0, 0
    while i < len(text):
        ch = text[i]
        if quoted:
            if ch == "\\":
                i += 1
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif depth == 0 and text.startswith(sep, i):
            parts.append(text[begin:i])
            begin = i + len(sep)
            i = begin
            continue
        i += 1
    parts.append(text[begin:])
    return [p for p in parts if p.strip()]
