"""Training helpers that need no model: data shaping, step counts, checkpoint discovery, result round trips."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tinyagent.errors import ConfigurationError
from tinyagent.finetune import BaseModel, TrainConfig, TrainResult, load_chat_records, resolve_base
from tinyagent.finetune._train import _last_checkpoint, _planned_steps, to_prompt_completion

RECORD = {
    "messages": [
        {"role": "system", "content": "You are a planner."},
        {"role": "user", "content": "Request: Email Sid"},
        {"role": "assistant", "content": '1. get_email_address(name="Sid")\n2. join()\n<END_OF_PLAN>'},
    ],
    "tools": [{"type": "function", "function": {"name": "get_email_address"}}],
}


def test_to_prompt_completion_puts_the_plan_in_the_completion_and_drops_tools() -> None:
    row = to_prompt_completion(RECORD)
    assert row == {"prompt": RECORD["messages"][:2], "completion": [RECORD["messages"][2]]}
    with pytest.raises(ConfigurationError, match="ending with the assistant"):
        to_prompt_completion({"messages": RECORD["messages"][:2]})


def test_load_chat_records_from_a_folder_a_file_or_records(tmp_path: Path) -> None:
    (tmp_path / "train.jsonl").write_text(json.dumps(RECORD) + "\n" + json.dumps(RECORD) + "\n")
    (tmp_path / "valid.jsonl").write_text(json.dumps(RECORD) + "\n")
    train, valid = load_chat_records(tmp_path)
    assert len(train) == 2 and len(valid) == 1
    train, valid = load_chat_records(tmp_path / "train.jsonl")
    assert len(train) == 2 and valid == []
    assert load_chat_records([RECORD]) == ([RECORD], [])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigurationError, match="no train.jsonl"):
        load_chat_records(empty)
    with pytest.raises(ConfigurationError, match="does not exist"):
        load_chat_records(tmp_path / "missing.jsonl")


def test_planned_steps() -> None:
    assert _planned_steps(TrainConfig(max_steps=7), 100) == 7
    assert _planned_steps(TrainConfig(epochs=2, batch_size=4, grad_accum=2), 20) == 6  # ceil(20 / 8) * 2
    assert _planned_steps(TrainConfig(epochs=0.5, batch_size=4), 3) == 1


def test_last_checkpoint_skips_and_removes_incomplete_ones(tmp_path: Path) -> None:
    assert _last_checkpoint(tmp_path / "none") is None
    # 6: killed before the trainer state was written; 8: killed while writing it (torn JSON).
    for step, state in ((2, "{}"), (4, '{"global_step": 4}'), (6, None), (8, '{"global_step": 8, "log_h')):
        folder = tmp_path / f"checkpoint-{step}"
        folder.mkdir()
        (folder / "adapter_model.safetensors").write_bytes(b"x")
        if state is not None:
            (folder / "trainer_state.json").write_text(state)
    (tmp_path / "checkpoint-x").mkdir()
    assert _last_checkpoint(tmp_path) == tmp_path / "checkpoint-4"
    assert not (tmp_path / "checkpoint-6").exists() and not (tmp_path / "checkpoint-8").exists()
    assert (tmp_path / "checkpoint-2").exists() and (tmp_path / "checkpoint-x").exists()


def test_train_result_round_trips() -> None:
    result = TrainResult(adapter_dir=Path("/x/adapter"), base=BaseModel(hf_dir=Path("/h"), gguf=Path("/g.gguf")),
                         global_step=4, losses=[(1, 2.5), (2, 1.25)], sec_per_step=3.0)
    again = TrainResult.from_json(json.loads(json.dumps(result.to_json())))
    assert again == result
    assert again.first_loss == 2.5 and again.last_loss == 1.25


def test_resolve_base_accepts_a_hugging_face_folder_and_rejects_nonsense(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    assert resolve_base(tmp_path) == BaseModel(hf_dir=tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigurationError, match="no config.json"):
        resolve_base(empty)
    with pytest.raises(ConfigurationError, match="does not exist"):
        resolve_base(tmp_path / "missing.gguf")
    with pytest.raises(ConfigurationError, match="no model named"):
        resolve_base("no-such-model")


def test_train_refuses_a_different_configuration_in_the_same_folder(tmp_path: Path) -> None:
    pytest.importorskip("trl", reason="the finetune extra is not installed")
    from tinyagent.finetune import train
    from tinyagent.finetune._train import _fingerprint

    base = BaseModel(hf_dir=tmp_path / "base")
    rows = [to_prompt_completion(RECORD)]
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "train-state.json").write_text(json.dumps(
        {"fingerprint": _fingerprint(TrainConfig(max_steps=3), base, rows)}))
    with pytest.raises(ConfigurationError, match="different configuration"):
        train([RECORD], base, tmp_path / "run", config=TrainConfig(max_steps=5))
    assert _fingerprint(TrainConfig(max_steps=3, threads=1), base, rows) == _fingerprint(
        TrainConfig(max_steps=3, threads=2), base, rows)


def test_public_names_exist_and_importing_stays_light() -> None:
    import subprocess
    import sys

    import tinyagent.finetune as finetune
    import tinyagent.quant as quant

    for module in (finetune, quant):
        missing = [name for name in module.__all__ if not hasattr(module, name)]
        assert not missing, f"{module.__name__}.__all__ names missing objects: {missing}"
    code = ("import sys, tinyagent.finetune, tinyagent.quant; "
            "print(sorted(m for m in ('torch', 'transformers', 'trl', 'peft', 'llama_cpp', 'datasets', 'gguf') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
