"""The ``tinyagent`` command line (typer + rich).

Global options (accepted before or after the command): ``--model NAME|PATH.gguf|openai:URL|scripted:FILE.json``,
``--tools builtin|demo|FILE.json|MODULE:ATTR``, ``--data-dir``, ``--today YYYY-MM-DD``, ``--threads``,
``--max-replans``, ``--yes``, ``--json``.

``--model scripted:FILE.json`` is a testing and demo hook: the model answers from a JSON script
(see :func:`tinyagent.apps._runtime.scripted_model_from_file`), so the apps can be driven without weights.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import importlib
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.live import Live
from rich.panel import Panel
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from .._tools import ToolRegistry
from ..errors import ConfigurationError, ModelIntegrityError, TinyAgentError
from ..models._base import Model
from . import _runtime as rt
from ._render import RichConfirm, RunView, answer_panel, plan_tree, usage_line

__all__ = ["app", "main", "run_cli"]

log = logging.getLogger(__name__)

GLOBAL_FLAGS = {"--yes", "-y", "--json", "--verbose", "-v"}
GLOBAL_OPTIONS = {"--model", "-m", "--tools", "--data-dir", "--today", "--threads", "--max-replans"}


@dataclass
class AppState:
    """What every command shares: the global options, the consoles, and lazily built model, tools and agent."""

    model_spec: str
    tools_spec: str | None
    data_dir: Path
    today: dt.date | None
    threads: int | None
    max_replans: int | None
    yes: bool
    json: bool
    console: Console
    err: Console
    _model: Model | None = None
    _tools: ToolRegistry | None = None
    live: Live | None = None

    def model(self) -> Model:
        if self._model is None:
            status = self.err.status(f"loading model {self.model_spec}…") if not self.json else contextlib.nullcontext()
            with status:
                self._model = rt.load_model_spec(self.model_spec, threads=self.threads)
        return self._model

    def tools(self) -> ToolRegistry:
        if self._tools is None:
            self._tools = rt.load_tools(self.tools_spec, self.data_dir)
        return self._tools

    def confirm_hook(self, *, ask: bool = True) -> RichConfirm:
        return RichConfirm(self.err if self.json else self.console, auto_yes=self.yes,
                           is_tty=None if ask else False, live=lambda: self.live)

    def agent(self, *, ask: bool = True) -> Any:
        overrides = {} if self.max_replans is None else {"max_replans": self.max_replans}
        return rt.build_agent(self.tools(), self.model(), confirm=self.confirm_hook(ask=ask), **overrides)

    def emit_json(self, data: Any) -> None:
        self.console.out(json.dumps(rt.jsonable(data), ensure_ascii=False), highlight=False)


app = typer.Typer(
    name="tinyagent",
    help="Plan and run tool calls with a small local model.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
tools_app = typer.Typer(help="Inspect the tools the agent can call.", no_args_is_help=True)
models_app = typer.Typer(help="The model catalog.", no_args_is_help=True)
demo_app = typer.Typer(help="Demo data for the built-in tools.", no_args_is_help=True)
eval_app = typer.Typer(help="Evaluate the planner.", no_args_is_help=True)
mcp_app = typer.Typer(help="Model Context Protocol: import and export tools.", no_args_is_help=True)
app.add_typer(tools_app, name="tools")
app.add_typer(models_app, name="models")
app.add_typer(demo_app, name="demo")
app.add_typer(eval_app, name="eval")
app.add_typer(mcp_app, name="mcp")


def _state(ctx: typer.Context) -> AppState:
    obj = ctx.find_root().obj
    if not isinstance(obj, AppState):
        raise ConfigurationError("the CLI state is missing; run through tinyagent.apps.cli.main()")
    return obj


@app.callback()
def _global(
    ctx: typer.Context,
    model: Annotated[str | None, typer.Option("--model", "-m", envvar="TINYAGENT_MODEL",
                                              help="Catalog name, path to a .gguf, openai:URL[#MODEL] or "
                                                   "scripted:FILE.json (testing hook).")] = None,
    tools: Annotated[str | None, typer.Option("--tools", help="builtin (default), demo, an OpenAI tools .json "
                                              "(plan only) or MODULE:ATTR.")] = None,
    data_dir: Annotated[Path | None, typer.Option("--data-dir", envvar="TINYAGENT_DATA_DIR",
                                                  help="The built-in tools' data folder.")] = None,
    today: Annotated[str | None, typer.Option("--today", help="Resolve dates against this day (YYYY-MM-DD).")] = None,
    threads: Annotated[int | None, typer.Option("--threads", min=1, help="llama.cpp threads.")] = None,
    max_replans: Annotated[int | None, typer.Option("--max-replans", min=0, help="Replans after a failed plan.")]
    = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Approve outgoing/destructive actions without asking.")]
    = False,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable JSON output.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log to stderr.")] = False,
) -> None:
    """Global options; see each command's --help."""
    existing = ctx.obj if isinstance(ctx.obj, dict) else {}
    console: Console = existing.get("console") or Console()
    err: Console = existing.get("err") or Console(stderr=True)
    if verbose:
        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    ctx.obj = AppState(
        model_spec=model or rt.default_model_name(),
        tools_spec=tools,
        data_dir=(data_dir or rt.default_data_dir()).expanduser(),
        today=rt.parse_today(today),
        threads=threads,
        max_replans=max_replans,
        yes=yes,
        json=as_json,
        console=console,
        err=err,
    )


# -- run / chat / plan ------------------------------------------------------------------------------------------


async def _run_live(st: AppState, agent: Any, query: str, history: Sequence[dict[str, str]] = ()) -> Any:
    """Run ``query``, showing steps live as they stream; return the RunResult."""
    result: Any = None
    if st.json:
        async for event in agent.run_stream(query, today=st.today, history=history):
            if getattr(event, "type", "") == "answer":
                result = event.result
        return result
    view = RunView()
    if not st.console.is_terminal:  # no cursor control: print the finished view once
        async for event in agent.run_stream(query, today=st.today, history=history):
            view.update(event)
            if getattr(event, "type", "") == "answer":
                result = event.result
        st.console.print(view)
        return result
    with Live(view, console=st.console, refresh_per_second=10, transient=False) as live:
        st.live = live
        try:
            async for event in agent.run_stream(query, today=st.today, history=history):
                view.update(event)
                live.refresh()
                if getattr(event, "type", "") == "answer":
                    result = event.result
        finally:
            st.live = None
    return result


def _show_result(st: AppState, result: Any) -> None:
    if st.json:
        st.emit_json(rt.result_to_dict(result))
        return
    for note in getattr(result, "notes", []) or []:
        st.console.print(Text(f"note: {note}", style="dim magenta"))
    st.console.print(answer_panel(str(result.answer)))
    st.console.print(usage_line(result))


@app.command()
def run(ctx: typer.Context, query: Annotated[str, typer.Argument(help="What to do.")]) -> None:
    """Plan, execute and answer one request, showing the steps live."""
    st = _state(ctx)
    agent = st.agent()
    result = asyncio.run(_run_live(st, agent, query))
    _show_result(st, result)


@app.command()
def chat(ctx: typer.Context) -> None:
    """A conversation: follow-ups keep the context. /exit quits, /reset forgets, /tools lists the tools."""
    st = _state(ctx)
    agent = st.agent()
    with contextlib.suppress(ImportError):
        import readline  # noqa: F401 - line editing and history for input()
    asyncio.run(_chat_loop(st, agent))


async def _chat_loop(st: AppState, agent: Any) -> None:
    console = st.console
    console.print(Panel(Text.assemble(("tinyagent chat", "bold"), f" · model {st.model().name} · "
                                      f"{len(st.tools())} tools\n", ("/exit quits, /reset forgets the conversation, "
                                                                      "/tools lists tools", "dim")),
                        border_style="blue"))
    history: list[dict[str, str]] = []
    while True:
        try:
            line = await asyncio.to_thread(console.input, "[bold green]you>[/] ")
        except (EOFError, KeyboardInterrupt):
            console.print()
            return
        text = line.strip()
        if not text:
            continue
        if text in ("/exit", "/quit"):
            return
        if text == "/reset":
            history.clear()
            console.print("[dim]conversation forgotten[/]")
            continue
        if text == "/tools":
            console.print(_tools_table(st.tools()))
            continue
        if text == "/history":
            for turn in history:
                console.print(f"[bold]{turn['role']}:[/] {turn['content']}")
            continue
        try:
            result = await _run_live(st, agent, text, history)
        except TinyAgentError as exc:
            console.print(f"[red]error:[/] {exc}")
            continue
        _show_result(st, result)
        history += [{"role": "user", "content": text}, {"role": "assistant", "content": str(result.answer)}]


@app.command()
def plan(
    ctx: typer.Context,
    query: Annotated[str | None, typer.Argument(help="A request to plan (omit with --input).")] = None,
    input_file: Annotated[Path | None, typer.Option("--input", "-i", help="JSONL of {id, query, today?}.")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="JSONL of {id, calls, answer?}.")] = None,
) -> None:
    """Plan without executing: show the DAG as a tree, or plan a JSONL batch."""
    st = _state(ctx)
    if (query is None) == (input_file is None):
        raise ConfigurationError("give either a QUERY or --input FILE.jsonl (not both)")
    agent = st.agent(ask=False)
    if query is not None:
        result = agent.plan_sync(query, today=st.today)
        if st.json:
            st.emit_json(result.to_dict())
            return
        st.console.print(plan_tree(result.plan, title=f"Plan for: {query}"))
        st.console.print(Text(f"{len(result.plan.calls)} call(s) · {result.elapsed_s:.2f} s · "
                              f"{result.prompt_tokens} prompt tokens · model {result.model}", style="dim"))
        return
    assert input_file is not None  # narrowed by the check above
    asyncio.run(_plan_batch(st, agent, input_file, output))


def _read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigurationError(f"cannot read {path}: {exc}") from exc
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise ConfigurationError(f"{path}:{number} is not JSON: {exc}") from exc
        if not isinstance(record, dict) or not isinstance(record.get("query"), str):
            raise ConfigurationError(f"{path}:{number}: each line must be an object with a 'query' string")
        yield number, record


async def _plan_batch(st: AppState, agent: Any, input_file: Path, output: Path | None) -> None:
    records = list(_read_jsonl(input_file))
    out_handle = output.open("w", encoding="utf-8") if output is not None else None
    failures = 0
    try:
        with _progress(st) as progress:
            task = progress.add_task("planning", total=len(records))
            for number, record in records:
                ident = record.get("id", number)
                try:
                    today = rt.parse_today(record.get("today")) or st.today
                    result = await agent.plan(record["query"], today=today)
                    line: dict[str, Any] = {"id": ident, "calls": result.plan.to_json()}
                    if result.plan.answer is not None:
                        line["answer"] = result.plan.answer
                except TinyAgentError as exc:
                    failures += 1
                    line = {"id": ident, "calls": [], "error": f"{type(exc).__name__}: {exc}"}
                text = json.dumps(line, ensure_ascii=False)
                if out_handle is not None:
                    out_handle.write(text + "\n")
                    out_handle.flush()
                else:
                    st.console.out(text, highlight=False)
                progress.advance(task)
    finally:
        if out_handle is not None:
            out_handle.close()
    if output is not None:
        st.err.print(f"planned {len(records)} request(s) into {output} ({failures} failed)")


@contextlib.contextmanager
def _progress(st: AppState) -> Iterator[Progress]:
    progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=st.err, disable=st.json, transient=False)
    with progress:
        yield progress


# -- tools / models / demo ---------------------------------------------------------------------------------------


def _tools_table(tools: ToolRegistry) -> Table:
    table = Table(title=f"{len(tools)} tools", title_justify="left")
    table.add_column("name", style="cyan", no_wrap=True)
    table.add_column("arguments")
    table.add_column("confirm", justify="center")
    table.add_column("description", overflow="fold")
    for t in tools.values():
        props = t.parameters.get("properties", {})
        required = set(t.required)
        args = ", ".join(f"{n}{'' if n in required else '?'}: {_type_name(s)}" for n, s in props.items())
        table.add_row(Text(t.name), Text(args), "yes" if t.requires_confirmation else "", Text(t.description))
    return table


def _type_name(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any"
    typ = schema.get("type")
    if typ == "array":
        return f"list[{_type_name(schema.get('items', {}))}]"
    if "enum" in schema:
        return "|".join(json.dumps(v) for v in schema["enum"])
    return str(typ or "any")


@tools_app.command("list")
def tools_list(ctx: typer.Context) -> None:
    """List the tools (name, arguments, whether they ask for confirmation)."""
    st = _state(ctx)
    tools = st.tools()
    if st.json:
        st.emit_json(tools.to_openai())
        return
    st.console.print(_tools_table(tools))


def _catalog() -> Any:
    try:
        from ..models import ModelCatalog
    except ImportError as exc:
        raise ConfigurationError(f"the model catalog is not available in this build: {exc}") from exc
    return ModelCatalog()


def _assembled(catalog: Any, entry: Any) -> bool:
    if entry.path or entry.lora_path:
        return Path(entry.lora_path or entry.path).is_file()
    if len(entry.parts) == 1:
        return bool(catalog.installed(entry.name))
    target = Path(catalog.root) / entry.filename
    return bool(target.is_file() and target.stat().st_size == entry.size)


@models_app.command("list")
def models_list(ctx: typer.Context) -> None:
    """List the catalog: size, whether the packages are installed and the file assembled."""
    st = _state(ctx)
    catalog = _catalog()
    rows = []
    for entry in catalog.entries():
        installed = bool(catalog.installed(entry.name))
        rows.append({
            "name": entry.name, "size_mb": round(entry.size / 1e6, 1), "installed": installed,
            "assembled": installed and _assembled(catalog, entry), "description": entry.description,
            "install": entry.pip_install,
        })
    if st.json:
        st.emit_json(rows)
        return
    table = Table(title="model catalog", title_justify="left")
    for col in ("name", "size", "installed", "assembled", "description"):
        table.add_column(col, overflow="fold")
    default = rt.default_model_name()
    for row in rows:
        name = f"{row['name']} (default)" if row["name"] == default else row["name"]
        table.add_row(name, f"{row['size_mb']:.0f} MB", "[green]yes[/]" if row["installed"] else "[dim]no[/]",
                      "[green]yes[/]" if row["assembled"] else "[dim]no[/]", row["description"])
    st.console.print(table)
    missing = [r for r in rows if not r["installed"] and r["install"]]
    if missing:
        st.console.print(Text(f"install a model: {missing[0]['install']}", style="dim"))


@models_app.command("verify")
def models_verify(
    ctx: typer.Context,
    names: Annotated[list[str] | None, typer.Argument(help="Models to verify (default: every installed one).")]
    = None,
) -> None:
    """Re-hash model files against their pinned sha256; exit 1 on any mismatch."""
    st = _state(ctx)
    catalog = _catalog()
    targets = list(names or [e.name for e in catalog.entries() if catalog.installed(e.name)])
    if not targets:
        raise ConfigurationError("no model is installed; see 'tinyagent models list'")
    outcome: list[dict[str, Any]] = []
    with _progress(st) as progress:
        task = progress.add_task("verifying", total=len(targets))
        for name in targets:
            progress.update(task, description=f"hashing {name}")
            try:
                digest = catalog.verify(name)
                outcome.append({"name": name, "ok": True, "sha256": digest})
            except ModelIntegrityError as exc:
                outcome.append({"name": name, "ok": False, "error": str(exc)})
            progress.advance(task)
    if st.json:
        st.emit_json(outcome)
    else:
        for item in outcome:
            if item["ok"]:
                st.console.print(f"[green]✓[/] {item['name']}  sha256 {item['sha256']}")
            else:
                st.console.print(f"[red]✗ {item['name']}[/]  {item['error']}")
    if not all(item["ok"] for item in outcome):
        raise typer.Exit(1)


@demo_app.command("init")
def demo_init(ctx: typer.Context) -> None:
    """Seed the data folder with demo contacts, events, notes, mail and files (idempotent)."""
    st = _state(ctx)
    functions = _optional("tinyagent.functions", "the built-in tool library (tinyagent.functions)")
    info = functions.init_demo(st.data_dir, today=st.today)
    if st.json:
        st.emit_json(info)
        return
    st.console.print(f"demo data in [bold]{info.data_dir}[/] ({info.created} new file(s)): "
                     f"{len(info.contacts)} contacts, {len(info.events)} events, {len(info.notes)} notes, "
                     f"{len(info.files)} files")


def _optional(module: str, what: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if exc.name and module.startswith(exc.name):
            raise ConfigurationError(f"{what} is not available in this build ({exc})") from exc
        raise


# -- serve / voice / mcp ---------------------------------------------------------------------------------------


@app.command()
def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option(help="Interface; keep 127.0.0.1 unless you mean to expose the tools.")]
    = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port.")] = 8765,
    token: Annotated[str | None, typer.Option(envvar="TINYAGENT_SERVER_TOKEN", help="Require this bearer token.")]
    = None,
    max_queue: Annotated[int, typer.Option(help="Requests that may wait; more get 503.")] = 32,
) -> None:
    """Serve the agent over HTTP: /v1/agent/stream (SSE), /v1/agent/run, OpenAI /v1/chat/completions, /health."""
    from .server import ServerSettings
    from .server import serve as serve_agent

    st = _state(ctx)
    agent = st.agent(ask=False)
    settings = ServerSettings(token=token, max_queue=max_queue)
    st.err.print(f"serving {st.model().name} with {len(st.tools())} tools on http://{host}:{port} "
                 f"(token {'required' if token else 'off'}; confirmations {'auto-approved' if st.yes else 'refused'})")
    serve_agent(agent, host=host, port=port, settings=settings)


@app.command()
def voice(
    ctx: typer.Context,
    wav: Annotated[list[Path] | None, typer.Option("--wav", help="WAV file(s) instead of the microphone.")] = None,
    ptt: Annotated[bool, typer.Option("--ptt", help="Push-to-talk (Enter starts and stops) instead of VAD.")]
    = False,
    grammar: Annotated[Path | None, typer.Option(help="A JSGF grammar of the expected commands (more accurate).")]
    = None,
    words: Annotated[Path | None, typer.Option(help="Extra pronunciations, 'word PH ON ES' per line (CMU phones).")]
    = None,
    whisper_model: Annotated[Path | None, typer.Option(help="A whisper.cpp ggml model (needs pywhispercpp).")]
    = None,
    speak: Annotated[bool, typer.Option(help="Speak the answers (espeak-ng).")] = True,
    save_replies: Annotated[Path | None, typer.Option(help="Write each spoken answer to DIR/reply-N.wav.")] = None,
) -> None:
    """The voice assistant: speech in (microphone or WAV), the agent, the answer spoken back."""
    from . import voice as v

    st = _state(ctx)
    stt: v.SpeechToText
    if whisper_model is not None:
        stt = v.WhisperCppSTT(whisper_model, n_threads=st.threads or 2)
    else:
        jsgf = grammar.read_text(encoding="utf-8") if grammar is not None else None
        stt = v.PocketSphinxSTT(grammar=jsgf, words=v.read_pronunciations(words) if words else None)
    tts = v.EspeakTTS() if (speak or save_replies) else None
    assistant = v.VoiceAssistant(st.agent(), stt, tts, today=st.today)
    count = 0

    def show(turn: v.VoiceTurn) -> None:
        nonlocal count
        count += 1
        if st.json:
            st.emit_json({"transcript": turn.transcript, "answer": turn.answer, "error": turn.error,
                          "timings": turn.timings,
                          "result": rt.result_to_dict(turn.result) if turn.result is not None else None})
        else:
            st.console.print(Text.assemble(("heard: ", "bold"), (turn.transcript or "(nothing)", "cyan")))
            if turn.result is not None and turn.result.plans:
                st.console.print(plan_tree(turn.result.plans[-1]))
            st.console.print(answer_panel(turn.answer))
            st.console.print(Text(" · ".join(f"{k} {s:.2f} s" for k, s in turn.timings.items()), style="dim"))
        if save_replies is not None and turn.reply is not None:
            save_replies.mkdir(parents=True, exist_ok=True)
            turn.reply.to_wav(save_replies / f"reply-{count}.wav")

    if wav:
        async def files() -> None:
            for path in wav or []:
                for turn in await assistant.respond_to_wav(path):
                    show(turn)
        asyncio.run(files())
        return

    def wait_for_enter() -> bool:
        try:
            st.console.input("[dim]press Enter to talk/stop, Ctrl-D to quit[/] ")
        except (EOFError, KeyboardInterrupt):
            return False
        return True

    st.console.print("[bold]listening[/] (Ctrl-C to stop)" + (
        " — push-to-talk" if ptt else " — stay quiet for a second while the noise level is measured, then speak"))
    with contextlib.suppress(KeyboardInterrupt):
        assistant.listen(show, mode="ptt" if ptt else "vad", wait_for_key=wait_for_enter if ptt else None,
                         speak=speak)


@mcp_app.command("serve")
def mcp_serve(
    ctx: typer.Context,
    registry: Annotated[str | None, typer.Argument(help="MODULE:ATTR of a registry (default: the --tools set).")]
    = None,
) -> None:
    """Serve tools as an MCP server over stdin/stdout (confirmations are refused unless --yes)."""
    from .._tools import ConfirmationRequest
    from .mcp import load_registry, run_stdio

    st = _state(ctx)
    tools = load_registry(registry) if registry else st.tools()

    def confirm(request: ConfirmationRequest) -> bool:
        return bool(st.yes)

    st.err.print(f"MCP server over stdio with {len(tools)} tools")
    run_stdio(tools, confirm=confirm, today=st.today)


@mcp_app.command("tools", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def mcp_tools(
    ctx: typer.Context,
    command: Annotated[str, typer.Argument(help="The MCP server command (its arguments follow).")],
) -> None:
    """List the tools an MCP server (started over stdio) offers, as the planner would see them."""
    from .mcp import tools_from_mcp

    st = _state(ctx)
    tools = ToolRegistry(tools_from_mcp(command, list(ctx.args)))
    if st.json:
        st.emit_json(tools.to_openai())
        return
    st.console.print(_tools_table(tools))


# -- eval and the other issues' commands ----------------------------------------------------------------------------


@eval_app.command("bfcl")
def eval_bfcl_cmd(
    ctx: typer.Context,
    data_dir: Annotated[Path | None, typer.Option("--data-dir", help="BFCL data (the bfcl-eval wheel or folder).")]
    = None,
    categories: Annotated[str, typer.Option(help="Comma-separated categories.")] =
    "simple_python,multiple,parallel,parallel_multiple,irrelevance",
    limit: Annotated[int | None, typer.Option(help="Cases per category.")] = None,
    output: Annotated[Path | None, typer.Option(help="Predictions JSONL.")] = None,
) -> None:
    """Run the planner over BFCL and print accuracy per category."""
    st = _state(ctx)
    bfcl = _optional("tinyagent.evals.bfcl", "the BFCL evaluation (tinyagent.evals.bfcl)")
    cats = [c.strip() for c in categories.split(",") if c.strip()]
    model = st.model()
    with _progress(st) as progress:
        task = progress.add_task("BFCL", total=None)

        def tick(result: Any) -> None:
            progress.update(task, advance=1, description=f"BFCL {getattr(result, 'category', '')}")

        report = bfcl.eval_bfcl(data_dir, cats, limit, output, model=model, today=st.today, on_result=tick)
    if st.json:
        st.emit_json(report.to_dict())
        return
    table = Table(title=f"BFCL · {report.system} · {report.elapsed_s:.1f} s", title_justify="left")
    for col, justify in (("category", "left"), ("correct", "right"), ("total", "right"), ("accuracy", "right"),
                         ("errors", "right"), ("mean s", "right")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for row in report.rows():
        style = "bold" if row.category == "overall" else ""
        table.add_row(row.category, str(row.correct), str(row.total), f"{row.accuracy:.1%}", str(row.errors),
                      f"{row.mean_s:.2f}", style=style)
    st.console.print(table)


@eval_app.command("functions")
def eval_functions_cmd(
    ctx: typer.Context,
    split: Annotated[str, typer.Option(help="train, test or all.")] = "test",
    limit: Annotated[int | None, typer.Option(help="At most this many cases.")] = None,
    output: Annotated[Path | None, typer.Option(help="Predictions JSONL ({id, calls}).")] = None,
) -> None:
    """Plan the built-in tools' eval set and score DAG and strict success."""
    st = _state(ctx)
    scoring = _optional("tinyagent.scoring", "the eval set scorer (tinyagent.scoring)")
    cases = scoring.load_evalset(None if split == "all" else split)[: limit or None]
    agent = st.agent(ask=False)
    preds: dict[str, Any] = {}
    lines: list[dict[str, Any]] = []

    async def go() -> None:
        with _progress(st) as progress:
            task = progress.add_task("planning", total=len(cases))
            for case in cases:
                try:
                    result = await agent.plan(case.query, today=case.today)
                    preds[case.id] = result.plan
                    lines.append({"id": case.id, "calls": result.plan.to_json()})
                except TinyAgentError as exc:
                    preds[case.id] = None
                    lines.append({"id": case.id, "calls": [], "error": str(exc)})
                progress.advance(task)

    asyncio.run(go())
    report = scoring.score(preds, cases, st.tools())
    if output is not None:
        output.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    if st.json:
        st.emit_json(report)
        return
    table = Table(title=f"eval set ({split}) · {report['n']} cases · model {st.model().name}", title_justify="left")
    table.add_column("metric")
    table.add_column("correct", justify="right")
    table.add_column("rate", justify="right")
    table.add_row("DAG success", str(report["dag_correct"]), f"{report['dag_success']:.1%}")
    table.add_row("strict success", str(report["strict_correct"]), f"{report['strict_success']:.1%}")
    st.console.print(table)


_PASSTHROUGH = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}


def _delegate(module: str, candidates: Sequence[str], args: list[str], what: str) -> None:
    """Hand ``args`` to another issue's command-line entry point (``fn(argv) -> int | None``)."""
    mod = _optional(module, what)
    for name in candidates:
        fn: Callable[..., Any] | None = getattr(mod, name, None)
        if callable(fn):
            code = fn(args)
            if isinstance(code, int) and code:
                raise typer.Exit(code)
            return
    raise ConfigurationError(f"{module} has no command-line entry point ({', '.join(candidates)}); "
                             "it is not wired into this build yet")


@app.command(context_settings=_PASSTHROUGH)
def distill(ctx: typer.Context) -> None:
    """Synthesise training data with a teacher model (tinyagent.finetune; arguments pass through)."""
    _delegate("tinyagent.finetune", ("cli_distill", "distill_main"), list(ctx.args), "fine-tuning (tinyagent.finetune)")


@app.command(context_settings=_PASSTHROUGH)
def finetune(ctx: typer.Context) -> None:
    """LoRA fine-tune the planner on your tools (tinyagent.finetune; arguments pass through)."""
    _delegate("tinyagent.finetune", ("cli_finetune", "finetune_main", "main"), list(ctx.args),
              "fine-tuning (tinyagent.finetune)")


@app.command(context_settings=_PASSTHROUGH)
def quant(ctx: typer.Context) -> None:
    """Quantize or export a model (tinyagent.quant; arguments pass through)."""
    _delegate("tinyagent.quant", ("cli_quant", "main"), list(ctx.args), "quantization (tinyagent.quant)")


# -- entry point ------------------------------------------------------------------------------------------------------


def _own_options(args: Sequence[str]) -> tuple[set[str], int]:
    """The option names the command named in ``args`` defines itself, and the index of its name."""
    command: Any = typer.main.get_command(app)
    skip_value = False
    start = len(args)
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if skip_value:
            skip_value = False
            continue
        if arg.startswith("-"):
            skip_value = arg in GLOBAL_OPTIONS
            continue
        if arg not in getattr(command, "commands", {}):
            break
        command = command.commands[arg]
        start = i
    if start == len(args):
        return set(), start
    return {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)}, start


def hoist_global_options(argv: Sequence[str]) -> list[str]:
    """Move global options written after the command (``tinyagent chat --model X``) in front of it.

    An option the command defines itself (``eval bfcl --data-dir``) stays with the command.
    """
    args = list(argv)
    own, start = _own_options(args)
    front: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest.extend(args[i:])
            break
        name = arg.split("=", 1)[0]
        if name in own and i > start:
            rest.append(arg)
        elif name in GLOBAL_FLAGS:
            front.append(arg)
        elif name in GLOBAL_OPTIONS:
            # ``plan --tools``: a global option; its value comes along.
            if "=" in arg:
                front.append(arg)
            elif i + 1 < len(args):
                front.extend(args[i : i + 2])
                i += 1
            else:
                rest.append(arg)
        else:
            rest.append(arg)
        i += 1
    return front + rest


def run_cli(argv: Sequence[str] | None = None, *, console: Console | None = None, err: Console | None = None) -> int:
    """Run the CLI with ``argv`` (default: ``sys.argv[1:]``) and return the exit code.

    Args:
        argv: the arguments.
        console: where normal output goes (inject a recording Console in tests).
        err: where progress and errors go (default: stderr).
    """
    args = hoist_global_options(sys.argv[1:] if argv is None else argv)
    err_console = err or Console(stderr=True)
    obj = {"console": console, "err": err_console}
    try:
        # Without standalone mode, click returns the code of a ``typer.Exit`` instead of raising it.
        code = app(args=args, prog_name="tinyagent", standalone_mode=False, obj=obj)
    except typer.Exit as exc:
        return int(exc.exit_code or 0)
    except SystemExit as exc:  # click's own exits (--help, usage errors handled below)
        return int(exc.code or 0) if isinstance(exc.code, int | None) else 1
    except (typer.Abort, KeyboardInterrupt):
        err_console.print("[yellow]aborted[/]")
        return 130
    except TinyAgentError as exc:
        err_console.print(f"[red]error:[/] {exc}", highlight=False)
        return 1
    except Exception as exc:
        # Usage errors (typer vendors click, so match them by shape rather than by class).
        show, exit_code = getattr(exc, "show", None), getattr(exc, "exit_code", None)
        if callable(show) and isinstance(exit_code, int):
            show(file=err_console.file)
            return exit_code
        raise
    return code if isinstance(code, int) else 0


def main() -> None:
    """The ``tinyagent`` console script."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    raise SystemExit(run_cli())


if __name__ == "__main__":
    main()
