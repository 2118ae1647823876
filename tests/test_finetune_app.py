"""``tinyagent finetune run``: the one-command pipeline, end to end on SmolLM2, and resuming."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tinyagent.apps._runtime import load_tools
from tinyagent.finetune import load_examples

TOOLS_FILE = '''
from tinyagent import tool

@tool
def get_email_address(name: str) -> str:
    """Look up a contact's email address."""
    return name.lower() + "@example.com"

@tool
def send_email(to: list[str], subject: str, body: str = "") -> str:
    """Send an email."""
    return "sent"

TOOLS = [get_email_address, send_email]
'''

NAMES = ["Sid", "Priya", "Tom", "Zoe", "Kenji", "Nina", "Omar", "Lena", "Julia", "Carlos", "Ines", "Raj"]


def teacher_file(path: Path) -> Path:
    requests = [f"Email {n} about {t}" for n, t in zip(NAMES, ["lunch", "the budget", "the hike", "rent", "the car",
                                                                "a refund", "the offsite", "piano", "the logo",
                                                                "a bug", "the trip", "taxes"], strict=True)]
    rules = [{"context": ["json list"], "reply": json.dumps(requests)}]
    for name, request in zip(NAMES, requests, strict=True):
        subject = request.split(" about ")[1].capitalize()
        plan = f'1. get_email_address(name="{name}")\n2. send_email(to=[$1], subject="{subject}")\n3. join()\n'
        rules.append({"contains": [request.lower()], "reply": plan})
    path.write_text(json.dumps({"rules": rules, "default": "1. join()\n"}))
    return path


def test_load_tools_spec_reads_a_python_file(tmp_path: Path) -> None:
    from tinyagent.errors import ConfigurationError

    file = tmp_path / "my_tools.py"
    file.write_text(TOOLS_FILE)
    assert list(load_tools(str(file))) == ["get_email_address", "send_email"]
    implicit = tmp_path / "implicit.py"
    implicit.write_text(TOOLS_FILE.replace("TOOLS = [get_email_address, send_email]", ""))
    assert sorted(load_tools(str(implicit))) == ["get_email_address", "send_email"]
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    with pytest.raises(ConfigurationError, match="defines no tools"):
        load_tools(str(empty))
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('oops')\n")
    with pytest.raises(ConfigurationError, match="oops"):
        load_tools(str(broken))


def test_load_examples_reads_jsonl(tmp_path: Path) -> None:
    from tinyagent.errors import ConfigurationError

    file = tmp_path / "examples.jsonl"
    file.write_text(json.dumps({"query": "Email Sid", "today": "2026-12-01",
                                "calls": [{"id": 1, "name": "get_email_address", "args": {"name": "Sid"}}]}) + "\n")
    (example,) = load_examples(file)
    assert example.query == "Email Sid" and example.plan.calls[0].name == "get_email_address"
    file.write_text('{"calls": []}\n')
    with pytest.raises(ConfigurationError, match="not an example"):
        load_examples(file)


@pytest.mark.slow
def test_the_whole_pipeline_in_one_resumable_command(tmp_path: Path, smollm2_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    for module in ("torch", "transformers", "peft", "trl", "datasets", "gguf"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed: pip install 'tinyagent[finetune]'")
    from tinyagent.apps import finetune_on_device as app
    from tinyagent.models import ModelCatalog, cache_dir
    from tinyagent.quant import ensure_scripts

    # Share the expensive caches (llama.cpp's scripts, the dequantized base) but keep the catalog registry private.
    scripts = ensure_scripts()
    real_cache = cache_dir()
    private = tmp_path / "cache"
    (private / "hf-base").parent.mkdir(parents=True)
    (real_cache / "hf-base").mkdir(parents=True, exist_ok=True)
    (private / "hf-base").symlink_to(real_cache / "hf-base")
    monkeypatch.setenv("TINYAGENT_CACHE", str(private))
    monkeypatch.setenv("TINYAGENT_LLAMA_CPP_DIR", str(scripts.root))

    tools = tmp_path / "my_tools.py"
    tools.write_text(TOOLS_FILE)
    work = tmp_path / "work"
    args = app.OnDeviceSettings(tools=str(tools), teacher=f"scripted:{teacher_file(tmp_path / 'teacher.json')}",
                                student="smollm2-135m", work=work, name="smol-planner", n=12, batch=12, steps=2,
                                train_batch=4, lr=1e-3, max_length=1024, types="none", threads=2)
    report = app.run(args)

    assert report["data"]["kept"] == 12
    assert report["train"]["global_step"] == 2
    assert Path(report["export"]["adapter_gguf"]).is_file()
    n_eval = report["eval_before"]["n"]
    assert n_eval == report["eval_after"]["adapter"]["n"]
    if n_eval:
        assert 0.0 <= report["eval_before"]["dag_success"] <= 1.0
    assert report["registered"] == {"smol-planner-lora": "smol-planner-lora"}
    entry = ModelCatalog().get("smol-planner-lora")
    assert entry.base == "smollm2-135m" and entry.lora_path == report["export"]["adapter_gguf"]
    assert json.loads((work / "report.json").read_text())["train"]["global_step"] == 2
    assert "# On-device fine-tuning report" in (work / "report.md").read_text()
    state = json.loads((work / "state.json").read_text())
    assert list(state["stages"]) == list(app.STAGES)

    # Running the same command again finds every stage done and returns the same report without redoing work.
    mtime = Path(report["export"]["adapter_gguf"]).stat().st_mtime_ns
    again = app.run(args)
    assert again["train"] == report["train"] and again["eval_after"] == report["eval_after"]
    assert Path(report["export"]["adapter_gguf"]).stat().st_mtime_ns == mtime
