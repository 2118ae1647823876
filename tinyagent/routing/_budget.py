"""Hard spending caps for cloud calls, per task and per session, in money or tokens.

Pure accounting: no I/O, no clocks, thread-safe. Before a call the caller reserves its worst case (every prompt token
plus ``max_tokens`` at the model's prices); the reservation fails with :class:`~tinyagent.errors.BudgetExceeded` when
``spent + reserved + worst case`` would pass a limit, so the call is never made. After the call the caller commits the
real cost (which frees the reservation) or releases the reservation unspent.

Amounts are kept as exact fractions, so rounding can never let a sum of charges creep past a limit::

    ledger = BudgetLedger(task=Budget(0.01), session=Budget(1.00))
    r = ledger.reserve(Cost(usd=0.004, tokens=900))
    ledger.commit(r, Cost(usd=0.001, tokens=300))
"""

from __future__ import annotations

import itertools
import math
import threading
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from ..errors import BudgetExceeded, ConfigurationError, ReservationError
from ..models import Model, ModelRequest, Pricing, Usage

__all__ = [
    "Budget",
    "BudgetLedger",
    "Cost",
    "Reservation",
    "ReservationError",
    "cost_of",
    "prompt_token_bound",
    "worst_case_cost",
]

Unit = Literal["usd", "tokens"]
_UNITS: tuple[Unit, ...] = ("usd", "tokens")

# Chat templates wrap every message in role markers, and some add a default system prompt; these margins cover that
# for the templates we know (ChatML, Llama 3, Gemma), so the worst case stays an upper bound.
_PER_MESSAGE_OVERHEAD = 10
_FIXED_OVERHEAD = 64


@dataclass(frozen=True)
class Cost:
    """What a call costs (or may cost): money and tokens.

    Attributes:
        usd: money, in the currency the prices are given in.
        tokens: input plus output tokens.
    """

    usd: float = 0.0
    tokens: int = 0

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.usd + other.usd, self.tokens + other.tokens)

    def amount(self, unit: Unit) -> Fraction:
        """This cost in ``unit``, exactly."""
        return Fraction(self.usd) if unit == "usd" else Fraction(self.tokens)


@dataclass(frozen=True)
class Budget:
    """A hard cap.

    Args:
        limit: the most that may be spent (0 forbids every metered call).
        unit: ``"usd"`` (money at the models' prices) or ``"tokens"`` (input plus output tokens).

    Raises:
        ConfigurationError: a negative or non-finite limit, or an unknown unit.
    """

    limit: float
    unit: Unit = "usd"

    def __post_init__(self) -> None:
        if self.unit not in _UNITS:
            raise ConfigurationError(f"budget unit {self.unit!r} is not known; use 'usd' or 'tokens'")
        if not isinstance(self.limit, int | float) or not math.isfinite(self.limit) or self.limit < 0:
            raise ConfigurationError(f"budget limit must be a finite number >= 0, got {self.limit!r}")


@dataclass(frozen=True)
class Reservation:
    """A held worst-case amount; give it back to :meth:`BudgetLedger.commit` or :meth:`BudgetLedger.release`.

    Attributes:
        id: unique within its ledger.
        amount: the worst case that was reserved.
        task: the task the reservation was made in.
        label: free text for logs (e.g. the model name).
    """

    id: int
    amount: Cost
    task: int
    label: str = ""


class BudgetLedger:
    """Tracks spend against an optional per-task and an optional per-session budget.

    A reservation counts against both budgets until it is committed or released. :meth:`start_task` begins a new task:
    the task's spend starts again from zero, the session's carries on.

    Args:
        task: the cap for one task (one user request), or None for no per-task cap.
        session: the cap for the ledger's whole life, or None for no session cap.
    """

    def __init__(self, task: Budget | None = None, session: Budget | None = None) -> None:
        self.task_budget = task
        self.session_budget = session
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._task = 0
        self._open: dict[int, Reservation] = {}
        self._session_spent = Cost()
        self._task_spent = Cost()
        self._session_exact = {u: Fraction(0) for u in _UNITS}
        self._task_exact = {u: Fraction(0) for u in _UNITS}
        self.refused = 0
        self.overruns = 0

    # -- tasks ---------------------------------------------------------------------------------------------------
    @property
    def task(self) -> int:
        """The number of the current task (0 before the first :meth:`start_task`)."""
        return self._task

    def start_task(self) -> int:
        """Begin a new task: its spend starts from zero. Open reservations of earlier tasks still count for the session.

        Returns:
            The new task's number.
        """
        with self._lock:
            self._task += 1
            self._task_spent = Cost()
            self._task_exact = {u: Fraction(0) for u in _UNITS}
            return self._task

    # -- reserve / commit / release ------------------------------------------------------------------------------
    def reserve(self, worst_case: Cost, label: str = "") -> Reservation:
        """Hold ``worst_case`` against both budgets.

        Args:
            worst_case: the most the call can cost.
            label: free text kept on the reservation.

        Returns:
            The reservation, to commit or release after the call.

        Raises:
            BudgetExceeded: spent + reserved + ``worst_case`` would pass the task or the session limit.
            ConfigurationError: ``worst_case`` is negative or not finite.
        """
        _check_cost(worst_case)
        with self._lock:
            for scope, budget, spent, open_ in (
                ("task", self.task_budget, self._task_exact, [r for r in self._open.values() if r.task == self._task]),
                ("session", self.session_budget, self._session_exact, list(self._open.values())),
            ):
                if budget is None:
                    continue
                need = worst_case.amount(budget.unit)
                held = spent[budget.unit] + sum((r.amount.amount(budget.unit) for r in open_), Fraction(0))
                limit = Fraction(budget.limit)
                if held + need > limit:
                    self.refused += 1
                    remaining = float(max(limit - held, Fraction(0)))
                    raise BudgetExceeded(
                        f"{label or 'the call'} could cost up to {_fmt(float(need), budget.unit)}, but only "
                        f"{_fmt(remaining, budget.unit)} of the {scope} budget of {_fmt(budget.limit, budget.unit)} "
                        f"is left; it was not made. Use the local model, lower max_tokens, or raise the {scope} budget",
                        needed=float(need),
                        remaining=remaining,
                    )
            reservation = Reservation(id=next(self._ids), amount=worst_case, task=self._task, label=label)
            self._open[reservation.id] = reservation
            return reservation

    def commit(self, reservation: Reservation, actual: Cost) -> None:
        """Charge what the call really cost and free its reservation.

        An ``actual`` above the reserved worst case is still charged (it is what was spent) and counted in
        :attr:`overruns`; it means a model reported more tokens than its worst case allowed.

        Raises:
            ReservationError: the reservation is not open in this ledger.
            ConfigurationError: ``actual`` is negative or not finite.
        """
        _check_cost(actual)
        with self._lock:
            self._take(reservation)
            if actual.usd > reservation.amount.usd or actual.tokens > reservation.amount.tokens:
                self.overruns += 1
            self._session_spent += actual
            for u in _UNITS:
                self._session_exact[u] += actual.amount(u)
            if reservation.task == self._task:
                self._task_spent += actual
                for u in _UNITS:
                    self._task_exact[u] += actual.amount(u)

    def release(self, reservation: Reservation) -> None:
        """Free a reservation without charging anything (the call was not made, or cost nothing).

        Raises:
            ReservationError: the reservation is not open in this ledger.
        """
        with self._lock:
            self._take(reservation)

    def _take(self, reservation: Reservation) -> None:
        if self._open.pop(reservation.id, None) is None:
            raise ReservationError(
                f"reservation {reservation.id} is not open in this ledger: commit or release each reservation once"
            )

    # -- reporting -----------------------------------------------------------------------------------------------
    @property
    def session_spent(self) -> Cost:
        """Everything charged so far."""
        return self._session_spent

    @property
    def task_spent(self) -> Cost:
        """What the current task has been charged."""
        return self._task_spent

    @property
    def reserved(self) -> Cost:
        """The sum of open reservations."""
        with self._lock:
            total = Cost()
            for r in self._open.values():
                total += r.amount
            return total

    def remaining(self) -> dict[str, float | None]:
        """What is left of each budget after spend and open reservations (None where there is no cap)."""
        with self._lock:
            out: dict[str, float | None] = {}
            for scope, budget, spent, open_ in (
                ("task", self.task_budget, self._task_exact, [r for r in self._open.values() if r.task == self._task]),
                ("session", self.session_budget, self._session_exact, list(self._open.values())),
            ):
                if budget is None:
                    out[scope] = None
                    continue
                held = spent[budget.unit] + sum((r.amount.amount(budget.unit) for r in open_), Fraction(0))
                out[scope] = float(max(Fraction(budget.limit) - held, Fraction(0)))
            return out

    def within_limits(self) -> bool:
        """Whether spend (reservations excluded) is within every limit; false only after an overrun."""
        with self._lock:
            return all(
                budget is None or spent[budget.unit] <= Fraction(budget.limit)
                for budget, spent in ((self.task_budget, self._task_exact), (self.session_budget, self._session_exact))
            )

    def snapshot(self) -> dict[str, object]:
        """Limits, spend, reservations and refusals as plain JSON-ready data."""
        remaining = self.remaining()
        with self._lock:
            return {
                "task": _budget_dict(self.task_budget, self._task_spent, remaining["task"]),
                "session": _budget_dict(self.session_budget, self._session_spent, remaining["session"]),
                "open_reservations": len(self._open),
                "refused": self.refused,
                "overruns": self.overruns,
            }


def _budget_dict(budget: Budget | None, spent: Cost, remaining: float | None) -> dict[str, object]:
    return {
        "limit": None if budget is None else budget.limit,
        "unit": None if budget is None else budget.unit,
        "spent_usd": spent.usd,
        "spent_tokens": spent.tokens,
        "remaining": remaining,
    }


def _check_cost(cost: Cost) -> None:
    if not math.isfinite(cost.usd) or cost.usd < 0 or cost.tokens < 0:
        raise ConfigurationError(f"a cost must be finite and >= 0, got {cost!r}")


def _fmt(value: float, unit: Unit) -> str:
    return f"${value:.6f}" if unit == "usd" else f"{int(value)} tokens"


# -- worst cases ---------------------------------------------------------------------------------------------------
def prompt_token_bound(model: Model, request: ModelRequest) -> int:
    """An upper bound on the prompt tokens ``request`` can cost on ``model``.

    A model that knows better (``OpenAIModel``) provides ``prompt_token_bound(request)``; otherwise every message's
    content is counted with ``model.count_tokens`` and a margin for the chat template is added.
    """
    bound = getattr(model, "prompt_token_bound", None)
    if callable(bound):
        value = bound(request)
        if isinstance(value, int) and value >= 0:
            return value
    total = _FIXED_OVERHEAD
    for message in request.messages:
        total += _PER_MESSAGE_OVERHEAD + model.count_tokens(str(message.get("content") or ""))
    return total


def worst_case_cost(model: Model, request: ModelRequest) -> Cost:
    """The most ``request`` can cost on ``model``: every prompt token plus ``max_tokens``, at the model's prices."""
    usage = Usage(prompt_token_bound(model, request), max(0, request.max_tokens), 1)
    return cost_of(model.pricing, usage)


def cost_of(pricing: Pricing, usage: Usage) -> Cost:
    """What ``usage`` costs at ``pricing``."""
    return Cost(usd=pricing.cost(usage), tokens=usage.total_tokens)
