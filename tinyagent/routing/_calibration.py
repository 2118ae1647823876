"""Calibration: replay recorded outcomes through a policy, trace the cost–success frontier, fit the threshold."""

from __future__ import annotations

import dataclasses
import json
import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._routing_base import RouteSignals
from ..errors import ConfigurationError
from ._policies import AlwaysCloud, AlwaysLocal, EscalationThresholds, LocalFirst, Policy

__all__ = [
    "FrontierPoint",
    "RouteRecord",
    "calibrate",
    "calibration_report",
    "candidate_thresholds",
    "frontier",
    "load_records",
    "simulate",
]

log = logging.getLogger("tinyagent.routing")


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


def calibration_report(
    records: Sequence[RouteRecord],
    target_cost: float | None = None,
    target_accuracy: float | None = None,
    *,
    relative: bool = False,
) -> dict[str, Any]:
    """Fit the thresholds with :func:`calibrate` and report them beside always-local and always-cloud (JSON-ready).

    Returns:
        ``{"thresholds", "expected", "always_local", "always_cloud", "records"}``.

    Raises:
        ConfigurationError: as :func:`calibrate`.
    """
    thresholds = calibrate(records, target_cost=target_cost, target_accuracy=target_accuracy, relative=relative)
    return {
        "thresholds": thresholds.to_dict(),
        "expected": simulate(records, LocalFirst(thresholds)).to_dict(),
        "always_local": simulate(records, AlwaysLocal()).to_dict(),
        "always_cloud": simulate(records, AlwaysCloud()).to_dict(),
        "records": len(records),
    }
