"""The joiner's prompt, evaluated ahead: while the plan's steps still run, its KV cache fills with what is known.

The joiner continues the planner's conversation (:func:`~tinyagent._prompts.build_joiner_followup`): the plan, then a
line per step result, then the instruction. The model is idle while tools run, so as soon as the plan is written
the prompt's head is evaluated, and each result as its step finishes (lines in step order, each labelled with its
call, exactly as the joiner's prompt has them: a line waits for the steps before it). When the join comes, only the
last line, the block's end and the instruction are left to evaluate. On a model without ``prefill`` (remote
endpoints, test doubles) nothing happens. The prompt is the one the joiner always had, token for token.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from .._events import StepRecord
from .._plan import find_refs
from .._prompts import build_joiner_followup
from .._tools import Tool
from ..errors import TinyAgentError
from ..models import Model
from ._template import template_covers

__all__ = ["JoinWarmer", "Prefills", "finished_lines", "joiner_needed"]

log = logging.getLogger("tinyagent.run")


@runtime_checkable
class Prefills(Protocol):
    """A model that can evaluate a prompt's start ahead of the request (:meth:`LlamaCppModel.prefill`)."""

    def prefill(self, messages: Sequence[dict[str, Any]]) -> Awaitable[int]: ...


def finished_lines(records: Mapping[int, StepRecord], finished: Collection[int] | None = None,
                   attempt: int = -1) -> list[str]:
    """The joiner's result lines known so far: in step order (the joiner's prompt), up to the first step of
    ``attempt`` not in ``finished`` (a later line waits for it, so each prompt is a prefix of the next); every
    line when ``finished`` is None. Each result is written for the joiner (:meth:`StepRecord.observation` with the
    steps that used it), so a line is the same whether evaluated ahead or at the join."""
    users: dict[int, list[int]] = {k: [] for k in records}
    for k in sorted(records):
        for ref in find_refs(records[k].args or {}):
            if ref.step in users and k not in users[ref.step]:
                users[ref.step].append(k)
    lines = []
    for k in sorted(records):
        if finished is not None and records[k].attempt == attempt and k not in finished:
            break
        lines.append(records[k].observation(used_by=users[k]))
    return lines


class JoinWarmer:
    """Evaluates the joiner's prompt into ``model``'s KV cache as its parts become known (one attempt).

    Args:
        model: the joiner model (it continues the planner's conversation, so it must be the planner's model).
        planner_messages: the planner request's messages.
        query: the user's request.
        boundary: the run's data marker.
        records: the run's steps (read when a step finishes).
        attempt: the attempt whose steps are running (earlier attempts' steps come first, by number).
        needed: decides, from the records, whether the joiner model will answer at all (``joiner="auto"`` answers
            from the template when it covers the results; evaluating ahead then is wasted work).
    """

    def __init__(self, model: Model, planner_messages: Sequence[Mapping[str, Any]], query: str, boundary: str,
                 records: Mapping[int, StepRecord], attempt: int,
                 needed: Callable[[Mapping[int, StepRecord]], bool]) -> None:
        self.model = model
        self._planner_messages = planner_messages
        self._query = query
        self._boundary = boundary
        self._records = records
        self._attempt = attempt
        self._needed = needed
        self.plan_text: str | None = None
        self.finished: list[int] = []
        """Step ids of this attempt that finished, in the order they finished."""
        self.evaluated = 0
        """Prompt tokens evaluated ahead so far."""
        self._task: asyncio.Task[None] | None = None
        self._dirty = False
        self._closed = False
        self._last: list[dict[str, Any]] | None = None

    def plan_done(self, plan_text: str) -> None:
        """The plan is written (the model is free): the prompt's head can be evaluated."""
        self.plan_text = plan_text
        self._kick()

    def step_finished(self, record: StepRecord) -> None:
        """A step of this attempt finished: its result line can be evaluated."""
        if record.id not in self.finished:
            self.finished.append(record.id)
        self._kick()

    def close(self) -> None:
        """Evaluate nothing more ahead (an evaluation already handed to the model completes)."""
        self._closed = True

    async def settle(self) -> None:
        """The join starts: let a scheduled evaluation reach the model first, then close.

        Its prompt is a prefix of the join's, and the join's request queues behind it on the llama.cpp thread, so
        the work is not lost; only a later line (a step that finished meanwhile) is left to the join itself.
        """
        if self._task is not None and not self._task.done():
            await asyncio.sleep(0)  # the task's first step hands its evaluation to the model's thread
        self.close()

    def messages(self) -> list[dict[str, Any]]:
        """The joiner's prompt so far: the data block left open after the finished steps' lines."""
        lines = finished_lines(self._records, set(self.finished), self._attempt)
        return build_joiner_followup(self._planner_messages, self.plan_text or "", self._query, lines,
                                     allow_replan=False, boundary=self._boundary, open_end=True)

    def _kick(self) -> None:
        if self._closed or self.plan_text is None or not self._needed(self._records):
            return
        if self._task is not None and not self._task.done():
            self._dirty = True  # the running evaluation picks up the new line when it ends
            return
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        prefill = self.model.prefill if isinstance(self.model, Prefills) else None
        while prefill is not None and not self._closed:
            self._dirty = False
            messages = self.messages()
            if messages != self._last:
                self._last = messages
                try:
                    self.evaluated += await prefill(messages)
                except TinyAgentError as exc:  # evaluating ahead is an optimisation: the join still runs in full
                    log.debug("joiner prefill failed: %s", exc)
                    return
            if not self._dirty:
                return

    async def aclose(self) -> None:
        """Close and drop an evaluation that has not started."""
        self.close()
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


def joiner_needed(records: Mapping[int, StepRecord], tools: Mapping[str, Tool]) -> bool:
    """Whether, by the steps finished so far, the template cannot answer (``joiner="auto"``): a step failed, or a
    read-only step that no other step uses returned more than a short atomic value (the joiner must compose it)."""
    return template_covers(list(records.values()), tools, running=True) is not None
