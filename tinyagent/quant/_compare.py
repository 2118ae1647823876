"""Size, speed and accuracy of GGUF models side by side (what ``tinyagent quant`` prints)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError, MissingDependencyError, ModelError

__all__ = ["QuantRow", "compare", "format_table", "measure_speed"]

log = logging.getLogger(__name__)

_SPEED_PROMPT = (
    "You are a planner. Turn the user's request into a plan of tool calls. Write one call per line, numbered "
    "from 1, and end with join(). Tools: get_email_address(name), send_email(to, subject, body), "
    "create_calendar_event(title, start, duration_minutes, invitees), create_reminder(text, due), "
    "find_file(query), summarize_file(path), send_message(recipients, text), get_directions(destination). "
    "Request: Find the quarterly report, summarise it, and email the summary to Sid and Priya before Friday; "
    "then remind me tomorrow at 9 to call the bank, and text Alex that I am running ten minutes late. Plan:"
)


@dataclass
class QuantRow:
    """One model in the comparison.

    Attributes:
        name: a label.
        path: the GGUF.
        size_mb: file size (plus the adapter's, when one is applied).
        load_s: seconds to load.
        prompt_tok_s: prompt processing speed.
        gen_tok_s: generation speed.
        dag_success: planning accuracy (DAG success), when measured.
        strict_success: strict planning accuracy, when measured.
        mean_latency_s: mean seconds per planned request, when measured.
        n_eval: requests the accuracy was measured on.
    """

    name: str
    path: str
    size_mb: float
    load_s: float = 0.0
    prompt_tok_s: float = 0.0
    gen_tok_s: float = 0.0
    dag_success: float | None = None
    strict_success: float | None = None
    mean_latency_s: float | None = None
    n_eval: int = 0

    def to_json(self) -> dict[str, Any]:
        """JSON-able fields."""
        return asdict(self)


def measure_speed(
    path: str | Path,
    *,
    lora_path: str | Path | None = None,
    n_threads: int | None = None,
    gen_tokens: int = 32,
    prompt: str = _SPEED_PROMPT,
) -> tuple[float, float, float]:
    """Load a GGUF and measure ``(load seconds, prompt tokens/s, generated tokens/s)``.

    Raises:
        MissingDependencyError: llama-cpp-python is missing.
        ModelError: llama.cpp could not load the file.
    """
    try:
        import llama_cpp  # noqa: F401 - the extra must be installed

        from ..models import new_llama
    except ImportError as exc:
        raise MissingDependencyError("llama-cpp-python", "llama") from exc
    from ..models import free_cores, on_llama_thread

    threads = n_threads or free_cores()
    start = time.perf_counter()
    try:
        llm = new_llama(model_path=str(path), lora_path=str(lora_path) if lora_path else None, n_ctx=1024,
                        n_threads=threads, n_threads_batch=threads, verbose=False)
    except (ValueError, RuntimeError) as exc:
        raise ModelError(f"llama.cpp could not load {path}: {exc}") from exc
    load_s = time.perf_counter() - start
    try:
        tokens, prompt_s, generated, gen_s = on_llama_thread(_time_generation, llm, prompt, gen_tokens)
    finally:
        llm.close()
    return load_s, len(tokens) / max(prompt_s, 1e-9), generated / max(gen_s, 1e-9)


def _time_generation(llm: Any, prompt: str, gen_tokens: int) -> tuple[list[int], float, int, float]:
    """Prompt tokens, prompt seconds, tokens generated and generation seconds (on the llama.cpp thread)."""
    tokens = llm.tokenize(prompt.encode(), add_bos=True)
    start = time.perf_counter()
    llm.eval(tokens)
    prompt_s = time.perf_counter() - start
    eos = llm.token_eos()
    start = time.perf_counter()
    out = llm.create_completion(prompt, max_tokens=gen_tokens, temperature=0.0, top_k=1,
                                logit_bias={eos: -1e9} if eos >= 0 else None)
    gen_s = time.perf_counter() - start
    return tokens, prompt_s, int(out["usage"]["completion_tokens"]), gen_s


def compare(
    models: Mapping[str, str | Path | tuple[str | Path, str | Path]] | Sequence[str | Path],
    *,
    accuracy: Callable[[str | Path, str | Path | None], Mapping[str, Any]] | None = None,
    n_threads: int | None = None,
) -> list[QuantRow]:
    """Size, speed and (with ``cases``) planning accuracy of each model.

    Args:
        models: label -> GGUF path (or ``(base GGUF, adapter GGUF)``), or a list of paths (labelled by file name).
        accuracy: scores planning with ``(GGUF path, adapter path or None)`` and returns ``dag_success``,
            ``strict_success``, ``mean_latency_s`` and ``n`` (e.g. :func:`tinyagent.evals.planning_accuracy` over
            an eval set); None skips accuracy.
        n_threads: llama.cpp threads.

    Raises:
        ConfigurationError: a file is missing.
    """
    items: dict[str, str | Path | tuple[str | Path, str | Path]] = (
        dict(models) if isinstance(models, Mapping) else {Path(p).name: p for p in models}
    )
    rows = []
    for name, spec in items.items():
        path, lora = (spec[0], spec[1]) if isinstance(spec, tuple) else (spec, None)
        files = [Path(path)] + ([Path(lora)] if lora else [])
        missing = [str(f) for f in files if not f.is_file()]
        if missing:
            raise ConfigurationError(f"{name}: {', '.join(missing)} does not exist")
        size = sum(f.stat().st_size for f in files) / 1e6
        load_s, pp, tg = measure_speed(path, lora_path=lora, n_threads=n_threads)
        row = QuantRow(name=name, path=str(path), size_mb=round(size, 1), load_s=round(load_s, 2),
                       prompt_tok_s=round(pp, 1), gen_tok_s=round(tg, 1))
        if accuracy is not None:
            scored = accuracy(path, lora)
            row.dag_success = round(float(scored["dag_success"]), 4)
            row.strict_success = round(float(scored["strict_success"]), 4)
            row.mean_latency_s = round(float(scored["mean_latency_s"]), 3)
            row.n_eval = int(scored["n"])
        log.info("%s: %.1f MB, %.0f tok/s prompt, %.0f tok/s generation", name, row.size_mb, row.prompt_tok_s,
                 row.gen_tok_s)
        rows.append(row)
    return rows


def format_table(rows: Sequence[QuantRow]) -> str:
    """The rows as a plain-text table."""
    header = ["model", "size MB", "load s", "prompt tok/s", "gen tok/s", "DAG acc", "strict acc", "s/request"]
    lines = [header]
    for r in rows:
        acc = (f"{r.dag_success:.1%}" if r.dag_success is not None else "-",
               f"{r.strict_success:.1%}" if r.strict_success is not None else "-",
               f"{r.mean_latency_s:.2f}" if r.mean_latency_s is not None else "-")
        lines.append([r.name, f"{r.size_mb:.1f}", f"{r.load_s:.2f}", f"{r.prompt_tok_s:.0f}", f"{r.gen_tok_s:.0f}",
                      *acc])
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)) for line in lines)
