"""Small file helpers shared by synthesis, training and export: an inter-process lock and atomic JSON writes."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["atomic_write_json", "file_lock", "read_json"]


@contextlib.contextmanager
def file_lock(path: str | Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created) for the duration of the block."""
    lock = Path(path)
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def atomic_write_json(path: str | Path, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` so that a reader (or a kill) never sees half a file."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    with tmp.open("w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, indent=2, default=str)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, target)


def read_json(path: str | Path, default: Any = None) -> Any:
    """The JSON in ``path``, or ``default`` when the file does not exist."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return default
