"""Compatibility alias: the budget moved to :mod:`tinyagent.routing` (``from tinyagent.routing import Budget``)."""

from __future__ import annotations

from .routing import (
    Budget,
    BudgetLedger,
    Cost,
    Reservation,
    ReservationError,
    cost_of,
    prompt_token_bound,
    worst_case_cost,
)

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
