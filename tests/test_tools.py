"""Tools: schema from signatures and docstrings, validation, calls, OpenAI/BFCL round-trips."""

from __future__ import annotations

import asyncio
import time
from typing import Literal

import pytest

import tinyagent
from tinyagent import Tool, ToolContext, ToolRegistry, tool
from tinyagent.errors import (
    ConfirmationDenied,
    PlanValidationError,
    ToolDefinitionError,
    ToolExecutionError,
    ToolNotExecutable,
    ToolTimeout,
)


@tool
def create_event(title: str, start: str, duration_minutes: int = 30, invitees: list[str] | None = None) -> dict:
    """Create a calendar event.

    Args:
        title: what the event is called.
        start: when it starts, YYYY-MM-DDTHH:MM.
        duration_minutes: how long it lasts.
        invitees: email addresses to invite.

    Returns:
        the created event.
    """
    return {"title": title, "start": start, "minutes": duration_minutes, "invitees": invitees or []}


def test_public_api_is_explicit() -> None:
    assert sorted(tinyagent.__all__) == sorted(set(tinyagent.__all__))
    for name in tinyagent.__all__:
        assert hasattr(tinyagent, name), name


def test_import_is_light() -> None:
    import subprocess
    import sys

    heavy = "('llama_cpp', 'torch', 'onnxruntime', 'numpy', 'transformers')"
    code = f"import sys, tinyagent; print(sorted(m for m in {heavy} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_schema_and_descriptions_from_docstring() -> None:
    assert create_event.name == "create_event"
    assert create_event.description == "Create a calendar event."
    props = create_event.parameters["properties"]
    assert props["title"] == {"type": "string", "description": "what the event is called."}
    assert props["duration_minutes"]["type"] == "integer"
    assert props["invitees"]["type"] == "array" and props["invitees"]["nullable"] is True
    assert create_event.required == ["title", "start"]
    assert create_event.returns == "the created event."


def test_decorator_with_options_and_context_param_hidden() -> None:
    @tool(name="wipe", description="Delete everything.", timeout=1.5, requires_confirmation=True)
    def delete_all(folder: str, ctx: ToolContext) -> str:
        return folder

    assert delete_all.name == "wipe" and delete_all.timeout == 1.5 and delete_all.requires_confirmation
    assert list(delete_all.parameters["properties"]) == ["folder"]


def test_validation_coerces_and_rejects() -> None:
    assert create_event.validate_args({"title": "x", "start": "s", "duration_minutes": "45"})["duration_minutes"] == 45
    with pytest.raises(PlanValidationError, match="duration_minutes"):
        create_event.validate_args({"title": "x", "start": "s", "duration_minutes": "soon"})
    with pytest.raises(PlanValidationError, match="unknown argument"):
        create_event.validate_args({"title": "x", "start": "s", "colour": "red"})
    with pytest.raises(PlanValidationError, match="start"):
        create_event.validate_args({"title": "x"})


def test_bad_definitions_raise_typed_errors() -> None:
    def untyped(x):  # type: ignore[no-untyped-def]
        return x

    with pytest.raises(ToolDefinitionError, match="annotation"):
        tool(untyped)
    with pytest.raises(ToolDefinitionError, match=r"\*args"):

        @tool
        def f(*items: int) -> int:
            return 0

    with pytest.raises(ToolDefinitionError, match="not valid"):
        Tool.from_openai({"name": "bad name!", "parameters": {}})
    with pytest.raises(ToolDefinitionError, match="unique"):
        ToolRegistry([create_event, create_event])


async def test_sync_and_async_calls_and_errors() -> None:
    assert (await create_event.call({"title": "t", "start": "s"}))["minutes"] == 30

    @tool
    async def slow(seconds: float) -> str:
        """Sleep."""
        await asyncio.sleep(seconds)
        return "done"

    fast = Tool(**{**slow.__dict__, "timeout": 0.05})
    with pytest.raises(ToolTimeout, match="0.05"):
        await fast.call({"seconds": 5})

    @tool
    def boom() -> None:
        """Fail."""
        raise RuntimeError("disk on fire")

    with pytest.raises(ToolExecutionError, match="disk on fire") as info:
        await boom.call({})
    assert isinstance(info.value.__cause__, RuntimeError)


async def test_sync_tool_timeout_does_not_block_the_loop() -> None:
    @tool(timeout=0.1)
    def hang() -> str:
        """Hang."""
        time.sleep(1.0)
        return "late"

    started = time.perf_counter()
    with pytest.raises(ToolTimeout):
        await hang.call({})
    assert time.perf_counter() - started < 0.8


async def test_confirmation_hook() -> None:
    @tool(requires_confirmation=True)
    def send(to: str) -> str:
        """Send."""
        return to

    with pytest.raises(ConfirmationDenied):
        await send.call({"to": "a"})  # default hook refuses
    seen = []

    def allow(req: tinyagent.ConfirmationRequest) -> bool:
        seen.append(req)
        return True

    assert await send.call({"to": "a"}, ToolContext(confirm_hook=allow)) == "a"
    assert seen[0].tool == "send" and seen[0].details == {"to": "a"}


def test_openai_round_trip_and_schema_only_tools() -> None:
    spec = create_event.to_openai()
    back = Tool.from_openai(spec)
    assert back.to_openai() == spec
    assert not back.executable
    with pytest.raises(ToolNotExecutable):
        asyncio.run(back.call({"title": "x", "start": "y"}))
    assert back.validate_args({"title": "x", "start": "y", "duration_minutes": 5.0})["duration_minutes"] == 5
    with pytest.raises(PlanValidationError):
        back.validate_args({"title": 3, "start": "y"})


def test_bfcl_dialect() -> None:
    spec = {
        "name": "calc.area",
        "description": "Area.",
        "parameters": {
            "type": "dict",
            "properties": {
                "base": {"type": "float"},
                "dims": {"type": "tuple", "items": {"type": "integer"}},
                "meta": {"type": "any"},
                "unit": {"type": "string", "enum": ["cm", "m"]},
            },
            "required": ["base", "missing"],
        },
    }
    t = Tool.from_openai(spec)
    props = t.parameters["properties"]
    assert t.parameters["type"] == "object" and t.required == ["base"]
    assert props["base"]["type"] == "number" and props["dims"]["type"] == "array"
    assert "type" not in props["meta"]
    assert t.validate_args({"base": 2, "dims": (1, 2), "unit": "m"}) == {"base": 2, "dims": [1, 2], "unit": "m"}
    with pytest.raises(PlanValidationError, match="not one of"):
        t.validate_args({"base": 2, "unit": "km"})


def test_literal_becomes_enum() -> None:
    @tool
    def pri(level: Literal["low", "high"]) -> str:
        """P."""
        return level

    assert pri.parameters["properties"]["level"]["enum"] == ["low", "high"]
