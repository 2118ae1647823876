"""Tools: plain typed Python functions (or bare schemas) that the planner can call.

One internal definition, :class:`Tool`; conversion to and from OpenAI's ``{"type": "function", ...}`` format
(and BFCL's dialect of it) happens only at the edge.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime as dt
import functools
import inspect
import re
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, overload

import docstring_parser
import pydantic

from ._formats import with_identifier_formats
from ._schema import SchemaValidationError, normalize_schema, validate_value
from .errors import (
    ConfirmationDenied,
    PlanValidationError,
    ToolDefinitionError,
    ToolError,
    ToolExecutionError,
    ToolNotExecutable,
    ToolTimeout,
)

__all__ = ["ConfirmHook", "ConfirmationRequest", "Effects", "Tool", "ToolContext", "ToolRegistry", "tool"]

_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]{0,63}$")
DEFAULT_TOOL_TIMEOUT = 60.0
# Sync tools mostly wait on I/O, so run them on a pool wider than asyncio's default (cores + 4): a plan's independent
# steps should all run at once.
_TOOL_THREADS = concurrent.futures.ThreadPoolExecutor(max_workers=64, thread_name_prefix="tinyagent-tool")

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class ConfirmationRequest:
    """What an outgoing or destructive tool is about to do, shown to the app's confirmation hook."""

    tool: str
    action: str
    details: Mapping[str, Any] = field(default_factory=dict)


ConfirmHook = Callable[[ConfirmationRequest], "bool | Awaitable[bool]"]


def deny_all(request: ConfirmationRequest) -> bool:
    """The default confirmation hook of the library: refuse, since no human can be asked."""
    return False


@dataclass
class ToolContext:
    """Handed to a tool that declares a parameter annotated ``ToolContext``; never shown to the model.

    Attributes:
        confirm_hook: the app's hook for outgoing or destructive actions.
        model: the agent's model, for tools that make a sub-call (e.g. summarising a document).
        today: the date the request is resolved against.
        deps: anything the app wants its tools to see.
        tool_name: the tool being called (set by :meth:`Tool.call`).
        preconfirmed: the hook already allowed this very call (the agent asked before it, because a target came
            from tool output), so :meth:`confirm` does not ask a second time.
    """

    confirm_hook: ConfirmHook = deny_all
    model: Any = None
    today: dt.date = field(default_factory=dt.date.today)
    deps: Any = None
    tool_name: str = ""
    preconfirmed: bool = False

    async def confirm(self, action: str, **details: Any) -> None:
        """Ask the app's hook to allow ``action``.

        Raises:
            ConfirmationDenied: the hook refused.
        """
        if self.preconfirmed:
            return
        request = ConfirmationRequest(tool=self.tool_name, action=action, details=details)
        answer = self.confirm_hook(request)
        if inspect.isawaitable(answer):
            answer = await answer
        if answer is not True:
            raise ConfirmationDenied(f"{self.tool_name}: the user did not confirm: {action}", tool=self.tool_name)


Effects = Literal["read", "write", "destructive", "outgoing"]
"""What a tool call does to the world (see :class:`Tool`)."""


@dataclass(frozen=True)
class Tool:
    """A callable the planner may put in a plan.

    Build one with :func:`tool` (from a typed function) or :meth:`Tool.from_openai` (from a schema).

    Attributes:
        name: the name the planner writes.
        description: one or two sentences the planner reads.
        parameters: the normalised JSON schema of the arguments (an object schema).
        function: the Python callable, or None for a schema-only tool (plannable, not executable).
        timeout: seconds before a call is cancelled; None means the agent's default.
        requires_confirmation: ask the app's confirmation hook before every call.
        returns: a short description of the result, shown to the planner.
        effects: what a call does to the world, for safety checks and MCP hints: ``"read"`` (reads only),
            ``"write"`` (changes local data, can be undone or is additive), ``"destructive"`` (deletes or
            overwrites) or ``"outgoing"`` (sends something to someone: mail, messages, invitations).
            An outgoing or destructive call whose target came from tool output asks for confirmation.
        targets: the parameters that say where an outgoing or destructive call goes or what it acts on (recipients,
            addresses, attachments, the item deleted). None: derived from the schema (see :attr:`target_params`).
    """

    name: str
    description: str
    parameters: dict[str, Any]
    function: Callable[..., Any] | None = None
    timeout: float | None = None
    requires_confirmation: bool = False
    returns: str = ""
    effects: Effects = "write"
    targets: tuple[str, ...] | None = None
    _model: type[pydantic.BaseModel] | None = field(default=None, repr=False, compare=False)
    _context_param: str | None = field(default=None, repr=False, compare=False)

    @property
    def read_only(self) -> bool:
        """The tool only reads (MCP's ``readOnlyHint``)."""
        return self.effects == "read"

    @property
    def destructive(self) -> bool:
        """The tool deletes or overwrites data (MCP's ``destructiveHint``)."""
        return self.effects == "destructive"

    @property
    def outgoing(self) -> bool:
        """The tool sends something to someone else (mail, messages, invitations)."""
        return self.effects == "outgoing"

    @property
    def target_params(self) -> tuple[str, ...]:
        """The parameters whose values say where this call goes or what it acts on.

        :attr:`targets` when given. Otherwise, for an outgoing or destructive tool, every parameter that can hold
        text (a string or a list of strings, not an enum) except what is said (:data:`CONTENT_PARAMS`: ``body``,
        ``text``, ``subject`` …) and, for an outgoing tool, how it is described (:data:`DESCRIPTIVE_PARAMS`:
        ``title``, ``start``, ``location`` …; the title of a note to delete *is* the target). An unknown parameter
        counts as a target, so a new tool fails safe. Other tools: none.
        """
        if self.targets is not None:
            return self.targets
        if not (self.outgoing or self.destructive):
            return ()
        props: Mapping[str, Any] = self.parameters.get("properties", {})
        skip = CONTENT_PARAMS if self.destructive else CONTENT_PARAMS | DESCRIPTIVE_PARAMS
        return tuple(n for n, schema in props.items() if n.lower() not in skip and _holds_text(schema))

    @property
    def executable(self) -> bool:
        """Whether the tool has a Python implementation."""
        return self.function is not None

    @property
    def required(self) -> list[str]:
        """Names of the required parameters."""
        return list(self.parameters.get("required", []))

    # -- validation and calls ------------------------------------------------------------------------------------
    def validate_args(self, args: Mapping[str, Any], step: int | None = None) -> dict[str, Any]:
        """Validate and coerce ``args``; return the arguments the function will receive.

        Raises:
            PlanValidationError: an argument is missing, unknown or of the wrong type.
        """
        props = self.parameters.get("properties", {})
        unknown = [k for k in args if k not in props]
        if unknown:
            raise PlanValidationError(
                f"{self.name}() got unknown argument(s) {unknown}; it takes {sorted(props)}", step=step
            )
        if self._model is not None:
            try:
                validated = self._model.model_validate(dict(args))
            except pydantic.ValidationError as exc:
                raise PlanValidationError(f"{self.name}(): {_short_errors(exc)}", step=step) from exc
            return {name: getattr(validated, name) for name in type(validated).model_fields if name in args} | {
                name: getattr(validated, name)
                for name, f in type(validated).model_fields.items()
                if name not in args and not f.is_required()
            }
        try:
            return dict(validate_value(self.parameters, dict(args)))
        except SchemaValidationError as exc:
            raise PlanValidationError(f"{self.name}(): {exc}", step=step) from exc

    async def call(self, args: Mapping[str, Any], context: ToolContext | None = None, step: int | None = None) -> Any:
        """Validate ``args`` and run the tool (sync functions run in a worker thread), honouring the timeout.

        Raises:
            PlanValidationError: bad arguments.
            ToolNotExecutable: the tool is schema-only.
            ConfirmationDenied: the confirmation hook refused.
            ToolTimeout: the call ran past ``timeout``.
            ToolExecutionError: the function raised; ``__cause__`` holds its exception.
        """
        if self.function is None:
            raise ToolNotExecutable(
                f"{self.name} was given only as a schema, so it can be planned but not executed; "
                "register a Python function for it with @tool",
                tool=self.name,
            )
        kwargs = self.validate_args(args, step=step)
        ctx = context if context is not None else ToolContext()
        ctx = ToolContext(confirm_hook=ctx.confirm_hook, model=ctx.model, today=ctx.today, deps=ctx.deps,
                          tool_name=self.name, preconfirmed=ctx.preconfirmed)
        if self.requires_confirmation:
            await ctx.confirm(f"call {self.name}", **kwargs)
        if self._context_param is not None:
            kwargs[self._context_param] = ctx
        timeout = self.timeout if self.timeout is not None else DEFAULT_TOOL_TIMEOUT
        try:
            async with asyncio.timeout(timeout):
                if inspect.iscoroutinefunction(self.function):
                    return await self.function(**kwargs)
                # A thread cannot be killed: on timeout we stop waiting, and the thread finishes on its own.
                loop = asyncio.get_running_loop()
                return await loop.run_in_executor(_TOOL_THREADS, functools.partial(self.function, **kwargs))
        except TimeoutError as exc:
            raise ToolTimeout(f"{self.name} did not finish within {timeout:g} s", tool=self.name) from exc
        except ToolError:
            raise
        except Exception as exc:  # noqa: BLE001 - a tool's own failure is wrapped, never leaked
            raise ToolExecutionError(f"{self.name} failed: {type(exc).__name__}: {exc}", tool=self.name) from exc

    # -- conversion at the edge ------------------------------------------------------------------------------
    def to_openai(self) -> dict[str, Any]:
        """This tool in OpenAI's ``{"type": "function", "function": {...}}`` format."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    @classmethod
    def from_openai(cls, spec: Mapping[str, Any], function: Callable[..., Any] | None = None) -> Tool:
        """Build a tool from an OpenAI (or BFCL) function spec.

        Args:
            spec: ``{"type": "function", "function": {...}}`` or the inner ``{"name", "description", "parameters"}``.
            function: an optional implementation; without one the tool can be planned but not executed.

        Raises:
            ToolDefinitionError: the spec is malformed.
        """
        inner = spec.get("function", spec) if isinstance(spec, Mapping) else None
        if not isinstance(inner, Mapping) or "name" not in inner:
            raise ToolDefinitionError(f"not an OpenAI tool spec (no function name): {spec!r:.200}")
        name = str(inner["name"])
        _check_name(name)
        description = str(inner.get("description", "") or "")
        return cls(
            name=name,
            description=description,
            # (recipients of the kind the tool's description names: tinyagent._formats.with_identifier_formats)
            parameters=with_identifier_formats(normalize_schema(inner.get("parameters")), description, name),
            function=function,
        )


CONTENT_PARAMS = frozenset({
    "body", "text", "subject", "content", "message_text", "comment", "description", "summary", "caption", "reason",
    "note_text", "html", "markdown",
})
"""Parameter names that carry what is said, not where it goes (never targets, see :attr:`Tool.target_params`)."""

DESCRIPTIVE_PARAMS = frozenset({
    "title", "start", "end", "date", "time", "due", "when", "duration", "location", "timezone", "mode", "language",
})
"""Parameter names that describe an outgoing call (an invitation's title and time), not where it goes."""


def _holds_text(schema: Mapping[str, Any]) -> bool:
    if "enum" in schema or "const" in schema:
        return False
    variants = schema.get("anyOf") or schema.get("oneOf")
    if variants:
        return any(_holds_text(v) for v in variants)
    typ = schema.get("type")
    if typ == "array":
        return _holds_text(schema.get("items") or {})
    return typ in (None, "string")


def _short_errors(exc: pydantic.ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(p) for p in err["loc"]) or "arguments"
        parts.append(f"{loc}: {err['msg']} (got {err.get('input')!r:.60})")
    return "; ".join(parts)


def _check_name(name: str) -> None:
    if not _NAME_RE.match(name):
        raise ToolDefinitionError(
            f"tool name {name!r} is not valid: use letters, digits, '_', '.', '-' (64 characters at most)"
        )


def _from_function(
    fn: Callable[..., Any],
    name: str | None,
    description: str | None,
    timeout: float | None,
    requires_confirmation: bool,
    effects: Effects = "write",
    targets: tuple[str, ...] | None = None,
) -> Tool:
    if not callable(fn):
        raise ToolDefinitionError(f"@tool needs a function, got {fn!r}")
    tool_name = name or fn.__name__
    _check_name(tool_name)
    doc = docstring_parser.parse(inspect.getdoc(fn) or "")
    param_docs = {p.arg_name: (p.description or "") for p in doc.params}
    try:
        hints = _type_hints(fn)
    except Exception as exc:  # noqa: BLE001 - any failure to resolve annotations is a definition error
        raise ToolDefinitionError(f"{tool_name}: cannot resolve type hints: {exc}") from exc
    fields: dict[str, Any] = {}
    context_param = None
    for pname, param in inspect.signature(fn).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolDefinitionError(f"{tool_name}: *args and **kwargs cannot be described to a planner")
        annotation = hints.get(pname, param.annotation)
        if annotation is ToolContext:
            context_param = pname
            continue
        if annotation is inspect.Parameter.empty:
            raise ToolDefinitionError(f"{tool_name}: parameter {pname!r} needs a type annotation")
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[pname] = (annotation, pydantic.Field(default, description=param_docs.get(pname) or None))
    try:
        model = pydantic.create_model(f"{tool_name}_args", __config__=pydantic.ConfigDict(extra="forbid"), **fields)
        schema = model.model_json_schema()
    except Exception as exc:  # noqa: BLE001 - pydantic's schema errors become definition errors
        raise ToolDefinitionError(f"{tool_name}: cannot build a JSON schema: {exc}") from exc
    summary = description or " ".join(p for p in (doc.short_description, doc.long_description) if p) or ""
    return Tool(
        name=tool_name,
        description=summary.strip(),
        parameters=normalize_schema(schema),
        function=fn,
        timeout=timeout,
        requires_confirmation=requires_confirmation,
        returns=(doc.returns.description or "") if doc.returns else "",
        effects=effects,
        targets=targets,
        _model=model,
        _context_param=context_param,
    )


def _type_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    import typing

    target = inspect.unwrap(fn)
    return typing.get_type_hints(target, include_extras=True)


@overload
def tool(fn: F, /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    requires_confirmation: bool = False,
    effects: Effects = "write",
    targets: Iterable[str] | None = None,
) -> Callable[[F], Tool]: ...


def tool(
    fn: F | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    requires_confirmation: bool = False,
    effects: Effects = "write",
    targets: Iterable[str] | None = None,
) -> Tool | Callable[[F], Tool]:
    """Turn a typed function (sync or async) into a :class:`Tool`; works bare (``@tool``) and with options.

    The argument schema comes from the signature via pydantic; descriptions come from the docstring.
    A parameter annotated :class:`ToolContext` receives the run context and is hidden from the planner.

    Args:
        fn: the function (when used bare).
        name: the tool's name; defaults to the function's name.
        description: defaults to the docstring's summary.
        timeout: seconds before a call is cancelled.
        requires_confirmation: ask the app's confirmation hook before each call.
        effects: ``"read"``, ``"write"``, ``"destructive"`` or ``"outgoing"`` (see :class:`Tool`).
        targets: the parameters naming where the call goes or what it acts on (default: from the schema, see
            :attr:`Tool.target_params`).

    Raises:
        ToolDefinitionError: the function cannot be described (missing annotations, ``*args`` …).
    """
    chosen = tuple(targets) if targets is not None else None
    if fn is not None:
        return _from_function(fn, name, description, timeout, requires_confirmation, effects, chosen)

    def decorate(f: F) -> Tool:
        return _from_function(f, name, description, timeout, requires_confirmation, effects, chosen)

    return decorate


class ToolRegistry(Mapping[str, Tool]):
    """An ordered, name-unique collection of tools."""

    def __init__(self, tools: Iterable[Tool | Callable[..., Any]] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools:
            self.add(t)

    def add(self, item: Tool | Callable[..., Any]) -> Tool:
        """Add a tool (a plain function is wrapped with :func:`tool`).

        Raises:
            ToolDefinitionError: the name is taken.
        """
        t = item if isinstance(item, Tool) else tool(item)
        if t.name in self._tools:
            raise ToolDefinitionError(f"two tools are named {t.name!r}; tool names must be unique")
        self._tools[t.name] = t
        return t

    def subset(self, names: Iterable[str]) -> ToolRegistry:
        """A registry holding only ``names``, in this registry's order."""
        wanted = set(names)
        return ToolRegistry(t for n, t in self._tools.items() if n in wanted)

    def to_openai(self) -> list[dict[str, Any]]:
        """All tools in OpenAI format."""
        return [t.to_openai() for t in self._tools.values()]

    @classmethod
    def from_openai(cls, specs: Iterable[Mapping[str, Any]]) -> ToolRegistry:
        """Schema-only tools from OpenAI (or BFCL) specs."""
        return cls(Tool.from_openai(s) for s in specs)

    def __getitem__(self, name: str) -> Tool:
        return self._tools[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def __repr__(self) -> str:
        return f"ToolRegistry({list(self._tools)})"

