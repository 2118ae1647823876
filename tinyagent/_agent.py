"""The agent: retrieve tools, plan under a grammar, execute the plan as it streams, join or replan."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from ._events import (
    AnswerEvent,
    PlanResult,
    ReplanEvent,
    RunEvent,
    RunResult,
    StepPlanned,
    StepRecord,
)
from ._executor import Executor
from ._grammar import GrammarOptions, joiner_grammar, plan_grammar
from ._plan import END_OF_PLAN, JOIN, Call, Example, Plan
from ._plan_parser import PlanStreamParser
from ._prompts import (
    build_joiner_followup,
    build_joiner_messages,
    build_planner_messages,
    planner_system_prompt,
    replan_context,
)
from ._routing_base import LocalOnly, RouteSignals, RoutingHook, Stage
from ._tools import ConfirmHook, Tool, ToolContext, ToolRegistry, deny_all
from .errors import BudgetExceeded, ModelError, PlanError, UserError
from .models._base import Completion, Model, ModelRequest, Preference, Usage

__all__ = ["Agent", "AgentSettings"]

log = logging.getLogger(__name__)


class _Retrieval(Protocol):
    tools: tuple[str, ...]
    examples: tuple[Example, ...]
    uncertain: bool


class ToolRetriever(Protocol):
    """What the agent needs from a retriever (see :mod:`tinyagent.retrieval`)."""

    def fit(self, registry: ToolRegistry, examples: Sequence[Example] = ()) -> None: ...

    def retrieve(self, query: str) -> Any: ...

    def widen(self, query: str, previous: Any, hint: str = "") -> Any: ...


NO_TOOL_PREF = "no_tool"
STOP_PREF = "stop"
# Fitted by benchmarks/calibrate_no_tool.py on held-out data (benchmarks/results/no_tool.json, qwen2.5-coder-1.5b).
# No floor for "no tool": P(join) at step 1 separates the requests that need no tool too weakly (0.002-0.16 for
# BFCL irrelevance, 0.001-0.21 for requests that need a call); the best floor (0.06) would drop 16% of needed calls.
NO_TOOL_THRESHOLD: float | None = None
# Stopping: P(join) after a call is decisive (0.6-1.0 where the plan is complete); the floor fitted there loses no
# needed call on the held-out data and ends the plans that went on past the request.
STOP_THRESHOLD: float | None = 0.46


@dataclass(frozen=True)
class AgentSettings:
    """Tunables of the agent loop.

    Attributes:
        max_replans: replans after the first plan (the answer is kept either way).
        max_examples: few-shot examples in the planner prompt.
        planner_max_tokens: generation cap for a plan.
        joiner_max_tokens: generation cap for the answer.
        joiner: ``"llm"`` asks the model for the answer; ``"template"`` builds it from the observations (no model call).
        use_grammar: constrain decoding with the generated grammar (where the model supports it).
        grammar: caps of the generated grammar.
        tool_timeout: default seconds per tool call (a tool's own ``timeout`` wins).
        streaming_execution: dispatch steps while the plan is still streaming.
        format_examples: when no worked example fits the offered tools, show a few format-only examples with other
            tools (the grammar still allows only the offered ones).
        no_tool_threshold: answer without tools (a plan of only ``join``) when the planner gives ``join`` as the first
            step at least this probability, even if a tool is likelier. Small models call a loosely related tool
            rather than none; the default is fitted on held-out data (``benchmarks/calibrate_no_tool.py``). None:
            plain greedy decoding (the default: on held-out data no floor separated the two kinds of request without
            dropping needed calls). Applies to backends that expose logits (llama.cpp); the probability is measured
            either way and reported as ``PlanResult.no_tool_prob``.
        stop_threshold: the same floor for ``join`` at every later step (ends a plan that goes on past the request);
            None: greedy.
        tool_order: how retrieved tools are listed in the prompt. ``"registry"`` (default): in registry order, so
            requests that retrieve overlapping sets share a longer prompt prefix, which llama.cpp (and the on-disk
            prefix cache) need not evaluate again; ``"relevance"``: the retriever's ranking.
    """

    max_replans: int = 2
    max_examples: int = 4
    format_examples: bool = True
    planner_max_tokens: int = 512
    joiner_max_tokens: int = 160
    joiner: Literal["llm", "template"] = "llm"
    use_grammar: bool = True
    grammar: GrammarOptions = field(default_factory=GrammarOptions)
    tool_timeout: float | None = None
    streaming_execution: bool = True
    no_tool_threshold: float | None = NO_TOOL_THRESHOLD
    stop_threshold: float | None = STOP_THRESHOLD
    tool_order: Literal["registry", "relevance"] = "registry"


class Agent:
    """An agent over a set of tools.

    Args:
        tools: tools (or plain typed functions, wrapped with :func:`~tinyagent.tool`), or a registry.
        model: a :class:`~tinyagent.models.Model`, a catalog name, a GGUF path or ``openai:URL``; default: the
            catalog's default planner, loaded on first use.
        retriever: picks the tools (and examples) offered per request; None offers every tool.
        router: a routing hook (e.g. :class:`tinyagent.routing.Router`) choosing local or cloud per stage.
        examples: worked examples; those whose tools are all offered go into the prompt.
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
        self.examples = tuple(examples)
        self.confirm = confirm
        self.deps = deps
        try:
            self.settings = replace(settings or AgentSettings(), **overrides)
        except TypeError as exc:
            raise UserError(f"unknown agent setting: {exc}") from exc
        if self.retriever is not None:
            self.retriever.fit(self.registry, self.examples)

    # -- models -----------------------------------------------------------------------------------------------
    @property
    def model(self) -> Model:
        """The local (planner) model, loaded on first use."""
        if self._router is not None:
            return self._router.local
        if self._model is None:
            from .models._catalog import load_model

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

        Raises:
            PlanParseError, PlanValidationError: the model's plan is invalid (rare under the grammar).
            ModelError: the model failed.
        """
        day = today or dt.date.today()
        self._start_task()
        tools, examples, uncertain = self._offer(query)
        model = self.router.select("plan", RouteSignals(retrieval_uncertain=uncertain))
        request = self._planner_request(model, tools, query, day, examples, history, None, 1, ())
        model, completion, plan = await self._plan_once(model, request, tools, 1, ())
        prompt_tokens = completion.usage.input_tokens or model.count_tokens(
            "".join(str(m["content"]) for m in request.messages))
        return PlanResult(
            plan=plan,
            text=completion.text,
            usage=completion.usage,
            elapsed_s=completion.elapsed_s,
            ttft_s=completion.ttft_s,
            prompt_tokens=prompt_tokens,
            tools_offered=tuple(tools),
            model=model.name,
            mean_logprob=completion.mean_logprob,
            retrieval_uncertain=uncertain,
            example_disagreement=self._disagrees_with_examples(plan.calls, examples),
            no_tool_prob=next((p for name, p, _ in completion.preference_probs if name == NO_TOOL_PREF), None),
            stop_probs=tuple(p for name, p, _ in completion.preference_probs if name == STOP_PREF),
        )

    def plan_sync(self, query: str, **kwargs: Any) -> PlanResult:
        """Synchronous :meth:`plan`."""
        result: PlanResult = _run_sync(self.plan(query, **kwargs))
        return result

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
        assert result is not None  # run_stream always ends with an AnswerEvent
        return result

    def run_sync(self, query: str, **kwargs: Any) -> RunResult:
        """Synchronous :meth:`run`."""
        result: RunResult = _run_sync(self.run(query, **kwargs))
        return result

    async def run_stream(
        self, query: str, *, today: dt.date | None = None, history: Sequence[Mapping[str, Any]] = ()
    ) -> AsyncIterator[RunEvent]:
        """Run, yielding typed events as they happen; the last event is an :class:`AnswerEvent`."""
        queue: asyncio.Queue[RunEvent | None] = asyncio.Queue()

        async def emit(event: RunEvent) -> None:
            queue.put_nowait(event)

        async def produce() -> None:
            try:
                result = await self._run(query, today or dt.date.today(), history, emit)
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
    def _offer(self, query: str, previous: Any = None, hint: str = "") -> tuple[dict[str, Tool], list[Example], bool]:
        if self.retriever is None:
            tools = dict(self.registry.items())
            return tools, self._similar_examples(query, tools.keys()), False
        retrieval = (self.retriever.widen(query, previous, hint) if previous is not None
                     else self.retriever.retrieve(query))
        self._last_retrieval = retrieval
        if self.settings.tool_order == "registry":
            chosen = set(retrieval.tools)
            names = [n for n in self.registry if n in chosen]
        else:
            names = [n for n in retrieval.tools if n in self.registry]
        tools = {n: self.registry[n] for n in names}
        examples = [e for e in retrieval.examples if e.tool_names <= tools.keys()][: self.settings.max_examples]
        return tools, examples, bool(retrieval.uncertain)

    def _start_task(self) -> None:
        """Tell a router that a new task starts (its per-task budget resets)."""
        start_task = getattr(self.router, "start_task", None)
        if callable(start_task):
            start_task()

    def _similar_examples(self, query: str, tools: Iterable[str]) -> list[Example]:
        """The examples most similar to ``query`` whose tools are all offered (static order without numpy)."""
        allowed = set(tools)
        k = self.settings.max_examples
        if len(self.examples) <= k:
            return [e for e in self.examples if e.tool_names <= allowed]
        selector = getattr(self, "_selector", None)
        if selector is None:
            try:
                from .retrieval._examples import ExampleSelector

                selector = self._selector = ExampleSelector(self.examples)
            except ImportError:
                return [e for e in self.examples if e.tool_names <= allowed][:k]
        sims = selector.similarities(selector.query_vector(query))
        return list(selector.select(allowed, k, sims, selector.looks_conversational(sims)))

    def _disagrees_with_examples(self, calls: Iterable[Call], examples: Sequence[Example]) -> bool:
        """True when the plan calls a different set of tools than the most similar worked example offered.

        Only meaningful when the examples were chosen by similarity (a pool larger than ``max_examples``, or a
        retriever); a fixed example set gives no signal.
        """
        chosen_by_similarity = self.retriever is not None or len(self.examples) > self.settings.max_examples
        if not examples or not chosen_by_similarity:
            return False
        return frozenset(c.name for c in calls) != examples[0].tool_names

    def _planner_request(
        self,
        model: Model,
        tools: Mapping[str, Tool],
        query: str,
        today: dt.date,
        examples: Sequence[Example],
        history: Sequence[Mapping[str, Any]],
        context: str | None,
        first_step: int,
        prior_steps: Sequence[int],
    ) -> ModelRequest:
        messages = build_planner_messages(tools.values(), query, today, examples, history=history,
                                          replan_context=context, format_examples=self.settings.format_examples)
        grammar = None
        if self.settings.use_grammar and model.supports_grammar:
            grammar = self._grammar(tools, first_step, tuple(prior_steps))
        wants_logprobs = bool(getattr(self.router, "wants_logprobs", False))
        return ModelRequest(messages=messages, grammar=grammar, max_tokens=self.settings.planner_max_tokens,
                            stop=(END_OF_PLAN,), logprobs=wants_logprobs, prefer=self._join_floors(first_step))

    def _join_floors(self, first_step: int) -> tuple[Preference, ...]:
        """Soft floors on ``join``: as the first step (no tool needed) and at later steps (stop early)."""
        def floor(value: float | None) -> float:
            return 2.0 if value is None else value  # above 1: measure only

        floors = [Preference(STOP_PREF, r"\n\d+\. ?\Z", JOIN, floor(self.settings.stop_threshold))]
        if first_step == 1:
            floors.insert(0, Preference(NO_TOOL_PREF, r"\A1\. ?\Z", JOIN, floor(self.settings.no_tool_threshold)))
        return tuple(floors)

    def _grammar(self, tools: Mapping[str, Tool], first_step: int, prior_steps: tuple[int, ...]) -> str:
        """The plan grammar, memoised per offered tool set (it is the same for every request with those tools)."""
        key = (tuple(tools), first_step, prior_steps)
        cache: dict[tuple[Any, ...], str] = self.__dict__.setdefault("_grammar_cache", {})
        grammar = cache.get(key)
        if grammar is None:
            if len(cache) > 64:
                cache.clear()
            grammar = cache[key] = plan_grammar(tools, options=self.settings.grammar, first_step=first_step,
                                                prior_steps=prior_steps)
        return grammar

    async def _call_model(self, model: Model, request: ModelRequest, stage: Stage,
                          notes: list[str]) -> tuple[Model, AsyncIterator[str | Completion]]:
        """Reserve budget (degrading to local if it would overshoot) and start streaming."""
        router = self.router
        try:
            router.before_call(model, request)
        except BudgetExceeded as exc:
            notes.append(f"{stage}: {model.name} skipped, budget would be exceeded ({exc}); using {router.local.name}")
            model = router.local
            router.before_call(model, request)
        return model, self._charged_stream(model, request)

    async def _charged_stream(self, model: Model, request: ModelRequest) -> AsyncIterator[str | Completion]:
        completion: Completion | None = None
        try:
            async for item in model.stream(request):
                if isinstance(item, Completion):
                    completion = item
                yield item
        finally:
            self.router.after_call(model, request, completion)

    async def _plan_once(
        self, model: Model, request: ModelRequest, tools: Mapping[str, Tool], first_step: int,
        prior: Sequence[int],
    ) -> tuple[Model, Completion, Plan]:
        notes: list[str] = []
        model, stream = await self._call_model(model, request, "plan", notes)
        parser = PlanStreamParser(tools, first_step=first_step, prior_steps=prior)
        completion: Completion | None = None
        async for item in stream:
            if isinstance(item, Completion):
                completion = item
            else:
                parser.feed(item)
        plan = parser.close()
        if completion is None:
            completion = Completion(text=parser.text, model=model.name)
        return model, completion, plan

    async def _run(
        self,
        query: str,
        today: dt.date,
        history: Sequence[Mapping[str, Any]],
        emit: Callable[[RunEvent], Any],
    ) -> RunResult:
        start = time.perf_counter()
        self._start_task()
        result = RunResult(query=query, answer="")
        timings = {"plan": 0.0, "execute": 0.0, "join": 0.0}
        records: dict[int, StepRecord] = {}
        tools, examples, uncertain = self._offer(query)
        signals = RouteSignals(retrieval_uncertain=uncertain)
        context = ToolContext(confirm_hook=self.confirm, model=self.model, today=today, deps=self.deps)
        executor = Executor(self.registry, context, emit, clock_start=start)
        if self.settings.tool_timeout is not None:
            executor.tools = {n: _with_timeout(t, self.settings.tool_timeout) for n, t in self.registry.items()}
        replan_note: str | None = None
        attempt = 0
        retrieval_state = getattr(self, "_last_retrieval", None)
        answer: str | None = None
        while True:
            stage: Stage = "plan" if attempt == 0 else "replan"
            model = self.router.select(stage, signals)
            first_step = max(records, default=0) + 1
            prior = [r.id for r in records.values() if r.ok]
            request = self._planner_request(model, tools, query, today, examples, history, replan_note,
                                            first_step, prior)
            plan_started = time.perf_counter()
            model, stream = await self._call_model(model, request, stage, result.notes)
            result.models.append(model.name)
            parser = PlanStreamParser(tools, first_step=first_step, prior_steps=prior)
            holder: dict[str, Any] = {"plan_started": plan_started}
            verify = bool(getattr(self.router, "needs_verification", False)) and attempt == 0
            streaming = self.settings.streaming_execution and not verify

            async def calls(parser: PlanStreamParser = parser, stream: AsyncIterator[Any] = stream,
                            attempt: int = attempt, holder: dict[str, Any] = holder) -> AsyncIterator[Call]:
                extra = 0
                try:
                    async for item in stream:
                        if isinstance(item, Completion):
                            holder["completion"] = item
                            continue
                        if parser.done:
                            # Drain to the Completion (usage), but not forever if a model rambles past the join.
                            extra += 1
                            if extra > 16:
                                break
                            continue
                        for call in parser.feed(item):
                            await emit(StepPlanned(call, attempt))
                            yield call
                    parser.close()
                finally:
                    holder["plan_s"] = time.perf_counter() - holder["plan_started"]
                    with contextlib.suppress(Exception):
                        await stream.aclose()  # type: ignore[attr-defined]

            error: BaseException | None
            if streaming:
                error = await executor.execute_stream(calls(), records, attempt=attempt)
            else:
                buffered: list[Call] = []
                error = None
                try:
                    async for call in calls():
                        buffered.append(call)
                except (PlanError, ModelError) as exc:
                    error = exc
                completion = holder.get("completion")
                if error is None and completion is not None:
                    check = replace(signals, mean_logprob=completion.mean_logprob, previous_model=model.name,
                                    example_disagreement=self._disagrees_with_examples(buffered, examples))
                    stronger = self.router.select("verify", check)
                    if stronger is not model and stronger.name != model.name and attempt < self.settings.max_replans:
                        reason = (f"unsure of the {model.name} plan (mean logprob {completion.mean_logprob}, "
                                  f"unlike the nearest example: {check.example_disagreement})")
                        result.notes.append(f"escalated: {reason}")
                        await emit(ReplanEvent(attempt + 1, reason, stronger.name))
                        self._count(result, holder)
                        timings["plan"] += float(holder.get("plan_s", 0.0))
                        signals = replace(check, attempt=attempt + 1)
                        attempt += 1
                        result.replans += 1
                        continue
                if error is None:
                    async def replay(items: list[Call] = buffered) -> AsyncIterator[Call]:
                        for c in items:
                            yield c
                    error = await executor.execute_stream(replay(), records, attempt=attempt)
            self._count(result, holder)
            timings["plan"] += float(holder.get("plan_s", 0.0))
            result.plans.append(Plan(calls=tuple(parser.calls)))
            result.plan_texts.append(parser.text)
            timings["execute"] = time.perf_counter() - start - timings["plan"] - timings["join"]
            new_steps = [r for r in records.values() if r.attempt == attempt]
            failed = [r for r in new_steps if not r.ok]
            can_replan = attempt < self.settings.max_replans
            if error is not None:
                kind = "the plan was invalid" if isinstance(error, PlanError) else "planner failed"
                reason = f"{kind}: {error}"
                log.info("attempt %d: %s", attempt, reason)
                result.notes.append(reason)
                signals = replace(signals, parse_failed=isinstance(error, PlanError),
                                  validation_failed="Validation" in type(error).__name__,
                                  previous_model=model.name, attempt=attempt + 1,
                                  mean_logprob=getattr(holder.get("completion"), "mean_logprob", None))
                if can_replan:
                    replan_note = replan_context(parser.text.strip() or "(nothing)",
                                                 [r.observation() for r in new_steps], reason,
                                                 max(records, default=0) + 1)
                    await emit(ReplanEvent(attempt + 1, reason, model.name))
                    attempt += 1
                    result.replans += 1
                    continue
            # Join: answer, or ask for a replan when something failed.
            join_started = time.perf_counter()
            observations = [records[k].observation() for k in sorted(records)]
            # A refused confirmation is the user's decision: report it, never plan around it.
            refused = any(r.error_type == "ConfirmationDenied" for r in failed)
            allow_replan = can_replan and bool(failed) and not refused
            verdict, text = await self._join(query, today, result, observations, allow_replan, history, signals,
                                             tools, request.messages)
            timings["join"] += time.perf_counter() - join_started
            if verdict == "replan":
                reason = text or "the joiner asked for a replan"
                signals = replace(signals, replan_requested=True, step_failed=bool(failed), attempt=attempt + 1,
                                  previous_model=model.name)
                if self.retriever is not None and retrieval_state is not None:
                    tools, examples, _ = self._offer(query, getattr(self, "_last_retrieval", None), reason)
                replan_note = replan_context(parser.text.strip(), [records[k].observation() for k in sorted(records)],
                                             reason, max(records, default=0) + 1)
                await emit(ReplanEvent(attempt + 1, reason, model.name))
                attempt += 1
                result.replans += 1
                continue
            answer = text
            break
        result.answer = answer or _template_answer(query, list(records.values()))
        result.steps = [records[k] for k in sorted(records)]
        timings["total"] = time.perf_counter() - start
        if executor.first_dispatch_s is not None:
            timings["first_dispatch"] = executor.first_dispatch_s
        result.timings = timings
        result.routing = dict(self.router.status())
        if result.routing.get("degraded") or any("budget" in n for n in result.notes):
            result.status = "degraded"
        if not result.steps and any("invalid" in n or "failed" in n for n in result.notes):
            result.status = "failed" if not answer else result.status
        cost = result.routing.get("spent")
        result.cost = float(cost) if isinstance(cost, int | float) else 0.0
        return result

    def _count(self, result: RunResult, holder: Mapping[str, Any]) -> None:
        completion = holder.get("completion")
        if isinstance(completion, Completion):
            result.usage = result.usage + completion.usage

    async def _join(
        self,
        query: str,
        today: dt.date,
        result: RunResult,
        observations: list[str],
        allow_replan: bool,
        history: Sequence[Mapping[str, Any]],
        signals: RouteSignals,
        tools: Mapping[str, Tool],
        planner_messages: Sequence[Mapping[str, Any]] = (),
    ) -> tuple[Literal["answer", "replan"], str]:
        if self.settings.joiner == "template":
            return "answer", ""
        model = self.router.select("join", signals)
        if planner_messages and result.plan_texts and result.models and result.models[-1] == model.name:
            # Same model as the plan: continue its conversation, so the KV cache covers everything but the results.
            messages = build_joiner_followup(planner_messages, result.plan_texts[-1], query, observations,
                                             allow_replan=allow_replan)
        else:
            messages = build_joiner_messages(query, today, result.plan if result.plans else Plan(), observations,
                                             allow_replan=allow_replan, history=history,
                                             shared_prefix=planner_system_prompt(tools.values()))
        grammar = joiner_grammar(allow_replan) if (self.settings.use_grammar and model.supports_grammar) else None
        request = ModelRequest(messages=messages, grammar=grammar, max_tokens=self.settings.joiner_max_tokens)
        try:
            model, stream = await self._call_model(model, request, "join", result.notes)
            result.models.append(model.name)
            completion: Completion | None = None
            async for item in stream:
                if isinstance(item, Completion):
                    completion = item
            if completion is None:
                raise ModelError("the joiner returned no completion")
        except (ModelError, BudgetExceeded) as exc:
            result.notes.append(f"joiner failed ({exc}); the answer was built from the results")
            return "answer", ""
        result.usage = result.usage + completion.usage
        text = completion.text.strip()
        lowered = text.lower()
        if allow_replan and lowered.startswith("replan:"):
            return "replan", text.split(":", 1)[1].strip()
        if lowered.startswith("answer:"):
            text = text.split(":", 1)[1].strip()
        elif lowered.startswith("replan:"):
            text = ""
        return "answer", text


def _template_answer(query: str, records: Sequence[StepRecord]) -> str:
    """An answer built from the observations, used when no model answer is available."""
    if not records:
        return "I could not make a plan for that request."
    lines = []
    for r in sorted(records, key=lambda r: r.id):
        lines.append(r.observation())
    ok = all(r.ok for r in records)
    head = "Done." if ok else "Some steps did not succeed."
    return head + "\n" + "\n".join(lines)


def _with_timeout(tool: Tool, timeout: float) -> Tool:
    return tool if tool.timeout is not None else replace(tool, timeout=timeout)


def _run_sync(coro: Any) -> Any:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    coro.close()
    raise UserError("run_sync()/plan_sync() cannot be called from a running event loop; await run()/plan() instead")


__all__ += ["ToolRetriever", "Usage"]
