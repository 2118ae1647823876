"""Scoring plans against gold plans, as TinyAgent does, plus a stricter variant.

* **DAG success**: the predicted and gold call graphs are isomorphic with the same tool name on matching nodes
  (step numbers may differ; ``join`` calls are ignored).
* **Strict success**: DAG success, and for some such isomorphism every *key argument* of every gold call is equal in
  the prediction after normalisation: strings compared case-insensitively with whitespace trimmed and collapsed,
  dates and times in a canonical ISO form, lists compared as sets, references compared through the isomorphism,
  and an omitted argument equal to its default (when the tools are given) or to an empty value.

Plans may be given as ``tinyagent._plan.Call`` objects, as JSON calls ``{"id", "name", "args"}`` with references
written ``"$k"``, or as a :class:`~tinyagent._plan.Plan`.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from .._plan import JOIN, Call, Plan, Ref, find_refs, map_refs
from .._tools import Tool
from ..errors import ConfigurationError, PlanValidationError, TinyAgentError

__all__ = [
    "EvalCase", "Planner", "dag_success", "default_evalset_path", "evaluate", "load_evalset", "score",
    "strict_success",
]

CallLike = Call | Mapping[str, Any]
PlanLike = Plan | Sequence[CallLike]

_DATE = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})(?:[t ](\d{1,2}):(\d{2})(?::(\d{2}))?)?$")
_EMPTY = ("<empty>",)


@dataclass(frozen=True)
class EvalCase:
    """One request of an eval set with its gold plan.

    Attributes:
        id: a stable id such as ``"fn-0001"``.
        query: the user's request.
        today: the date the request is resolved against.
        split: ``"train"`` or ``"test"``.
        calls: the gold calls in JSON form (references as ``"$k"``).
        key_args: per gold call id, the argument names strict success compares.
        answer: for a request that needs no tool (``calls == []``), the direct answer.
        date_exprs: per call id and argument, the relative expression the gold date was resolved from (for checks).
        category: the kind of request (template family), for per-category reports.
    """

    id: str
    query: str
    today: dt.date
    split: str
    calls: tuple[dict[str, Any], ...] = ()
    key_args: Mapping[int, tuple[str, ...]] = field(default_factory=dict)
    answer: str | None = None
    date_exprs: Mapping[int, Mapping[str, str]] = field(default_factory=dict)
    category: str = ""

    @property
    def plan(self) -> Plan:
        """The gold plan."""
        return Plan.from_json(self.calls, answer=self.answer)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EvalCase:
        """Build a case from one JSONL record.

        Raises:
            ConfigurationError: a field is missing or malformed.
        """
        try:
            return cls(
                id=str(data["id"]),
                query=str(data["query"]),
                today=dt.date.fromisoformat(str(data["today"])),
                split=str(data["split"]),
                calls=tuple(dict(c) for c in data.get("calls", [])),
                key_args={int(k): tuple(str(a) for a in v) for k, v in (data.get("key_args") or {}).items()},
                answer=data.get("answer"),
                date_exprs={int(k): dict(v) for k, v in (data.get("date_exprs") or {}).items()},
                category=str(data.get("category", "")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigurationError(f"not an eval case: {json.dumps(data)[:200]} ({exc})") from exc

    def to_json(self) -> dict[str, Any]:
        """The JSONL record."""
        out: dict[str, Any] = {
            "id": self.id, "query": self.query, "today": self.today.isoformat(), "split": self.split,
            **({"category": self.category} if self.category else {}),
            "calls": list(self.calls), "key_args": {str(k): list(v) for k, v in self.key_args.items()},
            "answer": self.answer,
        }
        if self.date_exprs:
            out["date_exprs"] = {str(k): dict(v) for k, v in self.date_exprs.items()}
        return out


def default_evalset_path() -> Path:
    """The built-in tools' eval set shipped with the package."""
    return Path(__file__).parent.parent / "functions" / "data" / "evalset.jsonl"


def load_evalset(split: str | None = None, path: str | Path | None = None) -> list[EvalCase]:
    """Load an eval set (JSONL, one case per line).

    Args:
        split: ``"train"``, ``"test"``, or None for every case.
        path: the file; defaults to the built-in tools' eval set.

    Raises:
        ConfigurationError: the file is missing, a line is not JSON, or the split is unknown.
    """
    if split not in (None, "train", "test"):
        raise ConfigurationError(f"unknown split {split!r}; use 'train', 'test' or None")
    file = Path(path) if path is not None else default_evalset_path()
    if not file.is_file():
        raise ConfigurationError(
            f"eval set {file} does not exist; generate it with python -m tinyagent.evals.make_evalset"
        )
    cases = []
    for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigurationError(f"{file}:{number} is not JSON: {exc}") from exc
        case = EvalCase.from_json(record)
        if split is None or case.split == split:
            cases.append(case)
    return cases


# -- graphs ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Node:
    id: int
    name: str
    args: Mapping[str, Any]
    deps: frozenset[int]


def _nodes(calls: PlanLike) -> list[_Node] | None:
    """Normalised nodes in a dependency-respecting order, or None if the plan is not a valid DAG."""
    items = calls.calls if isinstance(calls, Plan) else calls
    try:
        parsed = [c if isinstance(c, Call) else Call.from_json(c) for c in items]
        plan = Plan(tuple(c for c in parsed if c.name != JOIN))
        ordered = plan.topological_order()
    except PlanValidationError:
        return None
    ids = {c.id for c in ordered}
    nodes = []
    for c in ordered:
        deps = frozenset(r.step for r in find_refs(c.args))
        if not deps <= ids:
            return None
        nodes.append(_Node(c.id, c.name, dict(c.args), deps))
    return nodes


def _isomorphisms(pred: Sequence[_Node], gold: Sequence[_Node]) -> Iterator[dict[int, int]]:
    """Every mapping pred id -> gold id that preserves tool names and dependency edges."""
    if len(pred) != len(gold) or sorted(n.name for n in pred) != sorted(n.name for n in gold):
        return
    def extend(i: int, mapping: dict[int, int], used: set[int]) -> Iterator[dict[int, int]]:
        if i == len(pred):
            yield dict(mapping)
            return
        p = pred[i]  # topological order: every dependency of p is mapped already
        want = frozenset(mapping[d] for d in p.deps)
        for g in gold:
            if g.id in used or g.name != p.name or g.deps != want:
                continue
            mapping[p.id] = g.id
            used.add(g.id)
            yield from extend(i + 1, mapping, used)
            used.discard(g.id)
            del mapping[p.id]

    yield from extend(0, {}, set())


def dag_success(pred: PlanLike, gold: PlanLike) -> bool:
    """Whether the predicted call graph is isomorphic to the gold one with matching tool names.

    Args:
        pred: the predicted calls (``Call`` objects, JSON calls or a ``Plan``).
        gold: the gold calls.

    Returns:
        True when a name- and edge-preserving bijection exists; False also when ``pred`` is not a valid DAG.
    """
    p, g = _nodes(pred), _nodes(gold)
    if p is None or g is None:
        return False
    return next(_isomorphisms(p, g), None) is not None


def strict_success(
    pred: PlanLike,
    gold: PlanLike,
    key_args: Mapping[int, Sequence[str]] | Mapping[str, Sequence[str]],
    tools: Mapping[str, Tool] | Iterable[Tool] | None = None,
) -> bool:
    """DAG success plus equal key arguments (see the module docstring for the normalisation).

    Args:
        pred: the predicted calls.
        gold: the gold calls.
        key_args: per gold call id, the argument names to compare (keys may be ints or strings).
        tools: the tools, so an omitted argument counts as its schema default.

    Returns:
        True when some DAG isomorphism also matches every key argument.
    """
    p, g = _nodes(pred), _nodes(gold)
    if p is None or g is None:
        return False
    keys = {int(k): list(v) for k, v in key_args.items()}
    registry = _as_mapping(tools)
    gold_by_id = {n.id: n for n in g}
    pred_by_id = {n.id: n for n in p}
    for mapping in _isomorphisms(p, g):
        inverse = {gid: pid for pid, gid in mapping.items()}
        if all(
            _arg_equal(pred_by_id[inverse[gid]], gold_by_id[gid], name, mapping, registry)
            for gid, names in keys.items()
            if gid in gold_by_id
            for name in names
        ):
            return True
    return False


def score(
    preds: Sequence[PlanLike | None] | Mapping[str, PlanLike | None],
    cases: Sequence[EvalCase],
    tools: Mapping[str, Tool] | Iterable[Tool] | None = None,
) -> dict[str, Any]:
    """Both success rates over an eval set.

    Args:
        preds: predicted plans aligned with ``cases``, or keyed by case id; None (or a missing id) is a failure.
        cases: the gold cases.
        tools: the tools, for argument defaults in strict success.

    Returns:
        ``{"n", "dag_success", "strict_success", "dag_correct", "strict_correct", "dag_failures", "strict_failures"}``
        with rates in [0, 1] and the ids of the failed cases.

    Raises:
        ConfigurationError: a sequence of predictions does not have one entry per case.
    """
    if not isinstance(preds, Mapping) and len(preds) != len(cases):
        raise ConfigurationError(f"got {len(preds)} predictions for {len(cases)} cases; give one per case")
    registry = _as_mapping(tools)
    dag_fail: list[str] = []
    strict_fail: list[str] = []
    for i, case in enumerate(cases):
        pred = preds.get(case.id) if isinstance(preds, Mapping) else preds[i]
        if pred is None or not dag_success(pred, case.calls):
            dag_fail.append(case.id)
            strict_fail.append(case.id)
        elif not strict_success(pred, case.calls, case.key_args, registry):
            strict_fail.append(case.id)
    n = len(cases)
    return {
        "n": n,
        "dag_success": (n - len(dag_fail)) / n if n else 0.0,
        "strict_success": (n - len(strict_fail)) / n if n else 0.0,
        "dag_correct": n - len(dag_fail),
        "strict_correct": n - len(strict_fail),
        "dag_failures": dag_fail,
        "strict_failures": strict_fail,
    }


class _HasPlan(Protocol):
    plan: Plan


class Planner(Protocol):
    """Anything that plans a request (``tinyagent.Agent`` does)."""

    async def plan(self, query: str, *, today: dt.date | None = None) -> _HasPlan:
        """Plan ``query`` as of ``today``."""
        ...


async def evaluate(
    planner: Planner,
    cases: Sequence[EvalCase],
    tools: Mapping[str, Tool] | Iterable[Tool] | None = None,
) -> dict[str, Any]:
    """Plan every case with ``planner`` and score the plans (nothing is executed).

    A planner error (an unparseable plan, a model failure) counts as a failed case and is recorded.

    Args:
        planner: e.g. a :class:`tinyagent.Agent`.
        cases: the cases, e.g. ``load_evalset("test")``.
        tools: the tools, for argument defaults in strict success.

    Returns:
        :func:`score`'s result plus ``mean_latency_s``, ``errors`` (case id -> message), ``predictions``
        (case id -> JSON calls) and ``by_category`` (category -> n, dag_success, strict_success).
    """
    import time

    preds: dict[str, PlanLike | None] = {}
    errors: dict[str, str] = {}
    latencies: list[float] = []
    for case in cases:
        start = time.perf_counter()
        try:
            preds[case.id] = (await planner.plan(case.query, today=case.today)).plan
        except TinyAgentError as exc:
            preds[case.id] = None
            errors[case.id] = f"{type(exc).__name__}: {exc}"
        latencies.append(time.perf_counter() - start)
    result = score(preds, cases, tools)
    dag_failed, strict_failed = set(result["dag_failures"]), set(result["strict_failures"])
    by_category: dict[str, dict[str, Any]] = {}
    for case in cases:
        entry = by_category.setdefault(case.category or "-", {"n": 0, "dag": 0, "strict": 0})
        entry["n"] += 1
        entry["dag"] += case.id not in dag_failed
        entry["strict"] += case.id not in strict_failed
    result["by_category"] = {
        k: {"n": v["n"], "dag_success": v["dag"] / v["n"], "strict_success": v["strict"] / v["n"]}
        for k, v in sorted(by_category.items())
    }
    result["mean_latency_s"] = sum(latencies) / len(latencies) if latencies else 0.0
    result["errors"] = errors
    result["predictions"] = {
        cid: (p.to_json() if isinstance(p, Plan) else None) for cid, p in preds.items()
    }
    return result


# -- argument normalisation -----------------------------------------------------------------------------------
def _as_mapping(tools: Mapping[str, Tool] | Iterable[Tool] | None) -> Mapping[str, Tool]:
    if tools is None:
        return {}
    if isinstance(tools, Mapping):
        return tools
    return {t.name: t for t in tools}


def _arg_equal(pred: _Node, gold: _Node, name: str, mapping: Mapping[int, int], tools: Mapping[str, Tool]) -> bool:
    default = _default(tools.get(gold.name), name)
    gv = gold.args.get(name, default)
    pv = map_refs(pred.args.get(name, default), lambda ref: Ref(mapping.get(ref.step, -ref.step)))
    return bool(normalize_value(gv) == normalize_value(pv))


def _default(t: Tool | None, name: str) -> Any:
    if t is None:
        return None
    return t.parameters.get("properties", {}).get(name, {}).get("default")


def normalize_value(value: Any) -> Any:
    """The comparable form of an argument value (see the module docstring)."""
    if value is None:
        return _EMPTY
    if isinstance(value, Ref):
        return ("ref", value.step)
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        ref = re.fullmatch(r"\s*\$(\d+)\s*", value)
        if ref:
            return ("ref", int(ref.group(1)))
        text = " ".join(value.split())
        date = _DATE.match(text.lower())
        if date:
            y, mo, d, h, mi, _ = date.groups()
            try:
                day = dt.date(int(y), int(mo), int(d)).isoformat()
            except ValueError:
                return text.casefold()
            return day if h is None else f"{day}T{int(h):02d}:{int(mi):02d}"
        if text.lower().startswith("mailto:"):
            text = text[7:]
        folded = unicodedata.normalize("NFC", text).casefold().rstrip(".")
        return folded if folded else _EMPTY
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), repr(normalize_value(v))) for k, v in value.items())) or _EMPTY
    if isinstance(value, list | tuple | set | frozenset):
        items = frozenset(repr(normalize_value(v)) for v in value)
        return items if items else _EMPTY
    return repr(value)
