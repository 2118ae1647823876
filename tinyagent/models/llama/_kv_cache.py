"""The on-disk KV prefix cache of :class:`~tinyagent.models.LlamaCppModel` (see its docstring for the design)."""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import logging
import os
import re
import struct
import threading
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...errors import ModelIntegrityError

log = logging.getLogger("tinyagent.models.llama")

SYSTEM_TAIL_TOKENS = 64
"""Save a prompt's whole system message when at least this many of its tokens are not in the loaded prefix."""


class PrefixCaching:
    """The prefix-cache half of :class:`LlamaCppModel`: which prompt prefix to load, evaluate and save.

    Expects ``_llm``, ``_formatter``, ``_tokenize_lock``, ``_prefix_store``, ``_prefix_min_tokens`` and
    ``last_prefix_loaded`` on the instance.
    """

    _llm: Any
    _formatter: Any
    _tokenize_lock: Any
    _prefix_store: _PrefixStore | None
    _prefix_min_tokens: int
    last_prefix_loaded: int

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

    def _prepare_prompt(self, messages: Sequence[dict[str, Any]]) -> tuple[Any, int, list[_Snapshot]]:
        """Load the best saved prefix, and pick, evaluate and snapshot the prefixes worth saving.

        Returns the prompt tokens (None when they cannot be predicted), the tokens evaluated here, and the snapshots
        to write once the completion is done. Called with the lock held.
        """
        self.last_prefix_loaded = 0
        if not self._tokens_predictable():
            return None, 0, []
        tokens, boundary = self._prompt_ids(messages)
        store = self._prefix_store
        if store is None:
            return tokens, 0, []
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
        targets = []
        if parted is not None and minimum <= parted <= boundary:
            targets.append(parted)  # shared by two prompts: the static part (rules, tools) when examples vary
        # The whole system message too when at least SYSTEM_TAIL_TOKENS of it are left beyond what is covered (a
        # ``tinyagent warm`` prefix holds the rules and tools; the per-request examples follow): a later request
        # with the same examples (the same request, or a similar one) then loads it whole instead of evaluating
        # them again (~4 s for ~270 tokens on 2 cores). The folder's LRU cap bounds the files.
        covered = max([cached, *targets])
        if (cached < minimum and not targets) or boundary - covered >= SYSTEM_TAIL_TOKENS:
            targets.append(boundary)
        targets = [t for t in targets if t >= minimum and not store.has(tokens[:t])]
        if not targets:
            return tokens, 0, []
        keep = min(cached, targets[0])
        if llm.n_tokens > keep and not llm._ctx.kv_cache_seq_rm(-1, keep, -1):
            log.debug("prefix cache: llama.cpp cannot truncate this model's KV cache; not saving")
            return tokens, 0, []
        llm.n_tokens = keep
        snapshots = []
        for target in targets:
            if target > llm.n_tokens:
                llm.eval(tokens[llm.n_tokens:target].tolist())
            snapshots.append(_Snapshot(tokens[:target].copy(), self._capture_kv()))
        return tokens, llm.n_tokens - keep, snapshots

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


    def _check_prediction(self, tokens: Any) -> None:
        """Turn the prefix cache off if llama-cpp-python evaluated other tokens than predicted (never seen)."""
        import numpy as np

        llm = self._llm
        if tokens is None or self._prefix_store is None or llm.n_tokens < len(tokens):
            return
        if not np.array_equal(llm.input_ids[: len(tokens)], tokens):
            log.warning("prefix cache: the prompt tokens differ from the predicted ones; turning the cache off")
            self._prefix_store = None



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


class _CorruptFile(ModelIntegrityError):
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

