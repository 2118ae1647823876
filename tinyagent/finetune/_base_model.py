"""The base model for training: a catalog GGUF dequantized through transformers, or a Hugging Face directory.

A GGUF base is dequantized once (``from_pretrained(dir, gguf_file=...)``) and saved as an fp32 Hugging Face copy in
the cache, keyed by the GGUF's sha256, so training, adapter export (``convert_lora_to_gguf.py --base``) and merging
all start from the same weights. transformers marks a dequantized model as "quantized with gguf" and refuses to
save it; clearing ``hf_quantizer`` and ``config.quantization_config`` lets the fp32 weights save.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError, MissingDependencyError, TrainingError
from ._files import file_lock

__all__ = ["BaseModel", "resolve_base"]

log = logging.getLogger(__name__)

_INFO = "tinyagent-base.json"


@dataclass(frozen=True)
class BaseModel:
    """A base model ready for transformers.

    Attributes:
        hf_dir: a Hugging Face directory (config, safetensors, tokenizer).
        gguf: the GGUF it was dequantized from (None for a base given as a Hugging Face directory).
        catalog_name: the catalog name, when the base came from the catalog.
    """

    hf_dir: Path
    gguf: Path | None = None
    catalog_name: str | None = None

    def to_json(self) -> dict[str, Any]:
        """JSON-able fields."""
        return {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(self).items()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BaseModel:
        """Inverse of :meth:`to_json`."""
        return cls(hf_dir=Path(data["hf_dir"]), gguf=Path(data["gguf"]) if data.get("gguf") else None,
                   catalog_name=data.get("catalog_name"))


def _fingerprint(path: Path) -> str:
    """A cheap identity of a large file: size, and sha256 of its first and last 4 MiB."""
    st = path.stat()
    h = hashlib.sha256(str(st.st_size).encode())
    with path.open("rb") as f:
        h.update(f.read(4 << 20))
        if st.st_size > 8 << 20:
            f.seek(-(4 << 20), os.SEEK_END)
            h.update(f.read())
    return h.hexdigest()[:16]


def resolve_base(base: str | Path, cache: str | Path | None = None) -> BaseModel:
    """Turn ``base`` (a catalog name, a ``.gguf`` file or a Hugging Face directory) into a :class:`BaseModel`.

    A GGUF is dequantized to fp32 once and cached; later calls return the cached copy.

    Args:
        base: the catalog name (``"smollm2-135m"`` …), a GGUF path, or a Hugging Face model directory.
        cache: where dequantized copies live (default: ``<tinyagent cache>/hf-base``).

    Raises:
        ConfigurationError: ``base`` is none of these.
        MissingDependencyError: transformers (the ``finetune`` extra) is not installed.
        TrainingError: transformers could not dequantize the GGUF.
    """
    path = Path(base).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ConfigurationError(f"{path} is not a Hugging Face model directory (no config.json)")
        return BaseModel(hf_dir=path)
    catalog_name: str | None = None
    if path.suffix == ".gguf":
        if not path.is_file():
            raise ConfigurationError(f"base GGUF {path} does not exist")
        gguf_path = path.resolve()
    else:
        from ..models import ModelCatalog

        catalog_name = str(base)
        gguf_path = ModelCatalog().path(catalog_name)
    from ..models import cache_dir

    root = Path(cache).expanduser() if cache is not None else cache_dir() / "hf-base"
    target = root / f"{gguf_path.stem}-{_fingerprint(gguf_path)}"
    with file_lock(root / f".{target.name}.lock"):
        if not (target / _INFO).is_file():
            dequantize_gguf(gguf_path, target)
    return BaseModel(hf_dir=target, gguf=gguf_path, catalog_name=catalog_name)


def dequantize_gguf(gguf_path: Path, target: Path) -> Path:
    """Dequantize a GGUF with transformers and save it (fp32 weights and tokenizer) to ``target``.

    Raises:
        MissingDependencyError: transformers or torch is missing.
        TrainingError: the architecture is not supported by transformers' GGUF loader, or saving failed.
    """
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise MissingDependencyError("transformers", "finetune") from exc
    log.info("dequantizing %s with transformers (once; cached in %s)", gguf_path, target)
    tmp = target.with_name(target.name + f".tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
        model = AutoModelForCausalLM.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name,
                                                     dtype=torch.float32)
        # transformers marks GGUF-loaded models as quantized and refuses to save them; the weights are plain fp32.
        setattr(model, "hf_quantizer", None)  # noqa: B010 - torch types the attribute as a Module
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(str(tmp))
        tokenizer.save_pretrained(str(tmp))
        (tmp / _INFO).write_text(json.dumps({"gguf": str(gguf_path)}))
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    except (OSError, ValueError, RuntimeError, KeyError) as exc:
        raise TrainingError(f"transformers could not dequantize {gguf_path}: {exc}; give a Hugging Face directory "
                            "as the base instead") from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target
