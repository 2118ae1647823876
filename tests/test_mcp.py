"""MCP round trips: a registry served as an MCP server, its tools imported back as planner tools.

In-process with the SDK's ``Client(server)``, and over real stdio subprocesses (our server module, the CLI's
``tinyagent mcp serve``, and a third-party style server written with the SDK's ``MCPServer``).
"""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from mcp import Client  # noqa: E402

from tinyagent import Agent, ToolContext, ToolRegistry, tool  # noqa: E402
from tinyagent.apps.mcp import (  # noqa: E402
    MCPError,
    MCPToolSource,
    atools_from_mcp,
    load_registry,
    serve_registry,
    tools_from_mcp,
)
from tinyagent.errors import ConfigurationError, ConfirmationDenied, PlanValidationError, ToolExecutionError  # noqa: E402
from tinyagent.models import ScriptedModel  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ENV = {"PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first.
        b: the second.
    """
    return a + b


@tool(requires_confirmation=True)
def delete_everything(folder: str) -> str:
    """Delete a folder (destructive).

    Args:
        folder: the folder.
    """
    return f"deleted {folder}"


@tool
def whoami(ctx: ToolContext) -> dict[str, str]:
    """Say which day the server thinks it is."""
    return {"today": ctx.today.isoformat()}


def toy_registry() -> ToolRegistry:
    return ToolRegistry([add, delete_everything, whoami])


async def test_in_process_client_lists_and_calls_tools() -> None:
    server = serve_registry(toy_registry())
    async with Client(server) as client:
        listing = await client.list_tools()
        by_name = {t.name: t for t in listing.tools}
        assert list(by_name) == ["add", "delete_everything", "whoami"]
        assert by_name["add"].description == "Add two integers."
        assert by_name["add"].input_schema["properties"]["a"] == {"description": "the first.", "type": "integer"}
        assert by_name["add"].input_schema["required"] == ["a", "b"]
        assert by_name["delete_everything"].annotations is not None
        assert by_name["delete_everything"].annotations.destructive_hint is True

        result = await client.call_tool("add", {"a": 2, "b": 40})
        assert not result.is_error
        assert result.structured_content == {"result": 42}
        assert result.content[0].text == "42"

        bad = await client.call_tool("add", {"a": "x"})
        assert bad.is_error
        assert "bad arguments" in bad.content[0].text

        unknown = await client.call_tool("nope", {})
        assert unknown.is_error

        refused = await client.call_tool("delete_everything", {"folder": "/tmp/x"})
        assert refused.is_error
        assert "did not confirm" in refused.content[0].text


async def test_confirm_hook_and_today_reach_the_tools() -> None:
    import datetime as dt

    server = serve_registry(toy_registry(), confirm=lambda request: request.tool == "delete_everything",
                            today=dt.date(2026, 12, 1))
    async with Client(server) as client:
        allowed = await client.call_tool("delete_everything", {"folder": "old"})
        assert allowed.structured_content == {"result": "deleted old"}
        day = await client.call_tool("whoami", {})
        assert day.structured_content == {"result": {"today": "2026-12-01"}}


async def test_imported_tools_validate_unwrap_and_run_in_an_agent() -> None:
    tools = await atools_from_mcp(serve_registry(toy_registry()), prefix="toy.")
    assert [t.name for t in tools] == ["toy.add", "toy.delete_everything", "toy.whoami"]
    by_name = {t.name: t for t in tools}
    assert by_name["toy.delete_everything"].requires_confirmation  # from the destructive hint
    assert await by_name["toy.add"].call({"a": 1, "b": 2}) == 3
    with pytest.raises(PlanValidationError):
        await by_name["toy.add"].call({"a": "one", "b": 2})
    with pytest.raises(ConfirmationDenied):
        await by_name["toy.delete_everything"].call({"folder": "x"})

    model = ScriptedModel(["1. toy.add(a=20, b=22)\n2. toy.add(a=$1, b=100)\n3. join()\n<END_OF_PLAN>",
                           "Answer: 142"])
    agent = Agent(tools=tools, model=model, joiner="llm")
    result = await agent.run("add twenty and twenty-two, then add a hundred")
    assert [s.result for s in result.steps] == [42, 142]
    assert result.answer == "142"


async def test_remote_error_becomes_tool_execution_error() -> None:
    @tool
    def explode(reason: str) -> str:
        """Always fails.

        Args:
            reason: why.
        """
        raise RuntimeError(f"boom: {reason}")

    (imported,) = await atools_from_mcp(serve_registry([explode]))
    with pytest.raises(ToolExecutionError, match="boom: because"):
        await imported.call({"reason": "because"})


async def test_stdio_subprocess_round_trip() -> None:
    args = ["-m", "tinyagent.apps.mcp", "tinyagent.apps._demo_tools:demo_tools"]
    tools = await atools_from_mcp(sys.executable, args, env=ENV)
    names = [t.name for t in tools]
    assert names == ["get_email_address", "get_phone_number", "send_email", "send_sms", "get_calendar_events"]
    lookup = next(t for t in tools if t.name == "get_email_address")
    assert await lookup.call({"name": "Sid"}) == "sid@example.com"
    with pytest.raises(ToolExecutionError, match="no contact named 'Zed'"):
        await lookup.call({"name": "Zed"})

    async with MCPToolSource(sys.executable, args, env=ENV) as source:
        phone = next(t for t in source.tools if t.name == "get_phone_number")
        assert await phone.call({"name": "kate"}) == "+1-555-0103"
        assert await phone.call({"name": "lutfi"}) == "+1-555-0102"
        send = next(t for t in source.tools if t.name == "send_email")
        assert send.outgoing and send.requires_confirmation  # its hints say it sends: asked here, before the call
        with pytest.raises(ConfirmationDenied, match="did not confirm"):
            await send.call({"to": ["a@example.com"], "subject": "s", "body": "b"})


def test_cli_mcp_serve_over_stdio() -> None:
    args = ["-m", "tinyagent.apps.cli", "--tools", "demo", "--yes", "mcp", "serve"]
    tools = tools_from_mcp(sys.executable, args, env=ENV)
    send = next(t for t in tools if t.name == "send_email")
    approve = ToolContext(confirm_hook=lambda request: True)  # outgoing: this side asks first, then the server sends
    assert asyncio_run(send.call({"to": ["sid@example.com"], "subject": "hi", "body": "there"}, approve)) == \
        "sent to sid@example.com"


def asyncio_run(coro: Any) -> Any:
    import asyncio

    return asyncio.run(coro)


def test_third_party_mcpserver_tools_import(tmp_path: Path) -> None:
    server_file = tmp_path / "weather_server.py"
    server_file.write_text(textwrap.dedent('''
        from mcp.server import MCPServer

        server = MCPServer("weather")

        @server.tool()
        def forecast(city: str, days: int = 1) -> dict:
            """Forecast for a city."""
            return {"city": city, "days": days, "sky": "clear"}

        @server.tool()
        def temperature(city: str) -> float:
            """Temperature in Celsius."""
            return 21.5

        if __name__ == "__main__":
            server.run("stdio")
    '''))
    tools = tools_from_mcp(sys.executable, [str(server_file)])
    by_name = {t.name: t for t in tools}
    assert set(by_name) == {"forecast", "temperature"}
    assert by_name["forecast"].required == ["city"]
    assert asyncio_run(by_name["forecast"].call({"city": "Oslo", "days": 2})) == {"city": "Oslo", "days": 2,
                                                                                   "sky": "clear"}
    assert asyncio_run(by_name["temperature"].call({"city": "Oslo"})) == 21.5


def test_bad_command_and_registry_specs_are_typed_errors() -> None:
    with pytest.raises(MCPError, match="could not list the tools"):
        tools_from_mcp(sys.executable, ["-c", "import sys; sys.exit(3)"], timeout_s=20)
    with pytest.raises(ConfigurationError):
        tools_from_mcp("   ")
    with pytest.raises(ConfigurationError, match="MODULE:ATTRIBUTE"):
        load_registry("no_colon")
    with pytest.raises(ConfigurationError, match="cannot import"):
        load_registry("no_such_module_xyz:tools")
    assert list(load_registry("tinyagent.apps._demo_tools:demo_tools"))[0] == "get_email_address"


async def test_sync_facade_refuses_inside_a_loop() -> None:
    with pytest.raises(ConfigurationError, match="atools_from_mcp"):
        tools_from_mcp(sys.executable, ["-m", "tinyagent.apps.mcp", "x:y"])



# -- safety hints (issue 17 finding 4) -------------------------------------------------------------------------------
def _builtin_server(data_dir: Path, **kwargs: Any) -> Any:
    from tinyagent.functions import FunctionsSettings, builtin_tools

    return serve_registry(builtin_tools(FunctionsSettings(data_dir=data_dir, timezone="UTC")), **kwargs)


async def test_exported_builtins_advertise_their_real_effects(data_dir: Path) -> None:
    async with Client(_builtin_server(data_dir)) as client:
        hints = {t.name: t.annotations for t in (await client.list_tools()).tools}
    assert hints["delete_note"] is not None and hints["delete_note"].destructive_hint is True
    assert hints["delete_note"].read_only_hint is False
    for name in ("send_email", "send_message", "reply_to_email", "forward_email"):
        annotations = hints[name]
        assert annotations is not None and annotations.open_world_hint is True, name
        assert annotations.read_only_hint is False, name
    for name in ("open_note", "search_notes", "read_file", "get_email_address", "list_calendar_events"):
        annotations = hints[name]
        assert annotations is not None and annotations.read_only_hint is True, name
        assert annotations.destructive_hint is False and annotations.open_world_hint is False, name
    create = hints["create_note"]
    assert create is not None and (create.read_only_hint, create.destructive_hint, create.open_world_hint) == (
        False, False, False)


async def test_an_imported_delete_note_asks_the_confirm_hook_and_a_denial_keeps_the_note(data_dir: Path) -> None:
    from tinyagent import ConfirmationRequest

    note = data_dir / "notes" / "personal" / "Gift ideas.md"
    tools = {t.name: t for t in await atools_from_mcp(_builtin_server(data_dir, confirm=lambda request: True))}
    delete = tools["delete_note"]
    assert delete.requires_confirmation and delete.effects == "destructive"
    assert tools["send_email"].requires_confirmation and tools["send_email"].effects == "outgoing"
    assert tools["send_message"].requires_confirmation and tools["send_message"].effects == "outgoing"
    assert not tools["open_note"].requires_confirmation and tools["open_note"].effects == "read"
    assert not tools["append_note"].requires_confirmation and tools["append_note"].effects == "write"

    asked: list[ConfirmationRequest] = []

    def refuse(request: ConfirmationRequest) -> bool:
        asked.append(request)
        return False

    with pytest.raises(ConfirmationDenied):
        await delete.call({"title": "Gift ideas"}, ToolContext(confirm_hook=refuse))
    assert [r.tool for r in asked] == ["delete_note"]
    assert note.exists()

    result = await delete.call({"title": "Gift ideas"}, ToolContext(confirm_hook=lambda request: True))
    assert result["deleted"] == "Gift ideas"
    assert not note.exists()


async def test_mcp_open_note_does_not_follow_a_link_out(data_dir: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("SENTINEL-MCP-7f3a")
    (data_dir / "notes" / "evil.md").symlink_to(secret)
    async with Client(_builtin_server(data_dir)) as client:
        opened = await client.call_tool("open_note", {"title": "evil"})
        searched = await client.call_tool("search_notes", {"query": "sentinel"})
    assert opened.is_error
    texts = [block.text for result in (opened, searched) for block in result.content if hasattr(block, "text")]
    assert all("SENTINEL-MCP-7f3a" not in text for text in texts)


def test_effects_from_hints() -> None:
    import mcp_types as types

    from tinyagent.apps.mcp import effects_from_hints

    assert effects_from_hints(None) == "write"
    assert effects_from_hints(types.ToolAnnotations()) == "write"
    assert effects_from_hints(types.ToolAnnotations(read_only_hint=True, destructive_hint=True)) == "read"
    assert effects_from_hints(types.ToolAnnotations(destructive_hint=True, open_world_hint=True)) == "destructive"
    assert effects_from_hints(types.ToolAnnotations(open_world_hint=True)) == "outgoing"
    assert effects_from_hints(types.ToolAnnotations(read_only_hint=False, destructive_hint=False)) == "write"
