"""The contract between the agent loop and a routing policy (see :mod:`tinyagent.routing` for policies).

The agent asks the router which model to use at each stage, and tells it about every call, so that budgets are
enforced before a call is made (worst case: prompt plus ``max_tokens``) and charged with the real usage after.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from .models import Completion, Model, ModelRequest

__all__ = ["RouteSignals", "RoutingHook", "Stage", "LocalOnly"]

Stage = Literal["plan", "verify", "replan", "join"]


@dataclass(frozen=True)
class RouteSignals:
    """What the agent knows when it asks for a model.

    Attributes:
        attempt: 0 for the first plan, then 1, 2 … for replans.
        retrieval_uncertain: the tool retriever was unsure (it widened the set).
        parse_failed: the previous plan did not parse.
        validation_failed: the previous plan named an unknown tool or passed bad arguments.
        step_failed: a step of the previous plan failed or timed out.
        replan_requested: the joiner asked for a replan.
        mean_logprob: the previous plan's mean token log-probability (confidence), when known.
        example_disagreement: the previous plan calls a different set of tools than the most similar worked example
            in the prompt (a plan unlike any known-good plan for a similar request is often wrong).
        previous_model: the name of the model that made the previous plan.
        reasons: free-text reasons, for the run's status.
    """

    attempt: int = 0
    retrieval_uncertain: bool = False
    parse_failed: bool = False
    validation_failed: bool = False
    step_failed: bool = False
    replan_requested: bool = False
    mean_logprob: float | None = None
    example_disagreement: bool = False
    previous_model: str = ""
    reasons: tuple[str, ...] = field(default_factory=tuple)


@runtime_checkable
class RoutingHook(Protocol):
    """Everything the agent calls or reads. ``tinyagent.routing.Router`` implements it; :class:`LocalOnly` is the
    default.

    Attributes:
        local: the on-device model; the agent falls back to it when a call would overshoot the budget.
        needs_verification: buffer the first plan and ask ``select("verify", ...)`` before executing it.
        wants_logprobs: ask for token log-probabilities in planner requests (a confidence signal).
    """

    local: Model
    needs_verification: bool
    wants_logprobs: bool

    def start_task(self) -> None:
        """A new task (one user request) starts: per-task budgets and decisions begin afresh."""
        ...

    def select(self, stage: Stage, signals: RouteSignals) -> Model:
        """The model to use for ``stage``. For ``"verify"``, returning a model other than ``signals.previous_model``
        means: re-plan with that model before executing."""
        ...

    def before_call(self, model: Model, request: ModelRequest) -> None:
        """Reserve the worst-case cost of ``request`` on ``model``.

        Raises:
            BudgetExceeded: the call could overshoot the budget; the agent then degrades to ``local``.
        """
        ...

    def after_call(self, model: Model, request: ModelRequest, completion: Completion | None) -> None:
        """Charge the real usage (``completion`` is None when the call failed) and release the reservation."""
        ...

    def status(self) -> dict[str, object]:
        """Spend, remaining budget and routing decisions so far, for the run's result."""
        ...


class LocalOnly:
    """The default: every stage uses the one model, and nothing is charged."""

    def __init__(self, local: Model) -> None:
        self.local = local
        self.needs_verification = False
        self.wants_logprobs = False

    def start_task(self) -> None:
        return None

    def select(self, stage: Stage, signals: RouteSignals) -> Model:
        return self.local

    def before_call(self, model: Model, request: ModelRequest) -> None:
        return None

    def after_call(self, model: Model, request: ModelRequest, completion: Completion | None) -> None:
        return None

    def status(self) -> dict[str, object]:
        return {"policy": "local-only"}
