"""The run loop: plan and execute, then join, with explicit transitions and one :func:`replan`.

::

    plan_and_execute ──escalation──────────────────────────▶ replan ─┐
          │ └──plan or model error, replans left────────────▶ replan ─┤
          │ └──no call for a request to send (first plan)───▶ replan ─┤
          ▼                                                          │
         join ──"Replan:" (a step failed, none was refused)──▶ replan ─┤
          │                                                          │
          ▼                                 plan_and_execute ◀───────┘
        finish
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace

from .._events import ReplanEvent, RunResult
from .._prompts import replan_context
from .._routing_base import RouteSignals
from ..errors import ConfirmationDenied, PlanError, PlanValidationError
from ._channels import channel_senders, unserved_channel
from ._execute import Attempt, plan_and_execute
from ._join import join, template_answer
from ._state import RunSetup, RunState

__all__ = ["replan", "run_loop"]

log = logging.getLogger("tinyagent.run")


async def run_loop(setup: RunSetup, state: RunState) -> RunResult:
    """Run attempts until one is answered (or no replans are left); return the finished result."""
    while True:
        attempt = await plan_and_execute(setup, state)
        try:
            if await _next_attempt(setup, state, attempt):
                continue
        finally:
            if attempt.warmer is not None:
                await attempt.warmer.aclose()
        return finish(setup, state)


async def _next_attempt(setup: RunSetup, state: RunState, attempt: Attempt) -> bool:
    """After an attempt: escalate, replan after an error, or join; True when another attempt follows."""
    if attempt.escalation is not None:
        escalation = attempt.escalation
        state.result.notes.append(f"escalated: {escalation.reason}")
        _count(state, attempt)
        await replan(state, escalation.reason, escalation.model.name, escalation.signals)
        return True
    _count(state, attempt)
    state.result.plans.append(attempt.plan)
    state.result.plan_texts.append(attempt.text)
    state.timings["execute"] = time.perf_counter() - state.started - state.timings["plan"] - state.timings["join"]
    can_replan = state.attempt < setup.settings.max_replans
    if attempt.error is not None and await _after_error(state, attempt, can_replan):
        return True
    if attempt.error is None and can_replan and await _unserved(setup, state, attempt):
        return True
    return await _join_or_replan(setup, state, attempt, can_replan)


async def _unserved(setup: RunSetup, state: RunState, attempt: Attempt) -> bool:
    """The first plan has no call (as written, or after the no-tool decision), or none that sends, for a request to
    send that an offered tool serves: plan once more (with a call first when it had none), told which tools send
    that way and shown what the steps so far returned (:func:`~._channels.unserved_channel`); True when a replan
    follows."""
    if state.attempt > 0 or not setup.settings.given_identifiers:
        return False
    usable = state.usable_tools
    reason = unserved_channel(state.query, usable, attempt.plan.calls)
    if reason is None:
        return False
    state.force_call = not attempt.plan.calls
    state.required = (channel_senders(state.query, usable),)  # the replan sends, by that channel
    state.result.notes.append(f"plan: {reason}; planning again")
    note = replan_context(attempt.stream.parser.text.strip(), state.observations(), reason, state.next_step,
                          boundary=state.boundary)
    await replan(state, reason, attempt.model.name, replace(state.signals, attempt=state.attempt + 1), note)
    return True


async def replan(state: RunState, reason: str, model: str, signals: RouteSignals, note: str | None = None) -> None:
    """Move to the next attempt: the signals for the router, the note for the planner, the event, the counters.

    Args:
        reason: why (shown in the event and, through ``note``, to the planner).
        model: the model that will plan (escalation) or that planned last.
        signals: what the router is told at the next attempt.
        note: the previous attempt as the planner should see it; None keeps the current one.
    """
    state.signals = signals
    if note is not None:
        state.replan_note = note
    await state.emit(ReplanEvent(state.attempt + 1, reason, model))
    state.attempt += 1
    state.result.replans += 1


async def _after_error(state: RunState, attempt: Attempt, can_replan: bool) -> bool:
    """The plan was invalid or the planner failed; True when a replan follows."""
    error = attempt.error
    kind = "the plan was invalid" if isinstance(error, PlanError) else "planner failed"
    reason = f"{kind}: {error}"
    log.info("attempt %d: %s", state.attempt, reason)
    state.result.notes.append(reason)
    completion = attempt.stream.completion
    signals = replace(state.signals, parse_failed=isinstance(error, PlanError),
                      validation_failed=isinstance(error, PlanValidationError), previous_model=attempt.model.name,
                      attempt=state.attempt + 1, mean_logprob=completion.mean_logprob if completion else None)
    if not can_replan:
        state.signals = signals
        return False
    note = replan_context(attempt.stream.parser.text.strip() or "(nothing)", state.observations(state.attempt),
                          reason, state.next_step, boundary=state.boundary)
    await replan(state, reason, attempt.model.name, signals, note)
    return True


async def _join_or_replan(setup: RunSetup, state: RunState, attempt: Attempt, can_replan: bool) -> bool:
    """Join; True when the joiner asked for a replan (and one follows), else the answer is in ``state.answer``."""
    started = time.perf_counter()
    failed = [r for r in state.records.values() if r.attempt == state.attempt and not r.ok]
    # A refused confirmation is the user's decision: report it, never plan around it.
    refused = any(isinstance(r.exception, ConfirmationDenied) for r in failed)
    verdict, text = await join(setup, state, can_replan and bool(failed) and not refused, attempt.request.messages,
                               attempt.warmer)
    state.timings["join"] += time.perf_counter() - started
    if verdict != "replan":
        state.answer = text
        return False
    reason = text or "the joiner asked for a replan"
    signals = replace(state.signals, replan_requested=True, step_failed=bool(failed), attempt=state.attempt + 1,
                      previous_model=attempt.model.name)
    if setup.retriever is not None and state.offer.retrieval is not None:
        state.offer = setup.offer(state.query, state.offer.retrieval, reason)
    note = replan_context(attempt.stream.parser.text.strip(), state.observations(), reason, state.next_step,
                          boundary=state.boundary)
    await replan(state, reason, attempt.model.name, signals, note)
    return True


def _count(state: RunState, attempt: Attempt) -> None:
    """Add the attempt's usage and planning time to the run's."""
    if attempt.stream.completion is not None:
        state.result.usage = state.result.usage + attempt.stream.completion.usage
    state.timings["plan"] += attempt.stream.plan_s


def finish(setup: RunSetup, state: RunState) -> RunResult:
    """Fill in the answer (built from the results when there is none), steps, timings, routing and status."""
    result, answer = state.result, state.answer
    result.answer = answer or template_answer(list(state.records.values()), setup.registry)
    result.steps = [state.records[k] for k in sorted(state.records)]
    state.timings["total"] = time.perf_counter() - state.started
    if state.executor.first_dispatch_s is not None:
        state.timings["first_dispatch"] = state.executor.first_dispatch_s
    result.timings = state.timings
    result.routing = dict(setup.router.status())
    if result.routing.get("degraded") or any("budget" in n for n in result.notes):
        result.status = "degraded"
    if not result.steps and any("invalid" in n or "failed" in n for n in result.notes):
        result.status = "failed" if not answer else result.status
    cost = result.routing.get("spent")
    result.cost = float(cost) if isinstance(cost, int | float) else 0.0
    return result
