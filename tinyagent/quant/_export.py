"""Back to llama.cpp: a LoRA adapter as GGUF, or a merged model converted to GGUF and quantized.

Path 1, :func:`export_adapter`: ``convert_lora_to_gguf.py`` writes the adapter as a small GGUF that llama.cpp applies
over the packaged base (``Llama(model_path=base, lora_path=adapter)``). Nothing else changes, so it is the safe path.

Path 2, :func:`merge_and_quantize`: merge the adapter into the fp32 base with peft, convert the result to an f16 GGUF
with ``convert_hf_to_gguf.py``, carry the tokenizer metadata over from the original GGUF (a round trip through
transformers can lose it), then quantize with ``llama_cpp.llama_model_quantize`` (Q8_0, Q5_K_M, Q4_K_M …).
"""

from __future__ import annotations

import ctypes
import json
import logging
import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError, MissingDependencyError, TrainingError
from ..finetune import ADAPTER_INFO, BaseModel, ProgressCallback, ProgressEvent, emit, quiet_libraries, resolve_base
from ._gguf_meta import carry_tokenizer_metadata
from .llama_cpp_tools import LlamaCppScripts, ensure_scripts, run_script

__all__ = [
    "QUANT_TYPES",
    "ExportResult",
    "adapter_base",
    "convert_to_gguf",
    "export_adapter",
    "merge_adapter",
    "merge_and_quantize",
    "quantize",
    "register_model",
]

log = logging.getLogger(__name__)

#: quantization names accepted by :func:`quantize`, mapped to llama.cpp's ``LLAMA_FTYPE_*`` constant names.
QUANT_TYPES: dict[str, str] = {
    "F16": "LLAMA_FTYPE_MOSTLY_F16",
    "BF16": "LLAMA_FTYPE_MOSTLY_BF16",
    "Q8_0": "LLAMA_FTYPE_MOSTLY_Q8_0",
    "Q6_K": "LLAMA_FTYPE_MOSTLY_Q6_K",
    "Q5_K_M": "LLAMA_FTYPE_MOSTLY_Q5_K_M",
    "Q5_K_S": "LLAMA_FTYPE_MOSTLY_Q5_K_S",
    "Q5_0": "LLAMA_FTYPE_MOSTLY_Q5_0",
    "Q4_K_M": "LLAMA_FTYPE_MOSTLY_Q4_K_M",
    "Q4_K_S": "LLAMA_FTYPE_MOSTLY_Q4_K_S",
    "Q4_0": "LLAMA_FTYPE_MOSTLY_Q4_0",
    "Q4_1": "LLAMA_FTYPE_MOSTLY_Q4_1",
    "Q3_K_M": "LLAMA_FTYPE_MOSTLY_Q3_K_M",
    "Q2_K": "LLAMA_FTYPE_MOSTLY_Q2_K",
}
_OUTTYPES = ("f32", "f16", "bf16", "q8_0")



@dataclass
class ExportResult:
    """What :func:`merge_and_quantize` wrote.

    Attributes:
        merged_dir: the merged Hugging Face model.
        f16: the f16 GGUF.
        quantized: quantization type to GGUF path.
        seconds: wall time per stage (``merge``, ``convert``, and one per quantization type).
    """

    merged_dir: Path
    f16: Path
    quantized: dict[str, Path] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """JSON-able fields."""
        return {"merged_dir": str(self.merged_dir), "f16": str(self.f16),
                "quantized": {k: str(v) for k, v in self.quantized.items()},
                "seconds": {k: round(v, 2) for k, v in self.seconds.items()}}


def adapter_base(adapter_dir: str | Path) -> BaseModel | None:
    """The base recorded next to an adapter by :func:`tinyagent.finetune.train`, if any."""
    info = Path(adapter_dir) / ADAPTER_INFO
    if not info.is_file():
        return None
    try:
        return BaseModel.from_json(json.loads(info.read_text())["base"])
    except (KeyError, ValueError, TypeError) as exc:
        raise ConfigurationError(f"{info} is malformed ({exc}); re-run training or pass the base explicitly") from exc


def _check_adapter(adapter_dir: Path) -> None:
    if not (adapter_dir / "adapter_config.json").is_file():
        raise ConfigurationError(f"{adapter_dir} is not a LoRA adapter directory (no adapter_config.json); pass the "
                                 "'adapter' folder that tinyagent.finetune.train wrote")


def _base_for(adapter_dir: Path, base: str | Path | BaseModel | None) -> BaseModel:
    if isinstance(base, BaseModel):
        return base
    if base is not None:
        return resolve_base(base)
    recorded = adapter_base(adapter_dir)
    if recorded is None:
        raise ConfigurationError(f"no base model recorded for {adapter_dir}; pass base= (a catalog name, a GGUF or a "
                                 "Hugging Face directory)")
    return recorded


def export_adapter(
    adapter_dir: str | Path,
    out: str | Path | None = None,
    *,
    base: str | Path | BaseModel | None = None,
    outtype: str = "f16",
    scripts: LlamaCppScripts | None = None,
    progress: ProgressCallback | None = None,
) -> Path:
    """Convert a peft LoRA adapter to a GGUF adapter that llama.cpp applies over the base GGUF.

    Args:
        adapter_dir: the peft adapter (``adapter_config.json`` + ``adapter_model.safetensors``).
        out: the GGUF to write (default: ``<adapter_dir>/../adapter.gguf``).
        base: the base the adapter was trained on; default: the one recorded by training.
        outtype: ``f16`` (default), ``f32``, ``bf16`` or ``q8_0``.
        scripts: llama.cpp's scripts (default: :func:`~tinyagent.quant.ensure_scripts`).
        progress: receives stage events.

    Returns:
        The adapter GGUF.

    Raises:
        ConfigurationError: not an adapter, unknown ``outtype``, or no base.
        TrainingError: the conversion failed.
    """
    src = Path(adapter_dir)
    _check_adapter(src)
    if outtype not in _OUTTYPES:
        raise ConfigurationError(f"unknown adapter outtype {outtype!r}; use one of {_OUTTYPES}")
    model = _base_for(src, base)
    target = Path(out) if out is not None else src.parent / "adapter.gguf"
    target.parent.mkdir(parents=True, exist_ok=True)
    tools = scripts or ensure_scripts(progress=lambda m: emit(progress, ProgressEvent("export", message=m)))
    emit(progress, ProgressEvent("export", 0, 1, message=f"converting the adapter to GGUF ({outtype})"))
    tmp = target.with_name(target.name + ".tmp")
    run_script(tools, tools.convert_lora,
               ["--base", str(model.hf_dir), "--outfile", str(tmp), "--outtype", outtype, str(src)],
               what="adapter export")
    os.replace(tmp, target)
    emit(progress, ProgressEvent("export", 1, 1, message=f"wrote {target}"))
    log.info("adapter GGUF written to %s (%.1f MB)", target, target.stat().st_size / 1e6)
    return target


def merge_adapter(
    adapter_dir: str | Path,
    out_dir: str | Path,
    *,
    base: str | Path | BaseModel | None = None,
) -> Path:
    """Merge a LoRA adapter into its fp32 base and save the result as a Hugging Face model (with tokenizer).

    Raises:
        ConfigurationError: not an adapter, or no base.
        MissingDependencyError: torch, transformers or peft is missing.
        TrainingError: loading or merging failed.
    """
    src = Path(adapter_dir)
    _check_adapter(src)
    model_base = _base_for(src, base)
    try:
        import torch
        from peft import PeftModel
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise MissingDependencyError("peft", "finetune") from exc
    target = Path(out_dir)
    tmp = target.with_name(target.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        with quiet_libraries():
            model = AutoModelForCausalLM.from_pretrained(str(model_base.hf_dir), dtype=torch.float32)
            merged = PeftModel.from_pretrained(model, str(src)).merge_and_unload()
            merged.save_pretrained(str(tmp))
            AutoTokenizer.from_pretrained(str(model_base.hf_dir)).save_pretrained(str(tmp))
    except (OSError, ValueError, RuntimeError, KeyError) as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise TrainingError(f"could not merge {src} into {model_base.hf_dir}: {exc}") from exc
    if target.exists():
        shutil.rmtree(target)
    os.replace(tmp, target)
    return target


def convert_to_gguf(
    hf_dir: str | Path,
    out: str | Path,
    *,
    outtype: str = "f16",
    tokenizer_from: str | Path | None = None,
    scripts: LlamaCppScripts | None = None,
    name: str | None = None,
) -> Path:
    """Convert a Hugging Face model directory to GGUF with ``convert_hf_to_gguf.py``.

    Args:
        hf_dir: the model directory.
        out: the GGUF to write.
        outtype: ``f16`` (default), ``f32``, ``bf16`` or ``q8_0``.
        tokenizer_from: a GGUF whose ``tokenizer.*`` metadata replaces the converted one (the original base GGUF).
        scripts: llama.cpp's scripts (default: :func:`~tinyagent.quant.ensure_scripts`).
        name: ``general.name`` of the result.

    Raises:
        ConfigurationError: unknown ``outtype``.
        TrainingError: the conversion failed, or the tokenizer does not match.
    """
    if outtype not in _OUTTYPES:
        raise ConfigurationError(f"unknown outtype {outtype!r}; use one of {_OUTTYPES}")
    target = Path(out)
    target.parent.mkdir(parents=True, exist_ok=True)
    tools = scripts or ensure_scripts()
    tmp = target.with_name(target.name + ".tmp")
    run_script(tools, tools.convert_hf, [str(hf_dir), "--outfile", str(tmp), "--outtype", outtype],
               what="GGUF conversion")
    if tokenizer_from is not None:
        carry_tokenizer_metadata(tokenizer_from, tmp, keep={"general.name": name} if name else None)
    os.replace(tmp, target)
    return target


def quantize(
    src: str | Path,
    out: str | Path | None = None,
    qtype: str = "Q4_K_M",
    *,
    threads: int | None = None,
) -> Path:
    """Quantize a GGUF (typically f16) with ``llama_cpp.llama_model_quantize``.

    Args:
        src: the GGUF to quantize.
        out: the result (default: ``<src stem minus -f16>-<qtype>.gguf`` next to ``src``).
        qtype: one of :data:`QUANT_TYPES` (``Q8_0``, ``Q5_K_M``, ``Q4_K_M`` …).
        threads: CPU threads (default: the free cores).

    Returns:
        The quantized GGUF.

    Raises:
        ConfigurationError: unknown ``qtype`` or missing ``src``.
        MissingDependencyError: llama-cpp-python is missing.
        TrainingError: llama.cpp failed.
    """
    key = qtype.upper()
    if key not in QUANT_TYPES:
        raise ConfigurationError(f"unknown quantization {qtype!r}; use one of {sorted(QUANT_TYPES)}")
    source = Path(src)
    if not source.is_file():
        raise ConfigurationError(f"{source} does not exist")
    try:
        import llama_cpp
    except ImportError as exc:
        raise MissingDependencyError("llama-cpp-python", "llama") from exc
    from ..models._llama import free_cores

    stem = source.stem[: -len("-f16")] if source.stem.lower().endswith("-f16") else source.stem
    target = Path(out) if out is not None else source.with_name(f"{stem}-{key}.gguf")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, QUANT_TYPES[key])
    params.nthread = threads or free_cores()
    start = time.perf_counter()
    rc = llama_cpp.llama_model_quantize(str(source).encode(), str(tmp).encode(), ctypes.byref(params))
    if rc != 0 or not tmp.is_file():
        tmp.unlink(missing_ok=True)
        raise TrainingError(f"llama.cpp could not quantize {source} to {key} (code {rc}); check it is a valid GGUF "
                            "that is not already quantized below F16")
    os.replace(tmp, target)
    log.info("quantized %s -> %s (%s, %.1f MB, %.1f s)", source.name, target.name, key, target.stat().st_size / 1e6,
             time.perf_counter() - start)
    return target


def merge_and_quantize(
    adapter_dir: str | Path,
    out_dir: str | Path,
    *,
    base: str | Path | BaseModel | None = None,
    types: Sequence[str] = ("Q8_0", "Q4_K_M"),
    name: str = "tuned",
    carry_tokenizer: bool = True,
    keep_merged: bool = False,
    scripts: LlamaCppScripts | None = None,
    threads: int | None = None,
    progress: ProgressCallback | None = None,
) -> ExportResult:
    """Merge the adapter into its base, convert to an f16 GGUF, then quantize to each of ``types``.

    Args:
        adapter_dir: the peft adapter.
        out_dir: where ``<name>-f16.gguf`` and ``<name>-<TYPE>.gguf`` go.
        base: the base model (default: the one recorded by training).
        types: quantizations to produce (see :data:`QUANT_TYPES`); may be empty.
        name: file stem and ``general.name`` of the results.
        carry_tokenizer: copy ``tokenizer.*`` metadata from the base GGUF (when the base came from a GGUF).
        keep_merged: keep the merged Hugging Face directory (it is as large as the fp32 model).
        scripts: llama.cpp's scripts (default: :func:`~tinyagent.quant.ensure_scripts`).
        threads: quantization threads.
        progress: receives stage events.

    Raises:
        ConfigurationError, MissingDependencyError, TrainingError.
    """
    src = Path(adapter_dir)
    _check_adapter(src)
    unknown = [t for t in types if t.upper() not in QUANT_TYPES]
    if unknown:
        raise ConfigurationError(f"unknown quantization(s) {unknown}; use any of {sorted(QUANT_TYPES)}")
    model_base = _base_for(src, base)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    total = 2 + len(types)
    seconds: dict[str, float] = {}
    tools = scripts or ensure_scripts(progress=lambda m: emit(progress, ProgressEvent("export", message=m)))

    emit(progress, ProgressEvent("export", 0, total, message="merging the adapter into the base"))
    start = time.perf_counter()
    merged = merge_adapter(src, out / f"{name}-merged-hf", base=model_base)
    seconds["merge"] = time.perf_counter() - start

    emit(progress, ProgressEvent("export", 1, total, message="converting the merged model to GGUF f16"))
    start = time.perf_counter()
    f16 = convert_to_gguf(merged, out / f"{name}-f16.gguf", outtype="f16", scripts=tools, name=name,
                          tokenizer_from=model_base.gguf if carry_tokenizer else None)
    seconds["convert"] = time.perf_counter() - start
    result = ExportResult(merged_dir=merged, f16=f16, seconds=seconds)

    for i, qtype in enumerate(types):
        emit(progress, ProgressEvent("export", 2 + i, total, message=f"quantizing to {qtype.upper()}"))
        start = time.perf_counter()
        result.quantized[qtype.upper()] = quantize(f16, out / f"{name}-{qtype.upper()}.gguf", qtype, threads=threads)
        seconds[qtype.upper()] = time.perf_counter() - start
    if not keep_merged:
        shutil.rmtree(merged, ignore_errors=True)
    emit(progress, ProgressEvent("export", total, total, message="done"))
    return result


def register_model(
    name: str,
    path: str | Path,
    *,
    base: str | None = None,
    description: str = "",
    catalog: Any = None,
) -> Any:
    """Register a tuned GGUF (or an adapter GGUF over catalog model ``base``) so ``Agent(model=name)`` finds it.

    Returns:
        The catalog entry.

    Raises:
        ConfigurationError: the name is taken by a built-in model or the file is missing.
    """
    from ..models import ModelCatalog

    cat = catalog if catalog is not None else ModelCatalog()
    return cat.register(name, path, base=base, description=description)

