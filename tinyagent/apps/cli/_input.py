"""``plan --input`` batches: JSONL (any BOM-marked Unicode encoding), every line validated by pydantic."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ...errors import ConfigurationError
from .._files import read_text

__all__ = ["PlanRecord", "read_plan_records"]


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
