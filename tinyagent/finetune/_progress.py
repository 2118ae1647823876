"""Progress reporting: the library emits small events; apps render them (rich bars in ``__main__`` and the CLI)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ProgressCallback", "ProgressEvent", "emit"]

log = logging.getLogger("tinyagent.finetune")


@dataclass(frozen=True)
class ProgressEvent:
    """One progress update.

    Attributes:
        stage: ``"requests"``, ``"plans"``, ``"train"``, ``"estimate"``, ``"export"``, ``"eval"`` …
        done: units done so far in this stage.
        total: units in this stage (0 when unknown).
        message: a short human-readable note.
        metrics: numbers worth showing (loss, seconds per step, kept/dropped counts …).
    """

    stage: str
    done: int = 0
    total: int = 0
    message: str = ""
    metrics: Mapping[str, Any] = field(default_factory=dict)


ProgressCallback = Callable[[ProgressEvent], None]


def emit(callback: ProgressCallback | None, event: ProgressEvent) -> None:
    """Log ``event`` and hand it to ``callback`` (when there is one)."""
    if event.message:
        log.debug("%s %d/%d %s", event.stage, event.done, event.total, event.message)
    if callback is not None:
        callback(event)
