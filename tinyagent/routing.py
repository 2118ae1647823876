"""Budget-aware routing between a free local model and a paid cloud model.

Most requests stay on the device. A :class:`Router` sends a stage to the cloud only when its policy says so and the
worst case of the call fits in what is left of the budget; otherwise the task degrades to the local model and
:meth:`Router.status` says why. Policies:

- :class:`AlwaysLocal` and :class:`AlwaysCloud`;
- :class:`LocalFirst`: plan locally, escalate on signals (the plan did not parse or validate, its mean token
  log-probability is low, retrieval was uncertain, a step failed, the joiner asked for a replan). Escalation is per
  stage: the replan goes to the cloud and the local results so far are kept.

Decisions are pure functions of the stage and the signals (:meth:`LocalFirst.decide`), so they are easy to test.
:func:`calibrate` fits the confidence threshold on recorded outcomes for a target cost or accuracy; from a shell::

    python -m tinyagent.routing calibrate --records records.jsonl --target-cost 0.4 --relative
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import math
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from ._routing_base import RouteSignals, Stage
from .budget import Budget, BudgetLedger, Reservation, cost_of, worst_case_cost
from .errors import BudgetExceeded, ConfigurationError, EndpointError
from .models._base import Completion, Model, ModelRequest
from .models._openai import EndpointUnreachable

__all__ = [
    "AlwaysCloud",
    "AlwaysLocal",
    "Decision",
    "EscalationThresholds",
    "FrontierPoint",
    "LocalFirst",
    "Policy",
    "RouteRecord",
    "Router",
    "calibrate",
    "frontier",
    "load_records",
    "main",
    "simulate",
]

log = logging.getLogger(__name__)

Target = Literal["local", "cloud"]


# -- policies -----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Decision:
    """Where a stage goes, and why.

    Attributes:
        target: ``"local"`` or ``"cloud"``.
        reasons: why (empty for the policy's default).
    """

    target: Target
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class EscalationThresholds:
    """When :class:`LocalFirst` escalates to the cloud.

    Attributes:
        min_mean_logprob: escalate a local plan whose mean token log-probability is below this (None: never on
            confidence alone). Log-probabilities are <= 0; a higher threshold escalates more.
        escalate_on_parse_failure: the local plan did not parse.
        escalate_on_validation_failure: the local plan named an unknown tool or passed bad arguments.
        escalate_on_step_failure: a step of the plan failed or timed out.
        escalate_on_replan: the joiner asked for a replan.
        escalate_on_retrieval_uncertain: the tool retriever was unsure, so plan in the cloud from the start.
        escalate_on_example_disagreement: the local plan calls a different set of tools than the most similar worked
            example in its prompt.
        max_cloud_calls_per_task: the most cloud calls in one task (None: no cap besides the budget).
    """

    min_mean_logprob: float | None = None
    escalate_on_parse_failure: bool = True
    escalate_on_validation_failure: bool = True
    escalate_on_step_failure: bool = True
    escalate_on_replan: bool = True
    escalate_on_retrieval_uncertain: bool = False
    escalate_on_example_disagreement: bool = False
    max_cloud_calls_per_task: int | None = None

    def __post_init__(self) -> None:
        if self.min_mean_logprob is not None and math.isnan(self.min_mean_logprob):
            raise ConfigurationError("min_mean_logprob must be a number or None, not NaN")
        if self.max_cloud_calls_per_task is not None and self.max_cloud_calls_per_task < 0:
            raise ConfigurationError("max_cloud_calls_per_task must be >= 0 or None")

    def to_dict(self) -> dict[str, Any]:
        """The thresholds as JSON-ready data."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EscalationThresholds:
        """Inverse of :meth:`to_dict`.

        Raises:
            ConfigurationError: an unknown key or a bad value.
        """
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigurationError(f"unknown threshold setting(s) {unknown}; known: {sorted(known)}")
        try:
            return cls(**dict(data))
        except TypeError as exc:
            raise ConfigurationError(f"bad thresholds {dict(data)!r}: {exc}") from exc


class Policy(Protocol):
    """A routing policy: a pure function from stage and signals to a :class:`Decision`."""

    name: str

    def decide(self, stage: Stage, signals: RouteSignals, *, cloud_name: str, cloud_calls: int = 0) -> Decision:
        """Where ``stage`` should run.

        Args:
            stage: ``"plan"``, ``"verify"``, ``"replan"`` or ``"join"``.
            signals: what the agent knows.
            cloud_name: the cloud model's name, to tell whether ``signals.previous_model`` was the cloud.
            cloud_calls: cloud calls made in this task so far.
        """
        ...


class AlwaysLocal:
    """Every stage runs on the local model."""

    name = "always-local"

    def decide(self, stage: Stage, signals: RouteSignals, *, cloud_name: str, cloud_calls: int = 0) -> Decision:
        """Always ``local``."""
        return Decision("local", ("policy: always local",))


class AlwaysCloud:
    """Every stage that calls a model runs in the cloud (budget and connectivity permitting)."""

    name = "always-cloud"

    def decide(self, stage: Stage, signals: RouteSignals, *, cloud_name: str, cloud_calls: int = 0) -> Decision:
        """Always ``cloud``."""
        return Decision("cloud", ("policy: always cloud",))


class LocalFirst:
    """Plan on the device; escalate to the cloud on the signals enabled in ``thresholds``.

    Args:
        thresholds: which signals escalate, and the confidence threshold.
    """

    name = "local-first"

    def __init__(self, thresholds: EscalationThresholds | None = None) -> None:
        self.thresholds = thresholds or EscalationThresholds()

    def __repr__(self) -> str:
        return f"LocalFirst({self.thresholds!r})"

    def escalation_reasons(self, signals: RouteSignals, stage: Stage) -> tuple[str, ...]:
        """The enabled signals that are present, as reasons to escalate (empty: stay local)."""
        t = self.thresholds
        reasons: list[str] = []
        if t.escalate_on_parse_failure and signals.parse_failed:
            reasons.append("local plan did not parse")
        if t.escalate_on_validation_failure and signals.validation_failed:
            reasons.append("local plan did not validate")
        if (
            t.min_mean_logprob is not None
            and signals.mean_logprob is not None
            and signals.mean_logprob < t.min_mean_logprob
        ):
            reasons.append(f"low confidence (mean logprob {signals.mean_logprob:.3f} < {t.min_mean_logprob:.3f})")
        if t.escalate_on_retrieval_uncertain and signals.retrieval_uncertain:
            reasons.append("retrieval uncertain")
        if t.escalate_on_example_disagreement and signals.example_disagreement:
            reasons.append("the plan's tools differ from the most similar worked example's")
        if stage == "replan":
            if t.escalate_on_step_failure and signals.step_failed:
                reasons.append("a step failed")
            if t.escalate_on_replan and signals.replan_requested:
                reasons.append("the joiner asked for a replan")
        return tuple(reasons)

    def decide(self, stage: Stage, signals: RouteSignals, *, cloud_name: str, cloud_calls: int = 0) -> Decision:
        """Local by default; cloud when an enabled signal fires, and stay in the cloud once a task got there."""
        t = self.thresholds
        previous_cloud = bool(cloud_name) and signals.previous_model == cloud_name
        if stage == "verify" and previous_cloud:
            return Decision("cloud", ("the plan came from the cloud",))
        if t.max_cloud_calls_per_task is not None and cloud_calls >= t.max_cloud_calls_per_task:
            return Decision("local", (f"cloud call cap of {t.max_cloud_calls_per_task} per task reached",))
        if stage == "plan":
            if t.escalate_on_retrieval_uncertain and signals.retrieval_uncertain:
                return Decision("cloud", ("retrieval uncertain",))
            return Decision("local", ())
        if stage == "join":
            return Decision("local", ())
        if stage == "replan" and previous_cloud:
            return Decision("cloud", ("the task was already escalated",))
        reasons = self.escalation_reasons(signals, stage)
        return Decision("cloud", reasons) if reasons else Decision("local", ())


# -- the router ----------------------------------------------------------------------------------------------------
@dataclass
class _Pending:
    reservation: Reservation | None
    started: float


class Router:
    """Chooses the model for each stage and enforces the budget; implements ``tinyagent._routing_base.RoutingHook``.

    A task starts with the first ``select("plan", ...)`` of attempt 0 (or an explicit :meth:`start_task`). Only calls
    to models other than ``local`` are charged to the budget. When a cloud call cannot fit in the budget,
    :meth:`before_call` raises :class:`~tinyagent.errors.BudgetExceeded`, the agent falls back to ``local``, and the
    rest of the task stays local. After failed cloud calls (or one that could not reach the endpoint) the router treats
    the cloud as offline for ``offline_cooldown_s`` and routes locally.

    Args:
        local: the on-device model (free).
        cloud: the paid model, or None (everything stays local).
        policy: the routing policy; :class:`LocalFirst` by default.
        task_budget: the cap per task (one user request).
        session_budget: the cap for the router's life.
        ledger: a shared ledger instead of the two budgets (e.g. one session budget for several agents).
        charge_failed_calls: charge a failed cloud call its worst case (a provider may bill a request that timed out);
            when False a failed call is charged nothing.
        offline_after_failures: consecutive failed cloud calls (each after the model's own retries) after which the
            cloud is treated as offline.
        offline_cooldown_s: how long the cloud stays marked offline before it is tried again.
        wants_logprobs: ask models for token log-probabilities; by default only when the policy uses confidence.
        clock: seconds, monotonic (injected by tests).

    Attributes:
        wants_logprobs: the agent asks for log-probabilities in planner requests.
        needs_verification: the agent buffers the first plan and asks ``select("verify", ...)`` before executing it
            (only when confidence or example agreement is used: those signals exist only once the plan is complete).

    Raises:
        ConfigurationError: the local and cloud models have the same name, or a setting is invalid.
    """

    def __init__(
        self,
        local: Model,
        cloud: Model | None = None,
        policy: Policy | None = None,
        *,
        task_budget: Budget | None = None,
        session_budget: Budget | None = None,
        ledger: BudgetLedger | None = None,
        charge_failed_calls: bool = True,
        offline_after_failures: int = 1,
        offline_cooldown_s: float = 60.0,
        wants_logprobs: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if cloud is not None and cloud.name == local.name:
            raise ConfigurationError(
                f"local and cloud models are both named {local.name!r}; give them different names so routing "
                "decisions can tell them apart"
            )
        if ledger is not None and (task_budget is not None or session_budget is not None):
            raise ConfigurationError("pass either ledger= or task_budget=/session_budget=, not both")
        if offline_after_failures < 1 or offline_cooldown_s < 0:
            raise ConfigurationError("offline_after_failures must be >= 1 and offline_cooldown_s >= 0")
        self.local = local
        self.cloud = cloud
        self.policy: Policy = policy if policy is not None else LocalFirst()
        self.ledger = ledger if ledger is not None else BudgetLedger(task=task_budget, session=session_budget)
        self.charge_failed_calls = charge_failed_calls
        self.offline_after_failures = offline_after_failures
        self.offline_cooldown_s = offline_cooldown_s
        self._clock = clock
        thresholds = self.policy.thresholds if isinstance(self.policy, LocalFirst) else None
        uses_confidence = thresholds is not None and thresholds.min_mean_logprob is not None
        checks_plans = uses_confidence or (thresholds is not None and thresholds.escalate_on_example_disagreement)
        self.needs_verification = checks_plans and cloud is not None
        self.wants_logprobs = uses_confidence if wants_logprobs is None else wants_logprobs
        self._lock = threading.RLock()
        self._pending: dict[tuple[int, int], list[_Pending]] = {}
        self._offline_until: float | None = None
        self._offline_reason = ""
        self._failures = 0
        self._task_started = False
        self._reset_task_state()
        self._session_calls = {"local": 0, "cloud": 0, "cloud_failed": 0}

    def _reset_task_state(self) -> None:
        self._decisions: list[dict[str, object]] = []
        self._degraded: str | None = None
        self._degraded_message = ""
        self._task_calls = {"local": 0, "cloud": 0, "cloud_failed": 0}

    # -- RoutingHook -----------------------------------------------------------------------------------------------
    def start_task(self) -> None:
        """Begin a new task: the per-task budget, decisions and degradation start afresh."""
        with self._lock:
            self.ledger.start_task()
            self._reset_task_state()
            self._task_started = True

    def select(self, stage: Stage, signals: RouteSignals) -> Model:
        """The model for ``stage``: the policy's choice, unless the cloud is missing, offline or out of budget.

        For ``"verify"`` the previous plan's model is returned when no re-plan is wanted.
        """
        with self._lock:
            if stage == "plan" and signals.attempt == 0:
                self.start_task()
            cloud_name = self.cloud.name if self.cloud is not None else ""
            decision = self.policy.decide(stage, signals, cloud_name=cloud_name, cloud_calls=self._task_calls["cloud"])
            model, note = self._resolve(stage, signals, decision)
            self._decisions.append(
                {
                    "stage": stage,
                    "attempt": signals.attempt,
                    "wanted": decision.target,
                    "model": model.name,
                    "reasons": list(decision.reasons) + ([note] if note else []),
                }
            )
            if decision.target == "cloud" and model is self.cloud:
                log.info("routing %s to %s: %s", stage, model.name, "; ".join(decision.reasons) or "policy")
            return model

    def _resolve(self, stage: Stage, signals: RouteSignals, decision: Decision) -> tuple[Model, str]:
        if decision.target == "local" or self.cloud is None:
            if decision.target == "cloud":
                return self.local, "no cloud model configured"
            return self.local, ""
        if stage == "verify" and signals.previous_model == self.cloud.name:
            return self.cloud, ""  # keeping the cloud's plan costs nothing: no call is made
        if self._degraded == "budget":
            return self.local, "degraded: budget"
        if self.is_offline():
            self._degrade("offline", f"cloud {self.cloud.name} is offline ({self._offline_reason}); using local")
            return self.local, "degraded: offline"
        return self.cloud, ""

    def before_call(self, model: Model, request: ModelRequest) -> None:
        """Reserve the worst case of a cloud call (every prompt token plus ``max_tokens``).

        Raises:
            BudgetExceeded: the call could overshoot the task or session budget; it must not be made. The task is
                marked degraded and stays local.
        """
        metered = self._metered(model)
        reservation: Reservation | None = None
        if metered:
            worst = worst_case_cost(model, request)
            try:
                reservation = self.ledger.reserve(worst, label=model.name)
            except BudgetExceeded as exc:
                with self._lock:
                    self._degrade("budget", str(exc))
                log.warning("budget: %s", exc)
                raise
        with self._lock:
            self._pending.setdefault((id(model), id(request)), []).append(_Pending(reservation, self._clock()))

    def after_call(self, model: Model, request: ModelRequest, completion: Completion | None) -> None:
        """Charge what the call cost (its worst case if it failed and ``charge_failed_calls``); free the rest."""
        with self._lock:
            stack = self._pending.get((id(model), id(request)))
            pending = stack.pop() if stack else None
            if stack is not None and not stack:
                del self._pending[(id(model), id(request))]
            metered = self._metered(model)
            kind = "cloud" if metered else "local"
            if completion is None:
                if metered:
                    self._task_calls["cloud_failed"] += 1
                    self._session_calls["cloud_failed"] += 1
                    self._note_cloud_failure(model)
            else:
                self._task_calls[kind] += 1
                self._session_calls[kind] += 1
                if metered:
                    self._failures = 0
                    self._offline_until = None
        if pending is None or pending.reservation is None:
            if metered and pending is None:
                log.warning("after_call for %s without before_call: nothing was reserved, nothing charged", model.name)
            return
        if completion is not None:
            self.ledger.commit(pending.reservation, cost_of(model.pricing, completion.usage))
        elif self.charge_failed_calls:
            self.ledger.commit(pending.reservation, pending.reservation.amount)
        else:
            self.ledger.release(pending.reservation)

    def status(self) -> dict[str, object]:
        """Policy, degradation, this task's spend, the budgets, call counts and this task's decisions (JSON-ready).

        ``spent`` and ``spent_tokens`` are the current task's charges; ``budget`` holds the task and session ledger.
        """
        with self._lock:
            budget = self.ledger.snapshot()
            return {
                "policy": self.policy.name,
                "local": self.local.name,
                "cloud": self.cloud.name if self.cloud is not None else None,
                "degraded": self._degraded is not None,
                "reason": self._degraded,
                "message": self._degraded_message,
                "offline": self.is_offline(),
                "spent": self.ledger.task_spent.usd,
                "spent_tokens": self.ledger.task_spent.tokens,
                "calls": dict(self._task_calls),
                "session_calls": dict(self._session_calls),
                "budget": budget,
                "budget_violations": 0 if self.ledger.within_limits() else 1,
                "decisions": [dict(d) for d in self._decisions],
            }

    # -- connectivity --------------------------------------------------------------------------------------------
    def is_offline(self) -> bool:
        """Whether the cloud is currently treated as unreachable."""
        with self._lock:
            return self._offline_until is not None and self._clock() < self._offline_until

    def mark_offline(self, reason: str = "marked offline") -> None:
        """Route locally for ``offline_cooldown_s`` (e.g. the app knows the network is down)."""
        with self._lock:
            self._offline_until = self._clock() + self.offline_cooldown_s
            self._offline_reason = reason
            log.warning("cloud marked offline for %.0f s: %s", self.offline_cooldown_s, reason)

    def mark_online(self) -> None:
        """Forget earlier failures and try the cloud again."""
        with self._lock:
            self._offline_until = None
            self._failures = 0

    async def probe(self) -> bool:
        """Ask the cloud endpoint whether it is up (``ping()``, where the model has one) and mark it accordingly.

        Returns:
            Whether the cloud is reachable (False when there is no cloud model).
        """
        if self.cloud is None:
            return False
        ping = getattr(self.cloud, "ping", None)
        if ping is None:
            return not self.is_offline()
        up = bool(await ping())
        if up:
            self.mark_online()
        else:
            self.mark_offline("probe failed")
        return up

    # -- internals -----------------------------------------------------------------------------------------------
    def _metered(self, model: Model) -> bool:
        return model is not self.local and model.name != self.local.name

    def _degrade(self, reason: str, message: str) -> None:
        if self._degraded is None or reason == "budget":
            self._degraded = reason
            self._degraded_message = message

    def _note_cloud_failure(self, model: Model) -> None:
        self._failures += 1
        error = getattr(model, "last_error", None)
        unreachable = isinstance(error, EndpointUnreachable)
        if unreachable or self._failures >= self.offline_after_failures:
            why = "unreachable" if unreachable else f"{self._failures} failed calls in a row"
            if isinstance(error, EndpointError):
                why += f": {error}"
            self.mark_offline(why)

    def __repr__(self) -> str:
        cloud = self.cloud.name if self.cloud is not None else None
        return f"Router(local={self.local.name!r}, cloud={cloud!r}, policy={self.policy.name!r})"


# -- calibration ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RouteRecord:
    """The recorded outcome of one request on both models, for calibration and the cost–success frontier.

    Attributes:
        id: the request's id.
        local_success: the local model's plan was right.
        cloud_success: the cloud model's plan was right.
        local_mean_logprob: the local plan's mean token log-probability, if known.
        local_parse_failed: the local plan did not parse.
        local_validation_failed: the local plan did not validate.
        local_example_disagreement: the local plan's tools differ from the most similar worked example's.
        local_cost: what the local call cost (0 on the device).
        cloud_cost: what the cloud call cost.
        extra: anything else recorded (tokens, latency …).
    """

    id: str
    local_success: bool
    cloud_success: bool
    local_mean_logprob: float | None = None
    local_parse_failed: bool = False
    local_validation_failed: bool = False
    local_example_disagreement: bool = False
    local_cost: float = 0.0
    cloud_cost: float = 0.0
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RouteRecord:
        """Build a record from a JSON object; unknown keys go to ``extra``.

        Raises:
            ConfigurationError: a required key is missing or a value has the wrong type.
        """
        try:
            lp = data.get("local_mean_logprob")
            known = {f.name for f in dataclasses.fields(cls)} - {"extra"}
            return cls(
                id=str(data["id"]),
                local_success=bool(data["local_success"]),
                cloud_success=bool(data["cloud_success"]),
                local_mean_logprob=None if lp is None else float(lp),
                local_parse_failed=bool(data.get("local_parse_failed", False)),
                local_validation_failed=bool(data.get("local_validation_failed", False)),
                local_example_disagreement=bool(data.get("local_example_disagreement", False)),
                local_cost=float(data.get("local_cost", 0.0)),
                cloud_cost=float(data.get("cloud_cost", 0.0)),
                extra={k: v for k, v in data.items() if k not in known},
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigurationError(
                f"not a routing record ({exc}): {dict(data)!r:.200}; each needs id, local_success and cloud_success"
            ) from exc

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``extra`` merged in)."""
        out = {k: v for k, v in dataclasses.asdict(self).items() if k != "extra"}
        return {**dict(self.extra), **out}

    def signals(self) -> RouteSignals:
        """The signals the agent would give the router after the local plan."""
        return RouteSignals(
            attempt=0,
            parse_failed=self.local_parse_failed,
            validation_failed=self.local_validation_failed,
            mean_logprob=self.local_mean_logprob,
            example_disagreement=self.local_example_disagreement,
            previous_model="local",
        )


@dataclass(frozen=True)
class FrontierPoint:
    """Success and cost of one routing setting over a set of records.

    Attributes:
        threshold: the ``min_mean_logprob`` used (None: confidence not used).
        success: the success rate, 0 to 1.
        cost: the total cost over the records.
        cost_per_request: ``cost`` divided by the number of records.
        escalated: the fraction of requests sent to the cloud.
    """

    threshold: float | None
    success: float
    cost: float
    cost_per_request: float
    escalated: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return dataclasses.asdict(self)


def simulate(records: Sequence[RouteRecord], policy: Policy) -> FrontierPoint:
    """Replay ``records`` through ``policy``'s verify decision: local first, then the cloud when it escalates.

    :class:`AlwaysCloud` is treated as cloud-only (no local call is made or paid for).

    Raises:
        ConfigurationError: ``records`` is empty.
    """
    if not records:
        raise ConfigurationError("no records to simulate: record some requests first")
    successes = 0
    cost = 0.0
    escalated = 0
    for record in records:
        if isinstance(policy, AlwaysCloud):
            successes += record.cloud_success
            cost += record.cloud_cost
            escalated += 1
            continue
        decision = policy.decide("verify", record.signals(), cloud_name="cloud")
        cost += record.local_cost
        if decision.target == "cloud":
            escalated += 1
            successes += record.cloud_success
            cost += record.cloud_cost
        else:
            successes += record.local_success
    n = len(records)
    threshold = policy.thresholds.min_mean_logprob if isinstance(policy, LocalFirst) else None
    return FrontierPoint(threshold, successes / n, cost, cost / n, escalated / n)


def candidate_thresholds(records: Iterable[RouteRecord]) -> list[float | None]:
    """Every threshold that changes a decision: None (confidence unused), then just above each distinct logprob."""
    values = sorted({r.local_mean_logprob for r in records if r.local_mean_logprob is not None})
    return [None, *(math.nextafter(v, math.inf) for v in values)]


def frontier(
    records: Sequence[RouteRecord],
    thresholds: Iterable[float | None] | None = None,
    base: EscalationThresholds | None = None,
) -> list[FrontierPoint]:
    """Success and cost of :class:`LocalFirst` at each confidence threshold (all thresholds that matter by default).

    Args:
        records: recorded outcomes.
        thresholds: the ``min_mean_logprob`` values to try.
        base: the other escalation settings (parse/validation failure …).
    """
    base = base or EscalationThresholds()
    grid = list(thresholds) if thresholds is not None else candidate_thresholds(records)
    return [simulate(records, LocalFirst(dataclasses.replace(base, min_mean_logprob=t))) for t in grid]


def calibrate(
    records: Sequence[RouteRecord],
    target_cost: float | None = None,
    target_accuracy: float | None = None,
    *,
    relative: bool = False,
    base: EscalationThresholds | None = None,
) -> EscalationThresholds:
    """Fit ``min_mean_logprob`` on recorded outcomes.

    With ``target_cost`` it picks the most successful threshold whose mean cost per request stays within it; with
    ``target_accuracy`` the cheapest whose success rate reaches it; with both, the cheapest that reaches the accuracy
    within the cost (or, if none does, the most successful within the cost). With ``relative=True`` the targets are
    fractions of always-cloud's cost per request and success rate (e.g. 0.4 and 0.95).

    Args:
        records: recorded outcomes (see :class:`RouteRecord`).
        target_cost: the most cost per request (absolute, or a fraction of always-cloud's).
        target_accuracy: the least success rate (absolute, or a fraction of always-cloud's).
        relative: read the targets as fractions of always-cloud.
        base: the other escalation settings to keep. None tries the defaults both with and without
            ``escalate_on_example_disagreement`` (when the records carry that signal) and keeps the better.

    Returns:
        ``base`` (or the better default) with the fitted ``min_mean_logprob``.

    Raises:
        ConfigurationError: no records, no target, or no threshold meets the cost target.
    """
    if target_cost is None and target_accuracy is None:
        raise ConfigurationError("calibrate needs target_cost, target_accuracy or both")
    if base is None:
        bases = [EscalationThresholds()]
        if any(r.local_example_disagreement for r in records):
            bases.append(EscalationThresholds(escalate_on_example_disagreement=True))
    else:
        bases = [base]
    tagged = [(b, p) for b in bases for p in frontier(records, base=b)]
    by_point = {id(p): b for b, p in tagged}
    points = [p for _, p in tagged]
    cloud = simulate(records, AlwaysCloud())
    max_cost = None if target_cost is None else target_cost * (cloud.cost_per_request if relative else 1.0)
    min_success = None if target_accuracy is None else target_accuracy * (cloud.success if relative else 1.0)
    eps = 1e-12
    affordable = [p for p in points if max_cost is None or p.cost_per_request <= max_cost + eps]
    if not affordable:
        cheapest = min(points, key=lambda p: p.cost_per_request)
        raise ConfigurationError(
            f"no threshold keeps the cost per request within {max_cost:.6g}; the cheapest costs "
            f"{cheapest.cost_per_request:.6g}: raise target_cost"
        )
    good = [p for p in affordable if min_success is not None and p.success >= min_success - eps]
    if min_success is None:
        best = max(affordable, key=lambda p: (p.success, -p.cost_per_request))
    elif good:
        best = min(good, key=lambda p: (p.cost_per_request, -p.success))
    else:
        best = max(affordable, key=lambda p: (p.success, -p.cost_per_request))
        log.warning(
            "no threshold reaches success %.3f%s; using the best one (%.3f)",
            min_success or 0.0,
            "" if max_cost is None else f" within cost {max_cost:.6g}",
            best.success,
        )
    log.info(
        "calibrated min_mean_logprob=%s: success %.3f, cost/request %.6g, escalated %.0f%%",
        best.threshold, best.success, best.cost_per_request, 100 * best.escalated,
    )
    return dataclasses.replace(by_point[id(best)], min_mean_logprob=best.threshold)


def load_records(path: str | Path) -> list[RouteRecord]:
    """Read routing records from a JSONL file (one JSON object a line; blank lines skipped).

    Raises:
        ConfigurationError: the file is missing or a line is not a record.
    """
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigurationError(f"cannot read routing records from {p}: {exc}") from exc
    records = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigurationError(f"{p}:{n}: not JSON ({exc.msg})") from exc
        if not isinstance(data, dict):
            raise ConfigurationError(f"{p}:{n}: expected a JSON object per line")
        records.append(RouteRecord.from_dict(data))
    return records


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tinyagent.routing calibrate --records FILE.jsonl --target-cost X [--target-accuracy Y]``.

    Writes the fitted thresholds and their expected success and cost as JSON to stdout.

    Returns:
        The exit status (0 on success, 2 on bad input).
    """
    parser = argparse.ArgumentParser(prog="python -m tinyagent.routing", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    cal = sub.add_parser("calibrate", help="fit the escalation threshold on recorded outcomes")
    cal.add_argument("--records", required=True, help="JSONL file of routing records")
    cal.add_argument("--target-cost", type=float, default=None, help="most cost per request")
    cal.add_argument("--target-accuracy", type=float, default=None, help="least success rate")
    cal.add_argument("--relative", action="store_true", help="targets are fractions of always-cloud")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s", stream=sys.stderr)
    try:
        records = load_records(args.records)
        thresholds = calibrate(
            records, target_cost=args.target_cost, target_accuracy=args.target_accuracy, relative=args.relative
        )
    except ConfigurationError as exc:
        log.error("%s", exc)
        return 2
    point = simulate(records, LocalFirst(thresholds))
    out = {
        "thresholds": thresholds.to_dict(),
        "expected": point.to_dict(),
        "always_local": simulate(records, AlwaysLocal()).to_dict(),
        "always_cloud": simulate(records, AlwaysCloud()).to_dict(),
        "records": len(records),
    }
    sys.stdout.write(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
