"""Everything one run owns, in one object: two concurrent runs on one agent share nothing."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._events import RunEvent, RunResult, StepRecord
from .._executor import Executor
from .._plan import Example
from .._provenance import Provenance
from .._routing_base import RouteSignals, RoutingHook
from .._tools import Tool, ToolRegistry
from ._retrieve import ExampleSelector, Offer, ToolRetriever, offer
from ._settings import AgentSettings

__all__ = ["Emit", "RunSetup", "RunState"]

Emit = Callable[[RunEvent], Awaitable[None]]


@dataclass(frozen=True)
class RunSetup:
    """What the stages read from the agent (its configuration; never written during a run)."""

    registry: ToolRegistry
    router: RoutingHook
    settings: AgentSettings
    retriever: ToolRetriever | None
    examples: tuple[Example, ...]
    selector: ExampleSelector | None

    @property
    def examples_by_similarity(self) -> bool:
        """Whether the prompt's examples are chosen by similarity (so a plan unlike the first one is a signal)."""
        return self.retriever is not None or (self.selector is not None
                                              and len(self.examples) > self.settings.max_examples)

    def offer(self, query: str, previous: Any = None, hint: str = "") -> Offer:
        """The tools and examples for ``query`` (widened from ``previous`` when given)."""
        return offer(self.registry, self.settings, query, retriever=self.retriever, examples=self.examples,
                     selector=self.selector, previous=previous, hint=hint)


@dataclass
class RunState:
    """The state of one run (or one :meth:`Agent.plan`), passed from stage to stage.

    Attributes:
        query: the user's request.
        today: the date relative dates resolve against.
        history: earlier conversation turns.
        emit: where events go.
        offer: the tools and examples offered (widened on a replan that asks for it).
        executor: runs the steps (holds the run's tool context and provenance).
        result: the run's result, filled as the run goes.
        signals: what the router is told at the next stage.
        records: every step so far, by id (earlier attempts' steps stay referable).
        attempt: 0 for the first plan, then 1, 2 … per replan.
        replan_note: the previous attempt, shown to the next planner call.
        answer: the joiner's answer, once there is one.
        timings: seconds per stage.
        grammars: plan grammars made in this run, by (tools, first step, prior steps).
        boundary: this run's marker around tool data in prompts.
        force_call: the next plan from step 1 must start with a call (``join`` only at P 1): set when a request
            to send got no call (:func:`~._channels.unserved_channel`).
        banned: tools the next plan's grammar leaves out (the prompt still lists them, so its KV cache holds): the
            tools of a first plan the no-tool decision refused, when the planner gets a second choice.
        avoid: tools every later plan's grammar leaves out, because the request rules them out (a tool for an
            existing message where the request asks for a new one, one that sends by the other channel:
            :func:`~._repair.ruled_out`).
        required: groups of tools; the next plan calls one of each group before ``join`` (a request to send
            whose plan sent nothing, a clause it did not serve).
        started: ``time.perf_counter()`` at the start.
    """

    query: str
    today: dt.date
    history: Sequence[Mapping[str, Any]]
    emit: Emit
    offer: Offer
    executor: Executor
    result: RunResult
    signals: RouteSignals = field(default_factory=RouteSignals)
    records: dict[int, StepRecord] = field(default_factory=dict)
    attempt: int = 0
    replan_note: str | None = None
    answer: str | None = None
    timings: dict[str, float] = field(default_factory=lambda: {"plan": 0.0, "execute": 0.0, "join": 0.0})
    grammars: dict[tuple[Any, ...], str] = field(default_factory=dict)
    boundary: str = ""
    force_call: bool = False
    banned: frozenset[str] = frozenset()
    avoid: frozenset[str] = frozenset()
    required: tuple[frozenset[str], ...] = ()
    started: float = field(default_factory=time.perf_counter)

    @property
    def usable_tools(self) -> dict[str, Tool]:
        """The offered tools the request does not rule out (:attr:`avoid`)."""
        return {n: t for n, t in self.offer.tools.items() if n not in self.avoid}

    @property
    def next_step(self) -> int:
        """The number the next planned step gets."""
        return max(self.records, default=0) + 1

    @property
    def prior_steps(self) -> list[int]:
        """Earlier steps that succeeded (a replan may reference them)."""
        return [r.id for r in self.records.values() if r.ok]

    def observations(self, attempt: int | None = None) -> list[str]:
        """One line per step (of ``attempt`` only, when given), in step order."""
        return [self.records[k].observation() for k in sorted(self.records)
                if attempt is None or self.records[k].attempt == attempt]

    @property
    def provenance(self) -> Provenance:
        """The run's provenance classifier."""
        return self.executor.provenance
