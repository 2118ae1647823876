"""Stage 2, plan: build the planner request (prompt, grammar, floors), call the model under the budget, parse the
stream into calls as they arrive."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from .._events import StepPlanned
from .._formats import written_identifiers
from .._grammar import plan_grammar
from .._names import shown_names
from .._plan import END_OF_PLAN, JOIN, Call, Example, Plan
from .._plan_parser import PlanStreamParser, check_call, parse_plan
from .._prompts import build_planner_messages, grounding_for
from .._routing_base import RoutingHook, Stage
from .._tools import Tool
from ..errors import BudgetExceeded, PlanParseError, PlanValidationError
from ..models import Completion, Model, ModelRequest, Preference
from ._settings import NO_TOOL_PREF, STOP_PREF, AgentSettings
from ._state import Emit, RunState

__all__ = ["PlanStream", "call_model", "join_floors", "known_text", "plan_grammar_for", "plan_once", "planner_request"]

_MAX_GRAMMARS = 64
Repair = Callable[[Call, Mapping[int, Call]], Call]
_DRAIN_LIMIT = 16


async def call_model(router: RoutingHook, model: Model, request: ModelRequest, stage: Stage,
                     notes: list[str]) -> tuple[Model, AsyncIterator[str | Completion]]:
    """Reserve budget (degrading to the local model if the call would overshoot) and start streaming.

    The stream charges the real usage to the router when it ends.
    """
    try:
        router.before_call(model, request)
    except BudgetExceeded as exc:
        notes.append(f"{stage}: {model.name} skipped, budget would be exceeded ({exc}); using {router.local.name}")
        model = router.local
        router.before_call(model, request)
    return model, _charged_stream(router, model, request)


async def _charged_stream(router: RoutingHook, model: Model, request: ModelRequest) -> AsyncIterator[str | Completion]:
    completion: Completion | None = None
    try:
        async for item in model.stream(request):
            if isinstance(item, Completion):
                completion = item
            yield item
    finally:
        router.after_call(model, request, completion)


def planner_request(state: RunState, settings: AgentSettings, router: RoutingHook, model: Model,
                    first_step: int, prior_steps: Sequence[int]) -> ModelRequest:
    """The planner request for the state's next attempt."""
    if state.force_call and first_step == 1:
        settings = replace(settings, no_tool_ceiling=1.0)
    tools = state.offer.tools
    grounding = grounding_for(state.query, state.today, tools.values()) if settings.grounding else ""

    def build(examples: Sequence[Example]) -> list[dict[str, Any]]:
        return build_planner_messages(tools.values(), state.query, state.today, examples, history=state.history,
                                      replan_context=state.replan_note, format_examples=settings.format_examples,
                                      grounding=grounding)

    examples = list(state.offer.examples)
    messages = build(examples)
    n_ctx, count = getattr(model, "n_ctx", None), getattr(model, "prompt_tokens", None)
    if isinstance(n_ctx, int) and callable(count):
        # a long registry's prompt, and a replan's note on top, must leave the plan room in the context: the
        # examples go first, last (least similar) first
        while examples and count(messages) + settings.planner_max_tokens > n_ctx:
            examples.pop()
            messages = build(examples)
    grammar = None
    if settings.use_grammar and model.supports_grammar:
        left_out = state.banned | state.avoid
        allowed = {n: t for n, t in tools.items() if n not in left_out} if left_out else tools
        written = written_identifiers(known_text(state.query, state.history)) if settings.identifier_grammar else None
        grammar = plan_grammar_for(state.grammars, allowed, settings, first_step, tuple(prior_steps), written,
                                   required=state.required, names=shown_names(tools.values()))
    return ModelRequest(messages=messages, grammar=grammar, max_tokens=settings.planner_max_tokens,
                        stop=(END_OF_PLAN,), logprobs=router.wants_logprobs, prefer=join_floors(settings, first_step))


def known_text(query: str, history: Iterable[Mapping[str, Any]], observations: Iterable[str] = ()) -> str:
    """What a literal identifier may come from: the request, the conversation and the results so far."""
    return " ".join([query, *(str(m.get("content", "")) for m in history), *observations])


def join_floors(settings: AgentSettings, first_step: int) -> tuple[Preference, ...]:
    """Soft floors on ``join``: as the first step (no tool needed) and at later steps (stop early)."""
    def floor(value: float | None) -> float:
        return 2.0 if value is None else value  # above 1: measure only

    floors = [Preference(STOP_PREF, r"\n\d+\. ?\Z", JOIN, floor(settings.stop_threshold))]
    if first_step == 1:
        floors.insert(0, Preference(NO_TOOL_PREF, r"\A1\. ?\Z", JOIN, floor(settings.no_tool_threshold),
                                    max_prob=settings.no_tool_ceiling))
    return tuple(floors)


def plan_grammar_for(cache: dict[tuple[Any, ...], str], tools: Mapping[str, Tool], settings: AgentSettings,
                     first_step: int, prior_steps: tuple[int, ...],
                     identifiers: Mapping[str, Sequence[str]] | None = None,
                     required: tuple[frozenset[str], ...] = (), names: Mapping[str, str] | None = None) -> str:
    """The plan grammar, memoised in ``cache`` (the run's) per offered tool set, numbering, written identifiers
    (None: identifier parameters are not limited to them), the tools one of which it must call and the names the
    planner writes (:func:`~tinyagent._names.shown_names`)."""
    ids = None if identifiers is None else tuple((k, tuple(v)) for k, v in sorted(identifiers.items()))
    key = (tuple(tools), first_step, prior_steps, ids, tuple(tuple(sorted(g)) for g in required),
           tuple(sorted((names or {}).items())))
    grammar = cache.get(key)
    if grammar is None:
        if len(cache) > _MAX_GRAMMARS:
            cache.clear()
        grammar = cache[key] = plan_grammar(tools, options=settings.grammar, first_step=first_step,
                                            prior_steps=prior_steps, identifiers=identifiers, required=required,
                                            names=names)
    return grammar


class PlanStream:
    """One planner call's stream, parsed into calls as they arrive.

    Attributes:
        parser: the incremental parser (its ``text`` is the raw plan, its ``calls`` the calls so far, as parsed).
        planned: the calls so far by step, as they were passed on (after ``repair``).
        completion: the model's completion, once the stream has ended.
        plan_s: seconds from the request to the end of the stream.
    """

    def __init__(self, parser: PlanStreamParser, stream: AsyncIterator[str | Completion], attempt: int, emit: Emit,
                 started: float, repair: Repair | None = None) -> None:
        self.parser = parser
        self.planned: dict[int, Call] = {}
        self._repair = repair
        self.completion: Completion | None = None
        self.plan_s = 0.0
        self._stream = stream
        self._attempt = attempt
        self._emit = emit
        self._started = started

    async def calls(self) -> AsyncIterator[Call]:
        """The calls, each emitted as :class:`StepPlanned` first.

        Raises:
            PlanError: the text is not a valid plan (raised where it goes wrong; earlier calls were yielded).
            ModelError: the model failed mid-stream.
        """
        extra = 0
        try:
            async for item in self._stream:
                if isinstance(item, Completion):
                    self.completion = item
                    continue
                if self.parser.done:
                    # Drain to the Completion (usage), but not forever if a model rambles past the join.
                    extra += 1
                    if extra > _DRAIN_LIMIT:
                        break
                    continue
                for parsed in self.parser.feed(item):
                    call = self._repair(parsed, self.planned) if self._repair else parsed
                    self.planned[call.id] = call
                    await self._emit(StepPlanned(call, self._attempt))
                    yield call
            self.parser.close()
        finally:
            self.plan_s = time.perf_counter() - self._started
            with contextlib.suppress(Exception):
                await self._stream.aclose()  # type: ignore[attr-defined]


async def plan_once(router: RoutingHook, model: Model, request: ModelRequest, tools: Mapping[str, Tool],
                    first_step: int = 1, prior: Sequence[int] = ()) -> tuple[Model, Completion, Plan]:
    """One planner call, parsed whole (plan only: nothing runs).

    Raises:
        PlanParseError, PlanValidationError: the plan is invalid.
        ModelError: the model failed.
    """
    notes: list[str] = []
    model, stream = await call_model(router, model, request, "plan", notes)
    parser = PlanStreamParser(tools, first_step=first_step, prior_steps=prior)
    completion: Completion | None = None
    text, problem = "", None
    async for item in stream:
        if isinstance(item, Completion):
            completion = item
            continue
        text += item
        if problem is None:
            try:
                parser.feed(item)
            except PlanValidationError as exc:
                if "forward reference" not in str(exc) or first_step != 1:
                    raise
                problem = exc  # (read to its end: the plan may run in another order)
    plan = parser.close() if problem is None else _reordered(text, tools, problem)
    if completion is None:
        completion = Completion(text=text, model=model.name)
    return model, completion, plan


def _reordered(text: str, tools: Mapping[str, Tool], problem: PlanValidationError) -> Plan:
    """The whole plan ``text``, whose step used a later step's result, in an order where it runs; ``problem``
    raised when no order serves or a call is invalid otherwise."""
    try:
        plan = parse_plan(text, tools, validate=False).in_dependency_order()
        for call in plan.calls:
            check_call(call, tools, range(1, call.id))
    except (PlanParseError, PlanValidationError):
        raise problem from None
    return plan
