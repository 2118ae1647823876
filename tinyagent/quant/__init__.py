"""Back to llama.cpp: export a tuned adapter as GGUF, or merge, convert and quantize; compare the results.

* :func:`export_adapter`: the LoRA adapter as a GGUF that llama.cpp applies over the packaged base GGUF.
* :func:`merge_and_quantize`: merge into the base, convert to GGUF f16 (tokenizer metadata carried over from the
  original GGUF), quantize to Q8_0 / Q5_K_M / Q4_K_M with ``llama_model_quantize``.
* :func:`quantize`: quantize any f16 GGUF.
* :func:`compare`: a size / speed / accuracy table of GGUF models.
* :func:`register_model`: put the result in the model catalog, so ``Agent(model="my-tuned")`` loads it.

llama.cpp's conversion scripts are fetched on first use by :func:`ensure_scripts` (never committed).
"""

from __future__ import annotations

from ._compare import QuantRow, compare, format_table
from ._export import (
    QUANT_TYPES,
    ExportResult,
    adapter_base,
    convert_to_gguf,
    export_adapter,
    merge_adapter,
    merge_and_quantize,
    quantize,
    register_model,
)
from ._gguf_meta import carry_tokenizer_metadata, read_metadata
from .llama_cpp_tools import LlamaCppScripts, ensure_scripts

__all__ = [
    "QUANT_TYPES",
    "ExportResult",
    "LlamaCppScripts",
    "QuantRow",
    "adapter_base",
    "carry_tokenizer_metadata",
    "compare",
    "convert_to_gguf",
    "ensure_scripts",
    "export_adapter",
    "format_table",
    "merge_adapter",
    "merge_and_quantize",
    "quantize",
    "read_metadata",
    "register_model",
]
