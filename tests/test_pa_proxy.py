"""The personal-assistant proxy: the disguised registry, the converted test split, scoring, and the benchmark."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from _helpers_models import real_model_available

from tinyagent.errors import ConfigurationError
from tinyagent.evals import (
    PA_PROXY_DATE_PARAMS,
    PA_PROXY_PARAM_NAMES,
    PA_PROXY_TOOL_NAMES,
    EvalCase,
    convert_calls,
    convert_case,
    date_format_ok,
    failure_kind,
    load_evalset,
    load_pa_registry,
    pa_proxy_cases,
    plan_pa_proxy,
    score_pa_plan,
)
from tinyagent.functions import TOOL_NAMES, FunctionsSettings, builtin_tools
from tinyagent.models import ScriptedModel

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ROOT / "benchmarks" / "data" / "pa_proxy" / "tools.json"
sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_pa_proxy as bench  # noqa: E402

BUILTIN = {t.name: t for t in builtin_tools(FunctionsSettings(timezone="UTC"))}


@pytest.fixture(scope="module")
def registry() -> Any:
    return load_pa_registry(TOOLS)


@pytest.fixture(scope="module")
def cases() -> list[EvalCase]:
    return pa_proxy_cases()


def by_id(cases: list[EvalCase], case_id: str) -> EvalCase:
    return next(c for c in cases if c.id == case_id)


# -- the registry and the maps ------------------------------------------------------------------------------------


def test_the_registry_loads_from_openai_json_with_every_tool_mapped(registry: Any) -> None:
    specs = json.loads(TOOLS.read_text(encoding="utf-8"))
    assert all(s["type"] == "function" for s in specs)
    assert set(registry) == set(PA_PROXY_TOOL_NAMES.values())
    assert set(PA_PROXY_TOOL_NAMES) == set(TOOL_NAMES) == set(PA_PROXY_PARAM_NAMES)
    assert len(set(PA_PROXY_TOOL_NAMES.values())) == len(PA_PROXY_TOOL_NAMES)  # one to one


def test_every_parameter_is_mapped_one_to_one_with_the_same_required_and_defaults(registry: Any) -> None:
    for ours, theirs in PA_PROXY_TOOL_NAMES.items():
        mine, foreign = BUILTIN[ours].parameters, registry[theirs].parameters
        names = PA_PROXY_PARAM_NAMES[ours]
        assert set(names) == set(mine["properties"]), ours
        assert set(names.values()) == set(foreign["properties"]), ours
        assert {names[p] for p in mine.get("required", [])} == set(foreign.get("required", [])), ours
        for p, q in names.items():
            assert mine["properties"][p].get("default") == foreign["properties"][q].get("default"), (ours, p)
            assert mine["properties"][p].get("type") == foreign["properties"][q].get("type"), (ours, p)


def test_no_disguised_name_equals_a_built_in_one(registry: Any) -> None:
    our_params = {p for t in BUILTIN.values() for p in t.parameters["properties"]}
    their_params = {p for t in registry.values() for p in t.parameters["properties"]}
    assert not set(registry) & set(BUILTIN)
    assert not our_params & their_params
    for ours, theirs in PA_PROXY_TOOL_NAMES.items():  # descriptions are not ours either
        assert registry[theirs].description.strip().lower() != BUILTIN[ours].description.strip().lower()


def test_date_parameters_document_the_format(registry: Any) -> None:
    for (tool, param), kind in PA_PROXY_DATE_PARAMS.items():
        description = registry[tool].parameters["properties"][param]["description"]
        assert ("YYYY-MM-DD HH:MM:SS" in description) == (kind != "date"), (tool, param)
        assert "YYYY-MM-DD" in description


# -- conversion ------------------------------------------------------------------------------------------------


def test_conversion_renames_calls_args_and_key_args_and_rewrites_datetimes(cases: list[EvalCase]) -> None:
    case = by_id(cases, "fn-0065")  # a meeting with Liz today at 4pm
    assert case.calls == (
        {"id": 1, "name": "contacts_lookup_email", "args": {"person_name": "Liz"}},
        {"id": 2, "name": "calendar_add_event", "args": {"event_name": "Roadmap review",
                                                         "start_datetime": "2027-03-18 16:00:00",
                                                         "length_minutes": 45, "attendee_emails": ["$1"]}},
    )
    assert dict(case.key_args) == {1: ("person_name",), 2: ("start_datetime", "length_minutes", "attendee_emails")}
    assert dict(case.date_exprs) == {2: {"start_datetime": "today at 4pm"}}
    assert case.query.startswith("Set up a 45 minute meeting") and case.category == "meeting_with"


def test_a_date_without_time_stays_a_date() -> None:
    calls = convert_calls([{"id": 1, "name": "list_calendar_events", "args": {"date": "2027-01-10"}},
                           {"id": 2, "name": "create_reminder", "args": {"title": "x", "due": "2027-03-01T09:05"}}])
    assert calls[0]["args"] == {"day": "2027-01-10"}
    assert calls[1]["args"] == {"task_name": "x", "due_datetime": "2027-03-01 09:05:00"}


def test_the_test_split_converts_completely(cases: list[EvalCase]) -> None:
    original = load_evalset("test")
    assert [c.id for c in cases] == [c.id for c in original]
    used = {call["name"] for c in cases for call in c.calls}
    assert used <= set(PA_PROXY_TOOL_NAMES.values())
    assert not any("T" in str(v) and str(v)[:4].isdigit() for c in cases for call in c.calls
                   for v in call["args"].values())


def test_limit_spreads_over_categories_deterministically() -> None:
    first, again = pa_proxy_cases(12), pa_proxy_cases(12)
    assert [c.id for c in first] == [c.id for c in again]
    assert len(first) == 12 and len({c.category for c in first}) == 12
    assert len({c.category for c in pa_proxy_cases(40)}) == 40
    with pytest.raises(ConfigurationError):
        pa_proxy_cases(-1)


def test_an_unknown_tool_or_argument_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="no disguised name"):
        convert_calls([{"id": 1, "name": "launch_rocket", "args": {}}])
    with pytest.raises(ConfigurationError, match="no disguised name"):
        convert_calls([{"id": 1, "name": "open_note", "args": {"colour": "red"}}])


# -- scoring ---------------------------------------------------------------------------------------------------


def test_every_converted_gold_plan_scores_correct_against_itself(cases: list[EvalCase], registry: Any) -> None:
    for case in cases:
        for pred in (case.calls, case.plan):
            result = score_pa_plan(pred, case, registry)
            assert result["dag"] and result["strict"] and result["strict_exact"], case.id
            assert result["date_format_ok"] is not False, case.id


def test_old_format_dates_are_strict_but_not_exact(cases: list[EvalCase], registry: Any) -> None:
    case = by_id(cases, "fn-0065")
    pred = json.loads(json.dumps(case.calls).replace("2027-03-18 16:00:00", "2027-03-18T16:00"))
    result = score_pa_plan(pred, case, registry)
    assert result == {"dag": True, "strict": True, "date_format_ok": False, "strict_exact": False}


def test_wrong_plans_fail(cases: list[EvalCase], registry: Any) -> None:
    case = by_id(cases, "fn-0065")
    wrong_time = json.loads(json.dumps(case.calls).replace("16:00:00", "15:00:00"))
    assert score_pa_plan(wrong_time, case, registry)["strict"] is False
    assert score_pa_plan(wrong_time, case, registry)["dag"] is True
    no_lookup = [{"id": 1, "name": "calendar_add_event", "args": dict(case.calls[1]["args"],
                                                                     attendee_emails=["liz@example.com"])}]
    assert score_pa_plan(no_lookup, case, registry) == {"dag": False, "strict": False, "date_format_ok": True,
                                                        "strict_exact": False}
    old_names = [{"id": 1, "name": "get_email_address", "args": {"name": "Liz"}}, case.calls[1]]
    assert score_pa_plan(old_names, case, registry)["dag"] is False
    assert score_pa_plan(None, case, registry)["dag"] is False


def test_an_omitted_argument_counts_as_its_default(cases: list[EvalCase], registry: Any) -> None:
    case = by_id(cases, "fn-0076")  # coffee chat Friday 1:30pm; key args include length_minutes (default 60)
    assert "length_minutes" in case.key_args[1] and "length_minutes" not in case.calls[0]["args"]
    explicit = [dict(case.calls[0], args=dict(case.calls[0]["args"], length_minutes=60))]
    other = [dict(case.calls[0], args=dict(case.calls[0]["args"], length_minutes=30))]
    assert score_pa_plan(explicit, case, registry)["strict"] is True
    assert score_pa_plan(other, case, registry)["strict"] is False


def test_date_format_check() -> None:
    assert date_format_ok([{"id": 1, "name": "calendar_get_agenda", "args": {"day": "2027-01-10"}}]) is True
    assert date_format_ok([{"id": 1, "name": "calendar_get_agenda", "args": {"day": "2027-01-10 00:00:00"}}]) is False
    assert date_format_ok([{"id": 1, "name": "reminders_add_task", "args": {"due_datetime": "$1"}}]) is None
    assert date_format_ok([{"id": 1, "name": "notes_read", "args": {"note_title": "2027-01-10T10:00"}}]) is None


def test_failure_kinds(cases: list[EvalCase]) -> None:
    meeting, alone, empty = by_id(cases, "fn-0065"), by_id(cases, "fn-0076"), next(c for c in cases if not c.calls)
    lookup = {"id": 9, "name": "contacts_lookup_email", "args": {"person_name": "X"}}

    def kind(calls: list[dict[str, Any]], case: EvalCase, **row: Any) -> str | None:
        return failure_kind({"calls": calls, "dag": False, "strict": False, **row}, case)

    assert kind([], meeting, error="ModelError: boom") == "error"
    assert kind([], meeting) == "no_tool" and kind(list(meeting.calls), empty) == "no_tool"
    assert kind([lookup, *alone.calls], alone) == "extra_lookup"
    assert kind([meeting.calls[1]], meeting) == "missing_lookup"
    swapped = [meeting.calls[0], dict(meeting.calls[1], name="calendar_check_availability")]
    assert kind(swapped, meeting) == "tool_confused"
    unwired = [meeting.calls[0], dict(meeting.calls[1], args={"attendee_emails": []})]
    assert kind(unwired, meeting) == "wrong_deps"
    late = [meeting.calls[0], dict(meeting.calls[1], args=dict(meeting.calls[1]["args"],
                                                               start_datetime="2027-03-19 16:00:00"))]
    assert kind(late, meeting, dag=True) == "date_wrong"
    assert kind(list(meeting.calls), meeting, strict=True) is None


# -- planning ---------------------------------------------------------------------------------------------------


def test_plan_rows_with_a_scripted_model(cases: list[EvalCase], registry: Any) -> None:
    picked = [by_id(cases, "fn-0065"), next(c for c in cases if not c.calls)]
    plans = {
        "Liz": '1. contacts_lookup_email(person_name="Liz")\n2. calendar_add_event(event_name="Roadmap review", '
               'start_datetime="2027-03-18 16:00:00", length_minutes=45, attendee_emails=[$1])\n3. join()\n'
               '<END_OF_PLAN>',
    }

    def reply(request: Any) -> str:
        text = request.messages[-1]["content"]
        return next((plan for key, plan in plans.items() if key in text), "1. join()\n<END_OF_PLAN>")

    model = ScriptedModel(reply)
    rows, info = bench.plan_cases(picked, model, tools=TOOLS)
    assert info == {}
    assert [(r["id"], r["dag"], r["strict"], r["strict_exact"], r["failure"]) for r in rows] == [
        ("fn-0065", True, True, True, None), (picked[1].id, True, True, True, None)]
    assert rows[1]["no_tool"] is True and rows[0]["no_tool"] is None
    assert rows[0]["text"].startswith("1. contacts_lookup_email(") and rows[1]["text"].startswith("1. join()")
    assert rows[0]["gold"] == list(picked[0].calls) and rows[0]["query"] == picked[0].query
    assert "contacts_lookup_email" in model.requests[0].messages[0]["content"] + model.requests[0].messages[-1][
        "content"]
    summary = bench.summarize_rows(rows)
    assert summary["overall"]["dag"] == 1.0 and summary["overall"]["n"] == 2
    assert summary["by_category"]["meeting_with"] == {"dag": 1.0, "strict": 1.0, "strict_exact": 1.0, "n": 1}
    assert summary["failures"] == {}


def test_plan_rows_record_a_wrong_plan(cases: list[EvalCase], registry: Any) -> None:
    case = by_id(cases, "fn-0065")
    model = ScriptedModel(['1. calendar_add_event(event_name="Roadmap review", start_datetime="2027-03-18T16:00", '
                           'attendee_emails=["organizer@example.com"])\n2. join()\n<END_OF_PLAN>'])
    rows = asyncio.run(plan_pa_proxy([case], bench.build_agent(registry, model, auto_examples=False), registry))
    assert rows[0]["dag"] is False and rows[0]["failure"] == "missing_lookup"
    assert rows[0]["date_format_ok"] is False


@pytest.mark.slow
@pytest.mark.skipif(not real_model_available("smollm2-135m"), reason="llama-cpp-python or smollm2-135m missing")
def test_plan_two_cases_with_smollm2() -> None:
    picked = pa_proxy_cases(2)
    rows, _ = bench.plan_cases(picked, "smollm2-135m", threads=2, tools=TOOLS)
    assert [r["id"] for r in rows] == [c.id for c in picked]
    for row in rows:
        assert row["error"] is None, row["error"]
        assert isinstance(row["dag"], bool) and isinstance(row["strict"], bool)
        assert row["elapsed_s"] > 0 and row["prompt_tokens"] and row["prompt_tokens"] > 100
        assert all(c["name"] in PA_PROXY_TOOL_NAMES.values() for c in row["calls"])
    summary = bench.summarize_rows(rows)
    assert summary["overall"]["n"] == 2 and summary["overall"]["p50_s"] is not None


def test_convert_case_keeps_a_no_tool_answer() -> None:
    case = next(c for c in load_evalset("test") if not c.calls)
    converted = convert_case(case)
    assert converted.calls == () and converted.answer == case.answer and converted.answer


def test_the_multi_step_development_set_is_valid_and_each_gold_plan_scores_right(registry: Any) -> None:
    path = Path(bench.__file__).parent / "data" / "pa_multistep" / "cases.jsonl"
    dev = load_evalset(path=path)
    assert len(dev) == 40 and {c.split for c in dev} == {"dev"}
    assert sum(len(c.calls) >= 4 for c in dev) >= 20  # mostly long plans, as real requests are
    for case in dev:
        for call in case.calls:
            assert call["name"] in registry, case.id
        result = score_pa_plan(case.calls, case, registry)
        assert result["dag"] and result["strict"] and result["strict_exact"], case.id


@pytest.mark.parametrize(("folder", "tools", "n"), [("pa_heldout", "pa_proxy", 16), ("pa_fresh", "pa_fresh", 32),
                                                         ("pa_fresh2", "pa_fresh2", 40),
                                                         ("pa_fresh3", "pa_fresh3", 40),
                                                         ("pa_fresh4", "pa_fresh4", 40),
                                                         ("pa_fresh5", "pa_fresh5", 40),
                                                         ("pa_fresh6", "pa_fresh6", 40),
                                                         ("pa_fresh7", "pa_fresh7", 40)])
def test_the_held_out_sets_are_valid_and_each_gold_plan_scores_right(folder: str, tools: str, n: int) -> None:
    """The held-out sets: 16 more requests over the proxy registry (session 24), and 32 over a registry of its own
    (``pa_fresh``, session 25: other names, parameters and description style), and 40 over a third
    (``pa_fresh2``, session 26: PascalCase names, camelCase parameters), and 40 over a fourth (``pa_fresh3``: noun-first
    snake_case names, terse parameters, one contact card for both channels), and 40 over a fifth (``pa_fresh4``:
    lowerCamelCase verb-first names, verbose snake_case parameters, two lookups), and 40 over a sixth
    (``pa_fresh5``: MCP-style ``server__action`` names, one lookup whose enum picks the channel), and 40 over a
    seventh (``pa_fresh6``: a product prefix on every name, separate date and time), and 40 over an eighth
    (``pa_fresh7``: kebab-case noun-first names, US dates and a 12-hour clock), each written before it was run."""
    data = Path(bench.__file__).parent / "data"
    registry = load_pa_registry(data / tools / "tools.json")
    cases = load_evalset(path=data / folder / "cases.jsonl")
    assert len(cases) == n
    for case in cases:
        for call in case.calls:
            assert call["name"] in registry, case.id
            assert set(call["args"]) <= set(registry[call["name"]].parameters["properties"]), case.id
        if case.calls:
            result = score_pa_plan(case.calls, case, registry)
            assert result["dag"] and result["strict"], case.id
