"""On-device fine-tuning: distill a planning data set from a teacher, then LoRA-tune a small student on it.

The pipeline, each step resumable after a kill::

    from tinyagent.finetune import DistillConfig, TrainConfig, builtin_dry_run, distill_sync, train
    from tinyagent.quant import export_adapter, merge_and_quantize

    data = distill_sync(my_tools, teacher, "runs/data", config=DistillConfig(n_requests=300))
    result = train("runs/data", "qwen2.5-coder-0.5b", "runs/train")
    adapter_gguf = export_adapter(result.adapter_dir)

``distill`` writes requests with the teacher, plans them with the teacher through the Agent's own planner, verifies
every plan (grammar, schemas, DAG, an optional dry run on scratch data), deduplicates, and writes chat-format JSONL
with a ``tools`` column. ``train`` runs trl ``SFTTrainer`` with a peft LoRA (QLoRA on CUDA), loss on the plan only.

torch, transformers, peft and trl are imported only when training starts (extra ``tinyagent[finetune]``).
"""

from __future__ import annotations

from ._autoex import AutoExamples, build_examples, example_problem
from ._base_model import BaseModel, resolve_base
from ._distill import DistillConfig, DistillResult, distill, distill_sync, training_record
from ._dryrun import DATA_MISSES, ToolDryRun, builtin_dry_run
from ._examples_file import load_examples
from ._files import atomic_write_json, file_lock, read_json
from ._grammar_check import GrammarChecker
from ._progress import ProgressCallback, ProgressEvent, emit
from ._synth import DEFAULT_MIX, KINDS, SynthRequest
from ._train import ADAPTER_INFO, TrainConfig, TrainResult, load_chat_records, quiet_libraries, train
from ._verify import Deduper, Verdict, Verifier, VerifyStats

__all__ = [
    "ADAPTER_INFO",
    "AutoExamples",
    "DATA_MISSES",
    "DEFAULT_MIX",
    "KINDS",
    "BaseModel",
    "Deduper",
    "DistillConfig",
    "DistillResult",
    "GrammarChecker",
    "ProgressCallback",
    "ProgressEvent",
    "SynthRequest",
    "ToolDryRun",
    "TrainConfig",
    "TrainResult",
    "Verdict",
    "Verifier",
    "VerifyStats",
    "atomic_write_json",
    "build_examples",
    "builtin_dry_run",
    "distill",
    "distill_sync",
    "emit",
    "example_problem",
    "file_lock",
    "load_chat_records",
    "load_examples",
    "quiet_libraries",
    "read_json",
    "resolve_base",
    "train",
    "training_record",
]
