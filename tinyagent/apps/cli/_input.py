"""Reading the CLI's input files: text with any BOM (UTF-8, UTF-16, UTF-32), and JSONL batches validated by pydantic."""

from __future__ import annotations

import codecs
import datetime as dt
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ...errors import ConfigurationError

__all__ = ["PlanRecord", "read_plan_records", "read_text", "writable"]

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def read_text(path: Path) -> str:
    """The text of ``path``: UTF-8, or UTF-8/UTF-16/UTF-32 with a byte-order mark.

    Raises:
        ConfigurationError: the file cannot be read or is not text in one of those encodings.
    """
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigurationError(f"cannot read {path}: {exc.strerror or exc}") from exc
    encoding = next((enc for bom, enc in _BOMS if raw.startswith(bom)), "utf-8")
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as exc:
        raise ConfigurationError(f"{path} is not {encoding.upper()} text (undecodable byte at offset {exc.start}); "
                                 "save it as UTF-8") from exc


class PlanRecord(BaseModel):
    """One line of a ``plan --input`` batch."""

    model_config = ConfigDict(extra="ignore", strict=True)

    query: str
    id: str | int | None = None
    today: dt.date | None = None


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"]) or "the line"
    return f"'{where}': {error['msg']}"


def read_plan_records(path: Path) -> list[tuple[int, PlanRecord]]:
    """Every non-blank line of a JSONL batch as a validated record (all are checked before any is planned).

    Raises:
        ConfigurationError: the file is unreadable, or a line is not JSON or not a valid record.
    """
    records = []
    for number, line in enumerate(read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        try:
            data: Any = json.loads(line)
        except ValueError as exc:
            raise ConfigurationError(f"{path}:{number} is not JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise ConfigurationError(f"{path}:{number}: each line must be an object with a 'query' string")
        if isinstance(data.get("today"), str):  # strict mode takes dates as ISO strings only through JSON mode
            try:
                data["today"] = dt.date.fromisoformat(data["today"])
            except ValueError as exc:
                raise ConfigurationError(f"{path}:{number}: 'today' must be a date like 2026-12-01, "
                                         f"got {data['today']!r}") from exc
        try:
            records.append((number, PlanRecord.model_validate(data)))
        except ValidationError as exc:
            raise ConfigurationError(f"{path}:{number}: {_first_error(exc)} (each line is "
                                     '{"query": "...", "id"?: ..., "today"?: "YYYY-MM-DD"})') from exc
    return records


def writable(path: Path) -> Path:
    """``path`` with its parent folders created.

    Raises:
        ConfigurationError: the folder cannot be created.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigurationError(f"cannot create the folder {path.parent} for {path}: {exc.strerror or exc}") from exc
    return path
