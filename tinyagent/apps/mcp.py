"""MCP at the edge: import an MCP server's tools as planner tools, and expose a tool registry as an MCP server.

Uses the ``mcp`` 2.x SDK (extra ``tinyagent[mcp]``), imported lazily.

Import::

    tools = tools_from_mcp("python", ["-m", "my_mcp_server"])     # sync; one subprocess per call
    async with MCPToolSource("python", ["-m", "my_mcp_server"]) as source:   # one long-lived session
        agent = Agent(tools=source.tools, model=...)

Export::

    server = serve_registry(registry)        # an ``mcp.server.Server``; ``Client(server)`` talks to it in-process
    run_stdio(registry)                      # serve it over stdin/stdout (``tinyagent mcp serve``)

Tool results cross the boundary as JSON: a tinyagent tool's return value is sent as structured content
``{"result": value}`` (plus a text block), and unwrapped again on import.

Safety hints cross it too, both ways (:func:`hints_for` and :func:`effects_from_hints`): a tool's ``effects``
become ``readOnlyHint`` / ``destructiveHint`` / ``openWorldHint`` on export, and on import the hints become
``effects`` again; an imported tool whose hints say destructive or open-world (outgoing) asks the app's
confirmation hook before every call.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import importlib
import json
import logging
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._tools import ConfirmHook, Effects, Tool, ToolContext, ToolRegistry, deny_all
from ..errors import (
    ConfigurationError,
    MCPError,
    MissingDependencyError,
    PlanValidationError,
    TinyAgentError,
    ToolExecutionError,
)

if TYPE_CHECKING:
    from mcp import Client
    from mcp.server import Server
    from mcp_types import CallToolResult

__all__ = [
    "MCPError",
    "MCPToolSource",
    "atools_from_mcp",
    "effects_from_hints",
    "hints_for",
    "run_stdio",
    "serve_registry",
    "tools_from_mcp",
]

logger = logging.getLogger(__name__)

_WRAP_KEY = "result"


def _require_mcp() -> None:
    try:
        importlib.import_module("mcp")
    except ImportError as exc:
        raise MissingDependencyError("mcp", "mcp") from exc


# -- import: MCP server -> planner tools ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Target:
    """Where an MCP server lives: a command to spawn over stdio, or an in-process server object."""

    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None
    cwd: str | None = None
    server: Any = None

    def describe(self) -> str:
        if self.server is not None:
            return f"in-process MCP server {getattr(self.server, 'name', self.server)!r}"
        return " ".join([str(self.command), *self.args])

    def client(self, timeout_s: float) -> Client:
        from mcp import Client, StdioServerParameters

        if self.server is not None:
            return Client(self.server, read_timeout_seconds=timeout_s)
        params = StdioServerParameters(
            command=str(self.command), args=list(self.args), env=dict(self.env) if self.env else None, cwd=self.cwd
        )
        return Client(params, read_timeout_seconds=timeout_s)


def _make_target(
    command: str | Any, args: Sequence[str], env: Mapping[str, str] | None, cwd: str | None
) -> _Target:
    if isinstance(command, str):
        if not command.strip():
            raise ConfigurationError("an MCP server command is empty; pass the executable, e.g. 'python'")
        return _Target(command=command, args=tuple(str(a) for a in args), env=env, cwd=cwd)
    from mcp.server import MCPServer, Server

    if isinstance(command, Server | MCPServer):
        return _Target(server=command)
    raise ConfigurationError(
        f"an MCP server must be a command string or an mcp Server/MCPServer object, got {type(command).__name__}"
    )


def _unwrap_result(result: CallToolResult, output_schema: Mapping[str, Any] | None, tool_name: str) -> Any:
    """Turn a ``CallToolResult`` into the Python value a tinyagent step yields."""
    texts = [getattr(block, "text", "") for block in result.content if getattr(block, "type", "") == "text"]
    if result.is_error:
        message = " ".join(t for t in texts if t) or "the MCP tool reported an error without a message"
        raise ToolExecutionError(f"{tool_name} (MCP) failed: {message}", tool=tool_name)
    structured = result.structured_content
    if structured is not None:
        if isinstance(structured, dict) and set(structured) == {_WRAP_KEY} and _is_wrapped_schema(output_schema):
            return structured[_WRAP_KEY]
        return structured
    if len(texts) == 1:
        text = texts[0]
        if text[:1] in "[{":
            with contextlib.suppress(ValueError):
                return json.loads(text)
        return text
    if not result.content:
        return None
    return [t for t in texts] if texts else [block.model_dump(mode="json") for block in result.content]


def _is_wrapped_schema(schema: Mapping[str, Any] | None) -> bool:
    if schema is None:  # no schema published: a lone "result" key is the common wrapping convention
        return True
    props = schema.get("properties", {})
    return isinstance(props, Mapping) and set(props) == {_WRAP_KEY}


def effects_from_hints(annotations: Any) -> Effects:
    """The ``effects`` an MCP tool's annotations declare.

    ``readOnlyHint`` wins (the spec ignores the other hints then); then ``destructiveHint``; then ``openWorldHint``
    (the tool reaches beyond this machine: treated as outgoing); otherwise ``"write"``. A hint the server leaves
    out counts as not given, so a tool without annotations is ``"write"`` (pass ``confirm=[name]`` to guard it).
    """
    if annotations is None:
        return "write"
    if getattr(annotations, "read_only_hint", None) is True:
        return "read"
    if getattr(annotations, "destructive_hint", None) is True:
        return "destructive"
    if getattr(annotations, "open_world_hint", None) is True:
        return "outgoing"
    return "write"


def hints_for(tool: Tool) -> dict[str, bool]:
    """The MCP annotations for ``tool``, from its ``effects``.

    A ``"write"`` tool that requires confirmation is advertised as destructive, since it asks before it acts.
    """
    return {
        "read_only_hint": tool.read_only,
        "destructive_hint": tool.destructive or (tool.requires_confirmation and tool.effects == "write"),
        "idempotent_hint": tool.read_only,
        "open_world_hint": tool.outgoing,
    }


def _annotations(types: Any, tool: Tool) -> Any:
    hints = hints_for(tool)
    return types.ToolAnnotations(
        read_only_hint=hints["read_only_hint"], destructive_hint=hints["destructive_hint"],
        idempotent_hint=hints["idempotent_hint"], open_world_hint=hints["open_world_hint"],
    )


def _mcp_tool_to_tool(
    spec: Any,
    call: Callable[[str, dict[str, Any]], Awaitable[Any]],
    prefix: str,
    timeout_s: float,
    confirm_names: frozenset[str],
) -> Tool:
    name = f"{prefix}{spec.name}"
    parameters = dict(spec.input_schema or {})
    effects = effects_from_hints(getattr(spec, "annotations", None))
    base = Tool.from_openai({"name": name, "description": spec.description or "", "parameters": parameters})
    remote_name = str(spec.name)

    async def invoke(**kwargs: Any) -> Any:
        return await call(remote_name, kwargs)

    # The planner validates arguments against the MCP schema (``_model`` is None); the function takes them as-is.
    return Tool(
        name=base.name,
        description=base.description,
        parameters=base.parameters,
        function=invoke,
        timeout=timeout_s,
        requires_confirmation=effects in ("destructive", "outgoing") or spec.name in confirm_names
        or name in confirm_names,
        returns=spec.title or "",
        effects=effects,
    )


async def _call_once(target: _Target, name: str, arguments: dict[str, Any], timeout_s: float) -> Any:
    """Open a session, call one tool, close the session (works from any event loop)."""
    try:
        async with target.client(timeout_s) as client:
            listing = await client.list_tools()
            schema = next((t.output_schema for t in listing.tools if t.name == name), None)
            result = await client.call_tool(name, arguments)
    except TinyAgentError:
        raise
    except Exception as exc:  # noqa: BLE001 - transport and protocol failures are wrapped
        raise MCPError(f"calling {name} on {target.describe()} failed: {type(exc).__name__}: {exc}", tool=name) from exc
    return _unwrap_result(result, schema, name)


async def atools_from_mcp(
    command: str | Any,
    args: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    prefix: str = "",
    timeout_s: float = 60.0,
    confirm: Sequence[str] = (),
) -> list[Tool]:
    """List an MCP server's tools and return them as planner tools (async).

    Each returned tool opens its own short session per call (for a stdio server: one subprocess per call), so the
    tools work from any event loop or thread. For many calls, keep one session open with :class:`MCPToolSource`.

    Args:
        command: the executable that starts the server over stdio (e.g. ``"python"``), or an in-process
            ``mcp.server.Server`` / ``MCPServer`` object.
        args: its arguments.
        env: extra environment variables for the subprocess.
        cwd: its working directory.
        prefix: prepended to every tool name (to keep names unique across servers).
        timeout_s: per-call timeout in seconds.
        confirm: names of tools that must pass the app's confirmation hook (tools the server marks
            ``destructiveHint`` or ``openWorldHint``, and not ``readOnlyHint``, always do).

    Returns:
        The tools, in the server's order.

    Raises:
        MissingDependencyError: ``mcp`` is not installed.
        ConfigurationError: ``command`` is neither a command nor a server object.
        MCPError: the server could not be started or listed.
        ToolDefinitionError: a tool's name or schema cannot be used by the planner.
    """
    _require_mcp()
    target = _make_target(command, args, env, cwd)
    try:
        async with target.client(timeout_s) as client:
            listing = await client.list_tools()
    except Exception as exc:  # noqa: BLE001 - transport and protocol failures are wrapped
        raise MCPError(
            f"could not list the tools of {target.describe()}: {type(exc).__name__}: {exc}; "
            "check that the command starts an MCP server speaking stdio"
        ) from exc

    def caller(name: str, arguments: dict[str, Any]) -> Awaitable[Any]:
        return _call_once(target, name, arguments, timeout_s)

    return [_mcp_tool_to_tool(spec, caller, prefix, timeout_s, frozenset(confirm)) for spec in listing.tools]


def tools_from_mcp(
    command: str | Any,
    args: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    prefix: str = "",
    timeout_s: float = 60.0,
    confirm: Sequence[str] = (),
) -> list[Tool]:
    """List an MCP server's tools and return them as planner tools (sync facade of :func:`atools_from_mcp`).

    Raises:
        UserError: called from inside a running event loop (use ``await atools_from_mcp(...)`` there).
        MCPError: the server could not be started or listed.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise ConfigurationError("tools_from_mcp() was called inside an event loop; use await atools_from_mcp()")
    return asyncio.run(
        atools_from_mcp(command, args, env=env, cwd=cwd, prefix=prefix, timeout_s=timeout_s, confirm=confirm)
    )


class MCPToolSource:
    """A long-lived session with one MCP server; its tools call over that session.

    Use as an async context manager, in the event loop the agent runs in::

        async with MCPToolSource("python", ["-m", "server"]) as source:
            agent = Agent(tools=source.tools, model=model)
            await agent.run("...")

    Args:
        command: the executable (stdio), or an in-process ``Server`` / ``MCPServer``.
        args, env, cwd, prefix, timeout_s, confirm: as for :func:`atools_from_mcp`.

    Attributes:
        tools: the server's tools as planner tools (filled on enter).
    """

    def __init__(
        self,
        command: str | Any,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        prefix: str = "",
        timeout_s: float = 60.0,
        confirm: Sequence[str] = (),
    ) -> None:
        _require_mcp()
        self._target = _make_target(command, args, env, cwd)
        self._prefix = prefix
        self._timeout_s = timeout_s
        self._confirm = frozenset(confirm)
        self._client: Client | None = None
        self._schemas: dict[str, Any] = {}
        self._lock = asyncio.Lock()
        self.tools: list[Tool] = []

    async def __aenter__(self) -> MCPToolSource:
        client = self._target.client(self._timeout_s)
        try:
            await client.__aenter__()
            listing = await client.list_tools()
        except Exception as exc:  # noqa: BLE001 - transport and protocol failures are wrapped
            with contextlib.suppress(Exception):
                await client.__aexit__(None, None, None)
            raise MCPError(f"could not connect to {self._target.describe()}: {type(exc).__name__}: {exc}") from exc
        self._client = client
        self._schemas = {t.name: t.output_schema for t in listing.tools}
        self.tools = [
            _mcp_tool_to_tool(spec, self._call, self._prefix, self._timeout_s, self._confirm) for spec in listing.tools
        ]
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                await client.__aexit__(None, None, None)

    async def _call(self, name: str, arguments: dict[str, Any]) -> Any:
        if self._client is None:
            raise MCPError(f"{name}: the MCP session is closed; call tools inside 'async with MCPToolSource(...)'",
                           tool=name)
        try:
            result = await self._client.call_tool(name, arguments)
        except Exception as exc:  # noqa: BLE001 - transport and protocol failures are wrapped
            raise MCPError(f"calling {name} on {self._target.describe()} failed: {type(exc).__name__}: {exc}",
                           tool=name) from exc
        return _unwrap_result(result, self._schemas.get(name), name)


# -- export: tool registry -> MCP server ---------------------------------------------------------------------------


@dataclass
class _ExportSettings:
    confirm: ConfirmHook = deny_all
    today: Callable[[], dt.date] = dt.date.today
    deps: Any = None
    model: Any = None
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def _jsonable(value: Any) -> Any:
    """A JSON value for ``value`` (dataclasses, pydantic models, dates and paths become plain data)."""
    from pydantic_core import to_jsonable_python

    return to_jsonable_python(value, fallback=str)


def _listing(types: Any, exported: Mapping[str, Tool]) -> Any:
    return types.ListToolsResult(
        tools=[
            types.Tool(
                name=t.name,
                description=t.description,
                input_schema=t.parameters,
                output_schema={"type": "object", "properties": {_WRAP_KEY: {}}, "required": [_WRAP_KEY]},
                annotations=_annotations(types, t),
            )
            for t in exported.values()
        ]
    )


async def _call_exported(types: Any, tool: Tool, arguments: Mapping[str, Any] | None,
                         settings: _ExportSettings) -> CallToolResult:
    context = ToolContext(confirm_hook=settings.confirm, model=settings.model, today=settings.today(),
                          deps=settings.deps)
    try:
        value = await tool.call(dict(arguments or {}), context)
    except PlanValidationError as exc:
        return _error_result(f"bad arguments: {exc}")
    except TinyAgentError as exc:
        return _error_result(str(exc))
    data = _jsonable(value)
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    result: CallToolResult = types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content={_WRAP_KEY: data}
    )
    return result


def serve_registry(
    registry: ToolRegistry | Sequence[Tool],
    *,
    name: str = "tinyagent",
    confirm: ConfirmHook = deny_all,
    today: dt.date | None = None,
    deps: Any = None,
    model: Any = None,
) -> Server[Any]:
    """Expose the executable tools of ``registry`` as an MCP server.

    The result is a low-level ``mcp.server.Server`` (not ``MCPServer``, whose constructor reconfigures the root
    logger): connect to it in-process with ``mcp.Client(server)``, or serve it over stdio with :func:`run_stdio`.
    Schema-only tools are not listed. Each tool's annotations come from its ``effects`` (:func:`hints_for`).
    Tools that require confirmation, and built-ins that confirm inside the call, ask ``confirm``; the default
    refuses, because an MCP client cannot be asked.

    Args:
        registry: the tools.
        name: the server name clients see.
        confirm: the confirmation hook for outgoing or destructive tools.
        today: the date tools resolve relative dates against (default: the real date at each call).
        deps: handed to tools as ``ToolContext.deps``.
        model: handed to tools as ``ToolContext.model``.

    Returns:
        The server.

    Raises:
        MissingDependencyError: ``mcp`` is not installed.
    """
    _require_mcp()
    import mcp_types as types
    from mcp.server import Server

    tools = registry if isinstance(registry, ToolRegistry) else ToolRegistry(registry)
    exported = {n: t for n, t in tools.items() if t.executable}
    settings = _ExportSettings(confirm=confirm, today=(lambda: today) if today else dt.date.today, deps=deps,
                               model=model)

    async def on_list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        listing: types.ListToolsResult = _listing(types, exported)
        return listing

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = exported.get(params.name)
        if tool is None:
            return _error_result(f"unknown tool {params.name!r}; this server has {sorted(exported)}")
        return await _call_exported(types, tool, params.arguments, settings)

    def input_schema(tool_name: str) -> Mapping[str, Any] | None:
        tool = exported.get(tool_name)
        return tool.parameters if tool is not None else None

    return Server(
        name,
        version=_version(),
        get_tool_input_schema=input_schema,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )


def _error_result(message: str) -> CallToolResult:
    import mcp_types as types

    result: CallToolResult = types.CallToolResult(content=[types.TextContent(type="text", text=message)],
                                                  is_error=True)
    return result


def _version() -> str:
    from .. import __version__

    return __version__


async def arun_stdio(server: Server[Any]) -> None:
    """Serve ``server`` over this process's stdin/stdout until the client disconnects."""
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def run_stdio(registry: ToolRegistry | Sequence[Tool], **kwargs: Any) -> None:
    """Serve ``registry`` as an MCP server over stdin/stdout (blocking). ``kwargs`` go to :func:`serve_registry`."""
    server = serve_registry(registry, **kwargs)
    asyncio.run(arun_stdio(server))


def load_registry(spec: str) -> ToolRegistry:
    """Load a registry from ``module:attribute``; the attribute is a registry, a list of tools, or a factory.

    Raises:
        ConfigurationError: the module or attribute cannot be found, or is not a set of tools.
    """
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ConfigurationError(f"expected MODULE:ATTRIBUTE (e.g. 'mytools:registry'), got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigurationError(f"cannot import {module_name!r}: {exc}; check PYTHONPATH") from exc
    try:
        obj = getattr(module, attr)
    except AttributeError as exc:
        raise ConfigurationError(f"module {module_name!r} has no attribute {attr!r}") from exc
    if callable(obj) and not isinstance(obj, Tool | ToolRegistry):
        obj = obj()
    if isinstance(obj, ToolRegistry):
        return obj
    if isinstance(obj, Tool):
        return ToolRegistry([obj])
    if isinstance(obj, Sequence) and all(isinstance(t, Tool) for t in obj):
        return ToolRegistry(obj)
    raise ConfigurationError(f"{spec} is a {type(obj).__name__}, not a ToolRegistry or a list of tools")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tinyagent.apps.mcp MODULE:ATTRIBUTE``: serve a registry over stdio."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) != 1:
        sys.stderr.write("usage: python -m tinyagent.apps.mcp MODULE:ATTRIBUTE\n")
        return 2
    try:
        run_stdio(load_registry(argv[0]))
    except TinyAgentError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
