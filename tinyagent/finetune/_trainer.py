"""The trl side of :func:`~tinyagent.finetune.train`: tokenizer, base model, LoRA trainer, step probe and progress.

Every function takes the heavy modules (torch, transformers, peft, trl, datasets) as arguments, already imported by
``train``; this module imports none of them itself.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError, MissingDependencyError, TrainingError
from ._base_model import BaseModel
from ._progress import ProgressCallback, ProgressEvent, emit

if TYPE_CHECKING:
    from ._train import TrainConfig

__all__ = ["Reporter", "fit_rows", "load_model", "load_tokenizer", "make_trainer", "probe", "sft_config"]

log = logging.getLogger("tinyagent.finetune")


def load_tokenizer(transformers: Any, base: BaseModel) -> Any:
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(base.hf_dir))
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def fit_rows(tokenizer: Any, rows: list[dict[str, Any]], valid_rows: list[dict[str, Any]],
              max_length: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """Both row sets without the examples over ``max_length`` tokens, and how many training rows that dropped."""
    rows, dropped = _fit_length(tokenizer, rows, max_length)
    valid_rows, _ = _fit_length(tokenizer, valid_rows, max_length)
    if not rows:
        raise ConfigurationError(f"every example is longer than max_length={max_length} tokens; raise it")
    return rows, valid_rows, dropped


def _fit_length(tokenizer: Any, rows: list[dict[str, Any]], max_length: int) -> tuple[list[dict[str, Any]], int]:
    kept = []
    for row in rows:
        ids = tokenizer.apply_chat_template(row["prompt"] + row["completion"], tokenize=True)
        n = len(ids["input_ids"]) if isinstance(ids, Mapping) else len(ids)
        if n <= max_length:
            kept.append(row)
    dropped = len(rows) - len(kept)
    if dropped:
        log.warning("dropped %d example(s) longer than max_length=%d tokens", dropped, max_length)
    return kept, dropped


def load_model(torch: Any, transformers: Any, peft: Any, base: BaseModel, qlora: bool, cuda: bool,
                cfg: TrainConfig) -> Any:
    kwargs: dict[str, Any] = {"dtype": torch.float32}
    if qlora:
        try:
            import bitsandbytes  # noqa: F401 - only checks that the backend is installed
        except ImportError as exc:
            raise MissingDependencyError("bitsandbytes", "finetune") from exc
        compute = torch.bfloat16 if cuda and torch.cuda.is_bf16_supported() else torch.float32
        kwargs["quantization_config"] = transformers.BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=compute,
            bnb_4bit_use_double_quant=True,
        )
        kwargs["device_map"] = {"": 0} if cuda else {"": "cpu"}
    try:
        model = transformers.AutoModelForCausalLM.from_pretrained(str(base.hf_dir), **kwargs)
    except Exception as exc:  # noqa: BLE001 - corrupt weights raise library-specific errors (e.g. SafetensorError)
        raise TrainingError(f"could not load the base model from {base.hf_dir}: {exc}") from exc
    if qlora:
        model = peft.prepare_model_for_kbit_training(model, use_gradient_checkpointing=cfg.gradient_checkpointing)
    return model


def sft_config(torch: Any, trl: Any, cfg: TrainConfig, checkpoints: Path, cuda: bool) -> Any:
    """trl's training arguments for ``cfg`` (loss on the completion only, checkpoints into ``checkpoints``)."""
    # transformers 5.x renamed gradient_checkpointing (a FutureWarning, and trl defaults it to True).
    known = {f.name for f in dataclasses.fields(trl.SFTConfig)}
    checkpointing = "activation_checkpointing" if "activation_checkpointing" in known else "gradient_checkpointing"
    return trl.SFTConfig(
        output_dir=str(checkpoints), max_steps=cfg.max_steps, num_train_epochs=cfg.epochs,
        per_device_train_batch_size=cfg.batch_size, per_device_eval_batch_size=cfg.batch_size,
        gradient_accumulation_steps=cfg.grad_accum, learning_rate=cfg.learning_rate,
        warmup_steps=cfg.warmup_ratio,  # transformers 5: a float in [0, 1) is a ratio of the steps
        logging_steps=1, save_strategy="steps", save_steps=cfg.save_steps, save_total_limit=cfg.save_total_limit,
        report_to=[], completion_only_loss=True, max_length=cfg.max_length, use_cpu=not cuda,
        bf16=bool(cuda and torch.cuda.is_bf16_supported()), disable_tqdm=True, dataloader_num_workers=0,
        seed=cfg.seed, data_seed=cfg.seed, **{checkpointing: cfg.gradient_checkpointing},
    )


def make_trainer(args: Any, transformers: Any, peft: Any, trl: Any, datasets: Any, model: Any, tokenizer: Any,
                  cfg: TrainConfig, rows: list[dict[str, Any]], valid_rows: list[dict[str, Any]],
                  reporter: Reporter) -> Any:
    """The SFT trainer with a LoRA adapter on ``model``, reporting through ``reporter`` (and printing nothing)."""
    lora = peft.LoraConfig(
        r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout, task_type="CAUSAL_LM",
        target_modules=list(cfg.target_modules) if isinstance(cfg.target_modules, tuple) else cfg.target_modules,
    )
    train_set = datasets.Dataset.from_list(rows)
    eval_set = datasets.Dataset.from_list(valid_rows) if valid_rows else None
    try:
        trainer = trl.SFTTrainer(model=model, args=args, train_dataset=train_set, eval_dataset=eval_set,
                                 processing_class=tokenizer, peft_config=lora,
                                 callbacks=[_callback(transformers, reporter)])
    except (ValueError, RuntimeError, TypeError) as exc:
        raise TrainingError(f"could not set up training: {exc}") from exc
    # With tqdm off, transformers prints every log dict to stdout; the library reports through `progress`.
    trainer.remove_callback(transformers.PrinterCallback)
    return trainer


def probe(torch: Any, trainer: Any) -> float:
    """Seconds for one forward and backward pass over one batch (gradients are discarded)."""
    model = trainer.model
    batch = next(iter(trainer.get_train_dataloader()))
    batch = {k: v.to(model.device) if hasattr(v, "to") else v for k, v in batch.items()}
    model.train()
    start = time.perf_counter()
    loss = model(**{k: v for k, v in batch.items() if k in ("input_ids", "attention_mask", "labels")}).loss
    loss.backward()
    seconds = time.perf_counter() - start
    model.zero_grad(set_to_none=True)
    return seconds * max(1, int(trainer.args.gradient_accumulation_steps))


class Reporter:
    """Turns trainer steps and logs into progress events (wrapped in a ``TrainerCallback`` by :func:`_callback`)."""

    def __init__(self, progress: ProgressCallback | None) -> None:
        self.progress = progress
        self.step_seconds: list[float] = []
        self._step_start = 0.0

    def mean_step_seconds(self) -> float | None:
        return sum(self.step_seconds) / len(self.step_seconds) if self.step_seconds else None

    def train_begin(self, state: Any) -> None:
        emit(self.progress, ProgressEvent("train", int(state.global_step), int(state.max_steps),
                                          message="training started"))

    def step_begin(self) -> None:
        self._step_start = time.perf_counter()

    def step_end(self) -> None:
        self.step_seconds.append(time.perf_counter() - self._step_start)

    def log(self, state: Any, logs: Mapping[str, Any] | None) -> None:
        if logs and "loss" in logs:
            loss = float(logs["loss"])
            emit(self.progress, ProgressEvent(
                "train", int(state.global_step), int(state.max_steps), message=f"loss {loss:.3f}",
                metrics={"loss": loss, "sec_per_step": self.step_seconds[-1] if self.step_seconds else None},
            ))


def _callback(transformers: Any, reporter: Reporter) -> Any:
    class ProgressCallback(transformers.TrainerCallback):  # type: ignore[misc]
        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            reporter.train_begin(state)

        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            reporter.step_begin()

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            reporter.step_end()

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
            reporter.log(state, logs)

    return ProgressCallback()
