"""The on-disk cache of automatic worked examples, keyed by a hash of the tool registry.

A registry that ships no worked examples gets them from :func:`tinyagent.finetune.build_examples` (or
``tinyagent examples build --tools tools.json``), which writes them here. The :class:`~tinyagent.Agent` reads the
file for its registry when the caller passed no examples; it never builds one itself, so the first request is never
held up. Any change to a tool's name, description or parameters changes the key, so a stale file is never read.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ._plan import Example, Plan
from ._tools import Tool

__all__ = ["FORMAT_VERSION", "example_cache_path", "load_cached_examples", "registry_key", "save_cached_examples"]

log = logging.getLogger("tinyagent.examples")

FORMAT_VERSION = 1
"""Bumped when the generator changes what it writes, so older files are rebuilt, not read."""


def registry_key(tools: Iterable[Tool]) -> str:
    """A stable hash of the tools' names, descriptions, parameter schemas and return notes (order-insensitive)."""
    specs = sorted(
        json.dumps({"name": t.name, "description": t.description, "parameters": t.parameters,
                     "returns": t.returns}, sort_keys=True, default=str) for t in tools)
    digest = hashlib.sha256(f"v{FORMAT_VERSION}\n".encode() + "\n".join(specs).encode("utf-8"))
    return digest.hexdigest()[:24]


def example_cache_path(tools: Iterable[Tool], root: Path | None = None) -> Path:
    """Where the automatic examples for ``tools`` live (``root``: default ``cache_dir()/examples``)."""
    if root is None:
        from .models import cache_dir

        root = cache_dir() / "examples"
    return root / f"{registry_key(tools)}.json"


def _example_to_json(example: Example) -> dict[str, Any]:
    return {"query": example.query, "calls": example.plan.to_json(),
            "today": example.today.isoformat() if example.today else None}


def _example_from_json(row: Mapping[str, Any]) -> Example:
    today = row.get("today")
    return Example(str(row["query"]), Plan.from_json(row.get("calls") or []),
                   dt.date.fromisoformat(today) if today else None)


def save_cached_examples(tools: Sequence[Tool], examples: Sequence[Example], *, root: Path | None = None,
                         meta: Mapping[str, Any] | None = None) -> Path:
    """Write ``examples`` for ``tools`` atomically; return the file."""
    path = example_cache_path(tools, root)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"version": FORMAT_VERSION, "key": registry_key(tools), "tools": sorted(t.name for t in tools),
            "meta": dict(meta or {}), "examples": [_example_to_json(e) for e in examples]}
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1, ensure_ascii=False)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def load_cached_examples(tools: Sequence[Tool], *, root: Path | None = None) -> tuple[Example, ...]:
    """The cached automatic examples for exactly these tools; () when there is no (readable, current) file.

    Examples that call a tool no longer in ``tools`` are skipped.
    """
    if not tools:
        return ()
    path = example_cache_path(tools, root)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return ()
    except (OSError, ValueError) as exc:
        log.warning("ignoring the example cache %s: %s", path, exc)
        return ()
    if not isinstance(data, dict) or data.get("version") != FORMAT_VERSION or data.get("key") != registry_key(tools):
        return ()
    names = {t.name for t in tools}
    out = []
    for row in data.get("examples") or []:
        try:
            example = _example_from_json(row)
        except (KeyError, TypeError, ValueError) as exc:
            log.warning("skipping a malformed cached example in %s: %s", path, exc)
            continue
        if example.tool_names <= names:
            out.append(example)
    log.info("loaded %d automatic examples from %s", len(out), path)
    return tuple(out)
