"""QLoRA (bitsandbytes 4-bit nf4): a CPU run of the bitsandbytes path on a tiny model, and the CUDA default."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

for _module in ("torch", "transformers", "peft", "trl", "datasets", "bitsandbytes"):
    if importlib.util.find_spec(_module) is None:
        pytest.skip(f"{_module} is not installed: pip install 'tinyagent[finetune]'", allow_module_level=True)

from tinyagent.finetune import TrainConfig, train  # noqa: E402


@pytest.fixture(scope="module")
def smollm2() -> Path:
    """The SmolLM2 GGUF (llama-cpp-python is not needed: training reads it through transformers)."""
    from tinyagent.errors import ModelIntegrityError
    from tinyagent.models import ModelCatalog

    try:
        return ModelCatalog().path("smollm2-135m")
    except ModelIntegrityError as exc:
        pytest.skip(f"SmolLM2-135M is not available: {exc}")

RECORDS = [
    {"messages": [
        {"role": "system", "content": "You plan tool calls. Tools: get_email_address(name: str)."},
        {"role": "user", "content": f"Today is 2026-12-0{i % 9 + 1}.\nRequest: What is {name}'s email?"},
        {"role": "assistant", "content": f'1. get_email_address(name="{name}")\n2. join()\n<END_OF_PLAN>'},
    ], "tools": []}
    for i, name in enumerate(["Sid", "Alex", "Priya", "Maria", "Tom", "Zoe"])
]


def test_qlora_runs_on_the_cpu_with_bitsandbytes(tmp_path: Path, smollm2: Path) -> None:
    config = TrainConfig(max_steps=2, batch_size=2, learning_rate=1e-3, max_length=256, save_steps=10, qlora=True,
                         device="cpu", probe=False)
    result = train(RECORDS, "smollm2-135m", tmp_path, config=config)
    assert result.qlora and result.device == "cpu"
    assert result.quantized_modules > 0  # the base's linear layers really are 4-bit
    assert result.global_step == 2
    assert all(math.isfinite(loss) for _, loss in result.losses) and len(result.losses) == 2
    assert (result.adapter_dir / "adapter_model.safetensors").is_file()


def test_qlora_is_the_default_on_cuda(tmp_path: Path, smollm2: Path) -> None:
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: QLoRA's CUDA default is checked on a GPU machine (benchmarks/gpu_qlora_check.sh)")
    config = TrainConfig(max_steps=3, batch_size=4, learning_rate=1e-3, max_length=256, save_steps=10, probe=True)
    result = train(RECORDS, "smollm2-135m", tmp_path, config=config)
    assert result.device == "cuda" and result.qlora and result.quantized_modules > 0
    assert result.global_step == 3
    assert result.losses[-1][1] < result.losses[0][1]
