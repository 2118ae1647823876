"""llama.cpp (llama-cpp-python) backend for GGUF models."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import hashlib
import logging
import math
import os
import re
import struct
import threading
import time
import zlib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any, Literal

from ..errors import ConfigurationError, MissingDependencyError, ModelError
from ._base import Completion, Model, ModelRequest, Preference, Pricing, Usage, check_allowed
from ._cpu import free_cores, new_llama

__all__ = ["LlamaCppModel", "free_cores"]

log = logging.getLogger(__name__)


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
        prefix_cache_dir: where saved prompt prefixes live (see below); ``"default"``: ``cache_dir() / "kv"``;
            None disables the cache (so does the environment variable ``TINYAGENT_KV_CACHE=0``).
        prefix_cache_max_bytes: size cap of that folder; the least recently used files go first.
        prefix_cache_min_tokens: shorter prefixes are not worth a file.

    Generation is serialised with a lock, because a ``Llama`` instance is not thread-safe.

    **Prompt-prefix cache on disk.** Within one process llama.cpp reuses its KV cache for the longest common token
    prefix of consecutive prompts; across processes (a one-shot ``tinyagent run``) nothing would be reused, and a
    planner prompt of ~1,800 tokens takes about a minute on two cores. So the KV state of a prompt's static prefix
    is saved to a file once, and later processes load it and evaluate only the rest.

    Which prefix: the planner's system message (rules, tools, few-shot examples) comes first and the request last
    (see ``tinyagent._prompts``), but the examples, and with a retriever the tools, are chosen per request. So the
    first prompt that resembles nothing saved saves its whole system message; when a later prompt (in this process
    or from a file) shares only part of an earlier one, the shared part, if it lies within the system message, is
    saved too: that is the part that is static (the rules and tools). Request-specific text (after the system
    message) is never saved, so a new request costs no new file once its static part is known. The system
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
            self._llm = new_llama(
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
        self.last_prompt_tokens_evaluated: int | None = None
        """Prompt tokens llama.cpp evaluated for the last request (None when unknown: the model has no template)."""
        self.last_prefix_loaded = 0
        """Prompt tokens of the last request whose KV state came from the prefix cache on disk."""
        self._prefix_min_tokens = max(1, prefix_cache_min_tokens)
        self._prefix_store: _PrefixStore | None = None
        recurrent = getattr(self._llm, "_is_recurrent", False) or getattr(self._llm, "_is_hybrid", False)
        if prefix_cache_dir is not None and _cache_enabled_by_env() and self._tokens_predictable() and not recurrent:
            from ._catalog import cache_dir

            root = cache_dir() / "kv" if prefix_cache_dir == "default" else Path(prefix_cache_dir).expanduser()
            identity = _model_identity(llama_cpp.__version__, n_ctx, model_path, Path(str(lora)) if lora else None)
            self._prefix_store = _PrefixStore(root, identity, prefix_cache_max_bytes)

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

    @property
    def prefix_cache_dir(self) -> Path | None:
        """The folder of saved prompt prefixes (None when the cache is off)."""
        return self._prefix_store.root if self._prefix_store is not None else None

    def _tokens_predictable(self) -> bool:
        """Whether the prompt tokens computed here are the ones ``create_chat_completion`` evaluates.

        Only then is it safe to evaluate a prefix ahead of it: with another chat format the work would be wasted.
        """
        llm = self._llm
        return self._formatter is not None and llm.chat_handler is None and llm.chat_format == "chat_template.default"

    def _prompt_ids(self, messages: Sequence[dict[str, Any]]) -> tuple[Any, int]:
        """The prompt tokens llama-cpp-python's template handler produces, and where the system message ends.

        Only called when :meth:`_tokens_predictable` (so there is a template formatter).
        """
        import numpy as np

        result = self._formatter(messages=list(messages))
        text = str(result.prompt)
        add_bos = not result.added_special
        with self._tokenize_lock:
            tokens = np.asarray(self._llm.tokenize(text.encode("utf-8"), add_bos=add_bos, special=True), np.intc)
            boundary = 0
            first = messages[0] if messages else {}
            content = first.get("content")
            if first.get("role") == "system" and isinstance(content, str) and content:
                at = text.find(content)
                if at >= 0:
                    head = self._llm.tokenize(text[: at + len(content)].encode("utf-8"), add_bos=add_bos, special=True)
                    boundary = _common_prefix(np.asarray(head, np.intc), tokens)
        return tokens, boundary

    def _prepare_prompt(self, messages: Sequence[dict[str, Any]]) -> tuple[Any, int, _Snapshot | None]:
        """Load the best saved prefix, and pick, evaluate and snapshot a prefix worth saving.

        Returns the prompt tokens (None when they cannot be predicted), the tokens evaluated here, and the snapshot
        to write once the completion is done. Called with the lock held.
        """
        self.last_prefix_loaded = 0
        if not self._tokens_predictable():
            return None, 0, None
        tokens, boundary = self._prompt_ids(messages)
        store = self._prefix_store
        if store is None:
            return tokens, 0, None
        llm = self._llm
        minimum = self._prefix_min_tokens
        cached = _common_prefix(llm.input_ids[: llm.n_tokens], tokens)
        # Where this prompt parts from a different earlier one (on disk or in memory): the prefix both share.
        parted = cached if cached < min(llm.n_tokens, len(tokens)) else None
        match = store.best_match(tokens, minimum, above=cached)
        if match is not None:
            if self._restore(store, *match):
                _, saved, common = match
                cached = self.last_prefix_loaded = common
                parted = common if common < len(saved) else None
            elif llm.n_tokens < cached:  # the failed load cleared the KV cache
                cached, parted = 0, None
        if parted is not None and minimum <= parted <= boundary:
            target = parted  # shared by two prompts: the static part (rules, tools) when examples vary per request
        elif cached < minimum:
            target = boundary  # nothing saved resembles this prompt: save its system message
        else:
            return tokens, 0, None
        if target < minimum or store.has(tokens[:target]):
            return tokens, 0, None
        keep = min(cached, target)
        if llm.n_tokens > keep and not llm._ctx.kv_cache_seq_rm(-1, keep, -1):
            log.debug("prefix cache: llama.cpp cannot truncate this model's KV cache; not saving")
            return tokens, 0, None
        llm.n_tokens = keep
        evaluated = target - keep
        if evaluated:
            llm.eval(tokens[keep:target].tolist())
        return tokens, evaluated, _Snapshot(tokens[:target].copy(), self._capture_kv())

    def _restore(self, store: _PrefixStore, path: Path, prefix: Any, common: int) -> bool:
        """Load the KV state of ``prefix`` from ``path`` and keep its first ``common`` tokens.

        A bad file is deleted (with a warning) and ignored.
        """
        import llama_cpp

        llm = self._llm
        try:
            data, offset, size = store.read(path, prefix)
            self._clear_kv()
            src = (ctypes.c_uint8 * size).from_buffer(data, offset)
            if llama_cpp.llama_state_seq_set_data(llm._ctx.ctx, src, size, 0) != size:
                raise _CorruptFile("llama.cpp rejected the KV state")
        except _CorruptFile as exc:
            self._clear_kv()
            log.warning("prefix cache: ignoring and deleting %s: %s", path, exc)
            path.unlink(missing_ok=True)
            return False
        except OSError as exc:  # vanished (evicted by another process) or unreadable: just a miss
            log.debug("prefix cache: cannot read %s: %s", path, exc)
            return False
        if common < len(prefix) and not llm._ctx.kv_cache_seq_rm(-1, common, -1):
            self._clear_kv()
            log.debug("prefix cache: llama.cpp cannot truncate this model's KV cache")
            return False
        llm.input_ids[:common] = prefix[:common]
        llm.n_tokens = common
        llm._requires_eval = True  # the logits are not restored: the next token must be decoded before sampling
        store.touch(path)
        log.info("prefix cache: loaded %d of %d tokens from %s", common, len(prefix), path.name)
        return True

    def _clear_kv(self) -> None:
        self._llm._ctx.kv_cache_seq_rm(-1, 0, -1)
        self._llm.n_tokens = 0
        self._llm._requires_eval = True

    def _capture_kv(self) -> memoryview:
        """A copy of the KV cells of sequence 0 (what llama-cpp-python decodes into)."""
        import llama_cpp

        ctx = self._llm._ctx.ctx
        size = int(llama_cpp.llama_state_seq_get_size(ctx, 0))
        buf = (ctypes.c_uint8 * size)()
        n = int(llama_cpp.llama_state_seq_get_data(ctx, buf, size, 0))
        return memoryview(buf).cast("B")[:n]

    def _expected_evaluation(self, tokens: Any) -> int:
        """How many of ``tokens`` ``Llama.generate`` will evaluate, given its KV cache (mirrors its prefix rule)."""
        llm = self._llm
        common = _common_prefix(llm.input_ids[: llm.n_tokens], tokens)
        if common == len(tokens):
            if llm.n_tokens == len(tokens) and not getattr(llm, "_requires_eval", True):
                return 0
            common -= 1
        return len(tokens) - max(common, 0)

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
            prefer = _Preferences(self, request.prefer, logprob) if request.prefer else None
            fast: _GreedyGrammar | None = None
            grammar = None
            if request.grammar and request.temperature == 0:
                fast = _GreedyGrammar(self._llm, request.grammar)
            elif request.grammar:
                grammar = LlamaGrammar.from_string(request.grammar, verbose=False)
            with self._lock:
                start = time.perf_counter()
                tokens, evaluated, snapshot = self._prepare_prompt(request.messages)
                if tokens is not None:
                    evaluated += self._expected_evaluation(tokens)
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
                self.last_prompt_tokens_evaluated = evaluated if tokens is not None else None
                self._check_prediction(tokens)
            if fast is not None:
                fast.close()
            if snapshot is not None and self._prefix_store is not None:
                self._prefix_store.write(snapshot)
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
                with self._tokenize_lock:
                    ids = self._llm.tokenize(piece.encode("utf-8"), add_bos=False, special=False)
                return int(ids[0]) if ids else None

            bare, spaced = first(text), first(" " + text)
            after_space = frozenset(i for i in (bare,) if i is not None)
            cache[text] = (after_space, frozenset(i for i in (bare, spaced) if i is not None))
        return cache[text]

    def _check_prediction(self, tokens: Any) -> None:
        """Turn the prefix cache off if llama-cpp-python evaluated other tokens than predicted (never seen)."""
        import numpy as np

        llm = self._llm
        if tokens is None or self._prefix_store is None or llm.n_tokens < len(tokens):
            return
        if not np.array_equal(llm.input_ids[: len(tokens)], tokens):
            log.warning("prefix cache: the prompt tokens differ from the predicted ones; turning the cache off")
            self._prefix_store = None

    def __repr__(self) -> str:
        return f"LlamaCppModel(name={self.name!r}, n_threads={self.n_threads})"

    async def aclose(self) -> None:
        with self._lock:
            self._llm.close()


def _cache_enabled_by_env() -> bool:
    return os.environ.get("TINYAGENT_KV_CACHE", "1").strip().lower() not in {"0", "false", "no", "off"}


def _model_identity(version: str, n_ctx: int, model: Path, lora: Path | None) -> bytes:
    """What a saved KV state depends on besides the tokens (cheap: no hashing of the GGUF itself)."""
    parts = [f"llama-cpp-python {version}", f"n_ctx {n_ctx}"]
    for path in (model, lora):
        if path is not None:
            st = path.stat()
            parts.append(f"{path.resolve()} {st.st_size} {st.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode("utf-8")).digest()


def _common_prefix(a: Any, b: Any) -> int:
    """Length of the common prefix of two token arrays."""
    import numpy as np

    n = min(len(a), len(b))
    diff = np.flatnonzero(np.asarray(a[:n]) != np.asarray(b[:n]))
    return int(diff[0]) if len(diff) else n


class _CorruptFile(Exception):
    """A prefix-cache file that does not check out."""


class _Snapshot:
    """The KV state of a prompt prefix, copied out of llama.cpp and waiting to be written."""

    def __init__(self, tokens: Any, state: memoryview) -> None:
        self.tokens = tokens
        self.state = state


class _PrefixStore:
    """A folder of saved KV prefixes: ``<n tokens>-<hash>.kv``, each a header, the tokens and the KV state.

    The header holds a magic number, the model identity, the token count, the state size and a CRC32 of tokens and
    state. Only the names are listed to find candidates, so a lookup reads one file.
    """

    _MAGIC = b"TAKVC\x00\x00\x01"
    _HEADER = struct.Struct("<8s32sIQI")  # magic, model identity, n tokens, state bytes, crc32
    _NAME = re.compile(r"^(\d{6,})-[0-9a-f]{40}\.kv$")
    _STALE_TMP_S = 3600.0

    def __init__(self, root: Path, identity: bytes, max_bytes: int) -> None:
        self.root = root
        self.identity = identity
        self.max_bytes = max_bytes

    def path(self, tokens: Any) -> Path:
        import numpy as np

        digest = hashlib.sha256(self.identity + np.asarray(tokens, "<i4").tobytes()).hexdigest()[:40]
        return self.root / f"{len(tokens):06d}-{digest}.kv"

    def has(self, tokens: Any) -> bool:
        return self.path(tokens).is_file()

    def best_match(self, tokens: Any, min_tokens: int, *, above: int) -> tuple[Path, Any, int] | None:
        """The saved prefix sharing the most leading tokens with ``tokens`` (more than ``above`` and at least
        ``min_tokens``): its path, its tokens and how many it shares. Only the headers are read."""
        try:
            names = os.listdir(self.root)
        except OSError:
            return None
        files = sorted(((int(m.group(1)), m.group(0)) for m in map(self._NAME.match, names) if m), reverse=True)
        best: tuple[Path, Any, int] | None = None
        floor = max(above, min_tokens - 1)
        for length, name in files:
            if min(length, len(tokens)) <= floor:
                break
            path = self.root / name
            saved = self._read_tokens(path, length)
            if saved is None:
                continue
            common = _common_prefix(saved, tokens)
            if common > floor:
                best, floor = (path, saved, common), common
        return best

    def _read_tokens(self, path: Path, length: int) -> Any:
        """The tokens stored in ``path`` (None when it is for another model, unreadable or damaged: then deleted)."""
        import numpy as np

        head = self._HEADER.size
        try:
            with path.open("rb") as f:
                data = f.read(head + 4 * length)
        except OSError:
            return None
        if len(data) == head + 4 * length:
            magic, identity, n, _, _ = self._HEADER.unpack_from(data)
            if magic == self._MAGIC and n == length:
                return np.frombuffer(data, "<i4", n, head).astype(np.intc) if identity == self.identity else None
        log.warning("prefix cache: deleting damaged file %s", path)
        path.unlink(missing_ok=True)
        return None

    def read(self, path: Path, tokens: Any) -> tuple[bytearray, int, int]:
        """The file's bytes, where the KV state starts and its size, after checking it against ``tokens``.

        Raises:
            _CorruptFile: the file is truncated, damaged or for another model or prefix.
            OSError: the file cannot be read.
        """
        import numpy as np

        with path.open("rb") as f:
            data = bytearray(os.fstat(f.fileno()).st_size)
            got = f.readinto(data)
        head = self._HEADER.size
        if got != len(data) or len(data) < head:
            raise _CorruptFile("truncated")
        magic, identity, n, size, crc = self._HEADER.unpack_from(data)
        if magic != self._MAGIC:
            raise _CorruptFile("not a tinyagent KV file")
        if identity != self.identity or n != len(tokens):
            raise _CorruptFile("made for another model or prefix")
        if len(data) != head + 4 * n + size:
            raise _CorruptFile(f"{len(data)} bytes instead of {head + 4 * n + size}")
        view = memoryview(data)
        if zlib.crc32(view[head:]) != crc:
            raise _CorruptFile("checksum mismatch")
        if not np.array_equal(np.frombuffer(data, "<i4", n, head), tokens):
            raise _CorruptFile("the tokens differ")
        return data, head + 4 * n, size

    def write(self, snap: _Snapshot) -> None:
        """Save ``snap`` atomically, then trim the folder to the size cap; failures are logged, never raised."""
        import numpy as np

        ids = np.asarray(snap.tokens, "<i4").tobytes()
        total = self._HEADER.size + len(ids) + len(snap.state)
        if total > self.max_bytes:
            log.info("prefix cache: %d bytes for %d tokens exceed the cap %d", total, len(snap.tokens), self.max_bytes)
            return
        final = self.path(snap.tokens)
        tmp = final.with_name(f".{final.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            crc = zlib.crc32(snap.state, zlib.crc32(ids))
            with tmp.open("wb") as f:
                f.write(self._HEADER.pack(self._MAGIC, self.identity, len(snap.tokens), len(snap.state), crc))
                f.write(ids)
                f.write(snap.state)
            os.replace(tmp, final)
            log.info("prefix cache: saved %d tokens (%d bytes) to %s", len(snap.tokens), total, final)
        except OSError as exc:
            log.warning("prefix cache: could not save %s: %s", final, exc)
            tmp.unlink(missing_ok=True)
            return
        self.evict(keep=final)

    def touch(self, path: Path) -> None:
        """Mark ``path`` as recently used (eviction goes by mtime)."""
        with contextlib.suppress(OSError):
            os.utime(path)

    def evict(self, keep: Path | None = None) -> None:
        """Delete the least recently used files until the folder is within the cap (and stale temporary files)."""
        files: list[tuple[float, int, Path]] = []
        now = time.time()
        try:
            with os.scandir(self.root) as it:
                for entry in it:
                    try:
                        st = entry.stat()
                    except OSError:
                        continue
                    if entry.name.endswith(".tmp") and now - st.st_mtime > self._STALE_TMP_S:
                        Path(entry.path).unlink(missing_ok=True)
                    elif self._NAME.match(entry.name):
                        files.append((st.st_mtime, st.st_size, Path(entry.path)))
        except OSError as exc:
            log.warning("prefix cache: cannot list %s: %s", self.root, exc)
            return
        used = sum(size for _, size, _ in files)
        for _, size, path in sorted(files, key=lambda f: f[0]):
            if used <= self.max_bytes:
                break
            if path == keep:
                continue
            try:
                path.unlink(missing_ok=True)
            except OSError:
                continue
            used -= size
            log.info("prefix cache: evicted %s", path.name)


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

    @property
    def pending(self) -> Any:
        """The log-softmax of the logits this step saw (None before the first step)."""
        return self._pending

    def mean(self) -> float | None:
        return sum(self.values) / len(self.values) if self.values else None


class _Preferences:
    """Applies :class:`Preference` floors as a logits processor and records what it measured.

    The generated text is decoded incrementally (only the new tokens, through an incremental UTF-8 decoder), and
    when a :class:`_LogprobTracker` runs before it, its log-softmax of the same logits is reused.
    """

    def __init__(self, model: LlamaCppModel, prefs: Sequence[Preference],
                 tracker: _LogprobTracker | None = None) -> None:
        import codecs

        self._model = model
        self._prefs = [(re.compile(p.after), p) for p in prefs]
        self._tracker = tracker
        self._start: int | None = None
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._generated = ""
        self._decoded = 0
        self.seen: list[tuple[str, float, bool]] = []

    def _text(self, input_ids: Any) -> str:
        if self._start is None:
            self._start = len(input_ids)
        new = [int(t) for t in input_ids[self._start + self._decoded:]]
        if new:
            self._generated += self._decoder.decode(self._model.llama.detokenize(new))
            self._decoded += len(new)
        return self._generated

    def _probs(self, scores: Any, chosen: Any) -> Any:
        """The model's probabilities of ``chosen`` token ids at this step."""
        import numpy as np

        pending = self._tracker.pending if self._tracker is not None else None
        if pending is not None and len(pending) == len(scores):
            return np.exp(pending[chosen])
        top = float(np.max(scores))
        return np.exp(scores[chosen] - top) / float(np.sum(np.exp(scores - top)))

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
            chosen = np.array(ids)
            mass = self._probs(scores, chosen)
            prob = float(np.sum(mass))
            taken = prob >= pref.min_prob
            self.seen.append((pref.name, prob, taken))
            if taken:
                scores = np.array(scores, copy=True)
                scores[int(chosen[int(np.argmax(mass))])] = float(np.max(scores)) + 1.0
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
