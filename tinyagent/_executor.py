"""The streaming DAG executor.

Calls arrive one by one while the plan is still being generated. Each call becomes a task in an
``asyncio.TaskGroup`` that waits only for the steps it references, so independent steps run concurrently (sync
tools in worker threads) and a step starts as soon as its inputs are ready. A failed, timed-out or skipped step
makes its dependents ``skipped``; independent steps carry on. Complete plans are ordered with ``graphlib`` first,
which rejects cycles and references to missing steps.

Before each call, the executor records where its argument values came from (:mod:`tinyagent._provenance`); an
outgoing or destructive call whose target came from tool output asks the confirmation hook first, and a refusal fails
the step with :class:`~tinyagent.errors.ConfirmationDenied`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import Any

from ._events import RunEvent, StepRecord, ToolFinished, ToolStarted
from ._plan import Call, Plan, Ref, resolve_refs
from ._plan_parser import check_call
from ._prompts import format_observation
from ._provenance import Provenance, risky_targets
from ._tools import Tool, ToolContext
from .errors import PlanValidationError, ToolTimeout

__all__ = ["Executor"]

Emit = Callable[[RunEvent], Awaitable[None]]


async def _no_emit(event: RunEvent) -> None:
    return None


class Executor:
    """Runs plan steps as their inputs become ready.

    Args:
        tools: the tools a step may call.
        context: handed to tools that ask for it (confirmation hook, model, today, deps).
        emit: an async callback for :class:`ToolStarted` / :class:`ToolFinished` events.
        clock_start: ``time.perf_counter()`` at the start of the run, for ``started_s``.
        provenance: classifies argument values (the agent builds one from the request); default: one that knows no
            request, so every literal the planner wrote counts as the user's and only tool data is suspect.
    """

    def __init__(
        self,
        tools: Mapping[str, Tool],
        context: ToolContext | None = None,
        emit: Emit | None = None,
        clock_start: float | None = None,
        provenance: Provenance | None = None,
    ) -> None:
        self.tools = tools
        self.provenance = provenance if provenance is not None else Provenance()
        self.context = context or ToolContext()
        self.emit = emit or _no_emit
        self.clock_start = clock_start if clock_start is not None else time.perf_counter()
        self.first_dispatch_s: float | None = None

    async def execute_plan(self, plan: Plan, records: dict[int, StepRecord] | None = None) -> dict[int, StepRecord]:
        """Run a complete plan (validated and ordered with graphlib first).

        Raises:
            PlanValidationError: cycles, missing references, unknown tools or bad static arguments.
        """
        ordered = plan.topological_order()
        records = records if records is not None else {}
        for call in ordered:
            check_call(call, self.tools, known_steps=[d for d in call.deps] + list(records))

        async def gen() -> AsyncIterator[Call]:
            for call in ordered:
                yield call

        await self.execute_stream(gen(), records, validate=False)
        return records

    async def execute_stream(
        self,
        calls: AsyncIterator[Call],
        records: dict[int, StepRecord],
        *,
        attempt: int = 0,
        validate: bool = True,
    ) -> BaseException | None:
        """Dispatch calls as they arrive; wait for all of them to finish.

        ``records`` holds earlier steps (from previous plans) whose results may be referenced, and receives the new
        ones. If the call stream itself fails (a parse error, a model error), the steps already dispatched still run
        to completion and the stream's exception is returned, so nothing is lost.

        Returns:
            The exception that ended the call stream early, or None.
        """
        done: dict[int, asyncio.Event] = {}
        for sid in records:
            ev = asyncio.Event()
            ev.set()
            done[sid] = ev
        stream_error: BaseException | None = None
        async with asyncio.TaskGroup() as group:
            try:
                async for call in calls:
                    if call.id in done:
                        raise PlanValidationError(f"step {call.id} is planned twice", step=call.id)
                    if validate:
                        check_call(call, self.tools, known_steps=list(done))
                    record = StepRecord(id=call.id, name=call.name, args=dict(call.args), attempt=attempt)
                    records[call.id] = record
                    done[call.id] = asyncio.Event()
                    group.create_task(self._run_step(call, record, records, done))
            except Exception as exc:  # noqa: BLE001 - returned to the caller, after running steps finish
                stream_error = exc
        return stream_error

    async def _run_step(
        self,
        call: Call,
        record: StepRecord,
        records: Mapping[int, StepRecord],
        done: Mapping[int, asyncio.Event],
    ) -> None:
        try:
            deps = sorted(call.deps)
            for dep in deps:
                await done[dep].wait()
            failed = [d for d in deps if not records[d].ok]
            if failed:
                record.status = "skipped"
                record.error = f"not run because step(s) {failed} did not succeed"
                record.error_type = "DependencyFailed"
                await self.emit(ToolFinished(record))
                return
            tool = self.tools[call.name]
            args = splice_list_results(resolve_refs(dict(call.args), {d: records[d].result for d in deps}), call,
                                       tool.parameters)
            now = time.perf_counter()
            record.started_s = now - self.clock_start
            if self.first_dispatch_s is None:
                self.first_dispatch_s = record.started_s
            record.status = "running"
            record.provenance = self.provenance.classify(call, self.tools, records)
            await self.emit(ToolStarted(call.id, call.name, args))
            try:
                context = await self._check_targets(call, tool, args, record, records)
                record.result = await tool.call(args, context, step=call.id)
                record.status = "ok"
            except ToolTimeout as exc:
                record.status, record.error, record.error_type = "timeout", str(exc), type(exc).__name__
                record.exception = exc
            except Exception as exc:  # noqa: BLE001 - every tool failure is recorded for the joiner
                record.status, record.error, record.error_type = "error", str(exc), type(exc).__name__
                record.exception = exc
            record.elapsed_s = time.perf_counter() - now
            await self.emit(ToolFinished(record))
        finally:
            done[call.id].set()

    async def _check_targets(self, call: Call, tool: Tool, args: Mapping[str, Any], record: StepRecord,
                             records: Mapping[int, StepRecord]) -> ToolContext:
        """Ask the hook before an outgoing or destructive call whose target came from tool output.

        Returns:
            The context for the call (marked pre-confirmed when the hook was asked and allowed it).

        Raises:
            ConfirmationDenied: the hook refused.
        """
        risky = risky_targets(tool, record.provenance)
        if not risky:
            return self.context
        where = "; ".join(
            f"{name}={format_observation(args.get(name), 120)} came from "
            + (f"step {step} ({records[step].name})" if step in records else "an earlier answer")
            + ", not from your request" for name, step in risky.items())
        context = dataclasses.replace(self.context, tool_name=tool.name)
        await context.confirm(f"{tool.name} with a target taken from tool output: {where}", args=dict(args),
                              from_tool_output=dict(risky))
        return dataclasses.replace(context, preconfirmed=True)


def successful(records: Iterable[StepRecord]) -> list[int]:
    """Ids of the steps that succeeded."""
    return [r.id for r in records if r.ok]


def results_of(records: Mapping[int, StepRecord]) -> dict[int, Any]:
    """Step id to result, for steps that succeeded."""
    return {k: r.result for k, r in records.items() if r.ok}


def splice_list_results(args: dict[str, Any], call: Call, parameters: Mapping[str, Any]) -> dict[str, Any]:
    """``args`` with a list result that a reference put inside a list of scalars spliced into it: ``to=[$1]``
    where step 1 found several addresses is one flat list of them."""
    props: Mapping[str, Any] = parameters.get("properties", {})
    out = dict(args)
    for name, written in call.args.items():
        schema = props.get(name, {})
        items = schema.get("items") or {}
        if schema.get("type") != "array" or items.get("type") in (None, "array") or not isinstance(written, list):
            continue
        if not any(isinstance(w, Ref) for w in written):
            continue
        value = out.get(name)
        if isinstance(value, list):
            out[name] = [x for w, v in zip(written, value, strict=True)
                         for x in (v if isinstance(w, Ref) and isinstance(v, list | tuple) else [v])]
    return out

