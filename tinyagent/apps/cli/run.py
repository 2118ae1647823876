"""``tinyagent run``, ``chat`` and ``plan``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.live import Live
from rich.panel import Panel
from rich.text import Text

from ...errors import ConfigurationError, TinyAgentError
from .. import _runtime as rt
from .._files import writable
from .._render import RunView, answer_panel, plan_tree, usage_line
from ._app import AppState, app, progress, state
from ._input import PlanRecord, read_plan_records
from .catalog import tools_table

__all__ = ["chat", "plan", "run", "warm"]


async def run_live(st: AppState, agent: Any, query: str, history: Sequence[dict[str, str]] = ()) -> Any:
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


def show_result(st: AppState, result: Any) -> None:
    """The answer panel and usage line (or the whole result as JSON)."""
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
    st = state(ctx)
    agent = st.agent()
    result = asyncio.run(run_live(st, agent, query))
    show_result(st, result)


@app.command()
def chat(ctx: typer.Context) -> None:
    """A conversation: follow-ups keep the context. /exit quits, /reset forgets, /tools lists the tools."""
    st = state(ctx)
    agent = st.agent()
    with contextlib.suppress(ImportError):
        import readline  # noqa: F401 - line editing and history for input()
    asyncio.run(_chat_loop(st, agent))


def _chat_command(st: AppState, text: str, history: list[dict[str, str]]) -> bool:
    """Handle a ``/command``; return whether ``text`` was one."""
    if text == "/reset":
        history.clear()
        st.console.print(Text("conversation forgotten", style="dim"))
    elif text == "/tools":
        st.console.print(tools_table(st.tools()))
    elif text == "/history":
        for turn in history:
            st.console.print(Text.assemble((f"{turn['role']}: ", "bold"), turn["content"]))
    else:
        return False
    return True


async def _chat_loop(st: AppState, agent: Any) -> None:
    console = st.console
    console.print(Panel(Text.assemble(("tinyagent chat", "bold"), f" · model {st.model().name} · "
                                      f"{len(st.tools())} tools\n", ("/exit quits, /reset forgets the conversation, "
                                                                      "/tools lists tools", "dim")),
                        border_style="blue"))
    history: list[dict[str, str]] = []
    # While the user types the first request, the planner prompt's static start is evaluated (and saved): the
    # first request then starts from it (it waits for the rest of the warm step if it comes sooner).
    warming = asyncio.create_task(_warm_quietly(agent))
    while True:
        try:
            line = await asyncio.to_thread(console.input, "[bold green]you>[/] ")
        except (EOFError, KeyboardInterrupt):
            console.print()
            await warming  # (llama.cpp must not be mid-evaluation when the process exits)
            return
        text = line.strip()
        if not text:
            continue
        if text in ("/exit", "/quit"):
            await warming
            return
        if _chat_command(st, text, history):
            continue
        await warming
        try:
            result = await run_live(st, agent, text, history)
        except TinyAgentError as exc:
            st.error(str(exc))
            continue
        show_result(st, result)
        history += [{"role": "user", "content": text}, {"role": "assistant", "content": str(result.answer)}]


@app.command()
def plan(
    ctx: typer.Context,
    query: Annotated[str | None, typer.Argument(help="A request to plan (omit with --input).")] = None,
    input_file: Annotated[Path | None, typer.Option(
        "--input", "-i", help="JSONL of {id, query, today?} (UTF-8, or UTF-16/UTF-8 with a BOM).")] = None,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="JSONL of {id, calls, answer?} (missing folders are created).")] = None,
) -> None:
    """Plan without executing: show the DAG as a tree, or plan a JSONL batch."""
    st = state(ctx)
    if (query is None) == (input_file is None):
        raise ConfigurationError("give either a QUERY or --input FILE.jsonl (not both)")
    if input_file is not None:
        records = read_plan_records(input_file)  # every line is checked before the model loads
        agent = st.agent(ask=False)
        asyncio.run(_plan_batch(st, agent, records, writable(output) if output is not None else None))
        return
    agent = st.agent(ask=False)
    result = agent.plan_sync(query, today=st.today)
    if st.json:
        st.emit_json(result.to_dict())
        return
    st.console.print(plan_tree(result.plan, title=f"Plan for: {query}"))
    st.console.print(Text(f"{len(result.plan.calls)} call(s) · {result.elapsed_s:.2f} s · "
                          f"{result.prompt_tokens} prompt tokens · model {result.model}", style="dim"))


async def _plan_one(st: AppState, agent: Any, number: int, record: PlanRecord) -> dict[str, Any]:
    ident = record.id if record.id is not None else number
    try:
        result = await agent.plan(record.query, today=record.today or st.today)
    except TinyAgentError as exc:
        return {"id": ident, "calls": [], "error": f"{type(exc).__name__}: {exc}"}
    line: dict[str, Any] = {"id": ident, "calls": result.plan.to_json()}
    if result.plan.answer is not None:
        line["answer"] = result.plan.answer
    return line


async def _plan_batch(st: AppState, agent: Any, records: list[tuple[int, PlanRecord]], output: Path | None) -> None:
    failures = 0
    with contextlib.ExitStack() as stack:
        out_handle = stack.enter_context(output.open("w", encoding="utf-8")) if output is not None else None
        bar = stack.enter_context(progress(st))
        task = bar.add_task("planning", total=len(records))
        for number, record in records:
            line = await _plan_one(st, agent, number, record)
            failures += "error" in line
            text = json.dumps(line, ensure_ascii=False)
            if out_handle is not None:
                out_handle.write(text + "\n")
                out_handle.flush()
            else:
                st.console.out(text, highlight=False)
            bar.advance(task)
    if output is not None:
        st.err.print(Text(f"planned {len(records)} request(s) into {output} ({failures} failed)"))


async def _warm_quietly(agent: Any) -> None:
    """:meth:`Agent.warm`, whose failure only costs the first request its head start (logged, not shown)."""
    try:
        await agent.warm()
    except TinyAgentError as exc:
        logging.getLogger("tinyagent.apps").info("warm-up skipped: %s", exc)


@app.command()
def warm(ctx: typer.Context) -> None:
    """Evaluate the planner prompt's static start (rules; the tool list too when every tool is offered) for these
    tools and this model once, and save it to the on-disk prefix cache: the first request of every later process
    then loads it instead of evaluating it (the README's install command runs this after 'demo init')."""
    st = state(ctx)
    agent = st.agent(ask=False)
    started = time.perf_counter()
    saved = agent.warm_sync()
    seconds = round(time.perf_counter() - started, 2)
    if st.json:
        st.emit_json({"tokens_saved": saved, "seconds": seconds})
        return
    st.console.print(Text(f"saved a {saved}-token prompt prefix in {seconds:.1f} s" if saved else
                          "nothing to save: the prefix is saved already, or this model has no prefix cache",
                          style="dim"))
