"""Reading GGUF metadata, and carrying the tokenizer metadata of one GGUF into another.

``convert_hf_to_gguf.py`` rebuilds the tokenizer metadata from the Hugging Face tokenizer files, and for some models
(Gemma 3 here) a tokenizer that went GGUF -> transformers -> GGUF is detected wrongly, so the merged model
produces garbage. The original GGUF's ``tokenizer.*`` keys are the ground truth: :func:`carry_tokenizer_metadata`
copies them over, after checking that the vocabularies have the same size.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import MissingDependencyError, TrainingError

__all__ = ["TOKENIZER_PREFIX", "carry_tokenizer_metadata", "read_metadata"]

log = logging.getLogger(__name__)

TOKENIZER_PREFIX = "tokenizer."


def _gguf() -> Any:
    try:
        import gguf
    except ImportError as exc:
        raise MissingDependencyError("gguf", "finetune") from exc
    return gguf


def read_metadata(path: str | Path, prefix: str = "") -> dict[str, Any]:
    """The key/value metadata of a GGUF file (tensor data is not read).

    Args:
        path: the GGUF file.
        prefix: keep only keys starting with this (e.g. ``"tokenizer."``).

    Returns:
        Key to value: strings, numbers, or lists of them.

    Raises:
        TrainingError: the file is not a readable GGUF.
        MissingDependencyError: the ``gguf`` package is not installed.
    """
    gguf = _gguf()
    try:
        reader = gguf.GGUFReader(str(path), "r")
    except (OSError, ValueError) as exc:
        raise TrainingError(f"{path} is not a readable GGUF file: {exc}") from exc
    out: dict[str, Any] = {}
    for field in reader.fields.values():
        if field.name.startswith("GGUF.") or not field.name.startswith(prefix):
            continue
        out[field.name] = field.contents()
    return out


def _vocab_size(reader: Any) -> int | None:
    field = reader.get_field("tokenizer.ggml.tokens")
    if field is not None:
        return len(field.data)
    return None


def carry_tokenizer_metadata(
    source: str | Path,
    target: str | Path,
    out: str | Path | None = None,
    *,
    keep: Mapping[str, Any] | None = None,
) -> Path:
    """Rewrite ``target`` with every ``tokenizer.*`` key taken from ``source``.

    Args:
        source: the GGUF whose tokenizer metadata is right (e.g. the packaged base model).
        target: the GGUF to fix (e.g. a merged model converted by ``convert_hf_to_gguf.py``).
        out: where to write the result; default: replace ``target`` in place (atomically).
        keep: extra keys to set on the result (e.g. ``{"general.name": "my-tuned"}``).

    Returns:
        The path written.

    Raises:
        TrainingError: either file is unreadable, or the vocabularies differ in size (the models do not match).
        MissingDependencyError: the ``gguf`` package is not installed.
    """
    gguf = _gguf()
    target_path = Path(target)
    final = Path(out) if out is not None else target_path
    try:
        src = gguf.GGUFReader(str(source), "r")
        dst = gguf.GGUFReader(str(target_path), "r")
    except (OSError, ValueError) as exc:
        raise TrainingError(f"cannot read GGUF metadata ({exc}); check both files are GGUF models") from exc
    src_vocab, dst_vocab = _vocab_size(src), _vocab_size(dst)
    if src_vocab is None:
        raise TrainingError(f"{source} has no tokenizer metadata to carry over")
    if dst_vocab is not None and src_vocab != dst_vocab:
        raise TrainingError(
            f"cannot carry the tokenizer of {source} ({src_vocab} tokens) into {target_path} ({dst_vocab} tokens): "
            "they are not the same model family; convert from the matching base"
        )
    arch_field = dst.get_field(gguf.Keys.General.ARCHITECTURE)
    arch = arch_field.contents() if arch_field is not None else None
    tmp = final.with_name(final.name + f".tmp-{os.getpid()}")
    writer = gguf.GGUFWriter(str(tmp), arch=arch, endianess=dst.endianess)
    alignment = dst.get_field(gguf.Keys.General.ALIGNMENT)
    if alignment is not None:
        writer.data_alignment = alignment.contents()
    extra = dict(keep or {})
    try:
        for field in dst.fields.values():
            name = field.name
            if name.startswith("GGUF.") or name == gguf.Keys.General.ARCHITECTURE:
                continue
            if name.startswith(TOKENIZER_PREFIX) or name in extra:
                continue
            _copy_field(gguf, writer, field)
        for field in src.fields.values():
            if field.name.startswith(TOKENIZER_PREFIX):
                _copy_field(gguf, writer, field)
        for key, value in extra.items():
            if isinstance(value, str):
                writer.add_string(key, value)
            else:
                raise TrainingError(f"only string metadata can be set, got {key}={value!r}")
        for tensor in dst.tensors:
            writer.add_tensor_info(tensor.name, tensor.data.shape, tensor.data.dtype, tensor.data.nbytes,
                                   tensor.tensor_type)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_ti_data_to_file()
        for tensor in dst.tensors:
            writer.write_tensor_data(tensor.data, tensor_endianess=dst.endianess)
        writer.close()
        del dst, src  # release the memory maps before replacing the file
        os.replace(tmp, final)
    except (OSError, ValueError, TypeError) as exc:
        raise TrainingError(f"could not rewrite {target_path} with the tokenizer of {source}: {exc}") from exc
    finally:
        tmp.unlink(missing_ok=True)
    log.info("carried %d tokenizer keys from %s into %s", len([k for k in read_metadata(final, TOKENIZER_PREFIX)]),
             source, final)
    return final


def _copy_field(gguf: Any, writer: Any, field: Any) -> None:
    val_type = field.types[0]
    sub_type = field.types[-1] if val_type == gguf.GGUFValueType.ARRAY else None
    writer.add_key_value(field.name, field.contents(), val_type, sub_type=sub_type)
