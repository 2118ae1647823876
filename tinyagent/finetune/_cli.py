"""What the command-line entry points share (no rich here): loading tools, teachers and examples from arguments."""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._plan import Example, Plan
from .._tools import Tool, ToolRegistry
from ..errors import ConfigurationError
from ..models._base import Model

__all__ = ["load_examples", "load_teacher", "load_tools_spec"]


def load_tools_spec(spec: str, data_dir: Path | None = None) -> ToolRegistry:
    """Tools from ``--tools``: a Python file (``my_tools.py``), ``builtin``, ``demo``, a JSON spec file, or
    ``MODULE:ATTRIBUTE``.

    A Python file may define ``TOOLS`` (or ``tools``): a registry, a list of tools/functions, or a factory; otherwise
    every module-level :class:`~tinyagent.Tool` is taken.

    Raises:
        ConfigurationError: nothing usable was found.
    """
    if spec.endswith(".py"):
        return _tools_from_file(Path(spec))
    if spec == "builtin":
        from ..functions import FunctionsSettings, builtin_tools

        settings = FunctionsSettings(data_dir=data_dir) if data_dir is not None else FunctionsSettings()
        return ToolRegistry(builtin_tools(settings))
    from ..apps._runtime import load_tools

    return load_tools(spec, data_dir)


def _tools_from_file(path: Path) -> ToolRegistry:
    if not path.is_file():
        raise ConfigurationError(f"tools file {path} does not exist")
    name = f"_tinyagent_user_tools_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ConfigurationError(f"cannot import {path} as Python")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - any error in the user's file is reported as a configuration error
        raise ConfigurationError(f"importing {path} failed: {type(exc).__name__}: {exc}") from exc
    found: Any = getattr(module, "TOOLS", None) or getattr(module, "tools", None)
    if callable(found) and not isinstance(found, Tool | ToolRegistry):
        found = found()
    if found is None:
        found = [v for v in vars(module).values() if isinstance(v, Tool)]
    registry = found if isinstance(found, ToolRegistry) else ToolRegistry(found)
    if not registry:
        raise ConfigurationError(f"{path} defines no tools: decorate functions with @tool or define TOOLS = [...]")
    return registry


def load_teacher(spec: str, *, threads: int | None = None) -> Model:
    """A teacher from ``--teacher``: an ``http(s)://`` URL of an OpenAI-compatible endpoint (``URL#model`` picks the
    model), a catalog name, a ``.gguf`` path, ``openai:URL`` or ``scripted:FILE.json``.

    Raises:
        ConfigurationError, MissingDependencyError, ModelError.
    """
    from ..apps._runtime import load_model_spec

    if spec.startswith(("http://", "https://")):
        spec = "openai:" + spec
    return load_model_spec(spec, threads=threads)


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
    for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
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


def parse_types(value: str) -> Sequence[str]:
    """``"Q8_0,Q4_K_M"`` -> ``["Q8_0", "Q4_K_M"]`` (empty for ``""`` or ``"none"``)."""
    if value.strip().lower() in ("", "none"):
        return []
    return [v.strip().upper() for v in value.split(",") if v.strip()]
