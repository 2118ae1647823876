"""``Agent.warm`` (``tinyagent warm``): the planner prompt's static start, found by comparing the prompts of
unrelated requests, goes to the model's ``save_prefix``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tinyagent import Agent
from tinyagent._prompts import planner_system_prompt
from tinyagent.apps._demo_tools import demo_tools
from tinyagent.models import ScriptedModel


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
    agent = Agent(tools=demo_tools(), model=model)
    saved = agent.warm_sync()
    ((message,),) = model.saved
    assert message["role"] == "system" and saved == len(message["content"])
    assert message["content"] == planner_system_prompt(agent.registry.values(), format_examples=True)
    assert "get_calendar_events(date: str)" in message["content"]


def test_a_retriever_leaves_the_rules_before_the_tools() -> None:
    model = SavingModel()
    agent = Agent(tools=demo_tools(), model=model, retriever=OneToolRetriever())
    agent.warm_sync()
    ((message,),) = model.saved
    head = message["content"]
    assert head.endswith("\n") and "Rules:" in head
    assert not any(f"{name}(" in head for name in demo_tools())


def test_a_model_without_a_prefix_cache_saves_nothing() -> None:
    assert Agent(tools=demo_tools(), model=ScriptedModel(["1. join()\n"])).warm_sync() == 0
