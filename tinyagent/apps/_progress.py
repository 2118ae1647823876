"""Rich progress bars for the library's progress events (fine-tuning, export, quantization, classifier training)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.text import Text

__all__ = ["RichProgress"]

_LABELS = {
    "requests": "writing requests",
    "plans": "planning + verifying",
    "estimate": "estimate",
    "train": "training",
    "export": "exporting",
    "eval": "evaluating",
}


class RichProgress:
    """Renders :class:`~tinyagent.finetune.ProgressEvent` updates as rich progress bars (one bar per stage).

    It is the ``progress`` callback the library takes; the library itself never prints.

    Args:
        console: the rich console to draw on (default: stderr).
    """

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self.progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            TimeRemainingColumn(), TextColumn("{task.fields[note]}", markup=False), console=self.console,
        )
        self.tasks: dict[str, Any] = {}

    def __call__(self, event: Any) -> None:
        if event.stage == "estimate":
            self.console.print(Text.assemble(("Estimate: ", "yellow"), event.message))
            return
        label = _LABELS.get(event.stage, event.stage)
        note = event.message[:60]
        if event.stage == "plans" and event.metrics:
            note = f"kept {event.metrics.get('kept', 0)}, dropped {event.metrics.get('dropped', 0)}"
        if event.stage not in self.tasks:
            self.tasks[event.stage] = self.progress.add_task(label, total=event.total or None, note=note)
        self.progress.update(self.tasks[event.stage], completed=event.done, total=event.total or None, note=note)

    def stage(self, stage: str, done: int, total: int) -> None:
        """The ``(stage, done, total)`` callback style (the retrieval classifier's trainer)."""
        if stage not in self.tasks:
            self.tasks[stage] = self.progress.add_task(stage, total=total, note="")
        self.progress.update(self.tasks[stage], completed=done, total=total)

    @contextmanager
    def live(self) -> Iterator[RichProgress]:
        """Draw the bars while the block runs."""
        with self.progress:
            yield self
