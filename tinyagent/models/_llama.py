"""llama.cpp (llama-cpp-python) backend for GGUF models."""

from __future__ import annotations

import asyncio
import logging
import math
import os
import re
import threading
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError, MissingDependencyError, ModelError
from ._base import Completion, Model, ModelRequest, Preference, Pricing, Usage, check_allowed

__all__ = ["LlamaCppModel", "free_cores"]

log = logging.getLogger(__name__)


def free_cores() -> int:
    """Cores not busy right now: the cores this process may use minus the 1-minute load of the others.

    llama.cpp's threads wait on each other, so one thread too many (on a busy core) slows a run 5-20x.
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        cores = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except OSError:  # pragma: no cover - Windows
        load = 0.0
    return max(1, min(cores, round(cores - load + 0.5)))


class _Stop(Exception):
    """Raised inside the generation thread to stop early."""


class LlamaCppModel(Model):
    """A GGUF model run in-process by llama.cpp.

    Args:
        name: a catalog name (``qwen2.5-coder-1.5b`` …); the file is assembled and its sha256 verified.
        path: a GGUF path instead of a catalog name (verified only if ``sha256`` is given).
        sha256: the expected hash of ``path``.
        lora_path: a LoRA adapter GGUF applied over the model.
        n_ctx: context length.
        n_threads: CPU threads; default: the cores free right now.
        chat_format: llama.cpp chat format; default: the GGUF's own template.
        seed: sampling seed.
        pricing: price per token (0 for local models).

    Generation is serialised with a lock, because a ``Llama`` instance is not thread-safe.

    Raises:
        MissingDependencyError: llama-cpp-python is not installed.
        ModelIntegrityError: the file is missing, corrupt or tampered with.
        ModelError: llama.cpp could not load the file.
    """

    supports_grammar = True

    def __init__(
        self,
        name: str | None = None,
        *,
        path: str | Path | None = None,
        sha256: str | None = None,
        lora_path: str | Path | None = None,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        chat_format: str | None = None,
        seed: int = 0,
        pricing: Pricing | None = None,
        catalog: Any = None,
    ) -> None:
        try:
            import llama_cpp
        except ImportError as exc:
            raise MissingDependencyError("llama-cpp-python", "llama") from exc
        from ._catalog import CatalogEntry, ModelCatalog

        if (name is None) == (path is None):
            raise ConfigurationError("give LlamaCppModel either a catalog name or a path, not both or neither")
        cat = catalog or ModelCatalog()
        if name is not None:
            model_path = cat.path(name)
            lora = lora_path or cat.lora_path(name)
            self.name = name
        else:
            model_path = Path(str(path)).expanduser()
            if not model_path.is_file():
                raise ConfigurationError(f"GGUF file {model_path} does not exist")
            if sha256:
                entry = CatalogEntry(name=model_path.name, description="", sha256=sha256)
                cat._verify(model_path, entry)
            lora = lora_path
            self.name = model_path.stem
        self.path = model_path
        self.n_threads = n_threads or free_cores()
        self.pricing = pricing or Pricing()
        self._lock = threading.Lock()
        self._tokenize_lock = threading.Lock()
        log.info("loading %s (%s) with %d thread(s)", self.name, model_path, self.n_threads)
        try:
            self._llm = llama_cpp.Llama(
                model_path=str(model_path),
                lora_path=str(lora) if lora else None,
                n_ctx=n_ctx,
                n_threads=self.n_threads,
                n_threads_batch=self.n_threads,
                chat_format=chat_format,
                seed=seed,
                verbose=False,
            )
        except Exception as exc:  # noqa: BLE001 - llama.cpp raises ValueError/RuntimeError on bad files
            raise ModelError(f"llama.cpp could not load {model_path}: {exc}") from exc
        self.n_ctx = n_ctx
        self._formatter = _template_formatter(self._llm)

    @property
    def llama(self) -> Any:
        """The underlying ``llama_cpp.Llama`` (for advanced use; take :attr:`lock` around calls)."""
        return self._llm

    @property
    def lock(self) -> threading.Lock:
        """The lock that serialises calls into llama.cpp."""
        return self._lock

    def count_tokens(self, text: str) -> int:
        with self._tokenize_lock:
            return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def prompt_tokens(self, messages: Sequence[dict[str, Any]]) -> int:
        """Tokens of ``messages`` once formatted by the chat template."""
        text = self.format_prompt(messages)
        return self.count_tokens(text)

    def format_prompt(self, messages: Sequence[dict[str, Any]]) -> str:
        """``messages`` rendered by the model's chat template, up to the assistant turn."""
        if self._formatter is not None:
            return str(self._formatter(messages=list(messages)).prompt)
        return "".join(f"<|{m.get('role')}|>\n{m.get('content')}\n" for m in messages)

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | Completion]:
        check_allowed(self.name)
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        stop = threading.Event()
        thread = threading.Thread(target=self._generate, args=(request, loop, queue, stop), daemon=True)
        thread.start()
        try:
            while True:
                kind, payload = await queue.get()
                if kind == "text":
                    yield payload
                elif kind == "done":
                    yield payload
                    return
                else:
                    raise payload
        finally:
            # The consumer stopped early (cancelled, or it saw the end of the plan): stop generating.
            stop.set()

    def _generate(
        self,
        request: ModelRequest,
        loop: asyncio.AbstractEventLoop,
        queue: asyncio.Queue[tuple[str, Any]],
        stop: threading.Event,
    ) -> None:
        def put(kind: str, payload: Any) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, (kind, payload))

        try:
            from llama_cpp.llama_grammar import LlamaGrammar

            logprob = _LogprobTracker() if request.logprobs else None
            prefer = _Preferences(self, request.prefer) if request.prefer else None
            fast: _GreedyGrammar | None = None
            grammar = None
            if request.grammar and request.temperature == 0:
                fast = _GreedyGrammar(self._llm, request.grammar)
            elif request.grammar:
                grammar = LlamaGrammar.from_string(request.grammar, verbose=False)
            with self._lock:
                start = time.perf_counter()
                ttft = 0.0
                parts: list[str] = []
                finish: str = "stop"
                usage = Usage()
                kwargs: dict[str, Any] = dict(
                    messages=list(request.messages),
                    grammar=grammar,
                    max_tokens=request.max_tokens,
                    temperature=request.temperature,
                    stop=list(request.stop) or None,
                    stream=True,
                )
                if request.temperature == 0:
                    kwargs.update(top_k=1)
                processors: list[Any] = [p for p in (logprob, prefer, fast) if p is not None]
                if processors:
                    kwargs["logits_processor"] = _processor_list(processors)
                chunks: Any = self._llm.create_chat_completion(**kwargs)
                for chunk in chunks:
                    if stop.is_set():
                        finish = "cancelled"
                        break
                    choice = chunk["choices"][0]
                    delta = choice.get("delta", {}).get("content")
                    if delta:
                        if not parts:
                            ttft = time.perf_counter() - start
                        parts.append(delta)
                        put("text", delta)
                    if choice.get("finish_reason"):
                        finish = choice["finish_reason"]
                text = "".join(parts)
                usage = Usage(self.prompt_tokens(request.messages), len(parts), 1)
            if fast is not None:
                fast.close()
            put(
                "done",
                Completion(
                    text=text,
                    usage=usage,
                    model=self.name,
                    finish_reason=finish,
                    mean_logprob=logprob.mean() if logprob else None,
                    ttft_s=ttft,
                    elapsed_s=time.perf_counter() - start,
                    preference_probs=tuple(prefer.seen) if prefer else (),
                ),
            )
        except Exception as exc:  # noqa: BLE001 - every llama.cpp failure becomes a ModelError
            err = exc if isinstance(exc, ModelError) else ModelError(f"{self.name}: generation failed: {exc}")
            err.__cause__ = exc if err is not exc else None
            put("error", err)

    def opening_tokens(self, text: str) -> tuple[frozenset[int], frozenset[int]]:
        """The token ids that open ``text``: ``(after a space, not after a space)``, memoised."""
        cache: dict[str, tuple[frozenset[int], frozenset[int]]] = self.__dict__.setdefault("_openers", {})
        if text not in cache:
            def first(piece: str) -> int | None:
                ids = self._llm.tokenize(piece.encode("utf-8"), add_bos=False, special=False)
                return int(ids[0]) if ids else None

            bare, spaced = first(text), first(" " + text)
            after_space = frozenset(i for i in (bare,) if i is not None)
            cache[text] = (after_space, frozenset(i for i in (bare, spaced) if i is not None))
        return cache[text]

    def __repr__(self) -> str:
        return f"LlamaCppModel(name={self.name!r}, n_threads={self.n_threads})"

    async def aclose(self) -> None:
        with self._lock:
            self._llm.close()


def _template_formatter(llm: Any) -> Any:
    """The GGUF's own chat template as a formatter (None when the file has none)."""
    template = llm.metadata.get("tokenizer.chat_template")
    if not template:
        return None
    from llama_cpp import llama_chat_format

    def piece(token: int) -> str:
        return str(llm._model.token_get_text(token)) if token >= 0 else ""

    return llama_chat_format.Jinja2ChatFormatter(
        template=template, eos_token=piece(llm.token_eos()), bos_token=piece(llm.token_bos())
    )


class _LogprobTracker:
    """Records the model's own log-probability of each sampled token (before grammar masking).

    llama-cpp-python only returns logprobs with ``logits_all=True``, which costs n_ctx x vocab floats. A logits
    processor sees the last position's logits at every step; the token chosen from them is the next step's last id.
    """

    def __init__(self) -> None:
        self._pending: Any = None
        self.values: list[float] = []

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import numpy as np

        if self._pending is not None and len(input_ids):
            self.values.append(float(self._pending[int(input_ids[-1])]))
        m = float(np.max(scores))
        shifted = scores - m
        self._pending = shifted - math.log(float(np.sum(np.exp(shifted))))
        return scores

    def mean(self) -> float | None:
        return sum(self.values) / len(self.values) if self.values else None


class _Preferences:
    """Applies :class:`Preference` floors as a logits processor and records what it measured."""

    def __init__(self, model: LlamaCppModel, prefs: Sequence[Preference]) -> None:
        self._model = model
        self._prefs = [(re.compile(p.after), p) for p in prefs]
        self._start: int | None = None
        self._bytes = b""
        self._decoded = 0
        self.seen: list[tuple[str, float, bool]] = []

    def _text(self, input_ids: Any) -> str:
        if self._start is None:
            self._start = len(input_ids)
        new = [int(t) for t in input_ids[self._start + self._decoded:]]
        if new:
            self._bytes += self._model.llama.detokenize(new)
            self._decoded += len(new)
        return self._bytes.decode("utf-8", errors="replace")

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import numpy as np

        text = self._text(input_ids)
        for pattern, pref in self._prefs:
            if not pattern.search(text):
                continue
            after_space, otherwise = self._model.opening_tokens(pref.text)
            ids = sorted(after_space if text.endswith(" ") else otherwise)
            if not ids:
                continue
            top = float(np.max(scores))
            weights = np.exp(scores - top)
            chosen = np.array(ids)
            mass = weights[chosen]
            prob = float(np.sum(mass) / np.sum(weights))
            taken = prob >= pref.min_prob
            self.seen.append((pref.name, prob, taken))
            if taken:
                scores = np.array(scores, copy=True)
                scores[int(chosen[int(np.argmax(mass))])] = top + 1.0
                return scores
        return scores


def _processor_list(processors: list[Any]) -> Any:
    from llama_cpp import LogitsProcessorList

    return LogitsProcessorList(processors)


class _GreedyGrammar:
    """Grammar-constrained greedy decoding that checks the grammar on the best token first.

    llama-cpp-python applies a grammar sampler to every candidate (150k for Qwen) at every step, which dominates
    generation time with a large plan grammar. Under greedy decoding only the winner matters: if the model's top
    token is allowed, it is the answer; only when it is not is the grammar applied to the whole vocabulary
    (as llama.cpp's own common sampler does).

    Raises:
        ModelError: llama.cpp could not parse the grammar (checked, so that a bad grammar never crashes it).
    """

    def __init__(self, llm: Any, grammar: str) -> None:
        import llama_cpp

        self._api = llama_cpp
        self._sampler = llama_cpp.llama_sampler_init_grammar(llm._model.vocab, grammar.encode("utf-8"), b"root")
        if not self._sampler:
            raise ModelError("llama.cpp rejected the grammar; this is a bug in grammar generation, please report it")
        self._started = False
        self.full_passes = 0
        self.steps = 0

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import ctypes

        import numpy as np

        api = self._api
        if self._started:
            api.llama_sampler_accept(self._sampler, int(input_ids[-1]))
        self._started = True
        self.steps += 1
        top = int(np.argmax(scores))
        one = (api.llama_token_data * 1)(api.llama_token_data(top, float(scores[top]), 0.0))
        arr = api.llama_token_data_array(data=one, size=1, selected=-1, sorted=False)
        api.llama_sampler_apply(self._sampler, ctypes.byref(arr))
        if np.isfinite(one[0].logit):
            return scores
        # The model's favourite is not allowed here: mask the whole vocabulary with the grammar.
        self.full_passes += 1
        n = len(scores)
        data = (api.llama_token_data * n)()
        view = np.ctypeslib.as_array(ctypes.cast(data, ctypes.POINTER(ctypes.c_byte)), shape=(n * 12,))
        rec = view.view(np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)]))
        rec["id"] = np.arange(n, dtype=np.intc)
        rec["logit"] = scores
        rec["p"] = 0.0
        full = api.llama_token_data_array(data=data, size=n, selected=-1, sorted=False)
        api.llama_sampler_apply(self._sampler, ctypes.byref(full))
        out = np.array(rec["logit"], dtype=scores.dtype, copy=True)
        return out

    def close(self) -> None:
        if self._sampler:
            self._api.llama_sampler_free(self._sampler)
            self._sampler = None
