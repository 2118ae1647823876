"""The example-agreement routing signal: a local plan unlike the nearest worked example goes to the cloud."""

from __future__ import annotations

import datetime as dt

import pytest

from tinyagent import Agent, Example, Plan, tool
from tinyagent._routing_base import RouteSignals
from tinyagent.models import Pricing, ScriptedModel
from tinyagent.routing import EscalationThresholds, LocalFirst, Router, RouteRecord, calibrate, simulate

TODAY = dt.date(2026, 12, 1)


@tool
def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"sunny in {city}"


@tool
def send_message(to: str, text: str) -> str:
    """Send a text message."""
    return f"sent to {to}"


def pool() -> list[Example]:
    """More examples than the prompt holds, so the agent picks them by similarity."""
    weather = [Example(f"what is the weather in {c}", Plan.from_json([{"id": 1, "name": "get_weather",
                                                                      "args": {"city": c}}]), TODAY)
               for c in ("Paris", "Rome", "Oslo")]
    texts = [Example(f"text {p} that I am late", Plan.from_json([{"id": 1, "name": "send_message",
                                                                  "args": {"to": p, "text": "I am late"}}]), TODAY)
             for p in ("Ann", "Bob", "Cy")]
    return weather + texts


WRONG = '1. send_message(to="Oslo", text="weather")\n2. join()\n<END_OF_PLAN>'
RIGHT = '1. get_weather(city="Oslo")\n2. join()\n<END_OF_PLAN>'


def test_local_first_escalates_on_disagreement_only_when_enabled() -> None:
    signals = RouteSignals(previous_model="local", example_disagreement=True)
    off = LocalFirst().decide("verify", signals, cloud_name="cloud")
    on = LocalFirst(EscalationThresholds(escalate_on_example_disagreement=True)).decide(
        "verify", signals, cloud_name="cloud")
    assert off.target == "local"
    assert on.target == "cloud" and "most similar worked example" in on.reasons[0]


async def test_plan_reports_disagreement_with_the_nearest_example() -> None:
    agent = Agent([get_weather, send_message], model=ScriptedModel([WRONG]), examples=pool(), max_examples=2)
    assert (await agent.plan("what is the weather in Oslo", today=TODAY)).example_disagreement is True
    agent = Agent([get_weather, send_message], model=ScriptedModel([RIGHT]), examples=pool(), max_examples=2)
    assert (await agent.plan("what is the weather in Oslo", today=TODAY)).example_disagreement is False
    fixed = Agent([get_weather, send_message], model=ScriptedModel([WRONG]), examples=pool()[:2], max_examples=4)
    assert (await fixed.plan("what is the weather in Oslo", today=TODAY)).example_disagreement is False  # no signal


async def test_agent_escalates_a_plan_unlike_the_nearest_example_to_the_cloud() -> None:
    local = ScriptedModel([WRONG, "Done."], name="local")
    cloud = ScriptedModel([RIGHT, "It is sunny in Oslo."], name="cloud", pricing=Pricing(1.0, 1.0))
    router = Router(local, cloud, LocalFirst(EscalationThresholds(escalate_on_example_disagreement=True)))
    assert router.needs_verification
    agent = Agent([get_weather, send_message], router=router, examples=pool(), max_examples=2, joiner="llm")
    result = await agent.run("what is the weather in Oslo", today=TODAY)
    assert [s.name for s in result.steps if s.ok] == ["get_weather"]  # the local plan never ran
    assert result.models[:2] == ["local", "cloud"]
    assert any("unlike the nearest example: True" in n for n in result.notes)

    calm = ScriptedModel([RIGHT, "Sunny."], name="local")
    router = Router(calm, ScriptedModel([RIGHT], name="cloud"),
                    LocalFirst(EscalationThresholds(escalate_on_example_disagreement=True)))
    result = await Agent([get_weather, send_message], router=router, examples=pool(), max_examples=2,
                         joiner="llm").run("what is the weather in Oslo", today=TODAY)
    assert result.models == ["local", "local"]  # plan and join stayed on the device


def test_calibrate_picks_the_example_signal_when_it_separates_failures() -> None:
    # Logprobs carry no information; disagreement marks exactly the local failures.
    records = [RouteRecord(str(i), local_success=i % 3 != 0, cloud_success=True, local_mean_logprob=-0.1 * (i % 7),
                           local_example_disagreement=i % 3 == 0, cloud_cost=1.0) for i in range(60)]
    fitted = calibrate(records, target_cost=0.4, target_accuracy=0.95, relative=True)
    assert fitted.escalate_on_example_disagreement is True
    point = simulate(records, LocalFirst(fitted))
    assert point.success == pytest.approx(1.0) and point.cost_per_request <= 0.4
    assert RouteRecord.from_dict(records[0].to_dict()).local_example_disagreement is True
