"""``Agent.warm`` (``tinyagent warm``): the planner prompt's static start, found by comparing the prompts of
unrelated requests, goes to the model's ``save_prefix``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tinyagent import Agent, tool
from tinyagent._prompts import planner_system_prompt
from tinyagent.models import ScriptedModel


@tool(effects="read")
def get_email_address(name: str) -> str:
    """Look up a contact's email address.

    Args:
        name: the contact's name.
    """
    return f"{name.lower()}@example.com"


@tool(effects="read")
def get_weather(city: str) -> str:
    """Today's weather in a city.

    Args:
        city: the city.
    """
    return "sunny"


class SavingModel(ScriptedModel):
    def __init__(self) -> None:
        super().__init__(["1. join()\n"])
        self.saved: list[list[dict[str, Any]]] = []

    async def save_prefix(self, messages: Sequence[dict[str, Any]]) -> int:
        self.saved.append(list(messages))
        return len(str(messages[0]["content"]))


@dataclass(frozen=True)
class Retrieved:
    tools: tuple[str, ...]
    examples: tuple[Any, ...] = ()
    uncertain: bool = False


class OneToolRetriever:
    """Offers one tool per request, a different one for different requests."""

    def fit(self, registry: Any, examples: Any = ()) -> None:
        self.names = list(registry)

    def retrieve(self, query: str) -> Retrieved:
        return Retrieved((self.names[len(query) % len(self.names)],))

    def widen(self, query: str, previous: Any, hint: str = "") -> Retrieved:
        return Retrieved(tuple(self.names))


def test_every_tool_offered_saves_the_whole_system_message() -> None:
    model = SavingModel()
    agent = Agent(tools=[get_email_address, get_weather], model=model)
    saved = agent.warm_sync()
    ((message,),) = model.saved
    assert message["role"] == "system" and saved == len(message["content"])
    assert message["content"] == planner_system_prompt(agent.registry.values(), format_examples=True)
    assert "get_weather(city: str)" in message["content"]


def test_a_retriever_leaves_the_rules_before_the_tools() -> None:
    model = SavingModel()
    agent = Agent(tools=[get_email_address, get_weather], model=model, retriever=OneToolRetriever())
    agent.warm_sync()
    ((message,),) = model.saved
    head = message["content"]
    assert head.endswith("\n") and "Rules:" in head
    assert "get_email_address(" not in head and "get_weather(" not in head


def test_a_model_without_a_prefix_cache_saves_nothing() -> None:
    assert Agent(tools=[get_weather], model=ScriptedModel(["1. join()\n"])).warm_sync() == 0
