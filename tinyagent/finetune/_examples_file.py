"""Worked examples from a JSONL file (``--examples``): the format the eval set and :func:`distill` share."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from .._plan import Example, Plan
from ..errors import ConfigurationError

__all__ = ["load_examples"]


def load_examples(path: str | Path | None) -> list[Example]:
    """Worked examples from a JSONL file: ``{"query", "calls": [{"id", "name", "args"}], "today"?}`` per line (the eval
    set format works too).

    Raises:
        ConfigurationError: the file is missing or malformed.
    """
    if path is None:
        return []
    file = Path(path)
    if not file.is_file():
        raise ConfigurationError(f"examples file {file} does not exist")
    out = []
    for number, line in enumerate(file.read_text(encoding="utf-8-sig").splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            today = dt.date.fromisoformat(data["today"]) if data.get("today") else None
            out.append(Example(str(data["query"]), Plan.from_json(data.get("calls", [])), today))
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigurationError(f"{file}:{number} is not an example ({exc}); expected "
                                     '{"query": ..., "calls": [{"id": 1, "name": ..., "args": {...}}]}') from exc
    return out
