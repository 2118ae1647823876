"""Unit tests of tool retrieval on tiny registries (no model, no onnxruntime needed except where stated)."""

from __future__ import annotations

import datetime as dt
import importlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tinyagent import Tool, ToolRegistry
from tinyagent._plan import Call, Example, Plan, Ref
from tinyagent.errors import ConfigurationError

pytest.importorskip("numpy", reason="retrieval needs numpy: pip install 'tinyagent[onnx]'")
pytest.importorskip("bm25s", reason="BM25 retrieval needs bm25s: pip install 'tinyagent[onnx]'")

from tinyagent.evals import load_distractors, stress_registry  # noqa: E402
from tinyagent.retrieval import (  # noqa: E402 - after the importorskip guards
    BM25Retriever,
    DependencyGraph,
    ExampleSelector,
    HybridRetriever,
    Retrieval,
    RetrieverNotFittedError,
    ToolRetriever,
    tool_document,
)
from tinyagent.retrieval._hybrid import noun_families, with_siblings  # noqa: E402


def _spec(tool_name: str, description: str, /, **params: str) -> Tool:
    return Tool.from_openai(
        {
            "name": tool_name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {p: {"type": "string", "description": d} for p, d in params.items()},
                "required": list(params),
            },
        }
    )


def small_registry() -> ToolRegistry:
    return ToolRegistry(
        [
            _spec("get_email_address", "Look up a contact's email address by name.", name="the person's name"),
            _spec("get_phone_number", "Look up a contact's phone number by name.", name="the person's name"),
            _spec("send_email", "Send a new email.", to="recipient addresses", subject="subject line", body="text"),
            _spec("send_message", "Send a text message (SMS).", recipients="phone numbers", text="the message"),
            _spec("create_calendar_event", "Put an event on the calendar.", title="event title", start="start time"),
            _spec("create_note", "Create a markdown note.", title="note title", body="note text"),
            _spec("create_reminder", "Add a reminder (to-do) to a list.", title="what to do", due="due date"),
            _spec("get_directions", "Make a map link with directions to a place.", destination="where to go"),
            _spec("find_file", "Find a file by name or content.", query="words from the file"),
            _spec("summarize_file", "Summarize a document in a few sentences.", path="the file path"),
        ]
    )


def _plan(*calls: tuple[str, dict[str, object]]) -> Plan:
    return Plan(calls=tuple(Call(i + 1, name, args) for i, (name, args) in enumerate(calls)))


def examples() -> list[Example]:
    day = dt.date(2026, 12, 1)
    return [
        Example(
            "Email Sid that lunch moved to noon",
            _plan(
                ("get_email_address", {"name": "Sid"}),
                ("send_email", {"to": [Ref(1)], "subject": "Lunch", "body": "Lunch moved to noon"}),
            ),
            day,
        ),
        Example(
            "Send an email to Ana about the budget",
            _plan(
                ("get_email_address", {"name": "Ana"}),
                ("send_email", {"to": [Ref(1)], "subject": "Budget", "body": "About the budget"}),
            ),
            day,
        ),
        Example(
            "Text Bob that I'm running late",
            _plan(
                ("get_phone_number", {"name": "Bob"}),
                ("send_message", {"recipients": [Ref(1)], "text": "Running late"}),
            ),
            day,
        ),
        Example(
            "Message Carla: see you soon",
            _plan(
                ("get_phone_number", {"name": "Carla"}),
                ("send_message", {"recipients": [Ref(1)], "text": "See you soon"}),
            ),
            day,
        ),
        Example("Remind me to buy milk tomorrow", _plan(("create_reminder", {"title": "buy milk", "due": "x"})), day),
        Example("Make a note about the standup", _plan(("create_note", {"title": "standup", "body": "..."})), day),
        Example(
            "Summarize the lunch menu file",
            _plan(("find_file", {"query": "lunch menu"}), ("summarize_file", {"path": Ref(1)})),
            day,
        ),
        Example("Hi, how are you?", Plan(calls=(), answer="I'm fine, how can I help?"), day),
        Example("Thanks a lot!", Plan(calls=(), answer="You're welcome."), day),
    ]


def test_tool_document_splits_the_name_and_lists_parameters() -> None:
    doc = tool_document(small_registry()["send_email"])
    assert doc.startswith("send email.")
    assert "Send a new email." in doc
    assert "subject: subject line" in doc


def test_bm25_ranks_the_named_tool_first_and_scores_every_tool() -> None:
    retriever = BM25Retriever(k=3)
    retriever.fit(small_registry(), examples())
    result = retriever.retrieve("put the dentist appointment on my calendar")
    assert isinstance(result, Retrieval)
    assert result.tools[0] == "create_calendar_event"
    assert set(result.scores) == set(small_registry())
    assert result.scores["create_calendar_event"] > result.scores["send_message"]


def test_bm25_matches_inflected_words_by_their_stem() -> None:
    # "locked" / "Locks", "converting" / "Converts": plural stripping alone leaves these apart.
    registry = ToolRegistry.from_openai([
        {"name": "lockDoors", "description": "Locks the doors of the vehicle.", "parameters": {"type": "object"}},
        {"name": "compute_rate", "description": "Converts an amount between currencies.",
         "parameters": {"type": "object"}},
        {"name": "start_engine", "description": "Starts the engine.", "parameters": {"type": "object"}},
    ])
    retriever = BM25Retriever(k=1)
    retriever.fit(registry)
    assert retriever.rank("make sure the car is locked")[0] == "lockDoors"
    assert retriever.rank("converting 100 yuan")[0] == "compute_rate"


def test_retrievers_implement_the_protocol() -> None:
    assert isinstance(BM25Retriever(), ToolRetriever)
    assert isinstance(HybridRetriever(embedder=False), ToolRetriever)


def test_retrieve_before_fit_is_a_user_error() -> None:
    with pytest.raises(RetrieverNotFittedError, match="call fit"):
        BM25Retriever().retrieve("anything")


def test_empty_registry_and_bad_settings_are_rejected() -> None:
    with pytest.raises(ConfigurationError, match="empty tool registry"):
        BM25Retriever().fit(ToolRegistry())
    with pytest.raises(ConfigurationError, match="k must be at least 1"):
        BM25Retriever(k=0)
    with pytest.raises(ConfigurationError, match="wide_k"):
        BM25Retriever(k=5, wide_k=2)


def test_dependencies_come_from_example_plans_not_from_names() -> None:
    plans = [
        _plan(("lookup_widget_id", {"q": "a"}), ("frob_widget", {"id": Ref(1)})),
        _plan(("lookup_widget_id", {"q": "b"}), ("frob_widget", {"id": Ref(1)})),
        _plan(("frob_widget", {"id": "known"})),
        _plan(("unrelated", {})),
    ]
    graph = DependencyGraph.from_plans(plans)
    assert graph.needs["frob_widget"] == {"lookup_widget_id": pytest.approx(2 / 3, abs=1e-3)}
    assert "unrelated" not in graph.needs
    assert graph.expand(["frob_widget"], {"frob_widget", "lookup_widget_id"}) == ("frob_widget", "lookup_widget_id")
    assert graph.expand(["frob_widget"], {"frob_widget"}) == ("frob_widget",)  # only tools that exist


def test_dependency_expansion_offers_the_lookup_a_send_needs() -> None:
    retriever = BM25Retriever(k=1, margin=0.0)
    retriever.fit(small_registry(), examples())
    result = retriever.retrieve("send an email with the subject line 'hello'")
    assert result.tools[0] == "send_email"
    assert "get_email_address" in result.tools
    without = BM25Retriever(k=1, margin=0.0, expand_dependencies=False)
    without.fit(small_registry(), examples())
    assert without.retrieve("send an email with the subject line 'hello'").tools == ("send_email",)


def test_examples_use_only_retrieved_tools() -> None:
    retriever = BM25Retriever(k=2, margin=0.0)
    retriever.fit(small_registry(), examples())
    for query in ["email Sid about lunch", "text Carla hello", "summarize the report file", "remind me to call"]:
        result = retriever.retrieve(query)
        assert result.examples, query
        for ex in result.examples:
            assert ex.tool_names <= set(result.tools), (query, ex.query, result.tools)


def test_example_selection_prefers_similar_examples_and_adds_an_empty_plan_when_conversational() -> None:
    pool = examples()
    selector = ExampleSelector(pool)
    sims = selector.similarities(selector.query_vector("email Ana about the budget"))
    chosen = selector.select({"get_email_address", "send_email"}, 2, sims)
    assert [e.query for e in chosen][0] == "Send an email to Ana about the budget"
    assert all(e.tool_names <= {"get_email_address", "send_email"} for e in chosen)
    chat = selector.similarities(selector.query_vector("hi, how are you today?"))
    assert selector.looks_conversational(chat)
    picked = selector.select({"send_email", "get_email_address"}, 3, chat, conversational=True)
    assert picked[0].plan.calls == ()
    assert not selector.looks_conversational(sims)


def test_nearest_tools_are_those_of_the_most_similar_examples_in_order() -> None:
    selector = ExampleSelector(examples())
    sims = selector.similarities(selector.query_vector("text Bob that I'm running late"))
    assert selector.nearest_tools(sims, 1) == ["get_phone_number", "send_message"]
    two = selector.nearest_tools(sims, 2)
    assert two[:2] == ["get_phone_number", "send_message"] and len(two) == len(set(two))
    assert selector.nearest_tools(sims, 0) == []
    everything = selector.nearest_tools(sims, 100)
    assert set(everything) == set().union(*(e.tool_names for e in examples()))


def test_no_match_is_uncertain_and_widens() -> None:
    retriever = BM25Retriever(k=2, wide_k=6)
    retriever.fit(small_registry(), examples())
    result = retriever.retrieve("zzz qqq")
    assert result.uncertain
    assert len(result.tools) >= 6


def test_widen_returns_a_superset_led_by_the_hint() -> None:
    retriever = BM25Retriever(k=2, wide_k=4, margin=0.0)
    retriever.fit(small_registry(), examples())
    first = retriever.retrieve("email Sid about lunch")
    assert "get_directions" not in first.tools
    wider = retriever.widen("email Sid about lunch", first, hint="no tool to get directions to a place on a map")
    assert set(first.tools) <= set(wider.tools)
    assert len(wider.tools) >= 2 * len(first.tools) or len(wider.tools) == len(small_registry())
    assert wider.tools[len(first.tools)] == "get_directions"
    assert wider.uncertain
    again = retriever.widen("email Sid about lunch", wider)
    assert set(wider.tools) <= set(again.tools) and len(again.tools) > len(wider.tools)


def test_widen_stops_at_the_whole_registry() -> None:
    retriever = BM25Retriever(k=5, wide_k=10)
    retriever.fit(small_registry(), examples())
    result = retriever.retrieve("email")
    for _ in range(3):
        result = retriever.widen("email", result)
    assert sorted(result.tools) == sorted(small_registry())


def test_calibrate_chooses_the_smallest_k_reaching_the_target() -> None:
    retriever = BM25Retriever(k=1, margin=0.0, expand_dependencies=False)
    retriever.fit(small_registry())
    cal = retriever.calibrate(examples(), target_recall=1.0)
    assert cal["recall"] == 1.0
    assert retriever.k == int(cal["k"])
    smaller = BM25Retriever(k=1, margin=0.0, expand_dependencies=False)
    smaller.fit(small_registry())
    assert smaller.calibrate(examples(), target_recall=0.5)["k"] <= cal["k"]
    with pytest.raises(ConfigurationError, match="calibrate"):
        retriever.calibrate([examples()[-1]])


def test_hybrid_without_embeddings_uses_bm25_and_example_votes() -> None:
    retriever = HybridRetriever(embedder=False, k=2, margin=0.0)
    retriever.fit(small_registry(), examples())
    # "text" is not in send_message's document, but the vote of the similar examples finds it.
    result = retriever.retrieve("text Dana that the meeting is off")
    assert "send_message" in result.tools[:2]
    assert "get_phone_number" in result.tools


def test_noun_families_group_tools_by_the_object_of_their_name() -> None:
    names = ["create_note", "open_note", "search_notes", "send_email", "forward_email", "get_today",
             "get_data", "load_data", "save_data"]
    families = noun_families(names, largest=2)
    assert families == {"email": frozenset({"send_email", "forward_email"})}  # "note" (3) and "data" (3) too large
    families = noun_families(names, largest=6)
    assert families["note"] == frozenset({"create_note", "open_note", "search_notes"})
    assert "get" not in families and "today" not in families  # verbs and one-tool words are no family


def test_siblings_join_only_when_the_request_names_their_noun_and_one_is_offered() -> None:
    names = ["create_note", "open_note", "search_notes", "send_email", "forward_email"]
    families = noun_families(names, largest=6)
    assert with_siblings(["open_note"], "Find notes about passport", families, names) == [
        "open_note", "create_note", "search_notes"]
    assert with_siblings(["open_note"], "Open the passport page", families, names) == ["open_note"]
    assert with_siblings(["send_email"], "New note about the offsite", families, names) == ["send_email"]
    # max_tools below the registry size (a registry of at most max_tools tools is offered whole)
    hybrid = HybridRetriever(embedder=False, k=1, margin=0.0, expand_dependencies=False, max_tools=4, fill_ratio=1)
    hybrid.fit(ToolRegistry([Tool.from_openai({"name": n, "description": n.replace("_", " ")}) for n in names]))
    assert set(hybrid.retrieve("open my note on the passport").tools) >= {"open_note", "create_note", "search_notes"}
    off = HybridRetriever(
        embedder=False, k=1, margin=0.0, expand_dependencies=False, sibling_max=0, max_tools=4, fill_ratio=1
    )
    off.fit(ToolRegistry([Tool.from_openai({"name": n, "description": n.replace("_", " ")}) for n in names]))
    assert off.retrieve("open my note on the passport").tools == ("open_note",)


def test_stress_registry_has_300_plus_distractors_after_the_base_tools() -> None:
    base = small_registry()
    registry = stress_registry(base=base.values())
    names = list(registry)
    assert names[: len(base)] == list(base)
    assert len(registry) - len(base) >= 300
    assert len({n.lower() for n in names}) == len(names)
    tools = load_distractors(5)
    assert len(tools) == 5 and all(not t.executable for t in tools)
    with pytest.raises(ConfigurationError, match="count"):
        load_distractors(10_000)


def test_bm25_scales_to_the_stress_registry() -> None:
    registry = stress_registry(base=small_registry().values())
    retriever = BM25Retriever(k=5)
    retriever.fit(registry, examples())
    result = retriever.retrieve("create a calendar event for lunch tomorrow")
    assert "create_calendar_event" in result.tools
    assert len(result.scores) == len(registry)


def test_public_names_resolve() -> None:
    module = importlib.import_module("tinyagent.retrieval")
    for name in module.__all__:
        assert getattr(module, name) is not None, name
    with pytest.raises(AttributeError):
        module.NoSuchThing  # noqa: B018


async def test_agent_puts_only_retrieved_tools_in_the_prompt() -> None:
    from tinyagent._agent import Agent
    from tinyagent.models import ScriptedModel

    model = ScriptedModel(
        [
            '1. get_email_address(name="Sid")\n2. send_email(to=[$1], subject="Lunch", '
            'body="noon")\n3. join()\n<END_OF_PLAN>'
        ]
    )
    agent = Agent(small_registry(), model, retriever=BM25Retriever(k=2, margin=0.0), examples=examples())
    result = await agent.plan("email Sid that lunch moved to noon", today=dt.date(2026, 12, 1))
    assert [c.name for c in result.plan.calls] == ["get_email_address", "send_email"]
    system = model.requests[0].messages[0]["content"]
    assert "- send_email(" in system and "- get_email_address(" in system
    assert "- get_directions(" not in system and "- create_note(" not in system
    assert set(result.tools_offered) <= {"send_email", "get_email_address", "get_phone_number", "send_message"}



class _FixedRetriever(BM25Retriever):
    """Returns a fixed ranking, least registry-like order first."""

    def retrieve(self, query: str) -> Any:
        result = super().retrieve(query)
        return replace(result, tools=("send_message", "get_email_address", "send_email"))


@pytest.mark.parametrize("order", ["registry", "relevance"])
async def test_retrieved_tools_are_listed_in_registry_order_so_prompts_share_a_prefix(order: str) -> None:
    from tinyagent._agent import Agent
    from tinyagent.models import ScriptedModel

    model = ScriptedModel(["1. join()\n<END_OF_PLAN>"])
    agent = Agent(small_registry(), model, retriever=_FixedRetriever(k=3, margin=0.0), tool_order=order)
    result = await agent.plan("email Sid", today=dt.date(2026, 12, 1))
    registry_order = [n for n in small_registry() if n in result.tools_offered]
    expected = registry_order if order == "registry" else ["send_message", "get_email_address", "send_email"]
    assert list(result.tools_offered) == expected
    system = model.requests[0].messages[0]["content"]
    assert [system.index(f"- {n}(") for n in expected] == sorted(system.index(f"- {n}(") for n in expected)

def test_default_retriever_works_without_an_exported_embedder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tinyagent.retrieval import default_retriever

    monkeypatch.setenv("TINYAGENT_CACHE", str(tmp_path))
    retriever = default_retriever(k=2, margin=0.0)
    assert retriever.embedder is None and retriever.model is None
    retriever.fit(small_registry(), examples())
    assert "create_reminder" in retriever.retrieve("remind me to water the plants").tools


def test_apps_give_a_large_registry_tool_retrieval_and_a_small_one_every_tool() -> None:
    from tinyagent.apps._runtime import AUTO_RETRIEVAL_TOOLS, build_agent
    from tinyagent.models import ScriptedModel

    many = [_spec(f"tool_{i}", f"Does thing number {i}.") for i in range(AUTO_RETRIEVAL_TOOLS + 1)]
    big = build_agent(many, ScriptedModel(["1. join()\n<END_OF_PLAN>"]))
    assert isinstance(big.retriever, HybridRetriever)
    small = build_agent(many[:5], ScriptedModel(["1. join()\n<END_OF_PLAN>"]))
    assert small.retriever is None
    mine = BM25Retriever()
    assert build_agent(many, ScriptedModel(["1. join()\n<END_OF_PLAN>"]), retriever=mine).retriever is mine
    from tinyagent.functions import builtin_tools

    # The built-in library (23 tools) is offered whole: the 1.5B planned more of its test split right that way.
    builtin = build_agent(builtin_tools(), ScriptedModel(["1. join()\n<END_OF_PLAN>"]))
    assert builtin.retriever is None and builtin.examples  # every tool; the most similar worked examples
    assert len(builtin.plan_sync("email Sid", today=dt.date(2026, 12, 1)).tools_offered) == len(builtin_tools())
    # With more tools than that beside it, the shipped classifier chooses among the built-in ones.
    mixed = build_agent([*builtin_tools(), *many], ScriptedModel(["1. join()\n<END_OF_PLAN>"]))
    assert isinstance(mixed.retriever, HybridRetriever) and mixed.retriever.model is not None
