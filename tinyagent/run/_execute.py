"""Stage 3, execute: run the plan's calls as they stream in (or buffer the first plan so the router can verify it)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, replace

from .._events import NoToolCheck, RunEvent, StepRecord, ToolFinished
from .._plan import Call, Plan
from .._plan_parser import PlanStreamParser
from .._routing_base import RouteSignals, Stage
from ..errors import ModelError, PlanError, PlanValidationError
from ..models import Model, ModelRequest
from ._days import RequestDays
from ._no_tool import check_no_tool, first_call_is_clear, join_probability, request_text, second_choice_settings
from ._plan import PlanStream, Repair, call_model, planner_request
from ._repair import GivenIdentifiers, call_problem, known_text, repair_call, ruled_out
from ._retrieve import disagrees_with_examples
from ._state import RunSetup, RunState
from ._warm import JoinWarmer, Prefills, joiner_needed

__all__ = ["Attempt", "Escalation", "plan_and_execute"]


@dataclass(frozen=True)
class Escalation:
    """The router wants a stronger model to plan again before the buffered plan runs."""

    model: Model
    reason: str
    signals: RouteSignals


@dataclass
class Attempt:
    """One planner call and the execution of what it planned.

    Attributes:
        model: the model that planned.
        request: the planner request (the joiner may continue its conversation).
        stream: the parsed stream (plan text, calls, completion, timing).
        error: what ended the call stream early (a plan or model error), else None.
        escalation: set when nothing ran because the router asked for a stronger planner.
        no_tool: the no-tool decision on the (buffered) first plan; when it refused, nothing ran.
        warmer: evaluates the joiner's prompt ahead while the steps run (None where the joiner cannot use it).
    """

    model: Model
    request: ModelRequest
    stream: PlanStream
    error: BaseException | None = None
    escalation: Escalation | None = None
    no_tool: NoToolCheck | None = None
    warmer: JoinWarmer | None = None

    @property
    def refused(self) -> bool:
        """The no-tool decision dropped the plan's calls."""
        return self.no_tool is not None and self.no_tool.refused

    @property
    def plan(self) -> Plan:
        """The calls parsed (all of them, or those before the error; none when the no-tool decision refused)."""
        return Plan() if self.refused else Plan(calls=tuple(self.stream.planned.values()))

    @property
    def text(self) -> str:
        """The plan as the later prompts should see it (``1. join()`` when the no-tool decision refused)."""
        return "1. join()" if self.refused else self.stream.parser.text


async def plan_and_execute(setup: RunSetup, state: RunState) -> Attempt:
    """Plan the state's next attempt and execute it; the steps land in ``state.records``."""
    stage: Stage = "plan" if state.attempt == 0 else "replan"
    model = setup.router.select(stage, state.signals)
    first_step, prior = state.next_step, state.prior_steps
    request = planner_request(state, setup.settings, setup.router, model, first_step, prior)
    state.required = ()  # (for this plan only)
    started = time.perf_counter()
    model, raw = await call_model(setup.router, model, request, stage, state.result.notes)
    state.result.models.append(model.name)
    parser = PlanStreamParser(state.offer.tools, first_step=first_step, prior_steps=prior)
    stream = PlanStream(parser, raw, state.attempt, state.emit, started, _repairer(setup, state, request))
    attempt = Attempt(model, request, stream, warmer=_warmer(setup, state, model, request))
    verify = setup.router.needs_verification and state.attempt == 0
    check_no_tool_first = setup.settings.no_tool_check != "off" and state.attempt == 0
    decision = second_choice_settings(setup.settings) if state.banned else setup.settings
    calls = stream.calls()
    buffered: list[Call] = []
    if setup.settings.streaming_execution and not verify:
        if not check_no_tool_first:
            attempt.error = await _execute(state, attempt, calls)
            return attempt
        # Stream on unless the first call could be one that no tool should make (then buffer and decide).
        try:
            first = await anext(calls, None)
        except (PlanError, ModelError) as exc:
            attempt.error = exc
            return attempt
        if first is None or first_call_is_clear(first, request, state.query, state.offer.tools, decision):
            head = [] if first is None else [first]
            attempt.error = await _execute(state, attempt, _chain(head, calls))
            return attempt
        buffered.append(first)
    try:
        async for call in calls:
            buffered.append(call)
    except (PlanError, ModelError) as exc:
        if setup.settings.streaming_execution and not verify:
            # Held back only for the no-tool check: run what streaming would have run before the error.
            await state.executor.execute_stream(_replay(buffered), state.records, attempt=state.attempt)
        attempt.error = exc
        return attempt
    if check_no_tool_first and stream.completion is not None:
        attempt.no_tool = await check_no_tool(setup.router, attempt.model, request, stream.completion, buffered,
                                              state.query, state.offer.tools, decision,
                                              join_probability(stream.completion), state.result.notes)
        if attempt.refused:
            return await _second_choice(setup, state, attempt, buffered)
    if not verify:
        attempt.error = await _execute(state, attempt, _replay(buffered))
        return attempt
    attempt.escalation = _escalation(setup, state, attempt, buffered)
    if attempt.escalation is None:
        attempt.error = await _execute(state, attempt, _replay(buffered))
    return attempt


async def _second_choice(setup: RunSetup, state: RunState, refused: Attempt, calls: list[Call]) -> Attempt:
    """After the no-tool decision refused the first plan: plan once more with its tools left out of the grammar
    (``AgentSettings.no_tool_second_choice``) and run that plan if the decision lets it through."""
    banned = frozenset(c.name for c in calls)
    if state.banned or not setup.settings.no_tool_second_choice or not set(state.offer.tools) - banned:
        return refused
    state.banned = banned
    try:
        second = await plan_and_execute(setup, state)
    finally:
        state.banned = frozenset()
    kept = second if state.records or (not second.refused and second.error is None and second.plan.calls) \
        else refused
    dropped = refused if kept is second else second  # the run loop counts the kept attempt's usage and time
    if dropped.stream.completion is not None:
        state.result.usage = state.result.usage + dropped.stream.completion.usage
    state.timings["plan"] += dropped.stream.plan_s
    if dropped.warmer is not None:
        await dropped.warmer.aclose()
    if kept is second:
        state.result.notes.append(f"plan: second choice without {', '.join(sorted(banned))}: "
                                  f"{', '.join(c.name for c in second.plan.calls)}")
    return kept


async def _execute(state: RunState, attempt: Attempt, calls: AsyncIterator[Call]) -> BaseException | None:
    """Run the attempt's calls; with a warmer, tell it when the plan is complete and as each step finishes."""
    executor, warmer = state.executor, attempt.warmer
    if warmer is None:
        return await executor.execute_stream(calls, state.records, attempt=state.attempt)
    original = executor.emit

    async def emit(event: RunEvent) -> None:
        if isinstance(event, ToolFinished) and event.record.attempt == state.attempt:
            warmer.step_finished(event.record)
        await original(event)

    async def announced() -> AsyncIterator[Call]:
        async for call in calls:
            yield call
        warmer.plan_done(attempt.text)  # the last call is in: the model is free while the steps run

    executor.emit = emit
    try:
        return await executor.execute_stream(announced(), state.records, attempt=state.attempt)
    finally:
        executor.emit = original


def _warmer(setup: RunSetup, state: RunState, model: Model, request: ModelRequest) -> JoinWarmer | None:
    """A warmer when the planner's model evaluates ahead and a joiner model may answer.

    The router is not asked for the joiner's model here (asking is recorded as a decision); when it picks another
    one, the work ahead is only wasted, on a model that was idle.
    """
    joiner = setup.settings.joiner
    if joiner == "template" or not isinstance(model, Prefills):
        return None
    registry = setup.registry

    def needed(records: Mapping[int, StepRecord]) -> bool:
        return joiner == "llm" or joiner_needed(records, registry)

    return JoinWarmer(model, request.messages, state.query, state.boundary, state.records, state.attempt, needed)


def _escalation(setup: RunSetup, state: RunState, attempt: Attempt, buffered: list[Call]) -> Escalation | None:
    """Ask the router to verify a buffered plan; an :class:`Escalation` when it wants another model."""
    completion = attempt.stream.completion
    if completion is None:
        return None
    model = attempt.model
    check = replace(state.signals, mean_logprob=completion.mean_logprob, previous_model=model.name,
                    example_disagreement=disagrees_with_examples(buffered, state.offer.examples,
                                                                 by_similarity=setup.examples_by_similarity))
    stronger = setup.router.select("verify", check)
    if stronger is model or stronger.name == model.name or state.attempt >= setup.settings.max_replans:
        return None
    reason = (f"unsure of the {model.name} plan (mean logprob {completion.mean_logprob}, "
              f"unlike the nearest example: {check.example_disagreement})")
    return Escalation(stronger, reason, check)


def _repairer(setup: RunSetup, state: RunState, request: ModelRequest) -> Repair | None:
    """The per-call repair of a streamed plan (:func:`~._repair.repair_call`): identifiers the request gives are
    used as written, a call that passes a made-up one stops the plan before it runs (the loop replans with the
    reason), optional arguments the request does not support are left out, a day stays a day. None when all of
    that is off."""
    settings = setup.settings
    identifiers, optionals = settings.given_identifiers, settings.ungrounded_optionals == "drop"
    if not identifiers and not optionals:
        return None
    given = GivenIdentifiers(state.query, state.today) if identifiers else None
    grounding = request_text(request, state.query) if optionals else None
    days = RequestDays.of(state.query, state.today)

    def repair(call: Call, earlier: Mapping[int, Call]) -> Call:
        fixed = repair_call(call, earlier, given, state.offer.tools, grounding, days)
        if fixed.args != call.args:
            state.result.notes.append(f"plan: step {call.id} repaired: {fixed.to_text()}")
        known = known_text(state.query, state.history, state.observations()) if identifiers else ""
        if identifiers and (problem := call_problem(fixed, earlier, state.offer.tools, known, state.query)):
            if ruled_out(fixed, earlier, state.offer.tools, state.query):
                state.avoid |= {fixed.name}  # the replan's grammar leaves the tool out
            raise PlanValidationError(problem)
        return fixed

    return repair


async def _replay(calls: list[Call]) -> AsyncIterator[Call]:
    for call in calls:
        yield call


async def _chain(head: list[Call], rest: AsyncIterator[Call]) -> AsyncIterator[Call]:
    for call in head:
        yield call
    async for call in rest:
        yield call

