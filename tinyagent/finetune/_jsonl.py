"""Append-only JSONL logs that survive a kill: a torn last line is cut off on load, every append is fsync'ed."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..errors import TrainingError

__all__ = ["JsonlLog", "read_jsonl", "write_jsonl"]

log = logging.getLogger(__name__)


class JsonlLog:
    """One JSON object per line, appended and flushed to disk one record at a time.

    A process killed mid-write leaves at most one partial line at the end; :meth:`load` truncates it, so the record
    is simply redone, never duplicated or half-read.

    Args:
        path: the file (created with its folder on first append).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def load(self) -> list[dict[str, Any]]:
        """Every complete record, after cutting off a torn last line.

        Raises:
            TrainingError: a line in the middle of the file is not JSON (the file was edited or corrupted).
        """
        if not self.path.is_file():
            return []
        data = self.path.read_bytes()
        *complete, tail = data.split(b"\n")
        records: list[dict[str, Any]] = []
        for number, line in enumerate(complete, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as exc:
                raise TrainingError(f"{self.path}:{number} is not JSON ({exc}); the file is corrupt: delete it (or "
                                    "the whole run folder) and start again") from exc
            if not isinstance(record, dict):
                raise TrainingError(f"{self.path}:{number} is not a JSON object; delete the run folder and start again")
            records.append(record)
        if tail.strip():
            try:
                record = json.loads(tail)
            except ValueError:
                record = None
            if isinstance(record, dict):
                # The record was written but its newline was not: keep it and finish the line.
                records.append(record)
                with self.path.open("ab") as f:
                    f.write(b"\n")
            else:
                log.warning("%s: dropping a torn last line (%d bytes) left by an interrupted run", self.path,
                            len(tail))
                with self.path.open("r+b") as f:
                    f.truncate(len(data) - len(tail))
        return records

    def append(self, record: dict[str, Any]) -> None:
        """Write one record as one line and flush it to disk."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
        with self.path.open("a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.load())


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Every record of a JSONL file.

    Raises:
        TrainingError: the file is missing or a line is not a JSON object.
    """
    file = Path(path)
    if not file.is_file():
        raise TrainingError(f"{file} does not exist")
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise TrainingError(f"{file} is not UTF-8 text ({exc}); give a JSONL file") from exc
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise TrainingError(f"{file}:{number} is not JSON ({exc})") from exc
        if not isinstance(record, dict):
            raise TrainingError(f"{file}:{number} is not a JSON object")
        out.append(record)
    return out


def write_jsonl(path: str | Path, records: Iterable[dict[str, Any]]) -> int:
    """Write ``records`` to ``path`` atomically; return how many were written."""
    file = Path(path)
    file.parent.mkdir(parents=True, exist_ok=True)
    tmp = file.with_name(f".{file.name}.tmp-{os.getpid()}")
    count = 0
    with tmp.open("w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
            count += 1
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, file)
    return count
