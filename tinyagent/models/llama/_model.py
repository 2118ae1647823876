"""llama.cpp (llama-cpp-python) backend for GGUF models."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from ...errors import ConfigurationError, MissingDependencyError, ModelError
from .._base import Completion, Model, ModelRequest, Pricing, Usage, check_allowed
from .._cpu import free_cores, new_llama
from .._thread import submit_llama
from ._decode import DecodeStats, GrammarEngine, LookupRate, cut_stop, greedy_decode
from ._kv_cache import (
    PrefixCaching,
    _cache_enabled_by_env,
    _common_prefix,
    _model_identity,
    _PrefixStore,
    _Snapshot,
)
from ._processors import _GreedyGrammar, _LogprobTracker, _Preferences, _processor_list, _template_formatter

__all__ = ["LlamaCppModel"]

log = logging.getLogger("tinyagent.models.llama")


def _flash_attn_by_env() -> bool:
    return os.environ.get("TINYAGENT_FLASH_ATTN", "0").strip().lower() in {"1", "true", "yes", "on"}


def _vocab_cache(model_path: Path) -> Path | None:
    """Where llguidance's token list for this model file is kept (None: nowhere, the cache being turned off)."""
    import llama_cpp

    from .._cache import cache_dir
    from ._vocab import cache_file

    if not _cache_enabled_by_env():
        return None
    try:
        return cache_file(cache_dir() / "vocab", model_path, llama_cpp.__version__)
    except OSError:
        return None


class LlamaCppModel(PrefixCaching, Model):
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
        prefix_cache_dir: where saved prompt prefixes live (see below); ``"default"``: ``cache_dir() / "kv"``;
            None disables the cache (so does the environment variable ``TINYAGENT_KV_CACHE=0``).
        prefix_cache_max_bytes: size cap of that folder; the least recently used files go first.
        prefix_cache_min_tokens: shorter prefixes are not worth a file.
        decoder: how greedy requests decode: ``"speculative"`` (default: tinyagent's own loop, llguidance for the
            grammar, forced tokens and prompt-lookup drafts verified in batches; see ``_decode``), ``"greedy"`` (the
            same loop, one token per forward pass; the output is identical) or ``"llama"`` (llama-cpp-python's
            completion loop with the GBNF grammar). Sampling (temperature > 0) always uses llama-cpp-python's loop.
        use_mmap: map the GGUF file instead of reading it into memory. llama.cpp repacks most weights into its own
            memory for the CPU's SIMD kernels, and reading them through a mapping leaves the file's pages resident
            beside the copy: the 1.5B planner peaks at ~1.96 GB RSS mapped and ~1.37 GB read (default False). True
            shares the file's pages between processes that load the same model.
        flash_attn: llama.cpp's flash attention (prompt evaluation ~25% faster on 2 cores at a 2k-token context);
            default: the environment variable ``TINYAGENT_FLASH_ATTN`` (``1`` turns it on), else off. Saved KV
            prefixes are kept apart by this setting (the KV layout differs).

    Generation is serialised with a lock, because a ``Llama`` instance is not thread-safe.

    **Prompt-prefix cache on disk.** Within one process llama.cpp reuses its KV cache for the longest common token
    prefix of consecutive prompts; across processes (a one-shot ``tinyagent run``) nothing would be reused, and a
    planner prompt of ~1,800 tokens takes about a minute on two cores. So the KV state of a prompt's static prefix
    is saved to a file once, and later processes load it and evaluate only the rest.

    Which prefix: the planner's system message (rules, tools, few-shot examples) comes first and the request last
    (see ``tinyagent._prompts``), but the examples, and with a retriever the tools, are chosen per request. So the
    first prompt that resembles nothing saved saves its whole system message; when a later prompt (in this process
    or from a file) shares only part of an earlier one, the shared part, if it lies within the system message, is
    saved too: that is the part that is static (the rules and tools). The whole system message is saved as well
    when at least 64 of its tokens (the per-request examples) are past what was loaded, so the same request, or
    one with the same examples, loads it whole next time (a ~60 MB file for the 1.5B; the size cap bounds them).
    Request-specific text after the system message is never saved. The system
    message's end, in tokens, is the longest common prefix of the prompt and of its text cut after the system
    message's content, so a template that merges tokens across that point only shortens the prefix.

    How: the prefix to save is evaluated just before the rest of the prompt (no extra work), its KV cells are copied
    with ``llama_state_seq_get_data`` (KV only, not the logits), and the file is written after the completion,
    atomically (temporary file + rename), so concurrent processes at worst write the same file twice. A file is
    named after a hash of the model file (path, size, mtime), LoRA, ``n_ctx``, the llama-cpp-python version and the
    tokens; it holds the tokens and a CRC32, and one that does not check out is deleted with a warning and ignored.
    Before a prompt is evaluated, the saved file sharing the most leading tokens with it (if more than the
    in-memory KV cache does) is loaded with ``llama_state_seq_set_data`` and cut to the shared part, and
    llama-cpp-python evaluates only the remaining tokens. Greedy output is the same as without the cache (the tests
    check it). ``last_prompt_tokens_evaluated`` and ``last_prefix_loaded`` tell what the last request cost.

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
        prefix_cache_dir: str | Path | Literal["default"] | None = "default",
        prefix_cache_max_bytes: int = 1 << 30,
        prefix_cache_min_tokens: int = 256,
        decoder: Literal["speculative", "greedy", "llama"] = "speculative",
        use_mmap: bool = False,
        flash_attn: bool | None = None,
    ) -> None:
        try:
            import llama_cpp
        except ImportError as exc:
            raise MissingDependencyError("llama-cpp-python", "llama") from exc
        model_path, lora = self._locate(name, path, sha256, lora_path, catalog)
        self.path = model_path
        self.n_threads = n_threads or free_cores()
        self.flash_attn = _flash_attn_by_env() if flash_attn is None else flash_attn
        self.pricing = pricing or Pricing()
        self._lock = threading.Lock()
        self._tokenize_lock = threading.Lock()
        log.info("loading %s (%s) with %d thread(s)", self.name, model_path, self.n_threads)
        try:
            self._llm = new_llama(
                model_path=str(model_path),
                lora_path=str(lora) if lora else None,
                n_ctx=n_ctx,
                n_threads=self.n_threads,
                n_threads_batch=self.n_threads,
                chat_format=chat_format,
                seed=seed,
                use_mmap=use_mmap,
                flash_attn=self.flash_attn,
                verbose=False,
            )
        except Exception as exc:  # noqa: BLE001 - llama.cpp raises ValueError/RuntimeError on bad files
            raise ModelError(f"llama.cpp could not load {model_path}: {exc}") from exc
        self.n_ctx = n_ctx
        self.decoder = decoder
        self._grammar_engine: GrammarEngine | None = None
        if decoder != "llama":
            # Built in the background from now on (the first plan needs it; ~0.5 s with the vocabulary cached).
            self._grammar_engine = GrammarEngine(self._llm, _vocab_cache(model_path))
        self._lookup_rate = LookupRate()
        self.last_decode: DecodeStats | None = None
        """What the last greedy decode did (tokens, forward passes, accepted drafts); None after llama-cpp-python's."""
        self._formatter = _template_formatter(self._llm)
        self.last_prompt_tokens_evaluated: int | None = None
        """Prompt tokens llama.cpp evaluated for the last request (None when unknown: the model has no template)."""
        self.last_prefix_loaded = 0
        """Prompt tokens of the last request whose KV state came from the prefix cache on disk."""
        self._prefix_min_tokens = max(1, prefix_cache_min_tokens)
        self._prefix_store: _PrefixStore | None = None
        recurrent = getattr(self._llm, "_is_recurrent", False) or getattr(self._llm, "_is_hybrid", False)
        if prefix_cache_dir is not None and _cache_enabled_by_env() and self._tokens_predictable() and not recurrent:
            from .._cache import cache_dir

            root = cache_dir() / "kv" if prefix_cache_dir == "default" else Path(prefix_cache_dir).expanduser()
            identity = _model_identity(llama_cpp.__version__ + (" flash_attn" if self.flash_attn else ""), n_ctx,
                                       model_path, Path(str(lora)) if lora else None)
            self._prefix_store = _PrefixStore(root, identity, prefix_cache_max_bytes)

    def _locate(self, name: str | None, path: str | Path | None, sha256: str | None, lora_path: str | Path | None,
                catalog: Any) -> tuple[Path, str | Path | None]:
        """The verified model file and its LoRA adapter; sets ``self.name``."""
        from .._catalog import CatalogEntry, ModelCatalog

        if (name is None) == (path is None):
            raise ConfigurationError("give LlamaCppModel either a catalog name or a path, not both or neither")
        cat = catalog or ModelCatalog()
        if name is not None:
            self.name = name
            return cat.path(name), lora_path or cat.lora_path(name)
        model_path = Path(str(path)).expanduser()
        if not model_path.is_file():
            raise ConfigurationError(f"GGUF file {model_path} does not exist")
        if sha256:
            cat._verify(model_path, CatalogEntry(name=model_path.name, description="", sha256=sha256))
        self.name = model_path.stem
        return model_path, lora_path

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
        submit_llama(self._generate, request, loop, queue, stop)  # the thread that loaded the model (see _thread)
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

    async def prefill(self, messages: Sequence[dict[str, Any]]) -> int:
        """Evaluate the prompt of ``messages`` into the KV cache ahead of a request that will start with it.

        The prompt is cut at the end of the last message's content (no end of turn, no assistant header), so that
        message may still grow: the joiner's results are added this way as each step finishes, and the joiner's
        request then evaluates only what came after. Tokens already in the KV cache are not evaluated again; a
        later prompt that parts from these tokens only re-evaluates from where it parts, so a prefill never changes
        an answer, it only moves work earlier.

        Returns:
            The tokens evaluated (0 when all were cached, or the prompt's tokens cannot be predicted).

        Raises:
            ModelError: llama.cpp failed.
        """
        return await self._on_llama_thread(self._prefill, messages, "prefill")

    async def _on_llama_thread(self, work: Callable[[list[dict[str, Any]]], int],
                               messages: Sequence[dict[str, Any]], what: str) -> int:
        """Run ``work(messages)`` on the llama.cpp thread; any failure becomes a one-line ModelError."""
        check_allowed(self.name)
        try:
            return await asyncio.wrap_future(submit_llama(work, list(messages)))
        except ModelError:
            raise
        except Exception as exc:  # noqa: BLE001 - every llama.cpp failure becomes a ModelError
            raise ModelError(f"{self.name}: {what} failed: {exc}") from exc

    def _prefill(self, messages: list[dict[str, Any]]) -> int:
        if not messages or not self._tokens_predictable():
            return 0
        with self._lock:
            tokens = self._open_prompt_ids(messages)
            if tokens is None or len(tokens) < 2:
                return 0
            if _common_prefix(self._llm.input_ids[: self._llm.n_tokens], tokens) >= len(tokens):
                return 0  # all cached (a longer prompt that starts with these tokens is fine too)
            return self._evaluate_into_kv(tokens)

    def _evaluate_into_kv(self, tokens: Any) -> int:
        """Make the KV cache hold exactly ``tokens``, evaluating what it lacks (called with the lock held)."""
        llm = self._llm
        common = _common_prefix(llm.input_ids[: llm.n_tokens], tokens)
        if common >= len(tokens) and llm.n_tokens == len(tokens):
            return 0
        common = min(common, len(tokens) - 1)  # at least one token is decoded, so the state is exactly ``tokens``
        if llm.n_tokens > common:
            llm._ctx.kv_cache_seq_rm(-1, common, -1)
        llm.n_tokens = common
        llm.eval([int(t) for t in tokens[common:]])
        llm._requires_eval = True  # the logits are for a cut prompt: the next request decodes its own last token
        log.debug("prefill: %d tokens evaluated after %d cached", len(tokens) - common, common)
        return len(tokens) - common

    async def save_prefix(self, messages: Sequence[dict[str, Any]]) -> int:
        """Evaluate the prompt start of ``messages`` (as :meth:`prefill` cuts it) and save it to the on-disk prefix
        cache, so that the first request of a later process that starts with it loads it instead of evaluating it.

        Returns:
            The tokens saved (0 when the cache is off, the prefix is already saved, shorter than
            ``prefix_cache_min_tokens``, or the prompt's tokens cannot be predicted).

        Raises:
            ModelError: llama.cpp failed.
        """
        return await self._on_llama_thread(self._save_prefix, messages, "saving a prefix")

    def _save_prefix(self, messages: list[dict[str, Any]]) -> int:
        store = self._prefix_store
        if store is None or not messages or not self._tokens_predictable():
            return 0
        with self._lock:
            tokens = self._open_prompt_ids(messages)
            if tokens is None or len(tokens) < self._prefix_min_tokens or store.has(tokens):
                return 0
            self._evaluate_into_kv(tokens)
            snapshot = _Snapshot(tokens.copy(), self._capture_kv())
        store.write(snapshot)
        return len(tokens)

    def _open_prompt_ids(self, messages: list[dict[str, Any]]) -> Any:
        """The prompt tokens of ``messages`` up to the end of the last message's content (None if not found)."""
        import numpy as np

        content = messages[-1].get("content")
        if not isinstance(content, str) or not content:
            return None
        result = self._formatter(messages=messages)
        text = str(result.prompt)
        at = text.rfind(content)
        if at < 0:
            return None
        with self._tokenize_lock:
            ids = self._llm.tokenize(text[: at + len(content)].encode("utf-8"), add_bos=not result.added_special,
                                     special=True)
        return np.asarray(ids, np.intc)

    def _generate(
        self,
        request: ModelRequest,
        loop: asyncio.AbstractEventLoop,
        queue: asyncio.Queue[tuple[str, Any]],
        stop: threading.Event,
    ) -> None:
        def put(kind: str, payload: Any) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, (kind, payload))

        if stop.is_set():  # the consumer went away while this request waited for the llama.cpp thread
            return
        try:
            logprob = _LogprobTracker() if request.logprobs else None
            prefer = _Preferences(self, request.prefer, logprob) if request.prefer else None
            processors: list[Any] = [p for p in (logprob, prefer) if p is not None]
            with self._lock:
                start = time.perf_counter()
                tokens, evaluated, snapshots = self._prepare_prompt(request.messages)
                if tokens is not None:
                    evaluated += self._expected_evaluation(tokens)
                first: list[float] = []

                def emit(piece: str) -> None:
                    if not first:
                        first.append(time.perf_counter() - start)
                    put("text", piece)

                matcher = self._matcher(request, tokens)
                if matcher is not None:
                    text, n_out, finish = self._decode_greedy(request, tokens, matcher, processors, emit, stop)
                else:
                    text, n_out, finish = self._decode_llama(request, processors, emit, stop)
                    self._check_prediction(tokens)
                usage = Usage(self.prompt_tokens(request.messages), n_out, 1)
                self.last_prompt_tokens_evaluated = evaluated if tokens is not None else None
            store = self._prefix_store
            if store is not None:
                for snapshot in snapshots:
                    store.write(snapshot)
            put("done", Completion(
                text=text, usage=usage, model=self.name, finish_reason=finish,
                mean_logprob=logprob.mean() if logprob else None, ttft_s=first[0] if first else 0.0,
                elapsed_s=time.perf_counter() - start, preference_probs=tuple(prefer.seen) if prefer else (),
            ))
        except Exception as exc:  # noqa: BLE001 - every llama.cpp failure becomes a ModelError
            err = exc if isinstance(exc, ModelError) else ModelError(f"{self.name}: generation failed: {exc}")
            err.__cause__ = exc if err is not exc else None
            put("error", err)

    _FREE_TEXT = object()
    """``_matcher``'s answer for a greedy request without a grammar (own decoder, no grammar)."""

    def _matcher(self, request: ModelRequest, tokens: Any) -> Any:
        """What the own greedy decoder runs with: an llguidance matcher, ``_FREE_TEXT``, or None (llama-cpp-python's
        own path: sampling, an unpredictable prompt, the decoder turned off, or a grammar llguidance cannot take)."""
        if self.decoder == "llama" or request.temperature != 0 or tokens is None:
            return None
        if not request.grammar:
            return self._FREE_TEXT
        if self._grammar_engine is None:
            self._grammar_engine = GrammarEngine(self._llm, _vocab_cache(self.path))
        return self._grammar_engine.matcher(request.grammar)

    def _decode_greedy(self, request: ModelRequest, tokens: Any, matcher: Any, processors: list[Any],
                       emit: Callable[[str], None], stop: threading.Event) -> tuple[str, int, str]:
        stats = greedy_decode(
            self._llm, [int(t) for t in tokens], matcher=None if matcher is self._FREE_TEXT else matcher,
            max_tokens=request.max_tokens, stop=request.stop, processors=processors,
            speculate=self.decoder == "speculative", on_text=emit, cancelled=stop.is_set, lookup=self._lookup_rate,
        )
        self._llm._requires_eval = True  # the logits left in the context may belong to a rejected draft token
        self.last_decode = stats
        return stats.text, stats.tokens, stats.finish

    def _decode_llama(self, request: ModelRequest, processors: list[Any], emit: Callable[[str], None],
                      stop: threading.Event) -> tuple[str, int, str]:
        """llama-cpp-python's own completion loop (sampling, or greedy with the GBNF checked on the best token)."""
        from llama_cpp.llama_grammar import LlamaGrammar

        fast: _GreedyGrammar | None = None
        grammar = None
        if request.grammar and request.temperature == 0:
            fast = _GreedyGrammar(self._llm, request.grammar)
            processors = [*processors, fast]
        elif request.grammar:
            grammar = LlamaGrammar.from_string(request.grammar, verbose=False)
        kwargs: dict[str, Any] = dict(messages=list(request.messages), grammar=grammar, max_tokens=request.max_tokens,
                                      temperature=request.temperature, stream=True,
                                      stop=None if request.grammar else list(request.stop) or None)
        # (with a grammar, the grammar ends the text: a stop string the model writes inside a value does not)
        if request.temperature == 0:
            kwargs.update(top_k=1)
        if processors:
            kwargs["logits_processor"] = _processor_list(processors)
        parts: list[str] = []
        finish = "stop"
        try:
            for chunk in self._llm.create_chat_completion(**kwargs):
                if stop.is_set():
                    finish = "cancelled"
                    break
                choice = chunk["choices"][0]
                delta = choice.get("delta", {}).get("content")
                if delta:
                    parts.append(delta)
                    emit(delta)
                finish = choice.get("finish_reason") or finish
        finally:
            if fast is not None:
                fast.close()
        self.last_decode = None
        text = "".join(parts)
        if request.grammar:
            text = cut_stop(text, request.stop)
        return text, len(parts), finish

    def opening_tokens(self, text: str) -> tuple[frozenset[int], frozenset[int]]:
        """The token ids that open ``text``: ``(after a space, not after a space)``, memoised."""
        cache: dict[str, tuple[frozenset[int], frozenset[int]]] = self.__dict__.setdefault("_openers", {})
        if text not in cache:
            def first(piece: str) -> int | None:
                with self._tokenize_lock:
                    ids = self._llm.tokenize(piece.encode("utf-8"), add_bos=False, special=False)
                return int(ids[0]) if ids else None

            bare, spaced = first(text), first(" " + text)
            after_space = frozenset(i for i in (bare,) if i is not None)
            cache[text] = (after_space, frozenset(i for i in (bare, spaced) if i is not None))
        return cache[text]

    def __repr__(self) -> str:
        return f"LlamaCppModel(name={self.name!r}, n_threads={self.n_threads})"

    async def aclose(self) -> None:
        if self._grammar_engine is not None:
            await asyncio.to_thread(self._grammar_engine.wait)  # its thread reads the vocabulary that close frees
        with self._lock:
            self._llm.close()

