"""distill: the whole synthesis + verification run with a scripted teacher, its output format, and resuming."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest
from _helpers_models import kill_when

from tinyagent._plan import Call, Example, Plan
from tinyagent._prompts import build_planner_messages
from tinyagent.errors import ConfigurationError, ModelError, TrainingError
from tinyagent.finetune import DistillConfig, ProgressEvent, distill
from tinyagent.finetune._jsonl import JsonlLog
from tinyagent.models import ScriptedModel

# The tools and the scripted teacher live in a helper module, so a subprocess can run the same distillation.
HELPER = textwrap.dedent('''
    import json, re, sys, asyncio
    from tinyagent import tool
    from tinyagent.models import ScriptedModel

    @tool
    def get_email_address(name: str) -> str:
        """Look up a contact's email address.

        Args:
            name: the contact's name.
        """
        return name.lower() + "@example.com"

    @tool
    def send_email(to: list[str], subject: str, body: str = "") -> str:
        """Send an email."""
        return "sent"

    @tool
    def create_event(title: str, date: str) -> str:
        """Create a calendar event on a date (YYYY-MM-DD)."""
        return "ok"

    TOOLS = [get_email_address, send_email, create_event]
    NAMES = ["Sid", "Alexandra", "Priya", "Maria", "Tom", "Zoe", "Liz", "Bob", "Kenji", "Nina", "Omar", "Lena",
             "Ahmed", "Julia", "Wei", "Carlos"]
    TOPICS = ["the budget review", "lunch", "our offsite in May", "a birthday party", "the quarterly report",
              "the hike on Sunday", "the new logo", "the login bug", "rent", "the piano lesson"]

    def script(request):
        user = request.messages[-1]["content"]
        if "JSON list" in request.messages[0]["content"]:
            k = int(re.search(r"Write (\\d+) different", user).group(1))
            day = re.search(r"Today is (\\S+)", user).group(1)
            seed = sum(map(ord, day)) * 7 + k
            if "need no tool" in user:
                return json.dumps([f"{g} {NAMES[(seed + i) % len(NAMES)]}, how is the weather on Mars?"
                                   for i, g in enumerate(["hello", "thanks a lot", "good morning", "hey"][:k])])
            names = [NAMES[(seed + 3 * i) % len(NAMES)] for i in range(k)]
            return json.dumps([("They need to email" if name == "Lena" else "Email")  # Lena's: third person
                               + f" {name} about {TOPICS[(seed + i) % len(TOPICS)]}" for i, name in enumerate(names)])
        query = user.split("Request: ")[-1]
        if "Mars" in query:
            return "1. join()\\n"
        m = re.match(r"Email (\\w+) about (.*)", query)
        if m is None:
            return "I cannot plan this."
        if m.group(1) == "Omar":  # the teacher makes a schema error for Omar
            return f'1. send_email(to="omar@example.com", subject="{m.group(2)}")\\n2. join()\\n'
        return (f'1. get_email_address(name="{m.group(1)}")\\n'
                f'2. send_email(subject="{m.group(2).capitalize()}", to=[$1])\\n3. join()\\n')

    def teacher(delay=0.0):
        return ScriptedModel(script, delay_s=delay, chunk_chars=8)

    if __name__ == "__main__":
        from tinyagent.finetune import DistillConfig, distill
        cfg = DistillConfig(n_requests=int(sys.argv[2]), batch_size=4, seed=1)
        asyncio.run(distill(TOOLS, teacher(float(sys.argv[3])), sys.argv[1], config=cfg))
''')


@pytest.fixture()
def helper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    path = tmp_path / "distill_helper.py"
    path.write_text(HELPER)
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    module = importlib.import_module("distill_helper")
    yield module
    sys.modules.pop("distill_helper", None)


def lines(path: Path) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


async def test_distill_writes_verified_chat_jsonl_with_stats(tmp_path: Path, helper) -> None:  # type: ignore[no-untyped-def]
    events: list[ProgressEvent] = []
    out = tmp_path / "run"
    cfg = DistillConfig(n_requests=40, batch_size=4, seed=1, valid_fraction=0.25)
    result = await distill(helper.TOOLS, helper.teacher(), out, config=cfg, progress=events.append)

    kept, rejected = lines(out / "kept.jsonl"), lines(out / "rejected.jsonl")
    requests = [r for b in lines(out / "requests.jsonl") for r in b["requests"]]
    assert result.requests == len(requests) > 20
    assert len(kept) + len(rejected) == len(requests)
    assert result.kept == len(kept) and result.kept > 10
    stats = json.loads((out / "stats.json").read_text())
    assert stats["kept"] == len(kept)
    assert stats["dropped"] == len(rejected) + stats["dropped_by_reason"].get("duplicate", 0)
    reasons = Counter(r["reason"] for r in rejected)
    assert set(reasons) <= {"schema", "parse", "relative_date", "kind", "request"}
    assert reasons["schema"] >= 1  # the Omar plans pass a string where a list is required
    assert reasons["request"] >= 1  # "They need to email Lena …"
    assert all("detail" in r for r in rejected)
    # A request that is not a user's is dropped before the teacher plans it; every other one has the teacher's text.
    assert all(("teacher_text" in r) == (r["reason"] != "request") for r in rejected)
    assert all(r["query"].startswith("They") for r in rejected if r["reason"] == "request")

    train, valid = lines(out / "train.jsonl"), lines(out / "valid.jsonl")
    assert len(train) + len(valid) == len(kept) and len(valid) >= 1
    for record in train + valid:
        assert set(record) == {"messages", "tools"}
        roles = [m["role"] for m in record["messages"]]
        assert roles == ["system", "user", "assistant"]
        assert record["messages"][-1]["content"].endswith("join()\n<END_OF_PLAN>")
        assert {t["function"]["name"] for t in record["tools"]} == {"get_email_address", "send_email", "create_event"}
    # The prompt is exactly the Agent's planner prompt, and the target is the canonical plan (args in schema order).
    example = next(r for r in kept if r["query"].startswith("Email"))
    import datetime as dt

    expected = build_planner_messages(helper.TOOLS, example["query"], dt.date.fromisoformat(example["today"]),
                                      format_examples=True)
    assert example["messages"][:2] == expected
    assert example["messages"][2]["content"].startswith('1. get_email_address(name="')
    assert '2. send_email(to=[$1], subject="' in example["messages"][2]["content"]
    assert "reordered_args" in example["repairs"]
    kinds = Counter(r["kind"] for r in kept)
    assert kinds["no_tool"] >= 1 and kinds["single"] >= 1
    no_tool = next(r for r in kept if r["kind"] == "no_tool")
    assert no_tool["messages"][-1]["content"] == "1. join()\n<END_OF_PLAN>"

    stages = {e.stage for e in events}
    assert stages == {"requests", "plans"}
    last = [e for e in events if e.stage == "plans"][-1]
    assert last.done == last.total == len(requests)


async def test_teacher_gets_a_list_grammar_and_plans_under_the_plan_grammar(tmp_path: Path, helper) -> None:  # type: ignore[no-untyped-def]
    teacher = helper.teacher()
    await distill(helper.TOOLS, teacher, tmp_path, config=DistillConfig(n_requests=4, batch_size=4, seed=1))
    asks = [r for r in teacher.requests if "JSON list" in r.messages[0]["content"]]
    plans = [r for r in teacher.requests if "JSON list" not in r.messages[0]["content"]]
    assert len(asks) == 1 and asks[0].grammar is not None and asks[0].grammar.startswith('root ::= "["')
    assert asks[0].temperature == 0.8
    assert plans and all(r.grammar is not None and "get_email_address" in r.grammar for r in plans)
    assert all(r.stop == ("<END_OF_PLAN>",) and r.temperature == 0 for r in plans)


async def test_user_examples_seed_requests_and_join_the_training_set(tmp_path: Path, helper) -> None:  # type: ignore[no-untyped-def]
    import datetime as dt

    examples = [
        Example("Mail Sid the minutes of today's meeting",
                Plan((Call(1, "get_email_address", {"name": "Sid"}),
                      Call(2, "send_email", {"to": ["$1"], "subject": "Minutes"}))), dt.date(2026, 12, 1)),
        Example("Put the dentist on 2026-12-09", Plan((Call(1, "create_event", {"title": "Dentist",
                                                                                  "date": "2026-12-09"}),))),
        Example("Bad example", Plan((Call(1, "create_event", {"title": "x"}),))),  # missing a required argument
    ]
    teacher = helper.teacher()
    cfg = DistillConfig(n_requests=8, batch_size=4, seed=1)
    result = await distill(helper.TOOLS, teacher, tmp_path, examples=examples, config=cfg, student_examples=())
    kept = {r["query"]: r for r in lines(tmp_path / "kept.jsonl")}
    rejected = {r["query"]: r for r in lines(tmp_path / "rejected.jsonl")}
    assert "Put the dentist on 2026-12-09" in kept and kept["Put the dentist on 2026-12-09"]["source"] == "example"
    assert rejected["Bad example"]["reason"] == "schema"
    # Examples show up as style hints in the request prompt and as few-shot examples in the teacher's planner prompt.
    ask = next(r for r in teacher.requests if "JSON list" in r.messages[0]["content"])
    assert "Mail Sid the minutes" in ask.messages[-1]["content"]
    plan_prompt = next(r for r in teacher.requests if "JSON list" not in r.messages[0]["content"])
    assert "Examples:" in plan_prompt.messages[0]["content"]
    # student_examples=() trains on a prompt without them.
    assert all("Examples:" not in r["messages"][0]["content"] for r in kept.values())
    assert result.kept == len(kept)


async def test_a_failing_teacher_is_reported(tmp_path: Path, helper) -> None:  # type: ignore[no-untyped-def]
    broken = ScriptedModel(fail_with=ModelError("server down"))
    with pytest.raises(TrainingError, match="server down"):
        await distill(helper.TOOLS, broken, tmp_path, config=DistillConfig(n_requests=4, batch_size=4))

    class Flaky(ScriptedModel):
        async def stream(self, request):  # type: ignore[no-untyped-def, override]
            if "JSON list" not in request.messages[0]["content"]:
                raise ModelError("the teacher crashed")
            async for item in super().stream(request):
                yield item

    out = tmp_path / "flaky"
    result = await distill(helper.TOOLS, Flaky(helper.script), out, config=DistillConfig(n_requests=4, batch_size=4,
                                                                                        mix={"single": 1.0}))
    assert result.kept == 0
    assert {r["reason"] for r in lines(out / "rejected.jsonl")} - {"request"} == {"teacher_error"}


async def test_resume_refuses_a_different_configuration_and_can_start_over(tmp_path: Path, helper) -> None:  # type: ignore[no-untyped-def]
    cfg = DistillConfig(n_requests=8, batch_size=4, seed=1)
    first = await distill(helper.TOOLS, helper.teacher(), tmp_path, config=cfg)
    again = await distill(helper.TOOLS, helper.teacher(), tmp_path, config=cfg)
    assert again.resumed and again.kept == first.kept
    assert len(lines(tmp_path / "kept.jsonl")) == first.kept  # nothing redone, nothing duplicated
    with pytest.raises(ConfigurationError, match="different configuration"):
        await distill(helper.TOOLS, helper.teacher(), tmp_path, config=DistillConfig(n_requests=8, seed=2))
    fresh = await distill(helper.TOOLS, helper.teacher(), tmp_path, config=DistillConfig(n_requests=4, seed=2),
                          resume=False)
    assert not fresh.resumed and fresh.requests <= 4


def test_a_killed_distillation_resumes_without_loss_or_duplicates(tmp_path: Path, helper) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "run"
    script = tmp_path / "distill_helper.py"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), *sys.path]))
    kill_when([sys.executable, str(script), str(out), "24", "0.02"],
              lambda: len(lines(out / "kept.jsonl")) + len(lines(out / "rejected.jsonl")) >= 4, timeout=120, env=env)
    before = {r["id"] for r in lines(out / "kept.jsonl")} | {r["id"] for r in lines(out / "rejected.jsonl")}
    assert len(before) >= 4
    assert json.loads((out / "progress.json").read_text())["phase"] == "plans"

    import asyncio

    cfg = DistillConfig(n_requests=24, batch_size=4, seed=1)
    result = asyncio.run(distill(helper.TOOLS, helper.teacher(), out, config=cfg))
    assert result.resumed
    requests = [r["id"] for b in lines(out / "requests.jsonl") for r in b["requests"]]
    batches = [b["batch"] for b in lines(out / "requests.jsonl")]
    assert len(batches) == len(set(batches))
    done = [r["id"] for r in lines(out / "kept.jsonl")] + [r["id"] for r in lines(out / "rejected.jsonl")]
    assert len(done) == len(set(done))  # nothing duplicated
    assert set(done) == set(requests)  # nothing lost
    assert before <= set(done)
    assert json.loads((out / "progress.json").read_text())["phase"] == "done"
    assert len(lines(out / "train.jsonl")) + len(lines(out / "valid.jsonl")) == result.kept


def test_jsonl_log_cuts_a_torn_line_and_finishes_a_complete_one(tmp_path: Path) -> None:
    log = JsonlLog(tmp_path / "x.jsonl")
    log.append({"id": 1})
    log.append({"id": 2})
    with log.path.open("a") as f:
        f.write('{"id": 3, "te')
    assert [r["id"] for r in log.load()] == [1, 2]
    assert log.path.read_text() == '{"id": 1}\n{"id": 2}\n'
    with log.path.open("a") as f:
        f.write('{"id": 3}')
    assert [r["id"] for r in log.load()] == [1, 2, 3]
    log.append({"id": 4})
    assert [r["id"] for r in log.load()] == [1, 2, 3, 4]
    log.path.write_text('{"id": 1}\nnot json\n{"id": 2}\n')
    with pytest.raises(TrainingError, match="corrupt"):
        log.load()


async def test_agent_options_give_the_teacher_and_the_training_prompt_the_retrieved_tools(  # type: ignore[no-untyped-def]
    tmp_path: Path, helper
) -> None:
    from tinyagent.retrieval import Retrieval

    class EmailOnly:
        fitted = 0

        def fit(self, registry, examples=()):  # type: ignore[no-untyped-def]
            EmailOnly.fitted += 1

        def retrieve(self, query):  # type: ignore[no-untyped-def]
            return Retrieval(tools=("get_email_address", "send_email"))

        def widen(self, query, previous, hint=""):  # type: ignore[no-untyped-def]
            return previous

    teacher = helper.teacher()
    cfg = DistillConfig(n_requests=8, batch_size=4, seed=1, mix={"single": 1.0})
    result = await distill(helper.TOOLS, teacher, tmp_path, config=cfg, agent_options={"retriever": EmailOnly()})
    assert result.kept >= 1 and EmailOnly.fitted == 1
    for record in lines(tmp_path / "train.jsonl") + lines(tmp_path / "valid.jsonl"):
        assert [t["function"]["name"] for t in record["tools"]] == ["get_email_address", "send_email"]
        assert "create_event" not in record["messages"][0]["content"]
    plans = [r for r in teacher.requests if "JSON list" not in r.messages[0]["content"]]
    assert plans and all("create_event" not in (r.grammar or "") for r in plans)
