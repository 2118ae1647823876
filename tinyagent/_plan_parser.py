"""Parse plan text, incrementally, as the planner streams it.

The parser accepts exactly what the grammar produces, and is lenient where a model decoded without a grammar
(a cloud endpoint) tends to stray: single-quoted strings, Python literals (``True``/``None``), ``Thought:`` lines,
code fences, and a missing end marker.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ._names import shown_names
from ._plan import END_OF_PLAN, JOIN, Call, Plan, Ref, find_refs, strings_to_refs
from ._schema import SchemaValidationError, validate_value
from ._tools import Tool
from .errors import PlanParseError, PlanValidationError

__all__ = ["PlanStreamParser", "check_call", "parse_plan", "parse_call_line"]

_STEP_RE = re.compile(r"^\s*(?:Step\s*)?(\d+)\s*[.:)]\s*(.*)$", re.IGNORECASE)
_CALL_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_.\-]*)\s*\((.*)\)\s*;?\s*$", re.DOTALL)
_SKIP_RE = re.compile(r"^\s*(?:thought|reasoning|note|plan)\s*:|^\s*```|^\s*$", re.IGNORECASE)


class _ValueParser:
    """Recursive-descent parser for argument lists: ``key=value, ...`` with JSON values and ``$k`` references."""

    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0

    def error(self, message: str) -> PlanParseError:
        return PlanParseError(f"{message} at column {self.i + 1} in {self.s!r:.200}", text=self.s)

    def ws(self) -> None:
        while self.i < len(self.s) and self.s[self.i] in " \t\r\n":
            self.i += 1

    def peek(self) -> str:
        return self.s[self.i] if self.i < len(self.s) else ""

    def args(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        self.ws()
        if self.i >= len(self.s):
            return out
        while True:
            self.ws()
            m = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*").match(self.s, self.i)
            if not m:
                raise self.error("expected an argument name")
            key = m.group(0)
            self.i = m.end()
            self.ws()
            if self.peek() not in ("=", ":"):
                raise self.error(f"expected '=' after argument {key!r}")
            self.i += 1
            self.ws()
            if key in out:
                raise self.error(f"argument {key!r} is given twice")
            out[key] = self.value()
            self.ws()
            if self.peek() == ",":
                self.i += 1
                continue
            if self.i >= len(self.s):
                return out
            raise self.error("expected ',' or the end of the arguments")

    def value(self) -> Any:
        self.ws()
        c = self.peek()
        if c == "$":
            m = re.compile(r"\$(?:\{(\d+)\}|(\d+))").match(self.s, self.i)
            if not m:
                raise self.error("expected a step number after '$'")
            self.i = m.end()
            return Ref(int(m.group(1) or m.group(2)))
        if c in "\"'":
            return self.string(c)
        if c == "[" or c == "(":
            close = "]" if c == "[" else ")"
            self.i += 1
            items: list[Any] = []
            self.ws()
            if self.peek() == close:
                self.i += 1
                return items
            while True:
                items.append(self.value())
                self.ws()
                if self.peek() == ",":
                    self.i += 1
                    self.ws()
                    if self.peek() == close:  # trailing comma
                        self.i += 1
                        return items
                    continue
                if self.peek() == close:
                    self.i += 1
                    return items
                raise self.error(f"expected ',' or '{close}' in a list")
        if c == "{":
            self.i += 1
            obj: dict[str, Any] = {}
            self.ws()
            if self.peek() == "}":
                self.i += 1
                return obj
            while True:
                self.ws()
                if self.peek() in "\"'":
                    key = self.string(self.peek())
                else:
                    m = re.compile(r"[A-Za-z_][A-Za-z0-9_]*").match(self.s, self.i)
                    if not m:
                        raise self.error("expected an object key")
                    key = m.group(0)
                    self.i = m.end()
                self.ws()
                if self.peek() not in (":", "="):
                    raise self.error("expected ':' after an object key")
                self.i += 1
                obj[str(key)] = self.value()
                self.ws()
                if self.peek() == ",":
                    self.i += 1
                    continue
                if self.peek() == "}":
                    self.i += 1
                    return obj
                raise self.error("expected ',' or '}' in an object")
        m = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?").match(self.s, self.i)
        if m:
            self.i = m.end()
            text = m.group(0)
            return float(text) if any(ch in text for ch in ".eE") else int(text)
        m = re.compile(r"(true|false|null|True|False|None)\b").match(self.s, self.i)
        if m:
            self.i = m.end()
            return {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}[m.group(1)]
        raise self.error("expected a value (string, number, true/false/null, list, object or $k)")

    def string(self, quote: str) -> str:
        start = self.i
        self.i += 1
        buf: list[str] = []
        while self.i < len(self.s):
            ch = self.s[self.i]
            if ch == "\\" and self.i + 1 < len(self.s):
                if quote == '"':
                    # Let json decode the escape sequence exactly.
                    m = re.compile(r'\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})').match(self.s, self.i)
                    if not m:
                        raise self.error("invalid escape in a string")
                    buf.append(json.loads(f'"{m.group(0)}"'))
                    self.i = m.end()
                    continue
                buf.append(self.s[self.i + 1])
                self.i += 2
                continue
            if ch == quote:
                self.i += 1
                return "".join(buf)
            buf.append(ch)
            self.i += 1
        self.i = start
        raise self.error("unterminated string")


def _end_marker(text: str) -> int:
    """Where the end-of-plan marker starts in ``text`` outside a quoted value (-1: nowhere); a model may write the
    marker inside a string it is composing, which does not end the plan."""
    at = text.find(END_OF_PLAN)
    while at >= 0:
        quoted, escaped = False, False
        for ch in text[:at]:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = quoted
            elif ch == '"':
                quoted = not quoted
        if not quoted:
            return at
        at = text.find(END_OF_PLAN, at + 1)
    return -1


def parse_call_line(line: str, line_no: int | None = None) -> tuple[int, str, dict[str, Any]] | None:
    """Parse one plan line ``k. name(args)``.

    Returns:
        ``(k, name, args)``, or None for a line that carries no step (blank, ``Thought:``, a code fence).

    Raises:
        PlanParseError: the line is not a step.
    """
    if _SKIP_RE.match(line):
        return None
    m = _STEP_RE.match(line)
    if not m:
        raise PlanParseError(f"expected a numbered step like '1. tool(arg=\"x\")', got {line.strip()!r:.120}",
                             text=line, line=line_no)
    step = int(m.group(1))
    body = m.group(2).strip()
    cm = _CALL_RE.match(body)
    if not cm:
        raise PlanParseError(f"step {step} is not a call like 'tool(arg=\"x\")': {body!r:.120}",
                             text=line, line=line_no)
    name = cm.group(1)
    try:
        # A quoted "$k" is a reference too: models often quote it, and no real value is exactly "$3".
        args = strings_to_refs(_ValueParser(cm.group(2)).args())
    except PlanParseError as exc:
        raise PlanParseError(f"step {step}: {exc}", text=line, line=line_no) from exc
    return step, name, args


def check_call(call: Call, tools: Mapping[str, Tool], known_steps: Iterable[int]) -> None:
    """Check a call before it runs: the tool exists, argument names and static values fit its schema,
    and every reference points to an earlier, known step.

    Values that contain references are type-checked at execution, once the references are resolved.

    Raises:
        PlanValidationError: the call is invalid.
    """
    if call.name not in tools:
        raise PlanValidationError(f"unknown tool {call.name!r}; available: {sorted(tools)[:30]}", step=call.id)
    known = set(known_steps)
    for ref in find_refs(call.args):
        if ref.step == call.id:
            raise PlanValidationError(f"step {call.id} references its own result ${ref.step}", step=call.id)
        if ref.step > call.id:
            raise PlanValidationError(f"forward reference ${ref.step}: a step may only use earlier results",
                                      step=call.id)
        if ref.step not in known:
            raise PlanValidationError(f"reference ${ref.step} points to no earlier step", step=call.id)
    tool = tools[call.name]
    props: Mapping[str, Any] = tool.parameters.get("properties", {})
    unknown = [k for k in call.args if k not in props]
    if unknown:
        raise PlanValidationError(f"{call.name}() has no argument(s) {unknown}; it takes {sorted(props)}", step=call.id)
    missing = [r for r in tool.required if r not in call.args]
    if missing:
        raise PlanValidationError(f"{call.name}() is missing required argument(s) {missing}", step=call.id)
    for key, value in call.args.items():
        if any(True for _ in find_refs(value)):
            continue
        try:
            validate_value(props[key], value, key)
        except SchemaValidationError as exc:
            raise PlanValidationError(f"{call.name}(): {exc}", step=call.id) from exc


class PlanStreamParser:
    """Turn streamed plan text into calls as soon as each line is complete.

    Args:
        tools: the tools the plan may name.
        first_step: the number the plan starts at (a replan continues the numbering of the previous plan).
        prior_steps: step numbers from earlier plans whose results may be referenced.
        validate: check each call against ``tools`` (turn off only to parse foreign plans).
    """

    def __init__(
        self,
        tools: Mapping[str, Tool],
        *,
        first_step: int = 1,
        prior_steps: Iterable[int] = (),
        validate: bool = True,
    ) -> None:
        self.tools = tools
        self.first_step = first_step
        self.validate = validate
        self._known: set[int] = set(prior_steps)
        self._real = {shown: real for real, shown in shown_names(tools.values()).items()}  # (the planner's names)
        self._buffer = ""
        self._calls: list[Call] = []
        self._line_no = 0
        self.done = False
        self.text = ""

    @property
    def calls(self) -> list[Call]:
        """The calls parsed so far."""
        return list(self._calls)

    def feed(self, chunk: str) -> list[Call]:
        """Add streamed text; return the calls completed by it.

        Raises:
            PlanParseError, PlanValidationError: a completed line is not a valid step.
        """
        if self.done:
            return []
        self.text += chunk
        self._buffer += chunk
        out: list[Call] = []
        while "\n" in self._buffer and not self.done:
            line, self._buffer = self._buffer.split("\n", 1)
            call = self._line(line)
            if call is not None:
                out.append(call)
        if not self.done and (at := _end_marker(self._buffer)) >= 0:
            line = self._buffer[:at]
            self._buffer = ""
            call = self._line(line)
            if call is not None:
                out.append(call)
            self.done = True
        return out

    def close(self) -> Plan:
        """Finish parsing (a missing end marker is tolerated) and return the plan.

        Raises:
            PlanParseError, PlanValidationError: the remaining text is not a valid step.
        """
        if not self.done and self._buffer.strip():
            self._line(self._buffer)
        self._buffer = ""
        self.done = True
        return Plan(calls=tuple(self._calls))

    def _line(self, line: str) -> Call | None:
        self._line_no += 1
        if (at := _end_marker(line)) >= 0:
            line = line[:at]
            self.done = True
        stripped = line.strip()
        if not stripped:
            return None
        parsed = parse_call_line(stripped, self._line_no)
        if parsed is None:
            return None
        step, name, args = parsed
        name = self._real.get(name, name)
        if name == JOIN:
            self.done = True
            return None
        expected = self.first_step + len(self._calls)
        if step != expected:
            raise PlanParseError(f"steps must be numbered in order: expected {expected}, got {step}",
                                 text=line, line=self._line_no)
        call = Call(id=step, name=name, args=args)
        if self.validate:
            check_call(call, self.tools, self._known)
        self._known.add(step)
        self._calls.append(call)
        return call


def parse_plan(text: str, tools: Mapping[str, Tool], *, validate: bool = True) -> Plan:
    """Parse a whole plan text.

    Raises:
        PlanParseError: the text is not a plan.
        PlanValidationError: the plan names an unknown tool, passes bad arguments or references a later step.
    """
    parser = PlanStreamParser(tools, validate=validate)
    parser.feed(text)
    return parser.close()
