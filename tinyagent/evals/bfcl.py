"""BFCL (Berkeley Function-Calling Leaderboard) single-turn evaluation with BFCL's own AST rules.

The data comes from the ``bfcl-eval`` wheel, read as a zip (or from an extracted copy); the package itself is never
installed, because it pins numpy and pulls in heavy vendor SDKs. :func:`ensure_data` downloads the pinned wheel once
into a cache folder.

Typical use::

    from tinyagent.evals import bfcl

    cases = bfcl.load_cases(bfcl.ensure_data(), ["simple_python", "irrelevance"], limit=20)
    report = bfcl.run_bfcl(my_predict, cases)          # my_predict(case) -> [{"name": ..., "args": {...}}]
    for row in report.rows():
        ...                                              # the CLI renders these as a table

or, end to end with a model from the catalog, :func:`eval_bfcl`.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import inspect
import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from .._plan import Ref, find_refs
from ..errors import BfclDataError, ConfigurationError, TinyAgentError
from ._bfcl_ast import check_calls, standardize_string
from ._bfcl_data import (
    BFCL_VERSION,
    CATEGORIES,
    DEFAULT_CATEGORIES,
    LIVE_CATEGORIES,
    PARITIES,
    BfclCase,
    Parity,
    case_index,
    check_parity,
    ensure_data,
    load_cases,
    parity_matches,
)

if TYPE_CHECKING:
    from ..models import Model

__all__ = [
    "BFCL_VERSION",
    "CATEGORIES",
    "DEFAULT_CATEGORIES",
    "LIVE_CATEGORIES",
    "PARITIES",
    "BfclCase",
    "BfclDataError",
    "CaseResult",
    "CategoryScore",
    "Parity",
    "Predict",
    "Report",
    "SdkPredictor",
    "arun_bfcl",
    "case_index",
    "check_case",
    "check_parity",
    "ensure_data",
    "eval_bfcl",
    "load_cases",
    "parity_matches",
    "run_bfcl",
    "standardize_string",
    "write_jsonl",
]

logger = logging.getLogger(__name__)

PredictedCall = dict[str, Any]
Predict = Callable[["BfclCase"], "Sequence[Mapping[str, Any]] | Awaitable[Sequence[Mapping[str, Any]]]"]
"""A predictor: from a case to its calls, ``[{"name": ..., "args": {...}}]`` (an empty list for no call)."""


# -- checking --------------------------------------------------------------------------------------------------


def check_case(case: BfclCase, predicted_calls: Sequence[Mapping[str, Any]]) -> tuple[bool, str]:
    """Score one prediction with BFCL's AST rules.

    Args:
        case: the case.
        predicted_calls: ``[{"name": ..., "args": {...}}]``; an empty list means no call. Arguments may hold
            :class:`~tinyagent._plan.Ref` values (a reference to an earlier step); BFCL's single-turn answers are
            literal, so a reference is always wrong.

    Returns:
        ``(correct, reason)``; the reason is ``""`` when correct, else ``"<BFCL error type>: <what was wrong>"``.
    """
    calls: list[tuple[str, Mapping[str, Any]]] = []
    for index, call in enumerate(predicted_calls):
        name = call.get("name") if isinstance(call, Mapping) else None
        args = call.get("args", {}) if isinstance(call, Mapping) else None
        if not isinstance(name, str) or not isinstance(args, Mapping):
            return False, f"format_error: call {index} is not {{'name': str, 'args': dict}}: {call!r:.200}"
        if any(True for _ in find_refs(args)):
            return False, f"reference_error: call {index} ({name}) references an earlier step; BFCL wants literals"
        calls.append((name, args))
    if case.expects_no_call:
        if calls:
            names = ", ".join(name for name, _ in calls)
            return False, f"irrelevance_error: called {names} although no function fits the request"
        return True, ""
    if not calls:
        return False, "no_call: the model called no function"
    reason = check_calls(case.category, case.functions, calls, case.ground_truth)
    return (reason is None), (reason or "")


# -- running and reporting -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CaseResult:
    """The outcome of one case.

    Attributes:
        id: the case id.
        category: its category.
        calls: the predicted calls as given by the predictor (references kept as :class:`Ref`).
        correct: whether BFCL's rules accept them.
        reason: why not, when not.
        error: the predictor's error message, when it raised a :class:`~tinyagent.errors.TinyAgentError` (the case
            is then scored as "no call", as BFCL scores output it cannot decode).
        elapsed_s: seconds the prediction took.
    """

    id: str
    category: str
    calls: tuple[PredictedCall, ...]
    correct: bool
    reason: str = ""
    error: str | None = None
    elapsed_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """``{"id", "calls"}``: the line written to the predictions JSONL (references as ``"$k"``)."""
        return {"id": self.id, "calls": [_jsonable(dict(c)) for c in self.calls]}


@dataclass(frozen=True)
class CategoryScore:
    """Accuracy of one category (or ``"overall"``)."""

    category: str
    correct: int
    total: int
    errors: int = 0
    mean_s: float = 0.0

    @property
    def accuracy(self) -> float:
        """The share of correct cases, 0 to 1 (0 for an empty category)."""
        return self.correct / self.total if self.total else 0.0


@dataclass
class Report:
    """All case results of one run.

    Attributes:
        results: one :class:`CaseResult` per case, in the order run.
        system: a label for what produced the predictions (model, baseline …).
        elapsed_s: seconds for the whole run.
    """

    results: list[CaseResult] = field(default_factory=list)
    system: str = ""
    elapsed_s: float = 0.0

    @property
    def categories(self) -> list[str]:
        """The categories, in the order they were run."""
        return list(dict.fromkeys(r.category for r in self.results))

    def rows(self, overall: bool = True) -> list[CategoryScore]:
        """One score per category, then (if ``overall``) an ``"overall"`` row over all cases: the data of the table."""
        groups: dict[str, list[CaseResult]] = {}
        for result in self.results:
            groups.setdefault(result.category, []).append(result)
        rows = [_score(category, items) for category, items in groups.items()]
        if overall and self.results:
            rows.append(_score("overall", self.results))
        return rows

    def accuracy(self) -> dict[str, float]:
        """Accuracy per category, 0 to 1, rounded to 4 places."""
        return {row.category: round(row.accuracy, 4) for row in self.rows(overall=False)}

    def failures(self, category: str | None = None) -> list[CaseResult]:
        """The wrong cases, optionally of one category."""
        return [r for r in self.results if not r.correct and (category is None or r.category == category)]

    def format_table(self) -> str:
        """A plain-text table of :meth:`rows` (the CLI draws its own)."""
        lines = [f"{'category':<24} {'correct':>7} {'total':>6} {'accuracy':>9} {'errors':>6} {'mean s':>7}"]
        for row in self.rows():
            lines.append(f"{row.category:<24} {row.correct:>7} {row.total:>6} {row.accuracy:>9.1%} "
                         f"{row.errors:>6} {row.mean_s:>7.2f}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary: the system, accuracy per category and per-case outcomes."""
        return {
            "system": self.system,
            "elapsed_s": round(self.elapsed_s, 2),
            "accuracy": self.accuracy(),
            "cases": [
                {"id": r.id, "correct": r.correct, "reason": r.reason, "error": r.error,
                 "elapsed_s": round(r.elapsed_s, 3), **r.to_json()}
                for r in self.results
            ],
        }


def _score(category: str, items: Sequence[CaseResult]) -> CategoryScore:
    return CategoryScore(
        category=category,
        correct=sum(r.correct for r in items),
        total=len(items),
        errors=sum(r.error is not None for r in items),
        mean_s=sum(r.elapsed_s for r in items) / len(items) if items else 0.0,
    )


def write_jsonl(results: Iterable[CaseResult], path: str | Path) -> Path:
    """Write one ``{"id", "calls"}`` line per result.

    Raises:
        ConfigurationError: the file cannot be written.
    """
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("w", encoding="utf-8") as handle:
            for result in results:
                handle.write(json.dumps(result.to_json(), ensure_ascii=False) + "\n")
    except OSError as exc:
        raise ConfigurationError(f"cannot write predictions to {target}: {exc}") from exc
    return target


def _jsonable(value: Any) -> Any:
    if isinstance(value, Ref):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _normalise_calls(raw: Any, case_id: str) -> tuple[PredictedCall, ...]:
    if not isinstance(raw, Sequence) or isinstance(raw, str | bytes):
        raise TypeError(f"the predictor returned {type(raw).__name__} for {case_id}; it must return a list of calls")
    calls = []
    for call in raw:
        if not isinstance(call, Mapping):
            raise TypeError(f"the predictor returned a call that is not a dict for {case_id}: {call!r:.200}")
        calls.append({"name": call.get("name"), "args": dict(call.get("args") or {})})
    return tuple(calls)


def _is_async(predict: Predict) -> bool:
    # A predictor may be an async function or an object whose __call__ is async (like SdkPredictor).
    call_method = getattr(type(predict), "__call__", None)  # noqa: B004
    return inspect.iscoroutinefunction(predict) or inspect.iscoroutinefunction(call_method)


async def arun_bfcl(
    predict: Predict,
    cases: Sequence[BfclCase],
    *,
    system: str = "",
    on_result: Callable[[CaseResult], None] | None = None,
) -> Report:
    """Predict and score every case, one after the other (a local model serves one request at a time).

    Args:
        predict: from a case to ``[{"name", "args"}]``; sync or async. A sync predictor runs in a worker thread.
            A :class:`~tinyagent.errors.TinyAgentError` it raises is recorded and scored as "no call".
        cases: the cases.
        system: a label stored in the report.
        on_result: called after each case (progress display, incremental JSONL).

    Returns:
        The report.

    Raises:
        TypeError: the predictor returned something other than a list of dicts (a bug in the predictor).
    """
    report = Report(system=system)
    start = time.perf_counter()
    for case in cases:
        began = time.perf_counter()
        error: str | None = None
        calls: tuple[PredictedCall, ...] = ()
        try:
            if _is_async(predict):
                raw = await cast("Awaitable[Any]", predict(case))
            else:
                raw = await asyncio.to_thread(predict, case)
            calls = _normalise_calls(raw, case.id)
        except TinyAgentError as exc:
            error = f"{type(exc).__name__}: {exc}"
            logger.info("%s: the predictor failed: %s", case.id, error)
        correct, reason = check_case(case, calls)
        if error is not None and not correct:
            reason = f"prediction_error: {error}"
        result = CaseResult(case.id, case.category, calls, correct, reason, error, time.perf_counter() - began)
        logger.debug("%s: %s %s", case.id, "ok" if correct else "wrong", reason)
        report.results.append(result)
        if on_result is not None:
            on_result(result)
    report.elapsed_s = time.perf_counter() - start
    return report


def run_bfcl(
    predict: Predict,
    cases: Sequence[BfclCase],
    *,
    system: str = "",
    on_result: Callable[[CaseResult], None] | None = None,
) -> Report:
    """Synchronous :func:`arun_bfcl` (not for use inside a running event loop)."""
    return asyncio.run(arun_bfcl(predict, cases, system=system, on_result=on_result))


# -- the SDK's predictor ---------------------------------------------------------------------------------------


class SdkPredictor:
    """Predicts BFCL calls with tinyagent's planner: the case's functions become schema-only tools, and the calls
    of the plan ``Agent.plan`` returns are the prediction (an empty plan means "no call").

    Args:
        model: the planner model.
        today: the date the planner is told (fixed, for reproducible runs); None for the agent's default.
        agent_options: extra keyword arguments for ``tinyagent.Agent`` (examples, settings …).

    Attributes:
        plan_texts: the planner's raw text per case id, for failure analysis.
    """

    def __init__(self, model: Model, *, today: dt.date | None = None,
                 agent_options: Mapping[str, Any] | None = None) -> None:
        self.model = model
        self.today = today
        self.agent_options = dict(agent_options or {})
        self.plan_texts: dict[str, str] = {}

    async def __call__(self, case: BfclCase) -> list[PredictedCall]:
        """Plan the case's question and return the plan's calls as ``[{"name", "args"}]``.

        Messages before the last user message (BFCL's live cases carry system prompts) go in as history.

        Raises:
            TinyAgentError: the functions cannot become tools, or planning failed.
        """
        from .. import Agent
        from .._tools import ToolRegistry

        registry = ToolRegistry.from_openai(case.functions)
        agent = Agent(tools=registry, model=self.model, **self.agent_options)
        last_user = max((i for i, m in enumerate(case.messages) if m.get("role") == "user"), default=0)
        history = case.messages[:last_user]
        result = await agent.plan(case.question, today=self.today, history=history)
        self.plan_texts[case.id] = result.text
        return [{"name": call.name, "args": dict(call.args)} for call in result.plan.calls]


def eval_bfcl(
    data_dir: str | Path | None = None,
    categories: Iterable[str] = DEFAULT_CATEGORIES,
    limit: int | None = None,
    output: str | Path | None = None,
    model_name: str = "qwen2.5-coder-1.5b",
    *,
    model: Model | None = None,
    today: dt.date | None = None,
    on_result: Callable[[CaseResult], None] | None = None,
    parity: Parity = "all",
) -> Report:
    """Run tinyagent's planner over BFCL and score it: what ``tinyagent eval bfcl`` does.

    Args:
        data_dir: the BFCL data (see :func:`load_cases`); None downloads it with :func:`ensure_data`.
        categories: the categories to run.
        limit: cases per category; None for all.
        output: where to write the predictions JSONL (``{"id", "calls"}`` per line), written as the run goes.
        model_name: a catalog name for ``tinyagent.models.load_model`` (ignored when ``model`` is given).
        model: a ready model to use instead of loading one.
        today: the date the planner is told.
        on_result: called after each case.
        parity: ``"even"``, ``"odd"`` or ``"all"``: which cases to load by the parity of their index (see
            :func:`load_cases`).

    Returns:
        The report; :meth:`Report.rows` holds the table.

    Raises:
        ConfigurationError: a bad category, parity, path or model name.
        BfclDataError: the data cannot be found or downloaded.
        ModelError: the model cannot be loaded.
    """
    cases = load_cases(ensure_data() if data_dir is None else data_dir, categories, limit, parity=parity)
    owned = model is None
    if model is None:
        from ..models import load_model

        model = load_model(model_name)
    predictor = SdkPredictor(model, today=today)
    handle = None
    if output is not None:
        target = Path(output)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            handle = target.open("w", encoding="utf-8")
        except OSError as exc:
            raise ConfigurationError(f"cannot write predictions to {target}: {exc}") from exc

    def record(result: CaseResult) -> None:
        if handle is not None:
            handle.write(json.dumps(result.to_json(), ensure_ascii=False) + "\n")
            handle.flush()
        if on_result is not None:
            on_result(result)

    async def run() -> Report:
        try:
            return await arun_bfcl(predictor, cases, system=f"tinyagent/{model.name}", on_result=record)
        finally:
            if owned:
                await model.aclose()

    try:
        return asyncio.run(run())
    finally:
        if handle is not None:
            handle.close()
