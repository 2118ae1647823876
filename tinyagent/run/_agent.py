"""The agent: its configuration and public API. Each run's state lives in a :class:`RunState`, never on the agent."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import os
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from .. import _example_cache, _examples
from .._events import AnswerEvent, NoToolCheck, PlanResult, RunEvent, RunResult
from .._executor import Executor
from .._names import shown_names, unshow_plan
from .._plan import Example, Plan
from .._prompts import new_boundary, replan_context
from .._provenance import Provenance
from .._routing_base import LocalOnly, RouteSignals, RoutingHook
from .._tools import ConfirmHook, Tool, ToolContext, ToolRegistry, deny_all
from ..errors import PlanError, PlanParseError, UserError
from ..models import Completion, Model, ModelRequest
from ._attach import attach_sent_things, drop_double_sends, drop_message_topics
from ._borrowed import (
    drop_borrowed_people,
    drop_echoed_messages,
    drop_made_up_people,
    drop_owners,
    drop_repeated_messages,
    drop_twin_lookups,
    keep_in_named_list,
)
from ._channels import channel_senders, other_channel_senders, unserved_channel
from ._clauses import named_clauses, named_groups, same_target, unserved_clause
from ._contents import read_named_items
from ._coverage import unplanned_clause
from ._done import drop_done
from ._each import send_to_each
from ._items import ruled_out_items, unserved_item, unserved_new_item
from ._links import link_producers
from ._loop import run_loop
from ._no_tool import check_no_tool, join_probability, second_choice_settings, unserved_action
from ._plan import plan_once, planner_request
from ._producers import dropped_actions, insert_producers, merge_lookups, merge_served
from ._repair import call_problem, known_text, repair_plan, ruled_out
from ._retrieve import ExampleSelector, ToolRetriever, disagrees_with_examples, similar_examples
from ._settings import STOP_PREF, AgentSettings
from ._siblings import drop_unasked_twins, swap_siblings
from ._state import Emit, RunSetup, RunState
from ._tidy import tidy_plan
from ._wiring import wire_results

__all__ = ["Agent"]

T = TypeVar("T")


class Agent:
    """An agent over a set of tools.

    Args:
        tools: tools (or plain typed functions, wrapped with :func:`~tinyagent.tool`), or a registry.
        model: a :class:`~tinyagent.models.Model`, a catalog name, a GGUF path or ``openai:URL``; default: the
            catalog's default planner, loaded on first use.
        retriever: picks the tools (and examples) offered per request; None offers every tool.
        router: a routing hook (e.g. :class:`tinyagent.routing.Router`) choosing local or cloud per stage.
        examples: worked examples; those whose tools are all offered go into the prompt (an example whose calls do
            not fit these tools' parameters is dropped: :func:`tinyagent._examples.fits_schemas`).
        auto_examples: with no ``examples`` (and no ``example_selector``), use the automatic examples cached for
            this exact registry, if any (built beforehand by :func:`tinyagent.finetune.build_examples` or
            ``tinyagent examples build``; nothing is built here, so the first request is never delayed).
        example_selector: without a retriever, picks the examples most similar to each request from a pool larger
            than ``max_examples`` (e.g. one with an embedder); None: hashed word features
            (:class:`tinyagent._examples.ExampleSelector`), or the pool's order without numpy.
        confirm: the app's hook for outgoing or destructive actions (default: refuse).
        deps: anything the tools should see through :class:`~tinyagent.ToolContext`.
        settings: loop tunables.

    Example::

        agent = Agent(tools=[get_email_address, send_email], model="qwen2.5-coder-1.5b")
        result = agent.run_sync("Email Sid that lunch moved to noon")
        print(result.answer)
    """

    def __init__(
        self,
        tools: Iterable[Tool | Callable[..., Any]] | ToolRegistry = (),
        model: Model | str | None = None,
        *,
        retriever: ToolRetriever | None = None,
        router: RoutingHook | None = None,
        examples: Sequence[Example] = (),
        example_selector: ExampleSelector | None = None,
        auto_examples: bool = True,
        confirm: ConfirmHook = deny_all,
        deps: Any = None,
        settings: AgentSettings | None = None,
        **overrides: Any,
    ) -> None:
        self.registry = tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools)
        self._model_spec = model
        self._model: Model | None = model if isinstance(model, Model) else None
        self._router = router
        self.retriever = retriever
        if examples:
            examples = [e for e in examples if _examples.fits_schemas(e, self.registry)]
        self.examples = tuple(examples) if examples or example_selector is None else example_selector.examples
        if not self.examples and auto_examples:
            self.examples = _example_cache.load_cached_examples(list(self.registry.values()))
        self.confirm = confirm
        self.deps = deps
        try:
            self.settings = replace(settings or AgentSettings(), **overrides)
        except TypeError as exc:
            raise UserError(f"unknown agent setting: {exc}") from exc
        self.example_selector = example_selector or _default_selector(self.examples, self.settings.max_examples)
        if self.retriever is not None:
            self.retriever.fit(self.registry, self.examples)

    # -- models -----------------------------------------------------------------------------------------------
    @property
    def model(self) -> Model:
        """The local (planner) model, loaded on first use."""
        if self._router is not None:
            return self._router.local
        if self._model is None:
            from ..models import load_model

            spec = self._model_spec if isinstance(self._model_spec, str) else None
            self._model = load_model(spec)
        return self._model

    @property
    def router(self) -> RoutingHook:
        """The routing hook (local-only by default)."""
        if self._router is None:
            self._router = LocalOnly(self.model)
        return self._router

    # -- public API -------------------------------------------------------------------------------------------
    async def plan(
        self, query: str, *, today: dt.date | None = None, history: Sequence[Mapping[str, Any]] = ()
    ) -> PlanResult:
        """Plan only; nothing is executed.

        An invalid first plan (a value that runs past the token limit) is planned once more, told why.

        Raises:
            PlanParseError, PlanValidationError: the model's plan is invalid twice (rare under the grammar).
            ModelError: the model failed.
        """
        setup = self._setup()
        setup.router.start_task()
        state = self._new_state(setup, query, today, history, _no_emit)
        uncertain = state.offer.uncertain
        model = setup.router.select("plan", RouteSignals(retrieval_uncertain=uncertain))
        request = planner_request(state, self.settings, setup.router, model, 1, ())
        try:
            model, completion, plan = await plan_once(setup.router, model, request, state.offer.tools)
        except PlanError as exc:  # (a value that ran past the token limit): planned once more, told why
            reason = f"the plan was invalid: {exc}"
            state.result.notes.append(f"plan: {reason}; planning again")
            text = exc.text if isinstance(exc, PlanParseError) and exc.text else "(nothing)"
            state.replan_note = replan_context(text, [], reason, 1, boundary=state.boundary)
            request = planner_request(state, self.settings, setup.router, model, 1, ())
            model, completion, plan = await plan_once(setup.router, model, request, state.offer.tools)
        no_tool_prob = join_probability(completion)
        check = await check_no_tool(setup.router, model, request, completion, plan.calls, query, state.offer.tools,
                                    self.settings, no_tool_prob, state.result.notes)
        if check is not None and check.refused:
            second = await self._second_choice(setup, state, model, completion, plan, request)
            if second is None:
                plan = Plan(calls=(), answer=plan.answer)
            else:
                model, completion, plan, request, check = second
                no_tool_prob = join_probability(completion)
        if check is None or not check.refused or (unserved_channel(query, state.offer.tools)
                                                  and not unserved_action(query, state.offer.tools)):
            # (a refused plan for a request to send is planned again, with a call first)
            model, completion, plan, request = await self._repaired(setup, state, model, completion, plan, request)
        prompt_tokens = completion.usage.input_tokens or model.count_tokens(
            "".join(str(m["content"]) for m in request.messages))
        return PlanResult(
            plan=plan,
            text=unshow_plan(completion.text, shown_names(state.offer.tools.values())),
            usage=state.result.usage + completion.usage,
            elapsed_s=completion.elapsed_s + state.timings.get("plan", 0.0),
            ttft_s=completion.ttft_s,
            prompt_tokens=prompt_tokens,
            tools_offered=tuple(state.offer.tools),
            model=model.name,
            mean_logprob=completion.mean_logprob,
            retrieval_uncertain=uncertain,
            example_disagreement=disagrees_with_examples(plan.calls, state.offer.examples,
                                                         by_similarity=setup.examples_by_similarity),
            no_tool_prob=no_tool_prob,
            stop_probs=tuple(p for name, p, _ in completion.preference_probs if name == STOP_PREF),
            no_tool_check=check,
        )

    async def _second_choice(self, setup: RunSetup, state: RunState, model: Model, completion: Completion,
                             refused: Plan, request: ModelRequest
                             ) -> tuple[Model, Completion, Plan, ModelRequest, NoToolCheck] | None:
        """The plan the planner writes with the refused plan's tools left out of the grammar, when the no-tool
        decision lets its calls through (``AgentSettings.no_tool_second_choice``); None: keep the refusal. A second
        plan that calls a tool a clause of the request names (one the refused plan did not call) among two tools or
        more is kept without the decision: a request's clause named it, and a plan of several steps is no loosely
        related single call. When the second plan calls none and is refused too, and the request asks to send by no
        channel, the named tools are required in the grammar for one more plan (required at once, they made the
        1.5B write eleven steps)."""
        banned = frozenset(c.name for c in refused.calls)
        left = {n: t for n, t in state.offer.tools.items() if n not in banned}
        if not self.settings.no_tool_second_choice or not left or unserved_action(state.query, state.offer.tools):
            return None  # (asked for what no offered tool does: no other tool does it either)
        state.result.usage = state.result.usage + completion.usage
        state.timings["plan"] = state.timings.get("plan", 0.0) + completion.elapsed_s
        # Tools a clause names that the refused plan did not call ("Set up a video call ..." planned as a route).
        named = tuple(g for g in named_groups(state.query, left) if not g & banned)[:1]
        # Required in the grammar only where no channel is asked (a request to send is planned again with a
        # call first when the refusal stands: _repaired, which served "locate the slides and email them" better).
        retry = bool(named) and unserved_channel(state.query, state.offer.tools) is None
        for required in ((), named) if retry else ((),):
            state.banned, state.required = banned, required
            again = planner_request(state, self.settings, setup.router, model, 1, ())
            state.banned, state.required = frozenset(), ()
            try:
                model, completion, plan = await plan_once(setup.router, model, again, left)
            except PlanError as exc:
                state.result.notes.append(f"plan: the second choice was invalid ({exc}); kept the refusal")
                return None
            called = {c.name for c in plan.calls}
            if named and called & named[0] and len(called) >= 2:
                check: NoToolCheck | None = NoToolCheck()  # what a clause names, in a plan of several tools: kept
                break
            check = await check_no_tool(setup.router, model, again, completion, plan.calls, state.query, left,
                                        second_choice_settings(self.settings), join_probability(completion),
                                        state.result.notes) if plan.calls else None
            if plan.calls and not (check is not None and check.refused):
                break
            state.result.usage = state.result.usage + completion.usage  # (refused again: one more, or none)
            state.timings["plan"] = state.timings.get("plan", 0.0) + completion.elapsed_s
        else:
            return None
        state.result.notes.append(f"plan: second choice without {', '.join(sorted(banned))}: "
                                  f"{', '.join(c.name for c in plan.calls)}")
        return model, completion, plan, again, check or NoToolCheck()

    async def _repaired(self, setup: RunSetup, state: RunState, model: Model, completion: Completion, plan: Plan,
                        request: ModelRequest) -> tuple[Model, Completion, Plan, ModelRequest]:
        """The plan with the identifiers the request gives used as written; planned once more, told why, when a
        call passes one the request does not give or a need of the request goes unserved (the second plan is kept
        unless it dropped an action of the first), and once more when it leaves a need not asked for before."""
        known = known_text(state.query, state.history)
        first: Plan | None = None
        asked: tuple[frozenset[str], ...] = ()
        asked_before: set[frozenset[str]] = set()
        for attempt in range(3):
            # Planned once more when the plan has a problem; twice when the second plan still leaves a need that
            # the first replan did not ask for ("text Victor ..., and email him ...", e-mailed: now text him).
            again = attempt == 0 or (attempt == 1 and self.settings.last_plan_repairs)
            plan, notes = repair_plan(plan, request, state.query, state.today, state.offer.tools,
                                      identifiers=self.settings.given_identifiers,
                                      optionals=self.settings.ungrounded_optionals == "drop")
            state.result.notes.extend(notes)
            check = self.settings.given_identifiers
            if first is not None and self.settings.last_plan_repairs:
                plan = self._not_worse(state, first, plan, known, asked)
            earlier = {c.id: c for c in plan.calls}
            invented = [bad for c in plan.calls
                        if check and (bad := call_problem(c, earlier, state.offer.tools, known, state.query))]
            usable = state.usable_tools
            unserved = unserved_channel(state.query, usable, plan.calls) if check else None
            required = [channel_senders(state.query, usable, plan.calls)] if unserved else []
            if unserved:
                invented.append(unserved)
            for missing in (unserved_item(state.query, usable, plan.calls),
                            unserved_new_item(state.query, usable, plan.calls),
                            unserved_clause(state.query, usable, plan.calls)) if check else ():
                if missing:  # (each: served by one of its tools in the next plan, with the sender)
                    invented.append(missing[0])
                    required.append(missing[1])
            if check and attempt == 0 and not invented:  # (a clause the planner, asked alone, serves otherwise)
                dropped = await unplanned_clause(setup, state, model, plan, self.settings)
                if dropped:
                    invented.append(dropped[0])
                    required.append(dropped[1])
            if not invented or not again or (attempt == 1 and not set(required) - asked_before):
                break
            asked_before |= set(required)
            reason = "; ".join(invented)
            state.result.notes.append(f"plan: {reason}; planning again")
            state.replan_note = replan_context(completion.text.strip(), [], reason, 1, boundary=state.boundary)
            state.result.usage = state.result.usage + completion.usage
            state.timings["plan"] = state.timings.get("plan", 0.0) + completion.elapsed_s
            state.force_call = bool(unserved) and not plan.calls  # a request to send that got no call: one first
            # What the request rules out is left out of the grammar, and a request to send that sent nothing
            # sends this time: told alone, a small planner often writes the same plan again.
            state.avoid |= {c.name for c in plan.calls if ruled_out(c, earlier, state.offer.tools, state.query)}
            state.required = asked = tuple(required)
            first = plan
            again_request = planner_request(state, self.settings, setup.router, model, 1, ())
            state.required = ()
            try:
                model, completion, plan = await plan_once(setup.router, model, again_request, state.offer.tools)
            except PlanError as exc:  # the second plan is malformed: keep the first, repaired
                state.result.notes.append(f"plan: the second plan was invalid ({exc}); kept the first")
                break
            request = again_request
        if self.settings.given_identifiers and self.settings.last_plan_repairs:
            # (after planning again: told why, the planner often fixes more than the made-up value)
            plan = _last_plan_repairs(plan, state, known)
        return model, completion, plan, request

    @staticmethod
    def _not_worse(state: RunState, first: Plan, second: Plan, known: str,
                   asked: tuple[frozenset[str], ...] = ()) -> Plan:
        """The second plan, unless it dropped an action of the first (planning again answered only the reason):
        then the first, with what the second added for the needs it was planned again for (``asked``), and with
        the identifiers it made up taken from the second plan's new lookups where they match."""
        dropped = dropped_actions(first, second, state.offer.tools, frozenset(state.avoid))
        swapped = [c for c in second.calls if any(c.name in group for group in asked)]
        clauses = named_clauses(state.query, state.offer.tools)
        named = frozenset().union(*(group for group, _ in clauses))
        dropped = [name for name in dropped if name in named  # (what a clause asks for is never replaced)
                   or not any(same_target(c, s) for c in first.calls if c.name == name for s in swapped)]
        if not dropped:  # (one dropped for the tool it was planned again to call is the fix: a forward for a reply)
            return second
        served = merge_served(first, second, asked, clauses)
        base = served or first
        merged = merge_lookups(base, second, state.offer.tools, known)
        state.result.notes.append(f"plan: the second plan dropped {', '.join(dropped)}; kept the first"
                                  + (" with what the second added for the request" if served else "")
                                  + (" with the second's lookups" if merged else ""))
        return merged or base

    async def warm(self) -> int:
        """Evaluate the planner prompt's static start (rules, and the tools where every request gets the same ones)
        once and save it to the local model's on-disk prefix cache, so that the first request of every later
        process loads it instead of evaluating it (``tinyagent warm``). What is static is found, not assumed: the
        longest start the planner prompts of a few unrelated requests share (with tool retrieval: the rules; with
        every tool offered: the rules and the tool list).

        Returns:
            The tokens saved (0 when the model has no prefix cache, or the prefix was saved before).

        Raises:
            ModelError: the model failed.
        """
        model = self.router.local
        save = getattr(model, "save_prefix", None)
        if save is None:
            return 0
        setup = self._setup()
        systems = []
        for probe in WARM_PROBES:
            state = self._new_state(setup, probe, None, (), _no_emit)
            request = planner_request(state, self.settings, setup.router, model, 1, ())
            systems.append(str(request.messages[0].get("content", "")))
        head = os.path.commonprefix(systems)
        head = head[: head.rfind("\n") + 1] if len(set(systems)) > 1 else head
        return int(await save([{"role": "system", "content": head}])) if head.strip() else 0

    def warm_sync(self) -> int:
        """Synchronous :meth:`warm`."""
        return _run_sync(self.warm())

    def plan_sync(
        self, query: str, *, today: dt.date | None = None, history: Sequence[Mapping[str, Any]] = ()
    ) -> PlanResult:
        """Synchronous :meth:`plan`."""
        return _run_sync(self.plan(query, today=today, history=history))

    async def run(
        self, query: str, *, today: dt.date | None = None, history: Sequence[Mapping[str, Any]] = ()
    ) -> RunResult:
        """Plan, execute and answer.

        Tool failures, invalid plans and model errors do not raise: they are replanned or reported in the result.

        Raises:
            UserError: misuse (e.g. no tools and no model).
        """
        result: RunResult | None = None
        async for event in self.run_stream(query, today=today, history=history):
            if isinstance(event, AnswerEvent):
                result = event.result
        if result is None:  # run_stream always ends with an AnswerEvent
            raise UserError("the run ended without an answer")
        return result

    def run_sync(
        self, query: str, *, today: dt.date | None = None, history: Sequence[Mapping[str, Any]] = ()
    ) -> RunResult:
        """Synchronous :meth:`run`."""
        return _run_sync(self.run(query, today=today, history=history))

    async def run_stream(
        self, query: str, *, today: dt.date | None = None, history: Sequence[Mapping[str, Any]] = ()
    ) -> AsyncIterator[RunEvent]:
        """Run, yielding typed events as they happen; the last event is an :class:`AnswerEvent`."""
        queue: asyncio.Queue[RunEvent | None] = asyncio.Queue()

        async def emit(event: RunEvent) -> None:
            queue.put_nowait(event)

        async def produce() -> None:
            try:
                setup = self._setup()
                setup.router.start_task()
                result = await run_loop(setup, self._new_state(setup, query, today, history, emit))
                queue.put_nowait(AnswerEvent(result.answer, result))
            finally:
                queue.put_nowait(None)

        task = asyncio.create_task(produce())
        try:
            while True:
                event = await queue.get()
                if event is None:
                    break
                yield event
            await task  # re-raise anything unexpected
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    # -- internals ----------------------------------------------------------------------------------------------
    def _similar_examples(self, query: str, tools: Iterable[str]) -> list[Example]:
        """The examples the prompt would show for ``query`` with ``tools`` offered (no retriever); for benchmarks."""
        return similar_examples(query, tools, self.examples, self.example_selector, self.settings.max_examples)

    def _setup(self) -> RunSetup:
        return RunSetup(registry=self.registry, router=self.router, settings=self.settings, retriever=self.retriever,
                        examples=self.examples, selector=self.example_selector)

    def _new_state(self, setup: RunSetup, query: str, today: dt.date | None, history: Sequence[Mapping[str, Any]],
                   emit: Emit) -> RunState:
        """A fresh state for one run: its offer, executor (tool context, provenance), result and signals."""
        day = today or dt.date.today()
        offer = setup.offer(query)
        context = ToolContext(confirm_hook=self.confirm, model=self.model, today=day, deps=self.deps)
        tools: Mapping[str, Tool] = self.registry
        if self.settings.tool_timeout is not None:
            tools = {n: _with_timeout(t, self.settings.tool_timeout) for n, t in self.registry.items()}
        state = RunState(query=query, today=day, history=history, emit=emit, offer=offer,
                         executor=Executor(tools, context, emit, provenance=Provenance(query, history)),
                         result=RunResult(query=query, answer=""),
                         signals=RouteSignals(retrieval_uncertain=offer.uncertain), boundary=new_boundary())
        state.executor.clock_start = state.started
        if self.settings.ruled_out_tools:
            state.avoid = ruled_out_items(query, offer.tools) | other_channel_senders(query, offer.tools)
        return state


WARM_PROBES = ("Hello!", "Remind me to call the bank at 4pm tomorrow",
               "How far is it from the station to the museum by bike?")
"""Unrelated requests whose planner prompts :meth:`Agent.warm` compares to find the static start."""


def _default_selector(examples: Sequence[Example], k: int) -> ExampleSelector | None:
    """Similarity by hashed word features, for a pool larger than the prompt takes (None without numpy)."""
    if len(examples) <= k:
        return None
    try:
        return _examples.ExampleSelector(examples)
    except ImportError:
        return None


def _last_plan_repairs(plan: Plan, state: RunState, known: str) -> Plan:
    """The last plan after the repairs that need no model, in order (``AgentSettings.last_plan_repairs``)."""
    offered, usable, query = state.offer.tools, state.usable_tools, state.query
    repairs: tuple[Callable[[Plan], tuple[Plan, list[str]]], ...] = (
        lambda p: swap_siblings(p, offered, query),
        lambda p: drop_unasked_twins(p, offered, query),
        lambda p: drop_done(p, offered, query),
        lambda p: insert_producers(p, usable, query, known),
        lambda p: drop_echoed_messages(p, offered, query),
        lambda p: attach_sent_things(p, usable, query),
        lambda p: link_producers(p, usable, query),
        lambda p: read_named_items(p, offered, query),
        lambda p: wire_results(p, offered, known, query),
        lambda p: send_to_each(p, offered, query),
        lambda p: drop_repeated_messages(p, offered, query),
        lambda p: drop_double_sends(p, offered, query),  # (after the message's text is wired)
        lambda p: drop_message_topics(p, offered, query),
        lambda p: drop_borrowed_people(p, offered, query),
        lambda p: drop_made_up_people(p, offered, query),
        lambda p: keep_in_named_list(p, offered, query),
        lambda p: drop_owners(p, offered, query),
        lambda p: drop_twin_lookups(p, offered, query),
        lambda p: tidy_plan(p, offered, query),
    )
    for repair in repairs:
        plan, notes = repair(plan)
        state.result.notes.extend(notes)
    return plan


async def _no_emit(event: RunEvent) -> None:
    return None


def _with_timeout(tool: Tool, timeout: float) -> Tool:
    return tool if tool.timeout is not None else replace(tool, timeout=timeout)


def _run_sync(coro: Coroutine[Any, Any, T]) -> T:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    coro.close()
    raise UserError("run_sync()/plan_sync() cannot be called from a running event loop; await run()/plan() instead")
