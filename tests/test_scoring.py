"""The plan scorer: DAG success (isomorphism with tool names) and strict success (plus key arguments)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from tinyagent import tool
from tinyagent._plan import Call, Plan, Ref
from tinyagent.errors import ConfigurationError
from tinyagent.evals import EvalCase, dag_success, load_evalset, score, strict_success

GOLD: list[dict[str, Any]] = [
    {"id": 1, "name": "get_email_address", "args": {"name": "Sid"}},
    {"id": 2, "name": "get_email_address", "args": {"name": "Priya"}},
    {"id": 3, "name": "send_email", "args": {"to": ["$1", "$2"], "subject": "Hi", "body": "x"}},
    {"id": 4, "name": "create_calendar_event", "args": {"title": "Sync", "start": "2026-12-02T10:00",
                                                        "duration_minutes": 30, "invitees": ["$1"]}},
]
KEYS = {1: ["name"], 2: ["name"], 3: ["to"], 4: ["start", "duration_minutes", "invitees"]}


def renumbered() -> list[dict[str, Any]]:
    """The gold plan with steps in another order and other ids (same graph)."""
    return [
        {"id": 1, "name": "get_email_address", "args": {"name": " priya "}},
        {"id": 2, "name": "get_email_address", "args": {"name": "SID"}},
        {"id": 3, "name": "create_calendar_event", "args": {"title": "Follow up", "start": "2026-12-02 10:00:00",
                                                            "duration_minutes": 30.0, "invitees": ["$2"]}},
        {"id": 4, "name": "send_email", "args": {"to": ["$2", "$1"], "subject": "Hello", "body": "y"}},
        {"id": 5, "name": "join", "args": {}},
    ]


def test_identical_plans_succeed() -> None:
    assert dag_success(GOLD, GOLD) and strict_success(GOLD, GOLD, KEYS)


def test_renumbered_isomorphic_plan_matches() -> None:
    pred = renumbered()
    assert dag_success(pred, GOLD)
    assert strict_success(pred, GOLD, KEYS)


def test_call_objects_and_plans_are_accepted() -> None:
    calls = [Call.from_json(c) for c in renumbered()]
    assert dag_success(calls, GOLD)
    assert strict_success(Plan(tuple(calls)), Plan.from_json(GOLD), {str(k): v for k, v in KEYS.items()})


def test_wrong_wiring_fails() -> None:
    pred = renumbered()
    pred[2]["args"]["invitees"] = ["$1"]  # invites Priya's lookup instead of Sid's: the graph differs in shape?
    # Both lookups are interchangeable as graph nodes, so the DAG still matches; strict catches the wrong person.
    assert dag_success(pred, GOLD)
    assert not strict_success(pred, GOLD, KEYS)
    pred = renumbered()
    pred[3]["args"]["to"] = ["$2"]  # the email loses a recipient: edge missing
    assert not dag_success(pred, GOLD)
    pred = renumbered()
    pred[2]["args"]["invitees"] = []  # the event no longer depends on a lookup
    assert not dag_success(pred, GOLD)


def test_different_tools_or_counts_fail() -> None:
    pred = [dict(c) for c in GOLD]
    pred[0] = {"id": 1, "name": "get_phone_number", "args": {"name": "Sid"}}
    assert not dag_success(pred, GOLD)
    assert not dag_success(GOLD[:3], GOLD)
    assert not dag_success([*GOLD, {"id": 5, "name": "get_today", "args": {}}], GOLD)


def test_invalid_predictions_fail_without_raising() -> None:
    cyclic = [{"id": 1, "name": "a", "args": {"x": "$2"}}, {"id": 2, "name": "a", "args": {"x": "$1"}}]
    dangling = [{"id": 1, "name": "a", "args": {"x": "$7"}}]
    duplicate = [{"id": 1, "name": "a", "args": {}}, {"id": 1, "name": "a", "args": {}}]
    gold = [{"id": 1, "name": "a", "args": {}}, {"id": 2, "name": "a", "args": {"x": "$1"}}]
    for bad in (cyclic, dangling, duplicate, [{"nonsense": True}]):
        assert not dag_success(bad, gold)
        assert not strict_success(bad, gold, {})


def test_strict_key_argument_normalisation() -> None:
    gold = [{"id": 1, "name": "send_message", "args": {"recipients": ["+1 555", "Bob"], "text": "Hi"}}]
    keys = {1: ["recipients"]}
    assert strict_success([{"id": 1, "name": "send_message", "args": {"recipients": ["bob ", "+1 555"],
                                                                      "text": "other"}}], gold, keys)
    assert not strict_success([{"id": 1, "name": "send_message", "args": {"recipients": ["Bob"], "text": "Hi"}}],
                              gold, keys)
    event = [{"id": 1, "name": "ev", "args": {"start": "2026-12-02T09:00"}}]
    assert strict_success([{"id": 1, "name": "ev", "args": {"start": "2026-12-2 9:00"}}], event, {1: ["start"]})
    assert not strict_success([{"id": 1, "name": "ev", "args": {"start": "2026-12-02T10:00"}}], event, {1: ["start"]})
    assert not strict_success([{"id": 1, "name": "ev", "args": {"start": "2026-12-02"}}], event, {1: ["start"]})


def test_strict_omitted_argument_uses_tool_default() -> None:
    @tool
    def create_event(title: str, start: str, duration_minutes: int = 60) -> str:
        """Create.

        Args:
            title: t.
            start: s.
            duration_minutes: d.
        """
        return title

    gold = [{"id": 1, "name": "create_event", "args": {"title": "A", "start": "2026-12-02T10:00",
                                                       "duration_minutes": 60}}]
    pred = [{"id": 1, "name": "create_event", "args": {"title": "A", "start": "2026-12-02T10:00"}}]
    keys = {1: ["start", "duration_minutes"]}
    assert strict_success(pred, gold, keys, tools=[create_event])
    assert not strict_success(pred, gold, keys)  # without the tool, a missing value is not 60


def test_empty_plans() -> None:
    assert dag_success([], []) and strict_success([], [], {})
    assert not dag_success([{"id": 1, "name": "get_today", "args": {}}], [])


def test_score_reports_both_rates() -> None:
    cases = [
        EvalCase("c1", "q1", dt.date(2026, 12, 1), "test", tuple(GOLD), {k: tuple(v) for k, v in KEYS.items()}),
        EvalCase("c2", "q2", dt.date(2026, 12, 1), "test", (), {}, answer="Paris."),
        EvalCase("c3", "q3", dt.date(2026, 12, 1), "test", tuple(GOLD[:1]), {1: ("name",)}),
    ]
    wrong_name = [{"id": 1, "name": "get_email_address", "args": {"name": "Bob"}}]
    result = score([renumbered(), [], wrong_name], cases)
    assert (result["n"], result["dag_correct"], result["strict_correct"]) == (3, 3, 2)
    assert result["dag_success"] == 1.0 and result["strict_success"] == pytest.approx(2 / 3)
    assert result["strict_failures"] == ["c3"]
    by_id = score({"c1": GOLD, "c3": None}, cases)
    assert by_id["dag_failures"] == ["c2", "c3"]
    with pytest.raises(ConfigurationError, match="one per case"):
        score([GOLD], cases)


def test_refs_as_ref_objects_and_strings_are_the_same() -> None:
    pred = [Call(1, "get_email_address", {"name": "Sid"}), Call(2, "send_email", {"to": [Ref(1)]})]
    gold = [{"id": 1, "name": "get_email_address", "args": {"name": "sid"}},
            {"id": 2, "name": "send_email", "args": {"to": ["$1"]}}]
    assert strict_success(pred, gold, {1: ["name"], 2: ["to"]})


def test_load_evalset_and_case_round_trip(tmp_path: Path) -> None:
    cases = load_evalset()
    assert len(cases) >= 200
    assert {c.split for c in cases} == {"train", "test"}
    assert len(load_evalset("train")) + len(load_evalset("test")) == len(cases)
    case = cases[0]
    assert EvalCase.from_json(json.loads(json.dumps(case.to_json()))) == case
    path = tmp_path / "mini.jsonl"
    path.write_text(json.dumps(case.to_json()) + "\n\n")
    assert load_evalset(path=path) == [case]
    path.write_text("{not json\n")
    with pytest.raises(ConfigurationError, match="not JSON"):
        load_evalset(path=path)
    with pytest.raises(ConfigurationError, match="unknown split"):
        load_evalset("dev")
    with pytest.raises(ConfigurationError, match="does not exist"):
        load_evalset(path=tmp_path / "missing.jsonl")


def test_gold_plans_score_perfectly_against_themselves() -> None:
    cases = load_evalset()
    result = score([c.calls for c in cases], cases)
    assert result["dag_success"] == 1.0 and result["strict_success"] == 1.0


class _FakePlanner:
    """Answers gold plans for some cases, a wrong plan or an error for others."""

    def __init__(self, cases: list[EvalCase]) -> None:
        self.by_query = {c.query: c for c in cases}

    async def plan(self, query: str, *, today: dt.date | None = None) -> Any:
        from types import SimpleNamespace

        from tinyagent.errors import PlanParseError

        case = self.by_query[query]
        assert today == case.today
        if case.id.endswith("1"):
            raise PlanParseError("garbage")
        if case.id.endswith("2"):
            return SimpleNamespace(plan=Plan.from_json([{"id": 1, "name": "get_today", "args": {}}]))
        return SimpleNamespace(plan=case.plan)


async def test_evaluate_scores_and_records_errors() -> None:
    from tinyagent.evals import evaluate

    cases = load_evalset("test")[:20]
    result = await evaluate(_FakePlanner(cases), cases)
    bad = [c.id for c in cases if c.id.endswith(("1", "2"))]
    assert sorted(result["dag_failures"]) == sorted(bad)
    assert result["dag_correct"] == len(cases) - len(bad)
    assert set(result["errors"]) == {c.id for c in cases if c.id.endswith("1")}
    assert all("PlanParseError" in e for e in result["errors"].values())
    assert sum(v["n"] for v in result["by_category"].values()) == len(cases)
    good = next(c for c in cases if c.id not in bad)
    assert result["predictions"][good.id] == list(good.calls)


async def test_evaluate_with_the_agent_and_a_scripted_planner() -> None:
    from tinyagent import Agent
    from tinyagent.evals import evaluate
    from tinyagent.functions import FunctionsSettings, builtin_tools
    from tinyagent.models import ScriptedModel

    cases = [c for c in load_evalset("train") if c.category in ("meeting_with", "no_tool")][:2]
    model = ScriptedModel(lambda request: next(
        c.plan.to_text() for c in cases if c.query in str(request.messages[-1]["content"])))
    tools = builtin_tools(FunctionsSettings(data_dir="."))
    result = await evaluate(Agent(tools=tools, model=model), cases, tools)
    assert result["dag_success"] == 1.0 and result["strict_success"] == 1.0, result
