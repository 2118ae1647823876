"""Rich rendering for the apps: plan trees, the live run view, answers, and the terminal confirmation prompt."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.panel import Panel
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from .. import Call, ConfirmationRequest, Plan

__all__ = ["RichConfirm", "RunView", "answer_panel", "plan_tree", "usage_line"]

_STATUS_STYLE = {
    "planned": ("·", "dim"),
    "running": ("…", "yellow"),
    "ok": ("✓", "green"),
    "error": ("✗", "red"),
    "timeout": ("⏱", "red"),
    "skipped": ("–", "dim"),
}


def _call_text(call: Call) -> str:
    return call.to_text().split(". ", 1)[1] if ". " in call.to_text() else call.to_text()


def plan_tree(plan: Plan, title: str = "Plan") -> Tree:
    """The plan as a tree: each step hangs under the latest step it depends on (roots run first, in parallel)."""
    root = Tree(Text(title, style="bold"))
    if not plan.calls:
        root.add(Text(plan.answer or "(no tool calls: answer directly)", style="italic"))
        return root
    nodes: dict[int, Tree] = {}
    for call in plan.calls:
        deps = sorted(d for d in call.deps if d in nodes)
        parent = nodes[deps[-1]] if deps else root
        label = Text.assemble((f"{call.id}. ", "bold cyan"), (_call_text(call), ""))
        if len(deps) > 1:
            label.append(f"  (after {', '.join(f'${d}' for d in deps)})", style="dim")
        nodes[call.id] = parent.add(label)
    return root


@dataclass
class _Row:
    call: Call
    status: str = "planned"
    started: float | None = None
    elapsed_s: float | None = None
    detail: str = ""


@dataclass
class RunView:
    """The live view of a run: one row per step with its status and time, fed with run events.

    Attributes:
        rows: the steps, by id.
        notes: replanning and error notes.
        streaming: the answer's text so far, as the joiner writes it (shown until the final answer arrives).
    """

    rows: dict[int, _Row] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    answer: str | None = None
    streaming: str = ""
    streaming_attempt: int = 0
    started: float = field(default_factory=time.perf_counter)

    def update(self, event: Any) -> None:
        """Apply one run event (typed event object or its dict)."""
        data = event.to_dict() if hasattr(event, "to_dict") else dict(event)
        kind = data.get("type")
        if kind == "step_planned":
            call = Call.from_json(data)
            self.rows[call.id] = _Row(call)
        elif kind == "tool_started":
            row = self.rows.get(int(data["step"]))
            if row is None:
                row = self.rows[int(data["step"])] = _Row(Call(int(data["step"]), str(data["name"]), {}))
            row.status, row.started = "running", time.perf_counter()
        elif kind == "tool_finished":
            step = int(data["id"])
            row = self.rows.get(step)
            if row is None:
                row = self.rows[step] = _Row(Call(step, str(data["name"]), {}))
            row.status = str(data.get("status", "ok"))
            row.elapsed_s = float(data.get("elapsed_s") or 0.0)
            if row.status != "ok":
                row.detail = str(data.get("error") or "")
            else:
                row.detail = _short(data.get("result"))
        elif kind == "answer_delta":
            attempt = int(data.get("attempt") or 0)
            if attempt != self.streaming_attempt:  # a replan's answer replaces the earlier one
                self.streaming, self.streaming_attempt = "", attempt
            self.streaming += str(data.get("text", ""))
        elif kind == "replanning":
            self.notes.append(f"replanning (attempt {data.get('attempt')}): {data.get('reason', '')}")
        elif kind == "answer":
            self.answer = str(data.get("answer", ""))
        elif kind == "error":
            self.notes.append(f"error: {data.get('message', '')}")

    def __rich__(self) -> RenderableType:
        table = Table(show_header=True, header_style="bold", box=None, pad_edge=False, expand=False)
        table.add_column("#", justify="right", style="cyan", no_wrap=True)
        table.add_column("step", overflow="fold", min_width=24, ratio=3)
        table.add_column("status", no_wrap=True)
        table.add_column("time", justify="right", no_wrap=True)
        table.add_column("result", overflow="ellipsis", max_width=48, no_wrap=True, ratio=2)
        now = time.perf_counter()
        for step in sorted(self.rows):
            row = self.rows[step]
            symbol, style = _STATUS_STYLE.get(row.status, ("?", ""))
            status: RenderableType = Text(f"{symbol} {row.status}", style=style)
            if row.status == "running":
                status = Spinner("dots", text=Text("running", style="yellow"))
            if row.elapsed_s is not None:
                elapsed = f"{row.elapsed_s:.2f}s"
            elif row.started is not None:
                elapsed = f"{now - row.started:.1f}s"
            else:
                elapsed = ""
            table.add_row(str(step), _call_text(row.call), status, elapsed, Text(row.detail, style="dim"))
        parts: list[RenderableType] = []
        if self.rows:
            parts.append(table)
        elif self.answer is None:
            parts.append(Spinner("dots", text=Text(f"planning… {now - self.started:.1f}s", style="dim")))
        parts.extend(Text(n, style="magenta") for n in self.notes)
        if self.answer is None and self.streaming:
            parts.append(Text.assemble(("answer: ", "bold green"), self.streaming))
        return Group(*parts)


def _short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def answer_panel(answer: str, title: str = "Answer") -> Panel:
    """The final answer in a panel."""
    return Panel(Text(answer or "(no answer)"), title=title, title_align="left", border_style="green")


def usage_line(result: Any) -> Text:
    """``3 step(s) · 1 plan(s) · 812 tokens · 3.41 s (plan 2.10 · run 0.20 · answer 1.11, first words 0.31)``."""
    usage = getattr(result, "usage", None)
    tokens = (getattr(usage, "input_tokens", 0) + getattr(usage, "output_tokens", 0)) if usage else 0
    timings: Mapping[str, float] = getattr(result, "timings", {}) or {}
    steps = len(getattr(result, "steps", []) or [])
    plans = len(getattr(result, "plans", []) or [])
    total = timings.get("total", 0.0)
    line = f"{steps} step(s) · {plans} plan(s) · {tokens} tokens · {total:.2f} s"
    if "plan" in timings and "join" in timings:
        stages = f"plan {timings['plan']:.2f} · run {timings.get('execute', 0.0):.2f} · answer {timings['join']:.2f}"
        if "join_first_token" in timings:
            stages += f", first words {timings['join_first_token']:.2f}"
        line += f" ({stages})"
    return Text(line, style="dim")


class RichConfirm:
    """The CLI's confirmation hook: asks y/N on a terminal (pausing the live view), refuses without one.

    Args:
        console: where to ask.
        auto_yes: approve everything without asking (``--yes``, for scripts).
        is_tty: whether a human can answer (default: stdin is a terminal).
        live: a function returning the live view to pause while asking, if any.
    """

    def __init__(
        self,
        console: Console,
        *,
        auto_yes: bool = False,
        is_tty: bool | None = None,
        live: Callable[[], Live | None] | None = None,
    ) -> None:
        self.console = console
        self.auto_yes = auto_yes
        self.is_tty = sys.stdin.isatty() if is_tty is None else is_tty
        self.live = live or (lambda: None)
        self._lock = asyncio.Lock()
        self.asked: list[tuple[ConfirmationRequest, bool]] = []

    def _describe(self, request: ConfirmationRequest) -> Text:
        details = ", ".join(f"{k}={v!r}" for k, v in request.details.items() if k not in ("body", "text", "content"))
        return Text.assemble((request.tool or "a tool", "bold"), f" wants to {request.action}",
                             f" ({details})" if details else "")

    async def __call__(self, request: ConfirmationRequest) -> bool:
        async with self._lock:  # parallel steps ask one at a time
            if self.auto_yes:
                self.console.print(Text("auto-approved (--yes): ", style="dim") + self._describe(request))
                self.asked.append((request, True))
                return True
            if not self.is_tty:
                self.console.print(Text("refused (no terminal to ask; pass --yes to allow): ", style="yellow")
                                   + self._describe(request))
                self.asked.append((request, False))
                return False
            live = self.live()
            if live is not None:
                live.stop()
            try:
                answer = await asyncio.to_thread(self._ask, request)
            finally:
                if live is not None:
                    live.start()
            self.asked.append((request, answer))
            return answer

    def _ask(self, request: ConfirmationRequest) -> bool:
        try:
            reply = self.console.input(self._describe(request) + Text(". Allow? [y/N] ", style="bold yellow"))
        except (EOFError, KeyboardInterrupt):
            return False
        return reply.strip().lower() in ("y", "yes")
