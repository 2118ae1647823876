"""Made-up registries for planner tests: a tool as OpenAI-format JSON, in one line per tool."""

from __future__ import annotations

TEXT: dict[str, object] = {"type": "string"}


def openai_fn(name: str, desc: str, props: dict[str, object], required: list[str]) -> dict[str, object]:
    """One tool in OpenAI function-calling form, for ``ToolRegistry.from_openai``."""
    return {"type": "function", "function": {"name": name, "description": desc, "parameters": {
        "type": "object", "properties": props, "required": required}}}
