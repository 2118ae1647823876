"""Routing policies: pure functions from a stage and the agent's signals to a :class:`Decision`."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from .._routing_base import RouteSignals, Stage
from ..errors import ConfigurationError

__all__ = ["AlwaysCloud", "AlwaysLocal", "Decision", "EscalationThresholds", "LocalFirst", "Policy", "Target"]

Target = Literal["local", "cloud"]


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
