"""Bad input to the fine-tuning pipeline gets typed errors: an empty or invalid data set, a tampered or corrupt base
model, a corrupt checkpoint left by a killed run."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from tinyagent.errors import ConfigurationError, ModelIntegrityError, TrainingError
from tinyagent.finetune import BaseModel, DistillConfig, TrainConfig, distill, resolve_base, train
from tinyagent.models import ModelCatalog, ScriptedModel

RECORD = {
    "messages": [
        {"role": "system", "content": "You are a planner."},
        {"role": "user", "content": "Request: Email Sid"},
        {"role": "assistant", "content": '1. get_email_address(name="Sid")\n2. join()\n<END_OF_PLAN>'},
    ],
    "tools": [],
}
NO_BASE = BaseModel(hf_dir=Path("/nonexistent/base"))


def _needs_finetune_extra() -> None:
    for module in ("torch", "transformers", "peft", "trl", "datasets"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed: pip install 'tinyagent[finetune]'")


def test_an_empty_or_invalid_data_set_is_refused_before_any_model_loads(tmp_path: Path) -> None:
    out = tmp_path / "run"
    # The base does not exist: every error below comes from the data, checked first.
    with pytest.raises(ConfigurationError, match="data set is empty"):
        train([], NO_BASE, out)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(ConfigurationError, match="data set is empty"):
        train(empty, NO_BASE, out)
    folder = tmp_path / "distilled"
    folder.mkdir()
    (folder / "train.jsonl").write_text("")
    with pytest.raises(ConfigurationError, match="data set is empty"):
        train(folder, NO_BASE, out)

    not_json = tmp_path / "not_json.jsonl"
    not_json.write_text(json.dumps(RECORD) + "\n{ this is not json\n")
    with pytest.raises(TrainingError, match=r"not_json.jsonl:2 is not JSON"):
        train(not_json, NO_BASE, out)
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\x80\x81\xfe\xff" * 64)
    with pytest.raises(TrainingError, match="not UTF-8"):
        train(binary, NO_BASE, out)
    a_list = tmp_path / "list.jsonl"
    a_list.write_text("[1, 2]\n")
    with pytest.raises(TrainingError, match="not a JSON object"):
        train(a_list, NO_BASE, out)

    bad_records = [
        {"prompt": "no messages"},
        {"messages": ["user: hi", "assistant: 1. join()"]},
        {"messages": [{"role": "user", "content": "hi"}]},
        {"messages": [{"role": "user", "content": "hi"}, {"role": "user", "content": "again"}]},
        {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "  "}]},
        {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": 3}]},
    ]
    for record in bad_records:
        with pytest.raises(ConfigurationError, match="must hold 'messages'"):
            train([RECORD, record], NO_BASE, out)
    assert not out.exists()  # nothing was started


async def test_a_teacher_that_yields_no_valid_plans_gives_an_empty_data_set(tmp_path: Path) -> None:
    from tinyagent import tool

    @tool
    def get_email_address(name: str) -> str:
        """Look up a contact's email address."""
        return name

    def teacher(request):  # type: ignore[no-untyped-def]
        if "JSON list" in request.messages[0]["content"]:
            return json.dumps(["Email Sid", "Email Tom"])
        return "1. no_such_tool(x=1)\n2. join()\n"

    result = await distill([get_email_address], ScriptedModel(teacher), tmp_path / "data",
                           config=DistillConfig(n_requests=2, batch_size=2, mix={"single": 1.0}))
    assert result.kept == 0 and result.stats["dropped_by_reason"] == {"schema": 2}
    with pytest.raises(ConfigurationError, match="data set is empty"):
        train(tmp_path / "data", NO_BASE, tmp_path / "run")


def test_a_tampered_catalog_base_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TINYAGENT_CACHE", str(tmp_path / "cache"))
    model = tmp_path / "tuned.gguf"
    model.write_bytes(b"GGUF" + bytes(4096))
    catalog = ModelCatalog()
    catalog.register("my-base", model)
    assert catalog.path("my-base") == model.resolve()
    with model.open("r+b") as f:  # flip one byte after registration
        f.seek(100)
        f.write(b"\x01")
    with pytest.raises(ModelIntegrityError, match="sha256"):
        resolve_base("my-base", cache=tmp_path / "hf-base")
    if importlib.util.find_spec("trl") is not None:
        with pytest.raises(ModelIntegrityError):
            train([RECORD], "my-base", tmp_path / "run", config=TrainConfig(max_steps=1))
    assert not (tmp_path / "hf-base").exists() or not any((tmp_path / "hf-base").iterdir())


@pytest.mark.slow
def test_a_corrupt_gguf_or_hugging_face_base_is_a_training_error(tmp_path: Path) -> None:
    _needs_finetune_extra()
    if importlib.util.find_spec("gguf") is None:
        pytest.skip("gguf is not installed: pip install 'tinyagent[finetune]'")
    garbage = tmp_path / "garbage.gguf"
    garbage.write_bytes(b"GGUF" + b"\xff" * 4096)
    with pytest.raises(TrainingError, match="could not dequantize"):
        resolve_base(garbage, cache=tmp_path / "hf-base")
    assert not any((tmp_path / "hf-base").glob("garbage*"))  # no half-written copy is left behind

    # A Hugging Face folder whose weights were truncated.
    hf = tmp_path / "hf"
    hf.mkdir()
    (hf / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 16, "intermediate_size": 32,
        "num_attention_heads": 2, "num_key_value_heads": 1, "num_hidden_layers": 1, "vocab_size": 64,
    }))
    (hf / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{\"trunc")
    _copy_tokenizer(hf)
    with pytest.raises(TrainingError, match="could not load the base model"):
        train([RECORD], hf, tmp_path / "run", config=TrainConfig(max_steps=1, probe=False))


def _copy_tokenizer(target: Path) -> None:
    """SmolLM2's tokenizer files from the dequantized base cache (skips when that cache does not exist yet)."""
    from tinyagent.models import cache_dir

    sources = sorted((cache_dir() / "hf-base").glob("SmolLM2-135M*/tokenizer.json"))
    if not sources:
        pytest.skip("the dequantized SmolLM2 base is not cached yet (the end-to-end tests create it)")
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        source = sources[0].parent / name
        if source.is_file():
            shutil.copy(source, target / name)


def test_a_device_torch_cannot_use_is_a_typed_error_before_the_base_loads(tmp_path: Path) -> None:
    _needs_finetune_extra()
    import torch

    with pytest.raises(ConfigurationError, match="device must be 'cpu', 'cuda' or None"):
        train([RECORD], NO_BASE, tmp_path / "run", config=TrainConfig(device="tpu"))
    if torch.cuda.is_available():
        return  # the CUDA half is checked on a GPU machine by benchmarks/gpu_qlora_check.sh
    with pytest.raises(ConfigurationError, match="torch sees no CUDA device"):
        train([RECORD], NO_BASE, tmp_path / "run", config=TrainConfig(device="cuda"))
