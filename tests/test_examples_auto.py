"""Automatic worked examples: schema-driven synthesis, semantic verification, the registry-keyed cache, agent wiring."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from _helpers_models import real_model_available

from tinyagent import Agent, ToolRegistry
from tinyagent._example_cache import (
    FORMAT_VERSION,
    example_cache_path,
    load_cached_examples,
    registry_key,
    save_cached_examples,
)
from tinyagent._plan import Example, Plan, Ref
from tinyagent.finetune import build_examples, example_problem
from tinyagent.finetune._autoex_synth import described_choices, synthesize, tool_phrase, value_for
from tinyagent.functions import TOOL_NAMES
from tinyagent.models import ScriptedModel


def spec(name: str, description: str, props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"name": name, "description": description,
            "parameters": {"type": "object", "properties": props, "required": required}}


FOREIGN = [
    spec("lookup_zipcode", "Gets the zipcode of a city.",
         {"city": {"type": "string", "description": "The city name"}}, ["city"]),
    spec("estimate_distance", "Estimates the distance between two places.",
         {"zip_a": {"type": "string", "description": "The zipcode of the first place"},
          "zip_b": {"type": "string", "description": "The zipcode of the second place"}}, ["zip_a", "zip_b"]),
    spec("invite_attendee", "Invites someone to a video meeting.",
         {"email": {"type": "string", "description": "The email address of the attendee"},
          "topic": {"type": "string", "description": "What the meeting is about"}}, ["email", "topic"]),
    spec("set_drive_mode", "Sets the drive mode of the car.",
         {"mode": {"type": "string", "description": "Possible values: 'eco', 'sport'"}}, ["mode"]),
    spec("book_slot", "This tool belongs to the booking system. Tool description: Books a slot for a number of "
         "guests.", {"guests": {"type": "integer", "description": "how many guests"},
                     "notes": {"type": "string", "description": "notes for the host"}}, ["guests"]),
]


@pytest.fixture
def registry() -> ToolRegistry:
    return ToolRegistry.from_openai(FOREIGN)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TINYAGENT_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "examples"


# -- synthesis -------------------------------------------------------------------------------------------------


def test_values_and_phrases_come_from_the_schema(registry: ToolRegistry) -> None:
    assert value_for("email", {"type": "string"}) == "dana.lee@example.com"
    assert value_for("mode", {"type": "string", "enum": ["a", "b"]}, 1) == "b"
    assert described_choices(registry["set_drive_mode"].parameters["properties"]["mode"]) == ["eco", "sport"]
    assert value_for("guests", {"type": "integer", "minimum": 5}) == 5
    assert value_for("config", {"type": "object"}) is None
    assert tool_phrase(registry["lookup_zipcode"]) == "get the zipcode of a city"
    assert tool_phrase(registry["book_slot"]) == "book a slot for a number of guests"


def test_synthesis_covers_every_tool_and_chains_a_lookup_into_its_consumer(registry: ToolRegistry) -> None:
    made = synthesize(list(registry.values()))
    kinds = Counter(s.kind for s in made)
    assert kinds["single"] >= len(registry) and kinds["no_tool"] == 2 and kinds["fanout"] >= 2
    assert {s.plan.calls[0].name for s in made if s.kind == "single"} == set(registry)
    chains = [s for s in made if s.kind == "chain"]
    assert [s.expected for s in chains] == [("lookup_zipcode", "lookup_zipcode", "estimate_distance")]
    last = chains[0].plan.calls[-1]
    assert dict(last.args) == {"zip_a": Ref(1), "zip_b": Ref(2)}
    cities = [c.args["city"] for c in chains[0].plan.calls[:2]]
    assert len(set(cities)) == 2 and all(c in chains[0].query for c in cities)
    mode = next(s for s in made if s.kind == "single" and s.plan.calls[0].name == "set_drive_mode")
    assert mode.plan.calls[0].args == {"mode": "eco"}


def test_every_synthesized_example_passes_verification(registry: ToolRegistry) -> None:
    made = synthesize(list(registry.values()))
    problems = [(s.query, example_problem(s.query, s.plan, registry, s.expected)) for s in made]
    assert [p for p in problems if p[1][0]] == []


# -- verification ----------------------------------------------------------------------------------------------


def plan(*calls: tuple[str, dict[str, Any]]) -> Plan:
    return Plan.from_json([{"id": i, "name": n, "args": a} for i, (n, a) in enumerate(calls, 1)])


@pytest.mark.parametrize(("query", "bad", "expected", "reason"), [
    # the teacher planned "a video meeting" as something else: an action the request asks for is missing
    ("Invite dana@example.com to a video meeting about budgets and set the car to eco.",
     plan(("set_drive_mode", {"mode": "eco"})), ["invite_attendee", "set_drive_mode"], "complete"),
    # a parameter described as an e-mail address gets a person's name instead of a lookup's result
    ("Invite Dana Lee to a video meeting about budgets.",
     plan(("invite_attendee", {"email": "Dana Lee", "topic": "budgets"})), ["invite_attendee"], "reference"),
    # the zipcode parameter gets a city: it should have been looked up
    ("How far is it from Lisbon to Denver?",
     plan(("estimate_distance", {"zip_a": "Lisbon", "zip_b": "Denver"})), ["estimate_distance"], "reference"),
    # an invented value
    ("Book a slot for 4 guests.", plan(("book_slot", {"guests": 6})), ["book_slot"], "grounded"),
    ("Book a slot for 4 guests.", plan(("book_slot", {"guests": 4, "notes": "window seat"})), ["book_slot"],
     "grounded"),
    # a lookup nobody reads, in a plan that acts
    ("Get the zipcode of Lisbon and book a slot for 4 guests.",
     plan(("lookup_zipcode", {"city": "Lisbon"}), ("book_slot", {"guests": 4})), None, "order"),
    # a type error and an unknown argument
    ("Book a slot for four guests.", plan(("book_slot", {"guests": "four"})), None, "schema"),
    ("Book a slot for 4 guests.", plan(("book_slot", {"guests": 4, "room": "x"})), None, "schema"),
    # the request pastes a tool identifier
    ("Please run book_slot for 4 guests.", plan(("book_slot", {"guests": 4})), None, "request"),
])
def test_semantic_checks_reject_bad_examples(registry: ToolRegistry, query: str, bad: Plan,
                                             expected: list[str] | None, reason: str) -> None:
    assert example_problem(query, bad, registry, expected)[0] == reason


def test_good_plans_pass_and_references_stand_for_values(registry: ToolRegistry) -> None:
    good = Plan.from_json([{"id": 1, "name": "lookup_zipcode", "args": {"city": "Lisbon"}},
                           {"id": 2, "name": "lookup_zipcode", "args": {"city": "Denver"}},
                           {"id": 3, "name": "estimate_distance", "args": {"zip_a": "$1", "zip_b": "$2"}}])
    query = "How far is Lisbon from Denver?"
    assert example_problem(query, good, registry, ["lookup_zipcode", "lookup_zipcode", "estimate_distance"]) == (
        "", "")
    assert example_problem("Set the car to sport mode.", plan(("set_drive_mode", {"mode": "sport"})), registry,
                           ["set_drive_mode"]) == ("", "")


# -- cache -----------------------------------------------------------------------------------------------------


def test_cache_key_ignores_order_and_changes_with_any_schema_edit(registry: ToolRegistry) -> None:
    tools = list(registry.values())
    assert registry_key(tools) == registry_key(list(reversed(tools)))
    edited = ToolRegistry.from_openai([*FOREIGN[:-1], {**FOREIGN[-1], "description": "Books a table."}])
    assert registry_key(list(edited.values())) != registry_key(tools)
    assert registry_key(tools[:-1]) != registry_key(tools)
    assert re.fullmatch(r"[0-9a-f]{24}", registry_key(tools))


def test_cache_round_trip_and_invalidation(registry: ToolRegistry, tmp_path: Path) -> None:
    tools = list(registry.values())
    examples = [Example("Set the car to eco.", plan(("set_drive_mode", {"mode": "eco"}))),
                Example("Hi!", Plan(()))]
    path = save_cached_examples(tools, examples, root=tmp_path)
    assert path == example_cache_path(tools, tmp_path) and path.parent == tmp_path
    assert load_cached_examples(tools, root=tmp_path) == tuple(examples)
    assert load_cached_examples(tools[:-1], root=tmp_path) == ()  # another registry: another key, no file
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "version": FORMAT_VERSION + 1}))
    assert load_cached_examples(tools, root=tmp_path) == ()
    path.write_text("{not json")
    assert load_cached_examples(tools, root=tmp_path) == ()


def test_build_examples_writes_then_reuses_the_cache(registry: ToolRegistry, tmp_path: Path) -> None:
    built = build_examples(registry, root=tmp_path)
    assert not built.cached and built.path.is_file() and built.seconds < 5
    assert len(built.examples) >= len(registry) + 3
    assert {n for e in built.examples for n in e.tool_names} == set(registry)
    again = build_examples(registry, root=tmp_path)
    assert again.cached and again.examples == built.examples
    assert not build_examples(registry, root=tmp_path, force=True).cached


def test_teacher_paraphrases_are_checked_again(registry: ToolRegistry, tmp_path: Path) -> None:
    def reply(request: Any) -> str:
        text = request.messages[-1]["content"]
        query = text.split("Request: ", 1)[1].split("\nRewritten:")[0]
        if "drive mode" in query and "eco" in query:
            return "Put my car in eco mode please"  # keeps the value: accepted
        return "Do the thing for me"  # loses every value: the template stays

    teacher = ScriptedModel(reply)
    built = build_examples(registry, root=tmp_path, teacher=teacher, max_paraphrases=100)
    queries = [e.query for e in built.examples]
    assert "Put my car in eco mode please" in queries
    assert built.paraphrased == 1 and built.dropped.get("paraphrase_grounded", 0) >= 5
    assert all(not example_problem(e.query, e.plan, registry)[0] for e in built.examples)
    assert len(teacher.requests) == sum(1 for s in synthesize(list(registry.values())) if s.plan.calls)


# -- agent wiring ----------------------------------------------------------------------------------------------


def test_agent_uses_the_cached_examples_only_when_it_has_none(registry: ToolRegistry, cache: Path) -> None:
    assert Agent(registry, ScriptedModel()).examples == ()
    built = build_examples(registry)
    assert built.path.parent == cache
    model = ScriptedModel(['1. set_drive_mode(mode="sport")\n2. join()\n<END_OF_PLAN>'])
    agent = Agent(registry, model)
    assert agent.examples == built.examples and agent.example_selector is not None
    agent.plan_sync("Switch the car to sport mode")
    system = model.requests[-1].messages[0]["content"]
    assert "Examples:" in system and "drive mode" in system.split("Examples:")[1]
    assert "with other tools than yours" not in system
    assert Agent(registry, ScriptedModel(), auto_examples=False).examples == ()
    own = [Example("Go eco.", plan(("set_drive_mode", {"mode": "eco"})))]
    assert Agent(registry, ScriptedModel(), examples=own).examples == tuple(own)
    other = ToolRegistry.from_openai(FOREIGN[:2])
    assert Agent(other, ScriptedModel()).examples == ()


@pytest.mark.parametrize("auto", [False, True])
def test_foreign_planner_prompt_names_no_builtin_tool(registry: ToolRegistry, cache: Path, auto: bool) -> None:
    if auto:
        build_examples(registry)
    model = ScriptedModel(['1. set_drive_mode(mode="eco")\n2. join()\n<END_OF_PLAN>'])
    Agent(registry, model).plan_sync("Put the car in eco mode and invite dana@example.com to a meeting on budgets")
    prompt = "\n".join(str(m["content"]) for m in model.requests[-1].messages)
    assert "set_drive_mode" in prompt
    assert [n for n in TOOL_NAMES if re.search(rf"\b{n}\b", prompt)] == []


@pytest.mark.slow
@pytest.mark.skipif(not real_model_available("smollm2-135m"), reason="smollm2-135m is not installed")
def test_real_teacher_builds_verified_examples_for_a_tiny_registry(tmp_path: Path) -> None:
    from tinyagent.models import load_model

    tiny = ToolRegistry.from_openai(FOREIGN[2:4])
    teacher = load_model("smollm2-135m", n_threads=2)
    built = build_examples(tiny, root=tmp_path, teacher=teacher, max_paraphrases=3)
    assert built.path.is_file() and len(built.examples) >= 2 * len(tiny)
    assert {n for e in built.examples for n in e.tool_names} == set(tiny)
    assert all(not example_problem(e.query, e.plan, tiny)[0] for e in built.examples)
    assert sum(built.dropped.values()) + built.paraphrased >= 3  # every rewrite was checked, kept or dropped
    assert load_cached_examples(list(tiny.values()), root=tmp_path) == built.examples


def test_cli_builds_the_cache_the_agent_then_reads(registry: ToolRegistry, cache: Path, tmp_path: Path) -> None:
    import io

    from rich.console import Console

    from tinyagent.apps.cli import run_cli

    tools_file = tmp_path / "tools.json"
    tools_file.write_text(json.dumps([{"type": "function", "function": f} for f in FOREIGN]))
    out, err = io.StringIO(), io.StringIO()
    code = run_cli(["--json", "examples", "build", "--tools", str(tools_file)],
                   console=Console(file=out, width=200), err=Console(file=err, width=200))
    assert code == 0, err.getvalue()
    report = json.loads(out.getvalue())
    assert report["examples"] >= len(FOREIGN) and not report["cached"]
    assert Path(report["path"]).parent == cache
    assert len(Agent(ToolRegistry.from_openai(FOREIGN), ScriptedModel()).examples) == report["examples"]
