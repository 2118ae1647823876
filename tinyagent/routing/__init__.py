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

Modules: ``_policies`` (the policies), ``_router`` (the :class:`Router`), ``_budget`` (hard spending caps, pure
accounting), ``_calibration`` (replay, frontier, fitting). The agent-side contract, ``RoutingHook``, lives in the core
(``tinyagent._routing_base``) so that the agent never imports this package.
"""

from __future__ import annotations

from ._budget import (
    Budget,
    BudgetLedger,
    Cost,
    Reservation,
    ReservationError,
    cost_of,
    prompt_token_bound,
    worst_case_cost,
)
from ._calibration import (
    FrontierPoint,
    RouteRecord,
    calibrate,
    calibration_report,
    candidate_thresholds,
    frontier,
    load_records,
    simulate,
)
from ._policies import AlwaysCloud, AlwaysLocal, Decision, EscalationThresholds, LocalFirst, Policy
from ._router import Router

__all__ = [
    "AlwaysCloud",
    "AlwaysLocal",
    "Budget",
    "BudgetLedger",
    "Cost",
    "Decision",
    "EscalationThresholds",
    "FrontierPoint",
    "LocalFirst",
    "Policy",
    "Reservation",
    "ReservationError",
    "RouteRecord",
    "Router",
    "calibrate",
    "calibration_report",
    "candidate_thresholds",
    "cost_of",
    "frontier",
    "load_records",
    "prompt_token_bound",
    "simulate",
    "worst_case_cost",
]
