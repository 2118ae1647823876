"""The eval set over the built-in tools: every gold plan is checked, and the checker catches broken ones."""

from __future__ import annotations

import collections
import dataclasses
import datetime as dt
import importlib
import json
from pathlib import Path

import pytest

from tinyagent.evals import EvalCase, check_case, check_evalset, default_evalset_path, load_evalset
from tinyagent.functions import FunctionsSettings, builtin_examples, builtin_tools


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    return {t.name: t for t in builtin_tools(FunctionsSettings(data_dir=tmp_path_factory.mktemp("d")))}


def test_every_gold_plan_passes_the_checker() -> None:
    assert check_evalset() == []


def test_evalset_shape() -> None:
    cases = load_evalset()
    assert len(cases) >= 200
    splits = collections.Counter(c.split for c in cases)
    assert 0.55 <= splits["train"] / len(cases) <= 0.65
    sizes = collections.Counter(min(len(c.calls), 3) for c in cases)
    assert sizes[0] >= 10 and sizes[1] >= 50 and sizes[2] >= 30 and sizes[3] >= 30  # none, single, chains, larger
    # fan-outs (independent calls), given addresses (no lookup), relative dates, typos are all present
    assert any(len(c.calls) >= 2 and not any("$" in json.dumps(x["args"]) for x in c.calls) for c in cases)
    assert any("@" in c.query and c.calls and c.calls[0]["name"] == "send_email" for c in cases)
    assert sum(bool(c.date_exprs) for c in cases) >= 40
    assert any("emial" in c.query or "tomorow" in c.query for c in cases)
    # every tool is used at least once
    used = {call["name"] for c in cases for call in c.calls}
    assert used == {t.name for t in builtin_tools(FunctionsSettings(data_dir="."))}
    # every category is in both splits
    categories = collections.defaultdict(set)
    for c in cases:
        categories[c.category].add(c.split)
    assert all(v == {"train", "test"} for k, v in categories.items() if k), categories


def test_generator_is_deterministic_and_matches_the_file(tmp_path: Path) -> None:
    module = importlib.import_module("tinyagent.evals.make_evalset")
    assert default_evalset_path() == module.OUT
    built = module.build()
    again = module.build()
    assert built == again
    on_disk = [json.loads(line) for line in default_evalset_path().read_text(encoding="utf-8").splitlines()]
    assert built == on_disk


def _case(**changes: object) -> EvalCase:
    base = EvalCase(
        id="fn-x", query="Schedule a sync with Sid tomorrow at 10", today=dt.date(2026, 12, 1), split="train",
        calls=({"id": 1, "name": "get_email_address", "args": {"name": "Sid"}},
               {"id": 2, "name": "create_calendar_event",
                "args": {"title": "Sync", "start": "2026-12-02T10:00", "invitees": ["$1"]}}),
        key_args={1: ("name",), 2: ("start", "invitees")},
        date_exprs={2: {"start": "tomorrow at 10"}},
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_checker_accepts_a_good_case(registry: dict[str, object]) -> None:
    assert check_case(_case(), registry) == []  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"calls": ({"id": 1, "name": "make_coffee", "args": {}},)}, "unknown tool"),
        ({"calls": ({"id": 1, "name": "get_email_address", "args": {"nom": "Sid"}},)}, "unknown argument"),
        ({"calls": ({"id": 1, "name": "get_email_address", "args": {}},)}, "name"),
        ({"calls": ({"id": 1, "name": "create_calendar_event", "args": {"title": "x", "start": "2026-12-02T10:00",
                                                                       "duration_minutes": "long"}},)}, "integer"),
        ({"calls": ({"id": 1, "name": "send_email", "args": {"to": ["$2"], "subject": "s", "body": "b"}},
                    {"id": 2, "name": "get_email_address", "args": {"name": "Sid"}})}, "not earlier steps"),
        ({"calls": ({"id": 2, "name": "get_email_address", "args": {"name": "Sid"}},)}, "in order"),
        ({"date_exprs": {2: {"start": "tomorrow at 11"}}}, "on 2026-12-01 is 2026-12-02T11:00"),
        ({"date_exprs": {}}, "no date_exprs entry"),
        ({"today": dt.date(2025, 1, 1), "date_exprs": {}}, "more than a year"),
        ({"key_args": {2: ("when",)}}, "has no parameter 'when'"),
        ({"key_args": {9: ("name",)}}, "step 9, which does not exist"),
        ({"calls": (), "key_args": {}, "date_exprs": {}}, "needs an answer"),
        ({"answer": "Sure."}, "answer null"),
        ({"split": "dev"}, "split 'dev'"),
    ],
)
def test_checker_catches_broken_cases(registry: dict[str, object], changes: dict[str, object], problem: str) -> None:
    problems = check_case(_case(**changes), registry)  # type: ignore[arg-type]
    assert any(problem in p for p in problems), problems


def test_set_level_checks() -> None:
    case = _case()
    problems = check_evalset([case, case], min_cases=3)
    assert any("only 2 cases" in p for p in problems)
    assert any("duplicate id" in p for p in problems)
    assert any("duplicate query" in p for p in problems)
    assert any("are train" in p for p in problems)


def test_bench_few_shot_examples_come_from_train() -> None:
    from tinyagent.evals import EXAMPLE_CATEGORIES, default_examples

    train = load_evalset("train")
    examples = default_examples(train)
    assert len(examples) == len(EXAMPLE_CATEGORIES)
    train_queries = {c.query for c in train}
    assert all(e.query in train_queries for e in examples)
    assert any(not e.plan.calls and e.plan.answer for e in examples)  # one shows the empty plan
    assert not {e.query for e in examples} & {c.query for c in load_evalset("test")}


def test_functions_few_shot_pool_is_the_train_split_read_without_evals() -> None:
    pool = builtin_examples()
    train = load_evalset("train")
    assert [e.query for e in pool] == [c.query for c in train]
    assert [e.today for e in pool] == [c.today for c in train]
    assert [e.plan.to_json() for e in pool] == [c.plan.to_json() for c in train]
    assert [e.plan.answer for e in pool] == [c.answer for c in train]
