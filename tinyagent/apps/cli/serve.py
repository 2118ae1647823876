"""``tinyagent serve`` (HTTP) and ``tinyagent mcp`` (Model Context Protocol in and out)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from ... import ConfirmationRequest, ToolRegistry
from ._app import app, state
from .catalog import tools_table

__all__ = ["mcp_app", "serve"]

mcp_app = typer.Typer(help="Model Context Protocol: import and export tools.", no_args_is_help=True)
app.add_typer(mcp_app, name="mcp")


@app.command()
def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option(help="Interface; keep 127.0.0.1 unless you mean to expose the tools.")]
    = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port.")] = 8765,
    token: Annotated[str | None, typer.Option(envvar="TINYAGENT_SERVER_TOKEN", help="Require this bearer token.")]
    = None,
    max_queue: Annotated[int, typer.Option(help="Requests that may wait; more get 503.")] = 32,
    no_auth: Annotated[bool, typer.Option("--no-auth", help="Serve without a token: any local process may "
                                                              "drive the agent.")] = False,
    token_file: Annotated[str | None, typer.Option(help="Where the generated token lives (default: the user's "
                                                         "config dir, mode 0600).")] = None,
    allow_host: Annotated[list[str] | None, typer.Option(help="Accept this Host header too (repeatable).")] = None,
    allow_origin: Annotated[list[str] | None, typer.Option(help="Accept requests from this web origin "
                                                                 "(repeatable).")] = None,
) -> None:
    """Serve the agent over HTTP: /v1/agent/stream (SSE), /v1/agent/run, OpenAI /v1/chat/completions, /health.

    A bearer token is required by default (generated on first start); Host must be local and foreign web origins
    are refused (see SECURITY.md).
    """
    from ..server import ServerSettings, resolve_auth
    from ..server import serve as serve_agent

    st = state(ctx)
    settings = ServerSettings(token=token, max_queue=max_queue, no_auth=no_auth,
                              token_file=Path(token_file) if token_file else None,
                              allowed_hosts=tuple(allow_host or ()), allowed_origins=tuple(allow_origin or ()))
    auth = resolve_auth(settings)
    agent = st.agent(ask=False)
    st.err.print(Text(f"serving {st.model().name} with {len(st.tools())} tools on http://{host}:{port}; "
                      f"{auth.describe()}; confirmations {'auto-approved' if st.yes else 'refused'}"))
    serve_agent(agent, host=host, port=port, settings=settings)


@mcp_app.command("serve")
def mcp_serve(
    ctx: typer.Context,
    registry: Annotated[str | None, typer.Argument(help="MODULE:ATTR of a registry (default: the --tools set).")]
    = None,
) -> None:
    """Serve tools as an MCP server over stdin/stdout (confirmations are refused unless --yes)."""
    from ..mcp import load_registry, run_stdio

    st = state(ctx)
    tools = load_registry(registry) if registry else st.tools()

    def confirm(request: ConfirmationRequest) -> bool:
        return bool(st.yes)

    st.err.print(Text(f"MCP server over stdio with {len(tools)} tools"))
    run_stdio(tools, confirm=confirm, today=st.today)


@mcp_app.command("tools", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def mcp_tools(
    ctx: typer.Context,
    command: Annotated[str, typer.Argument(help="The MCP server command (its arguments follow, after --).")],
) -> None:
    """List the tools an MCP server (started over stdio) offers, as the planner would see them."""
    from ..mcp import tools_from_mcp

    st = state(ctx)
    tools = ToolRegistry(tools_from_mcp(command, list(ctx.args)))
    if st.json:
        st.emit_json(tools.to_openai())
        return
    st.console.print(tools_table(tools))
