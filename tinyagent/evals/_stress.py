"""A large registry for stress tests: the built-in tools plus hundreds of distractors from BFCL's function docs."""

from __future__ import annotations

import json
from collections.abc import Iterable
from importlib import resources
from typing import Any

from .._tools import Tool, ToolRegistry
from ..errors import ConfigurationError

__all__ = ["load_distractors", "stress_registry"]

_DATA = "stress_distractors.json"


def load_distractors(count: int | None = None) -> list[Tool]:
    """Schema-only distractor tools (BFCL function docs, Apache-2.0), in a fixed order.

    Args:
        count: how many to return (all 400 by default).

    Raises:
        ConfigurationError: ``count`` is negative or larger than what ships.
    """
    raw: dict[str, Any] = json.loads(resources.files("tinyagent.retrieval").joinpath("data", _DATA).read_text("utf-8"))
    specs = raw["tools"]
    if count is not None and not 0 <= count <= len(specs):
        raise ConfigurationError(f"count must be between 0 and {len(specs)}, got {count}")
    return [Tool.from_openai(s) for s in specs[: len(specs) if count is None else count]]


def stress_registry(base: Iterable[Tool] | None = None, distractors: int | None = None) -> ToolRegistry:
    """``base`` (the built-in tools by default) followed by distractors whose names do not collide with it.

    Args:
        base: the real tools; defaults to ``tinyagent.functions.builtin_tools()``.
        distractors: how many distractors to add (all by default).

    Returns:
        The registry, base tools first.
    """
    if base is None:
        from ..functions import builtin_tools

        base = builtin_tools()
    registry = ToolRegistry(base)
    taken = {n.lower() for n in registry}
    for t in load_distractors(distractors):
        if t.name.lower() not in taken:
            taken.add(t.name.lower())
            registry.add(t)
    return registry
