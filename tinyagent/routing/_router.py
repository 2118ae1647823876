"""The :class:`Router`: chooses the model for each stage and enforces the budget (the agent's ``RoutingHook``)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from .._routing_base import RouteSignals, Stage
from ..errors import BudgetExceeded, ConfigurationError, EndpointError, EndpointUnreachable
from ..models import Completion, Model, ModelRequest
from ._budget import Budget, BudgetLedger, Reservation, cost_of, worst_case_cost
from ._policies import Decision, LocalFirst, Policy

__all__ = ["Router"]

log = logging.getLogger("tinyagent.routing")


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
