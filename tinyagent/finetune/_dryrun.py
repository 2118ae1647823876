"""Dry runs: execute a plan against the real tools on a scratch copy of the data, with sends going to an outbox.

Every plan gets a fresh copy of the data folder, so one plan's writes never leak into the next, and the user's own
data is never touched. Confirmations are approved (nothing leaves the machine: SMTP is switched off, so mail and
messages land in the scratch outbox). A tool that asks the model for help (``summarize_file``) gets a scripted
model, so a dry run never loads a real model.

Errors that only mean "the scratch data has no such item" (a contact the request names but the demo data lacks) do
not condemn a plan: they are tolerated by default and counted separately.
"""

from __future__ import annotations

import datetime as dt
import logging
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._plan import Plan
from .._tools import ConfirmationRequest, Tool, ToolContext
from ..errors import PlanValidationError, TinyAgentError

__all__ = ["DATA_MISSES", "ToolDryRun", "builtin_dry_run"]

log = logging.getLogger(__name__)

#: error types that mean "the scratch data lacks this item", not "the plan is wrong".
DATA_MISSES = ("ContactNotFound", "AmbiguousContact", "ContactFieldMissing", "ItemNotFound")


def _approve(request: ConfirmationRequest) -> bool:
    return True


class ToolDryRun:
    """Runs plans against tools built over a scratch copy of ``data_dir``.

    Args:
        make_tools: builds the tools over a given data folder.
        data_dir: the folder copied for each plan (None: an empty folder).
        tolerate: error type names that do not fail a plan (see :data:`DATA_MISSES`).
        model: the model tools may call through their context (default: a scripted one).
        hint: facts about the data (names, files …) for request synthesis.
        cleanup: a callable run by :meth:`close`.

    Attributes:
        tolerated: counts of tolerated error types.
        runs: how many plans were run.
    """

    def __init__(
        self,
        make_tools: Callable[[Path], Sequence[Tool]],
        data_dir: str | Path | None = None,
        *,
        tolerate: Sequence[str] = DATA_MISSES,
        model: Any = None,
        hint: str = "",
        cleanup: Callable[[], None] | None = None,
    ) -> None:
        self.make_tools = make_tools
        self.data_dir = Path(data_dir) if data_dir is not None else None
        self.tolerate = frozenset(tolerate)
        if model is None:
            from ..models import ScriptedModel

            model = ScriptedModel(["A short summary of the document."], name="dry-run")
        self.model = model
        self.hint = hint
        self._cleanup = cleanup
        self.tolerated: Counter[str] = Counter()
        self.runs = 0

    async def __call__(self, plan: Plan, today: dt.date) -> Mapping[int, str]:
        """Execute ``plan``; return ``{step: "ErrorType: message"}`` for steps that failed (empty: clean run)."""
        from .._executor import Executor

        self.runs += 1
        with tempfile.TemporaryDirectory(prefix="tinyagent-dryrun-") as tmp:
            scratch = Path(tmp) / "data"
            if self.data_dir is not None and self.data_dir.is_dir():
                shutil.copytree(self.data_dir, scratch, symlinks=True)
            else:
                scratch.mkdir()
            tools = {t.name: t for t in self.make_tools(scratch)}
            context = ToolContext(confirm_hook=_approve, model=self.model, today=today)
            try:
                records = await Executor(tools, context).execute_plan(plan)
            except PlanValidationError as exc:
                return {exc.step or 0: f"PlanValidationError: {exc}"}
            except TinyAgentError as exc:
                return {0: f"{type(exc).__name__}: {exc}"}
        failures: dict[int, str] = {}
        for sid, record in sorted(records.items()):
            if record.status in ("error", "timeout"):
                if record.error_type in self.tolerate:
                    self.tolerated[str(record.error_type)] += 1
                else:
                    failures[sid] = f"{record.error_type}: {record.error}"
            elif record.status == "skipped":
                # Skipped because a dependency failed; only a real failure upstream condemns the plan.
                continue
        return failures

    def close(self) -> None:
        """Remove scratch templates this dry run created."""
        if self._cleanup is not None:
            self._cleanup()
            self._cleanup = None

    def __enter__(self) -> ToolDryRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def builtin_dry_run(
    settings: Any = None,
    *,
    data_dir: str | Path | None = None,
    tolerate: Sequence[str] = DATA_MISSES,
) -> ToolDryRun:
    """A dry run for the built-in tools (:func:`tinyagent.functions.builtin_tools`).

    Args:
        settings: :class:`~tinyagent.functions.FunctionsSettings` to start from (its data folder is copied, never
            written); SMTP, message transports and URL openers are switched off.
        data_dir: the data folder to copy; default: ``settings.data_dir`` when settings are given, else a freshly
            seeded demo data set (``init_demo``).
        tolerate: error type names that do not fail a plan.

    Returns:
        A :class:`ToolDryRun`; call :meth:`ToolDryRun.close` (or use ``with``) to remove the demo template.

    Raises:
        MissingDependencyError: the ``functions`` extra is not installed.
    """
    from ..functions import FunctionsSettings, builtin_tools, init_demo

    base = settings if settings is not None else FunctionsSettings(timezone="UTC")
    cleanup = None
    hint = ""
    source = Path(data_dir) if data_dir is not None else (Path(base.data_dir) if settings is not None else None)
    if source is None:
        holder = tempfile.TemporaryDirectory(prefix="tinyagent-demo-")
        source = Path(holder.name) / "data"
        info = init_demo(source)
        cleanup = holder.cleanup
        parts = [f"contacts: {', '.join(info.contacts)}"]
        if info.notes:
            parts.append(f"notes: {', '.join(info.notes)}")
        if info.files:
            parts.append(f"files: {', '.join(_relative(f, source) for f in info.files)}")
        hint = "; ".join(parts)

    def make_tools(folder: Path) -> Sequence[Tool]:
        scratch = base.model_copy(update={"data_dir": folder, "roots": (), "smtp_host": None,
                                          "message_transport": None, "url_opener": None})
        return builtin_tools(scratch)

    return ToolDryRun(make_tools, source, tolerate=tolerate, hint=hint, cleanup=cleanup)


def _relative(path: Path, root: Path) -> str:
    try:
        return str(Path(path).relative_to(root))
    except ValueError:
        return Path(path).name
