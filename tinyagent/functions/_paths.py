"""Path confinement, atomic writes and per-file locks for the built-in tools."""

from __future__ import annotations

import os
import re
import tempfile
import threading
import unicodedata
from collections.abc import Sequence
from pathlib import Path

from ..errors import PathEscapeError
from ._errors import InvalidArgument

__all__ = ["atomic_write", "confine", "safe_filename", "store_lock"]

_locks: dict[Path, threading.RLock] = {}
_locks_guard = threading.Lock()
_UNSAFE = re.compile(r'[\x00-\x1f<>:"/\\|?*]+')


def confine(path: str | os.PathLike[str], roots: Sequence[Path], *, must_exist: bool = False) -> Path:
    """Resolve ``path`` (following symlinks) and require it to lie inside one of ``roots``.

    A relative path is taken relative to the first root under which it exists, else relative to the first root.
    ``~`` is expanded, so ``~/.ssh/id_rsa`` is checked like any other absolute path.

    Args:
        path: the path a tool was given.
        roots: the directories the tools may touch.
        must_exist: also require the path to exist.

    Returns:
        The resolved, absolute path.

    Raises:
        PathEscapeError: the path resolves outside every root (``..`` traversal or a symlink that points out),
            is empty, or contains a NUL byte.
        ItemNotFound: ``must_exist`` is set and nothing is there.
    """
    from ._errors import ItemNotFound

    text = os.fspath(path)
    if not text.strip() or "\x00" in text:
        raise PathEscapeError(f"{text!r} is not a usable path; give a file name or a path inside the data folder")
    if not roots:
        raise PathEscapeError("no data roots are configured, so no path is allowed; set FunctionsSettings.data_dir")
    resolved_roots = [Path(r).expanduser().resolve() for r in roots]
    candidate = Path(text).expanduser()
    if not candidate.is_absolute():
        options = [root / candidate for root in resolved_roots]
        candidate = next((o for o in options if o.exists()), options[0])
    try:
        resolved = candidate.resolve()
    except (OSError, RuntimeError) as exc:  # symlink loops, permission problems
        raise PathEscapeError(f"cannot resolve {text!r}: {exc}") from exc
    if not any(resolved == root or resolved.is_relative_to(root) for root in resolved_roots):
        allowed = ", ".join(str(r) for r in resolved_roots)
        raise PathEscapeError(
            f"{text!r} resolves to {resolved}, which is outside the allowed folders ({allowed}); "
            "use a file inside them"
        )
    if must_exist and not resolved.exists():
        raise ItemNotFound(f"{text!r} does not exist; use find_file to look it up by name")
    return resolved


def atomic_write(path: Path, data: bytes | str) -> None:
    """Write ``data`` to ``path`` all at once: a temporary file in the same folder, fsync, then ``os.replace``.

    A crash or an exception leaves either the old file or the new one, never half of it.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def store_lock(path: Path) -> threading.RLock:
    """The process-wide lock for one store file, so parallel plan steps never lose each other's writes."""
    key = path.resolve()
    with _locks_guard:
        lock = _locks.get(key)
        if lock is None:
            lock = _locks[key] = threading.RLock()
        return lock


def safe_filename(title: str, what: str = "title") -> str:
    """A file-name stem for ``title`` that is valid on Linux, macOS and Windows.

    Raises:
        InvalidArgument: nothing usable is left (an empty title, or only dots and separators).
    """
    name = unicodedata.normalize("NFC", title)
    name = _UNSAFE.sub(" ", name)
    name = re.sub(r"\s+", " ", name).strip().strip(".").strip()
    if not name:
        raise InvalidArgument(f"the {what} {title!r} is empty or has no usable characters; give a short {what}")
    return name[:120]
