"""Foreign registries: BFCL multi-turn suites as single-request cases, BFCL live, and their scoring glue."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from _helpers_models import real_model_available

from tinyagent.errors import BfclDataError, ConfigurationError
from tinyagent.evals import (
    MULTI_TURN_SUITES,
    bfcl,
    default_agent_factory,
    live_cases,
    load_multi_turn_cases,
    parse_ground_truth_call,
    plan_live,
    plan_multi_turn,
    suite_functions,
    summarize,
)
from tinyagent.models import ScriptedModel

CD = {"name": "cd", "description": "Change directory.", "response": {"type": "dict"},
      "parameters": {"type": "dict", "properties": {"folder": {"type": "string", "description": "folder"}},
                     "required": ["folder"]}}
MV = {"name": "mv", "description": "Move a file.",
      "parameters": {"type": "dict", "properties": {"source": {"type": "string"}, "destination": {"type": "string"}},
                     "required": ["source", "destination"]}}
SORT = {"name": "sort", "description": "Sort a file.",
        "parameters": {"type": "dict", "properties": {"file_name": {"type": "string"}}, "required": ["file_name"]}}
POST = {"name": "post_tweet", "description": "Post a tweet.",
        "parameters": {"type": "dict", "properties": {"content": {"type": "string"}}, "required": ["content"]}}
FS = {f["name"]: f for f in (CD, MV, SORT)}


def mt_entry(i: int, classes: list[str], first: str) -> dict[str, Any]:
    return {"id": f"multi_turn_base_{i}", "involved_classes": classes,
            "question": [[{"role": "user", "content": first}], [{"role": "user", "content": "and then?"}]]}


def write_wheel(path: Path) -> Path:
    entries = [
        mt_entry(0, ["GorillaFileSystem"], "Go to 'document' and move 'a.pdf' to 'temp'."),
        mt_entry(1, ["GorillaFileSystem"], "ODD CASE: never load me"),
        mt_entry(2, ["GorillaFileSystem", "TwitterAPI"], "Sort 'notes.txt'."),
        mt_entry(3, ["TwitterAPI"], "ODD CASE too"),
        mt_entry(4, ["TwitterAPI"], "Tweet 'hello'."),
    ]
    truth = {
        0: [["cd(folder='document')", "mv(source='a.pdf', destination='temp')"], ["sort('a.pdf')"]],
        1: [["cd(folder='odd')"]],
        2: [["sort('notes.txt')"]],
        3: [["post_tweet(content='odd')"]],
        4: [["post_tweet(content='hello')"]],
    }
    wheel = path / "bfcl_eval-2026.3.23-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        prefix = "bfcl_eval/data/"
        zf.writestr(prefix + "BFCL_v4_multi_turn_base.json", "\n".join(json.dumps(e) for e in entries) + "\n")
        zf.writestr(prefix + "possible_answer/BFCL_v4_multi_turn_base.json",
                    "\n".join(json.dumps({"id": f"multi_turn_base_{i}", "ground_truth": t}) for i, t in truth.items()))
        zf.writestr(prefix + "multi_turn_func_doc/gorilla_file_system.json",
                    "\n".join(json.dumps(f) for f in (CD, MV, SORT)))
        zf.writestr(prefix + "multi_turn_func_doc/posting_api.json", json.dumps(POST))
        live = [{"id": f"live_irrelevance_{i}-0-{i}", "question": [[{"role": "user", "content": "a joke"}]],
                 "function": [POST]} for i in range(3)]
        zf.writestr(prefix + "BFCL_v4_live_irrelevance.json", "\n".join(json.dumps(e) for e in live))
        simple = [{"id": f"live_simple_{i}-{i}-0", "question": [[{"role": "user", "content": "tweet hi"}]],
                   "function": [POST]} for i in range(3)]
        zf.writestr(prefix + "BFCL_v4_live_simple.json", "\n".join(json.dumps(e) for e in simple))
        answers = [{"id": f"live_simple_{i}-{i}-0", "ground_truth": [{"post_tweet": {"content": ["hi"]}}]}
                   for i in range(3)]
        zf.writestr(prefix + "possible_answer/BFCL_v4_live_simple.json", "\n".join(json.dumps(a) for a in answers))
        zf.writestr(prefix + "BFCL_v4_live_multiple.json", "")
        zf.writestr(prefix + "possible_answer/BFCL_v4_live_multiple.json", "")
    return wheel


@pytest.fixture
def wheel(tmp_path: Path) -> Path:
    return write_wheel(tmp_path)


def test_parse_ground_truth_call_names_positional_arguments() -> None:
    assert parse_ground_truth_call("cd(folder='document')", FS) == {"name": "cd", "args": {"folder": "document"}}
    assert parse_ground_truth_call("sort('final_report.pdf')", FS) == {
        "name": "sort", "args": {"file_name": "final_report.pdf"}}
    assert parse_ground_truth_call("mv('a', destination='b')", FS) == {
        "name": "mv", "args": {"source": "a", "destination": "b"}}
    assert parse_ground_truth_call("x.y(n=-3, items=[1, 2], flag=True)", {}) == {
        "name": "x.y", "args": {"n": -3, "items": [1, 2], "flag": True}}
    with pytest.raises(BfclDataError, match="literal"):
        parse_ground_truth_call("cd(folder=somewhere)", FS)
    with pytest.raises(BfclDataError, match="not a call"):
        parse_ground_truth_call("folder = 3", FS)
    with pytest.raises(BfclDataError, match="positional"):
        parse_ground_truth_call("cd('a', 'b')", FS)


def test_multi_turn_cases_use_the_first_turn_and_even_indexes_only(wheel: Path) -> None:
    cases = load_multi_turn_cases(wheel, ["gorilla_file_system", "posting_api"], today=dt.date(2026, 1, 5))
    assert [(c.case.category, c.case.id) for c in cases] == [
        ("gorilla_file_system", "multi_turn_base_0"), ("gorilla_file_system", "multi_turn_base_2"),
        ("posting_api", "multi_turn_base_2"), ("posting_api", "multi_turn_base_4")]
    first = cases[0].case
    assert first.query == "Go to 'document' and move 'a.pdf' to 'temp'."
    assert first.calls == ({"id": 1, "name": "cd", "args": {"folder": "document"}},
                           {"id": 2, "name": "mv", "args": {"source": "a.pdf", "destination": "temp"}})
    assert first.key_args == {1: ("folder",), 2: ("source", "destination")}
    assert first.today == dt.date(2026, 1, 5) and first.split == "test"
    # The functions of every involved class are offered, BFCL's "response" field dropped.
    assert [f["name"] for f in cases[0].functions] == ["cd", "mv", "sort"]
    assert [f["name"] for f in cases[1].functions] == ["cd", "mv", "sort", "post_tweet"]
    assert "response" not in cases[0].functions[0]
    assert all("ODD" not in c.case.query for c in cases)
    assert [c.case.id for c in load_multi_turn_cases(wheel, ["gorilla_file_system"], parity="odd")] == [
        "multi_turn_base_1"]
    assert len(load_multi_turn_cases(wheel, ["gorilla_file_system"], limit=1)) == 1


def test_multi_turn_loader_errors(wheel: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="unknown BFCL multi-turn suite"):
        load_multi_turn_cases(wheel, ["filesystem"])
    with pytest.raises(ConfigurationError, match="parity"):
        load_multi_turn_cases(wheel, ["posting_api"], parity="evens")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="limit"):
        load_multi_turn_cases(wheel, ["posting_api"], limit=-1)
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "BFCL_v4_simple_python.json").write_text("")
    with pytest.raises(BfclDataError, match="multi_turn_base"):
        load_multi_turn_cases(empty, ["posting_api"])
    assert set(MULTI_TURN_SUITES.values()) >= {"gorilla_file_system", "travel_booking", "vehicle_control"}
    assert [f["name"] for f in suite_functions(wheel, "gorilla_file_system")] == ["cd", "mv", "sort"]


def test_scoring_glue_with_a_scripted_model(wheel: Path) -> None:
    cases = load_multi_turn_cases(wheel, ["gorilla_file_system"])
    plans = {
        # right tools, right arguments; then the right tool with a wrong argument
        "Go to": '1. cd(folder="document")\n2. mv(source="a.pdf", destination="temp")\n3. join()\n<END_OF_PLAN>',
        "Sort": '1. sort(file_name="other.txt")\n2. join()\n<END_OF_PLAN>',
    }

    def reply(request: Any) -> str:
        text = request.messages[-1]["content"]
        # (a clause of the request planned alone, tinyagent.run._coverage: no call)
        return next((plan for key, plan in plans.items() if key in text), "1. join()\n<END_OF_PLAN>")

    model = ScriptedModel(reply)
    rows = asyncio.run(plan_multi_turn(cases, default_agent_factory(model), model=model, registry="mt_fs"))
    assert [(r["id"], r["dag"], r["strict"], r["no_tool"]) for r in rows] == [
        ("multi_turn_base_0", True, True, None), ("multi_turn_base_2", True, False, None)]
    assert rows[0]["registry"] == "mt_fs" and rows[0]["error"] is None
    assert rows[0]["calls"][1] == {"id": 2, "name": "mv", "args": {"source": "a.pdf", "destination": "temp"}}
    summary = summarize(rows)
    assert summary["dag"] == 1.0 and summary["strict"] == 0.5 and summary["no_tool"] is None
    assert summary["n"] == 2 and summary["prompt_tokens"] and summary["p50_s"] is not None
    assert summary["p50_s"] <= summary["p95_s"]


def test_a_wrong_dependency_or_tool_fails_dag(wheel: Path) -> None:
    cases = load_multi_turn_cases(wheel, ["gorilla_file_system"], limit=1)
    model = ScriptedModel(['1. cd(folder="document")\n2. mv(source=$1, destination="temp")\n3. join()\n<END_OF_PLAN>'])
    rows = asyncio.run(plan_multi_turn(cases, default_agent_factory(model)))
    assert rows[0]["dag"] is False and rows[0]["strict"] is False


def test_live_rows_use_the_ast_checker(wheel: Path) -> None:
    cases = live_cases(wheel, 4)
    assert [c.id for c in cases] == ["live_simple_0-0-0", "live_irrelevance_0-0-0", "live_simple_2-2-0",
                                     "live_irrelevance_2-0-2"]
    model = ScriptedModel(['1. post_tweet(content="hi")\n2. join()\n<END_OF_PLAN>'])
    rows = asyncio.run(plan_live(cases, default_agent_factory(model), model=model))
    assert [(r["strict"], r["dag"], r["no_tool"]) for r in rows] == [
        (True, True, None), (False, False, False), (True, True, None), (False, False, False)]
    assert rows[1]["reason"].startswith("irrelevance_error")
    summary = summarize(rows)
    assert summary["strict"] == 0.5 and summary["no_tool"] == 0.0 and summary["no_tool_n"] == 2


def test_summarize_empty_and_errors() -> None:
    assert summarize([])["n"] == 0 and summarize([])["dag"] is None
    rows = [{"dag": False, "strict": False, "no_tool": True, "elapsed_s": 1.0, "prompt_tokens": None, "error": "x"},
            {"dag": True, "strict": True, "no_tool": None, "elapsed_s": 3.0, "prompt_tokens": 10, "error": None,
             "prompt_evaluated": 4}]
    summary = summarize(rows)
    assert summary == {"dag": 0.5, "strict": 0.5, "no_tool": 1.0, "no_tool_n": 1, "p50_s": 1.0, "p95_s": 3.0,
                       "prompt_tokens": 10.0, "prompt_evaluated": 4.0, "n": 2, "errors": 1}


# -- the real data and model -------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(not real_model_available("smollm2-135m"), reason="llama-cpp-python or smollm2-135m missing")
def test_plan_a_real_multi_turn_suite_with_smollm2() -> None:
    from tinyagent.models import LlamaCppModel

    try:
        data = bfcl.ensure_data()
    except BfclDataError as exc:
        pytest.skip(f"the bfcl-eval wheel could not be downloaded: {exc}")
    cases = load_multi_turn_cases(data, ["gorilla_file_system"], limit=3)
    assert len(cases) == 3 and all(bfcl.case_index(c.case.id) % 2 == 0 for c in cases)
    model = LlamaCppModel("smollm2-135m", n_threads=2)

    async def go() -> list[dict[str, Any]]:
        try:
            return await plan_multi_turn(cases, default_agent_factory(model), model=model, registry="mt_fs")
        finally:
            await model.aclose()

    rows = asyncio.run(go())
    assert [r["id"] for r in rows] == [c.case.id for c in cases]
    for row in rows:
        assert set(row) >= {"id", "registry", "dag", "strict", "no_tool", "elapsed_s", "prompt_tokens", "calls",
                            "error"}
        assert row["elapsed_s"] > 0
    summary = summarize(rows)
    assert set(summary) >= {"dag", "strict", "no_tool", "p50_s", "p95_s", "prompt_tokens", "n"}
    assert summary["n"] == 3


def test_multi_turn_cases_list_the_suites_own_tools_first(wheel: Path) -> None:
    # BFCL lists involved classes in any order; the suite's own tools go first so every case of a suite shares the
    # prompt prefix of those tools (llama.cpp's KV cache then skips them), the other classes follow sorted.
    cases = load_multi_turn_cases(wheel, ["gorilla_file_system", "posting_api"])
    by_key = {(c.case.category, c.case.id): [f["name"] for f in c.functions] for c in cases}
    assert by_key[("gorilla_file_system", "multi_turn_base_2")] == ["cd", "mv", "sort", "post_tweet"]
    assert by_key[("posting_api", "multi_turn_base_2")] == ["post_tweet", "cd", "mv", "sort"]
