"""The shipped test doubles: ScriptedModel's scriptable confidence and floors, and the schema-driven TestModel."""

from __future__ import annotations

import datetime as dt
from typing import Literal

import pytest

import tinyagent.models
from tinyagent import Agent, tool
from tinyagent._plan_parser import parse_plan
from tinyagent.errors import ConfigurationError, ModelRequestsBlocked, TinyAgentError
from tinyagent.models import ModelRequest, Preference, ScriptedModel, TestModel
from tinyagent.models._base import check_allowed
from tinyagent.models._test_model import example_value, required_args
from tinyagent.routing import EscalationThresholds, LocalFirst, Router

DAY = dt.date(2026, 12, 1)
REQ = ModelRequest(messages=[{"role": "user", "content": "hi"}])


@tool
def send_email(to: list[str], subject: str, body: str = "", urgent: bool = False) -> str:
    """Send an email."""
    return f"sent to {', '.join(to)}: {subject}"


@tool
def set_alarm(hour: int, mode: Literal["vibrate", "ring"], minutes: int = 0) -> str:
    """Set an alarm."""
    return f"alarm at {hour:02d}:{minutes:02d} ({mode})"


@tool
def weather(city: str) -> str:
    """Today's weather in a city."""
    return f"sunny in {city}"


TOOLS = [send_email, set_alarm, weather]


# -- ScriptedModel: scripted log-probabilities and preference probabilities ----------------------------------------
async def test_mean_logprob_is_one_value_a_sequence_or_a_function() -> None:
    assert (await ScriptedModel(["x"]).complete(REQ)).mean_logprob == -0.1  # the default is unchanged
    assert (await ScriptedModel(["x"], mean_logprob=None).complete(REQ)).mean_logprob is None
    seq = ScriptedModel(["x"], mean_logprob=[-2.0, -0.5])
    assert [(await seq.complete(REQ)).mean_logprob for _ in range(3)] == [-2.0, -0.5, -0.5]
    seq.reset()
    assert (await seq.complete(REQ)).mean_logprob == -2.0
    fn = ScriptedModel(["x"], mean_logprob=lambda r: -float(len(r.messages)))
    assert (await fn.complete(REQ)).mean_logprob == -1.0
    with pytest.raises(ConfigurationError):
        ScriptedModel(["x"], mean_logprob=[])


async def test_preference_probs_are_reported_for_the_requests_preferences() -> None:
    prefer = (Preference("no_tool", r"\A1\. ?\Z", "join", 0.5), Preference("stop", r"\n\d+\. ?\Z", "join", 2.0))
    model = ScriptedModel(["1. join()\n<END_OF_PLAN>"], preference_probs={"no_tool": 0.7, "stop": 0.9, "other": 1.0})
    done = await model.complete(ModelRequest(messages=REQ.messages, prefer=prefer))
    assert done.preference_probs == (("no_tool", 0.7, True), ("stop", 0.9, False))
    assert (await model.complete(REQ)).preference_probs == ()  # nothing preferred, nothing reported
    low = ScriptedModel(["x"], preference_probs=lambda r: {"no_tool": 0.1})
    assert (await low.complete(ModelRequest(messages=REQ.messages, prefer=prefer))).preference_probs == (
        ("no_tool", 0.1, False),
    )


async def test_scripted_confidence_drives_the_router_to_escalate() -> None:
    good = '1. weather(city="Oslo")\n2. join()\n<END_OF_PLAN>'
    local = ScriptedModel([good, "Answer: sunny"], name="local", mean_logprob=-3.0)
    cloud = ScriptedModel([good, "Answer: sunny"], name="cloud", mean_logprob=-0.01)
    router = Router(local, cloud, LocalFirst(EscalationThresholds(min_mean_logprob=-1.0)))
    result = await Agent(tools=[weather], router=router).run("weather in Oslo?", today=DAY)
    assert [d["model"] for d in result.routing["decisions"]][:2] == ["local", "cloud"]  # type: ignore[index]
    assert len(cloud.requests) >= 1


async def test_scripted_floor_probability_reaches_the_plan_result() -> None:
    model = ScriptedModel(["1. join()\n<END_OF_PLAN>"], preference_probs={"no_tool": 0.42, "stop": 0.9})
    result = await Agent(tools=[weather], model=model).plan("hello there", today=DAY)
    assert result.no_tool_prob == 0.42
    assert result.stop_probs == (0.9,)


# -- TestModel -----------------------------------------------------------------------------------------------------
def test_example_values_validate_against_their_schemas() -> None:
    for t in TOOLS:
        args = required_args(t.parameters)
        assert set(args) == set(t.required)
        assert t.validate_args(args) is not None  # pydantic validation of the tool's own signature
    assert example_value({"type": "string", "format": "date"}) == "2026-01-01"
    assert example_value({"type": "integer", "minimum": 3}) == 3
    assert example_value({"type": "string", "minLength": 3}) == "aaa"
    assert example_value({"anyOf": [{"type": "null"}, {"type": "number"}]}) == 0.0
    assert example_value({"type": "array", "items": {"enum": ["x", "y"]}, "minItems": 2}) == ["x", "x"]
    assert example_value({"type": "object", "properties": {"a": {"type": "boolean"}}, "required": ["a"]}) == {
        "a": False
    }


async def test_test_model_plans_every_offered_tool_with_valid_arguments_then_joins() -> None:
    model = TestModel(TOOLS)
    # (ungrounded_optionals="keep": "do everything" gives no hour, and the repair would leave out set_alarm(hour=0))
    result = await Agent(tools=TOOLS, model=model, ungrounded_optionals="keep").plan("do everything", today=DAY)
    assert [c.name for c in result.plan.calls] == ["send_email", "set_alarm", "weather"]
    assert result.plan.calls[1].args == {"hour": 0, "mode": "vibrate"}
    assert model.plans[-1].splitlines()[-2:] == ["4. join()", "<END_OF_PLAN>"]


async def test_test_model_reads_schemas_from_the_prompt_when_not_given_tools() -> None:
    model = TestModel(call="first")
    plan = await Agent(tools=[set_alarm, weather], model=model).plan("wake me", today=DAY)
    assert [(c.name, c.args) for c in plan.plan.calls] == [("set_alarm", {"hour": 0, "mode": "vibrate"})]
    text = TestModel().plan_text("Tools:\n- f(x: list[int], y: \"a, b\" | \"c\", z: str = optional): F\n\nRequest: q")
    assert text == '1. f(x=[0], y="a, b")\n2. join()\n<END_OF_PLAN>'
    assert parse_plan(text, {}, validate=False).calls[0].args == {"x": [0], "y": "a, b"}


async def test_test_model_runs_end_to_end_and_answers_with_the_results() -> None:
    result = await Agent(tools=TOOLS, model=TestModel(TOOLS), joiner="llm").run("everything please", today=DAY)
    assert result.answer.startswith("done.")
    assert "sunny in a" in result.answer and "alarm at 00:00 (vibrate)" in result.answer


# -- no real model in unit tests -----------------------------------------------------------------------------------
def test_unit_tests_run_with_real_model_requests_switched_off() -> None:
    assert tinyagent.models.ALLOW_MODEL_REQUESTS is False
    with pytest.raises(ModelRequestsBlocked):
        check_allowed("qwen")
    assert issubclass(ModelRequestsBlocked, TinyAgentError)


@pytest.mark.real_model
def test_tests_marked_real_model_may_call_real_models() -> None:
    assert tinyagent.models.ALLOW_MODEL_REQUESTS is True
    check_allowed("qwen")
