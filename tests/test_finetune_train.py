"""End to end on the CPU with SmolLM2-135M: distill a tiny data set, train a few steps (the loss falls), export the
adapter GGUF and a merged, quantized GGUF, load both in llama-cpp-python and generate; a killed run resumes."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import sys
import textwrap
from pathlib import Path

import pytest
from _helpers_models import kill_when

pytestmark = pytest.mark.slow

for _module in ("torch", "transformers", "peft", "trl", "datasets", "gguf"):
    if importlib.util.find_spec(_module) is None:
        pytest.skip(f"{_module} is not installed: pip install 'tinyagent[finetune]'", allow_module_level=True)

from tinyagent import tool  # noqa: E402
from tinyagent.finetune import DistillConfig, ProgressEvent, TrainConfig, distill, train  # noqa: E402
from tinyagent.models import ScriptedModel  # noqa: E402


@tool
def get_email_address(name: str) -> str:
    """Look up a contact's email address."""
    return f"{name.lower()}@example.com"


@tool
def send_email(to: list[str], subject: str, body: str = "") -> str:
    """Send an email."""
    return "sent"


NAMES = ["Sid", "Alexandra", "Priya", "Maria", "Tom", "Zoe", "Liz", "Bob", "Kenji", "Nina", "Omar", "Lena", "Ahmed",
         "Julia", "Wei", "Carlos", "Ines", "Raj"]
TOPICS = ["the budget review", "lunch on Friday", "our offsite in May", "a birthday party", "the quarterly report",
          "the hike on Sunday", "the new logo", "the login bug", "the rent", "the piano lesson", "the car", "a refund"]


class _Teacher:
    """A scripted teacher: every request batch holds new (name, topic) pairs, and every plan is valid."""

    def __init__(self) -> None:
        self.written = 0

    def __call__(self, request):  # type: ignore[no-untyped-def]
        import re

        user = request.messages[-1]["content"]
        if "JSON list" in request.messages[0]["content"]:
            k = int(re.search(r"Write (\d+) different", user).group(1))  # type: ignore[union-attr]
            # A running count picks the (name, topic) pair, so no request repeats one of an earlier batch.
            batch = [(self.written + i) for i in range(k)]
            self.written += k
            return json.dumps([f"Email {NAMES[n % len(NAMES)]} about {TOPICS[(n * 5) % len(TOPICS)]}" for n in batch])
        m = re.match(r"Email (\w+) about (.*)", user.split("Request: ")[-1])
        assert m is not None
        return f'1. get_email_address(name="{m.group(1)}")\n2. send_email(to=[$1], subject="{m.group(2)}")\n3. join()\n'


@pytest.fixture(scope="module")
def tiny_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("data")
    cfg = DistillConfig(n_requests=20, batch_size=5, mix={"single": 1.0}, valid_fraction=0.0, seed=3)
    result = asyncio.run(distill([get_email_address, send_email], ScriptedModel(_Teacher()), out, config=cfg,
                                  agent_options={"format_examples": False}))
    assert result.kept >= 12
    return out


def _prompt(data: Path) -> list[dict[str, str]]:
    record = json.loads((data / "train.jsonl").read_text().splitlines()[0])
    return [m for m in record["messages"] if m["role"] != "assistant"]


def _generate(path: Path, messages: list[dict[str, str]], lora: Path | None = None) -> str:
    from tinyagent.models import new_llama  # the CPU-safe load parameters (AMX), as every Llama of the project

    llm = new_llama(model_path=str(path), lora_path=str(lora) if lora else None, n_ctx=1024, n_threads=2, seed=0,
                    verbose=False)
    try:
        out = llm.create_chat_completion(messages=messages, max_tokens=40, temperature=0.0, top_k=1,
                                         stop=["<END_OF_PLAN>"])
        return str(out["choices"][0]["message"]["content"] or "")  # type: ignore[index]
    finally:
        llm.close()


def test_train_export_merge_quantize_and_load(tiny_data: Path, tmp_path: Path, smollm2_path: Path) -> None:
    from tinyagent.quant import export_adapter, merge_and_quantize, read_metadata

    events: list[ProgressEvent] = []
    config = TrainConfig(max_steps=4, batch_size=4, learning_rate=3e-3, warmup_ratio=0.0, max_length=512,
                         save_steps=2, probe=True)
    result = train(tiny_data, "smollm2-135m", tmp_path / "train", config=config, progress=events.append)
    losses = [loss for _, loss in result.losses]
    assert [s for s, _ in result.losses] == [1, 2, 3, 4]
    assert losses[-1] < losses[0] - 0.3, losses  # the loss falls
    assert result.global_step == 4 and result.resumed_from == 0 and not result.qlora and result.device == "cpu"
    assert result.estimated_sec_per_step is not None and result.estimated_sec_per_step > 0
    assert result.sec_per_step is not None and result.sec_per_step > 0
    assert any(e.stage == "estimate" and "s per step" in e.message for e in events)
    assert [e.done for e in events if e.stage == "train" and "loss" in e.metrics] == [1, 2, 3, 4]
    assert (result.adapter_dir / "adapter_model.safetensors").is_file()
    info = json.loads((result.adapter_dir / "tinyagent-adapter.json").read_text())
    assert info["base"]["gguf"] == str(smollm2_path.resolve())

    # A second call with the same configuration does nothing.
    again = train(tiny_data, "smollm2-135m", tmp_path / "train", config=config)
    assert again.already_done and again.global_step == 4

    # Path 1: the adapter as GGUF, applied by llama.cpp over the packaged base.
    adapter = export_adapter(result.adapter_dir, tmp_path / "adapter.gguf")
    assert adapter.stat().st_size > 100_000
    assert read_metadata(adapter)["general.type"] == "adapter"
    # Path 2: merged, converted to f16 with the original tokenizer metadata, quantized.
    merged = merge_and_quantize(result.adapter_dir, tmp_path / "export", types=("Q8_0",), name="smol-tuned")
    q8 = merged.quantized["Q8_0"]
    assert q8.stat().st_size < merged.f16.stat().st_size
    assert not merged.merged_dir.exists()
    original = read_metadata(smollm2_path, "tokenizer.")
    for path in (merged.f16, q8):
        assert read_metadata(path, "tokenizer.") == original
        assert read_metadata(path)["general.name"] == "smol-tuned"

    prompt = _prompt(tiny_data)
    base_text = _generate(smollm2_path, prompt)
    tuned_adapter = _generate(smollm2_path, prompt, lora=adapter)
    tuned_f16 = _generate(merged.f16, prompt)
    tuned_q8 = _generate(q8, prompt)
    for text in (tuned_adapter, tuned_f16, tuned_q8):
        assert text.strip(), "the tuned model generated nothing"
        assert text != base_text  # the tuning is applied
    assert tuned_adapter.startswith("1.") and tuned_f16.startswith("1.") and tuned_q8.startswith("1.")
    assert tuned_adapter.split("\n")[0] == tuned_f16.split("\n")[0]  # both export paths agree


TRAIN_SCRIPT = textwrap.dedent("""
    import sys
    from tinyagent.finetune import TrainConfig, train
    config = TrainConfig(max_steps=3, batch_size=2, learning_rate=1e-3, max_length=512, save_steps=1, probe=False)
    train(sys.argv[1], "smollm2-135m", sys.argv[2], config=config)
""")


def test_a_killed_training_run_resumes_from_its_checkpoint(tiny_data: Path, tmp_path: Path,
                                                           smollm2_path: Path) -> None:
    out = tmp_path / "train"
    script = tmp_path / "train_script.py"
    script.write_text(TRAIN_SCRIPT)
    first = out / "checkpoints" / "checkpoint-1"
    kill_when([sys.executable, str(script), str(tiny_data), str(out)],
              lambda: (first / "trainer_state.json").is_file() and (first / "adapter_model.safetensors").is_file(),
              timeout=600, env=dict(os.environ, PYTHONWARNINGS="ignore"))
    assert not (out / "adapter").exists()
    config = TrainConfig(max_steps=3, batch_size=2, learning_rate=1e-3, max_length=512, save_steps=1, probe=False)
    result = train(tiny_data, "smollm2-135m", out, config=config)
    assert result.resumed_from >= 1
    assert result.global_step == 3
    assert [s for s, _ in result.losses][-1] == 3
    assert all(s > 0 for s, _ in result.losses)
    assert (out / "adapter" / "adapter_model.safetensors").is_file()
