"""``train``: LoRA supervised fine-tuning with trl and peft, with the loss on the plan only.

* Data: chat-format JSONL (``{"messages": [system, user, assistant], "tools": [...]}``) as :func:`distill` writes
  it. Each example becomes a prompt/completion pair, so trl's ``completion_only_loss`` masks the prompt and the model
  learns only the plan. The ``tools`` column is not rendered into the prompt: the planner prompt already describes the
  tools, exactly as the Agent shows them at inference.
* Base: a catalog name or GGUF (dequantized through transformers) or a Hugging Face directory.
* QLoRA (bitsandbytes 4-bit nf4): the default on CUDA; optional on the CPU, where it runs, slowly.
* Checkpoints every ``save_steps``; a killed run resumes from the last complete checkpoint.
* Before a long run, one probe step measures the time per step, and the estimate is reported (progress ``estimate``).
* Threads: one per free core, measured when training starts.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import math
import os
import shutil
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError, MissingDependencyError, TrainingError
from ._base_model import BaseModel, resolve_base
from ._files import atomic_write_json, read_json
from ._jsonl import read_jsonl
from ._progress import ProgressCallback, ProgressEvent, emit
from ._trainer import Reporter, fit_rows, load_model, load_tokenizer, make_trainer, probe, sft_config

__all__ = ["TrainConfig", "TrainResult", "load_chat_records", "to_prompt_completion", "train"]

log = logging.getLogger("tinyagent.finetune")

ADAPTER_INFO = "tinyagent-adapter.json"
_STATE = "train-state.json"


@dataclass(frozen=True)
class TrainConfig:
    """Knobs of :func:`train`.

    Attributes:
        max_steps: optimizer steps; ``-1`` lets ``epochs`` decide.
        epochs: passes over the data (when ``max_steps`` is -1).
        batch_size: examples per device batch.
        grad_accum: batches per optimizer step.
        learning_rate: peak learning rate (linear decay after a short warm-up).
        warmup_ratio: share of steps spent warming up.
        lora_r: LoRA rank.
        lora_alpha: LoRA scaling.
        lora_dropout: LoRA dropout.
        target_modules: ``"all-linear"`` (every projection) or module names.
        max_length: tokens per example; longer examples are dropped (never truncated, which would cut the plan).
        save_steps: checkpoint interval in steps.
        save_total_limit: checkpoints kept.
        qlora: 4-bit QLoRA; None means: on CUDA yes, on the CPU no.
        device: ``"cpu"`` trains on the CPU even where CUDA is there, ``"cuda"`` requires CUDA, None takes CUDA when
            torch sees it.
        threads: torch threads; None means one per free core.
        seed: the training seed.
        gradient_checkpointing: trade compute for memory (off by default: small models fit).
        probe: time one step before training; None means only for runs longer than 10 steps.
        eval_loss: measure the held-out loss before and after training (when a validation set exists).
    """

    max_steps: int = -1
    epochs: float = 2.0
    batch_size: int = 4
    grad_accum: int = 1
    learning_rate: float = 2e-4
    warmup_ratio: float = 0.03
    lora_r: int = 8
    lora_alpha: int = 16
    lora_dropout: float = 0.05
    target_modules: str | tuple[str, ...] = "all-linear"
    max_length: int = 1024
    save_steps: int = 25
    save_total_limit: int = 2
    qlora: bool | None = None
    device: str | None = None
    threads: int | None = None
    seed: int = 0
    gradient_checkpointing: bool = False
    probe: bool | None = None
    eval_loss: bool = True

    def to_json(self) -> dict[str, Any]:
        """JSON-able fields."""
        data = dataclasses.asdict(self)
        if isinstance(self.target_modules, tuple):
            data["target_modules"] = list(self.target_modules)
        return data


@dataclass
class TrainResult:
    """What :func:`train` did.

    Attributes:
        adapter_dir: the saved peft adapter (plus ``tinyagent-adapter.json`` recording the base).
        base: the base model.
        global_step: optimizer steps done in total.
        resumed_from: the checkpoint step this call resumed from (0: a fresh start).
        losses: ``(step, training loss)`` as logged.
        eval_loss_before: held-out loss before training (None without a validation set).
        eval_loss_after: held-out loss after training.
        sec_per_step: mean seconds per optimizer step in this call.
        estimated_sec_per_step: the probe's estimate (None when no probe ran).
        train_seconds: wall time of the training loop in this call.
        examples: training examples used.
        dropped_too_long: examples dropped for exceeding ``max_length``.
        threads: torch threads used.
        qlora: whether 4-bit QLoRA was used.
        device: ``"cpu"`` or ``"cuda"``.
        quantized_modules: linear layers held in 4 bits (QLoRA), 0 otherwise.
        already_done: the adapter existed for this configuration, so nothing was trained.
    """

    adapter_dir: Path
    base: BaseModel
    global_step: int = 0
    resumed_from: int = 0
    losses: list[tuple[int, float]] = field(default_factory=list)
    eval_loss_before: float | None = None
    eval_loss_after: float | None = None
    sec_per_step: float | None = None
    estimated_sec_per_step: float | None = None
    train_seconds: float = 0.0
    examples: int = 0
    dropped_too_long: int = 0
    threads: int = 1
    qlora: bool = False
    device: str = "cpu"
    quantized_modules: int = 0
    already_done: bool = False

    @property
    def first_loss(self) -> float | None:
        """The first logged training loss."""
        return self.losses[0][1] if self.losses else None

    @property
    def last_loss(self) -> float | None:
        """The last logged training loss."""
        return self.losses[-1][1] if self.losses else None

    def to_json(self) -> dict[str, Any]:
        """JSON-able fields."""
        data = {k: v for k, v in dataclasses.asdict(self).items() if k not in ("adapter_dir", "base")}
        data["adapter_dir"] = str(self.adapter_dir)
        data["base"] = self.base.to_json()
        data["losses"] = [[s, round(v, 5)] for s, v in self.losses]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TrainResult:
        """Inverse of :meth:`to_json`."""
        values = dict(data)
        values["adapter_dir"] = Path(values["adapter_dir"])
        values["base"] = BaseModel.from_json(values["base"])
        values["losses"] = [(int(s), float(v)) for s, v in values.get("losses", [])]
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in known})


Records = list[dict[str, Any]]


def load_chat_records(data: str | Path | Sequence[Mapping[str, Any]]) -> tuple[Records, Records]:
    """Training and validation records from a distill folder, a JSONL file, or records.

    Returns:
        ``(train, valid)``; ``valid`` is empty unless a folder with ``valid.jsonl`` was given.

    Raises:
        ConfigurationError: nothing usable was found.
        TrainingError: a file is not JSONL.
    """
    if isinstance(data, str | Path):
        path = Path(data)
        if path.is_dir():
            train_file = path / "train.jsonl"
            if not train_file.is_file():
                raise ConfigurationError(f"{path} has no train.jsonl; run tinyagent.finetune.distill into it first")
            valid_file = path / "valid.jsonl"
            return read_jsonl(train_file), read_jsonl(valid_file) if valid_file.is_file() else []
        if not path.is_file():
            raise ConfigurationError(f"training data {path} does not exist")
        return read_jsonl(path), []
    return [dict(r) for r in data], []


def to_prompt_completion(record: Mapping[str, Any]) -> dict[str, Any]:
    """``{"messages": [..., assistant]}`` -> ``{"prompt": [...], "completion": [assistant]}``.

    Raises:
        ConfigurationError: the record does not end with an assistant message.
    """
    messages = record.get("messages") if isinstance(record, Mapping) else None
    if (not isinstance(messages, list) or len(messages) < 2
            or not all(isinstance(m, Mapping) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
                       for m in messages)
            or messages[-1]["role"] != "assistant" or not messages[-1]["content"].strip()):
        raise ConfigurationError(f"a training record must hold 'messages' ({{role, content}} objects) ending with the "
                                 f"assistant's plan, got {json.dumps(record, default=str)[:200]}")
    prompt = [{"role": str(m["role"]), "content": str(m["content"])} for m in messages[:-1]]
    return {"prompt": prompt, "completion": [{"role": "assistant", "content": str(messages[-1]["content"])}]}


def _fingerprint(config: TrainConfig, base: BaseModel, rows: Sequence[Mapping[str, Any]]) -> str:
    h = hashlib.sha256()
    run_shape = {k: v for k, v in config.to_json().items() if k not in ("threads", "probe", "device")}
    h.update(json.dumps(run_shape, sort_keys=True).encode())
    h.update(str(base.hf_dir).encode())
    for row in rows:
        h.update(json.dumps(row, sort_keys=True).encode())
    return h.hexdigest()[:16]


@contextlib.contextmanager
def quiet_libraries() -> Iterator[None]:
    """Switch off the progress bars transformers and datasets print (the library reports through callbacks)."""
    import datasets
    import transformers

    tlog: Any = transformers.logging
    bars = datasets.utils.logging.is_progress_bar_enabled()
    verbosity = tlog.get_verbosity()
    datasets.disable_progress_bars()
    tlog.disable_progress_bar()
    tlog.set_verbosity_error()
    try:
        with warnings.catch_warnings():
            # peft and trl still read transformers 5's deprecated alias; nothing a caller can act on.
            warnings.filterwarnings("ignore", message=r".*is_gradient_checkpointing.* is deprecated",
                                    category=FutureWarning)
            yield
    finally:
        tlog.enable_progress_bar()
        tlog.set_verbosity(verbosity)
        if bars:
            datasets.enable_progress_bars()


def _import_stack() -> tuple[Any, Any, Any, Any, Any]:
    try:
        import datasets
        import peft
        import torch
        import transformers
        import trl
    except ImportError as exc:
        raise MissingDependencyError(exc.name or "trl", "finetune") from exc
    return torch, transformers, peft, trl, datasets


def _checkpoint_complete(folder: Path) -> bool:
    """The trainer writes ``trainer_state.json`` last and not atomically: it must exist and parse."""
    adapter, state = folder / "adapter_model.safetensors", folder / "trainer_state.json"
    if not (adapter.is_file() and adapter.stat().st_size > 0 and state.is_file()):
        return False
    try:
        return isinstance(json.loads(state.read_text(encoding="utf-8")), dict)
    except (ValueError, OSError):
        return False


def _last_checkpoint(folder: Path) -> Path | None:
    """The newest checkpoint whose trainer state was fully written (a kill mid-save leaves an incomplete one)."""
    if not folder.is_dir():
        return None
    complete = []
    for child in folder.iterdir():
        if child.is_dir() and child.name.startswith("checkpoint-") and child.name[11:].isdigit():
            if _checkpoint_complete(child):
                complete.append((int(child.name[11:]), child))
            else:
                log.warning("ignoring incomplete checkpoint %s (the run was killed while saving)", child)
                shutil.rmtree(child, ignore_errors=True)
    return max(complete)[1] if complete else None


def train(
    data: str | Path | Sequence[Mapping[str, Any]],
    base: str | Path | BaseModel,
    out_dir: str | Path,
    *,
    config: TrainConfig | None = None,
    valid: Sequence[Mapping[str, Any]] | None = None,
    resume: bool = True,
    progress: ProgressCallback | None = None,
) -> TrainResult:
    """Fine-tune a LoRA adapter on planning data, with the loss on the plan only.

    Args:
        data: a :func:`distill` folder (``train.jsonl`` + ``valid.jsonl``), a JSONL file, or chat records.
        base: a catalog name (``"smollm2-135m"`` …), a GGUF file, a Hugging Face directory, or a resolved base.
        out_dir: the run folder: ``checkpoints/``, then ``adapter/`` with ``tinyagent-adapter.json``.
        config: the knobs.
        valid: held-out chat records (default: the folder's ``valid.jsonl``).
        resume: continue from the last checkpoint in ``out_dir``; False deletes earlier checkpoints first.
        progress: receives ``estimate`` and ``train`` events (loss, seconds per step).

    Returns:
        Where the adapter is, and what the run measured.

    Raises:
        ConfigurationError: no usable data, or ``out_dir`` holds a run with a different configuration.
        MissingDependencyError: the ``finetune`` extra is missing (or bitsandbytes, for QLoRA).
        TrainingError: loading or training failed.
    """
    cfg = config or TrainConfig()
    rows, valid_rows = _training_rows(data, valid)  # bad data fails fast, before the heavy imports and the base model
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    torch, transformers, peft, trl, datasets = _import_stack()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    threads, cuda, qlora = _hardware(torch, cfg)
    model_base = base if isinstance(base, BaseModel) else _resolve_quietly(base)

    adapter_dir, checkpoints = out / "adapter", out / "checkpoints"
    state = _run_state(out, _fingerprint(cfg, model_base, rows), resume, adapter_dir, checkpoints)
    if (done := _already_trained(state, adapter_dir)) is not None:
        return done
    state.update(config=cfg.to_json(), base=model_base.to_json())
    atomic_write_json(out / _STATE, state)

    with quiet_libraries():
        tokenizer = load_tokenizer(transformers, model_base)
        rows, valid_rows, dropped = fit_rows(tokenizer, rows, valid_rows, cfg.max_length)
        model = load_model(torch, transformers, peft, model_base, qlora, cuda, cfg)
        quantized = sum(1 for m in model.modules() if type(m).__name__ == "Linear4bit")
        reporter = Reporter(progress)
        trainer = make_trainer(sft_config(torch, trl, cfg, checkpoints, cuda), transformers, peft, trl, datasets,
                                model, tokenizer, cfg, rows, valid_rows, reporter)
        total_steps = _planned_steps(cfg, len(rows))
        last = _last_checkpoint(checkpoints)
        resumed_from = int(last.name[11:]) if last is not None else 0
        estimate = None
        do_probe = cfg.probe if cfg.probe is not None else (total_steps - resumed_from) > 10
        if do_probe:
            estimate = _estimate(torch, trainer, progress, max(0, total_steps - resumed_from), threads, qlora)
        has_eval = cfg.eval_loss and bool(valid_rows)
        eval_before = _eval_loss_before(trainer, state, out, measure=has_eval and resumed_from == 0)
        train_seconds = _run_trainer(trainer, last)
        eval_after = _evaluate(trainer) if has_eval else None
        trainer.model.save_pretrained(str(adapter_dir))
        tokenizer.save_pretrained(str(adapter_dir))

    losses = [(int(e["step"]), float(e["loss"])) for e in trainer.state.log_history if "loss" in e and "step" in e]
    result = TrainResult(
        adapter_dir=adapter_dir, base=model_base, global_step=int(trainer.state.global_step),
        resumed_from=resumed_from, losses=losses, eval_loss_before=eval_before, eval_loss_after=eval_after,
        sec_per_step=reporter.mean_step_seconds(), estimated_sec_per_step=estimate, train_seconds=train_seconds,
        examples=len(rows), dropped_too_long=dropped, threads=threads, qlora=qlora, device="cuda" if cuda else "cpu",
        quantized_modules=quantized,
    )
    _save_result(out, state, result)
    return result


def _training_rows(
    data: str | Path | Sequence[Mapping[str, Any]], valid: Sequence[Mapping[str, Any]] | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The training and held-out records as prompt/completion rows; no training rows is an error."""
    train_records, folder_valid = load_chat_records(data)
    valid_records = list(valid) if valid is not None else folder_valid
    rows = [to_prompt_completion(r) for r in train_records]
    valid_rows = [to_prompt_completion(r) for r in valid_records]
    if not rows:
        raise ConfigurationError("no training examples (the data set is empty); distill more data first")
    return rows, valid_rows


def _hardware(torch: Any, cfg: TrainConfig) -> tuple[int, bool, bool]:
    """Sets torch's thread count; returns it, whether CUDA is there, and whether to train QLoRA."""
    from ..models import free_cores

    if cfg.device not in (None, "cpu", "cuda"):
        raise ConfigurationError(f"device must be 'cpu', 'cuda' or None (auto), got {cfg.device!r}")
    cuda = cfg.device != "cpu" and bool(torch.cuda.is_available())
    if cfg.device == "cuda" and not cuda:
        raise ConfigurationError("device='cuda' was asked for, but torch sees no CUDA device (a CPU build of torch, "
                                 "or no GPU); leave device unset to train on the CPU")
    threads = cfg.threads or free_cores()
    torch.set_num_threads(threads)
    return threads, cuda, cfg.qlora if cfg.qlora is not None else cuda


def _run_state(out: Path, fingerprint: str, resume: bool, adapter_dir: Path, checkpoints: Path) -> dict[str, Any]:
    """The run's saved state (resuming a different fingerprint is an error), or a fresh one with files deleted."""
    state = read_json(out / _STATE, {}) or {}
    if state and state.get("fingerprint") != fingerprint:
        if resume:
            raise ConfigurationError(f"{out} holds a training run with a different configuration or data; use a new "
                                     "folder, or pass resume=False to start over")
        state = {}
    if not resume:
        shutil.rmtree(checkpoints, ignore_errors=True)
        shutil.rmtree(adapter_dir, ignore_errors=True)
        state = {}
    state["fingerprint"] = fingerprint
    return state


def _resolve_quietly(base: str | Path) -> BaseModel:
    with quiet_libraries():
        return resolve_base(base)


def _already_trained(state: Mapping[str, Any], adapter_dir: Path) -> TrainResult | None:
    """The saved result when this run already finished and its adapter is still there."""
    if not (state.get("done") and (adapter_dir / ADAPTER_INFO).is_file()):
        return None
    result = TrainResult.from_json(state["result"])
    result.already_done = True
    log.info("%s is already trained for this configuration; nothing to do", adapter_dir)
    return result


def _estimate(torch: Any, trainer: Any, progress: ProgressCallback | None, remaining: int, threads: int,
              qlora: bool) -> float:
    """Probes one step and reports the estimate for the ``remaining`` steps; returns seconds per step."""
    estimate = probe(torch, trainer)
    message = (f"about {estimate:.1f} s per step x {remaining} steps = {estimate * remaining / 60:.1f} min "
               f"on {threads} thread(s){' with QLoRA' if qlora else ''}")
    log.info("training estimate: %s", message)
    emit(progress, ProgressEvent("estimate", 0, remaining, message=message,
                                 metrics={"sec_per_step": estimate, "steps": remaining,
                                          "minutes": estimate * remaining / 60}))
    return estimate


def _eval_loss_before(trainer: Any, state: dict[str, Any], out: Path, measure: bool) -> float | None:
    """The held-out loss before training: from the run state, else measured (when ``measure``) and saved there."""
    eval_before: float | None = state.get("eval_loss_before")
    if measure and eval_before is None:
        eval_before = state["eval_loss_before"] = _evaluate(trainer)
        atomic_write_json(out / _STATE, state)
    return eval_before


def _save_result(out: Path, state: dict[str, Any], result: TrainResult) -> None:
    """Writes the adapter's info file and marks the run done."""
    info = {"base": result.base.to_json(), "train": result.to_json()}
    atomic_write_json(result.adapter_dir / ADAPTER_INFO, info)
    state.update(done=True, result=result.to_json())
    atomic_write_json(out / _STATE, state)
    log.info("trained %d steps in %.0f s (%.1f s/step); adapter in %s", result.global_step, result.train_seconds,
             result.sec_per_step or 0.0, result.adapter_dir)


def _run_trainer(trainer: Any, last: Path | None) -> float:
    """Trains (from checkpoint ``last`` when there is one); returns the seconds it took."""
    if last is not None:
        log.info("resuming training from %s", last)
    start = time.perf_counter()
    try:
        trainer.train(resume_from_checkpoint=str(last) if last is not None else None)
    except (RuntimeError, ValueError) as exc:
        raise TrainingError(f"training failed: {exc}") from exc
    return time.perf_counter() - start


def _planned_steps(cfg: TrainConfig, n_rows: int) -> int:
    if cfg.max_steps > 0:
        return cfg.max_steps
    per_epoch = max(1, math.ceil(n_rows / (cfg.batch_size * cfg.grad_accum)))
    return max(1, math.ceil(per_epoch * cfg.epochs))


def _evaluate(trainer: Any) -> float | None:
    metrics = trainer.evaluate()
    value = metrics.get("eval_loss")
    return float(value) if value is not None else None


