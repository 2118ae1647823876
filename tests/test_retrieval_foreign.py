"""Retrieval on registries that come with no examples (issue 15): schema-read signals and the foreign benchmark."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tinyagent import Tool, ToolRegistry
from tinyagent.retrieval import Retrieval

pytest.importorskip("numpy", reason="retrieval needs numpy: pip install 'tinyagent[onnx]'")
pytest.importorskip("bm25s", reason="BM25 retrieval needs bm25s: pip install 'tinyagent[onnx]'")

from tinyagent.retrieval import HybridRetriever, tool_document  # noqa: E402
from tinyagent.retrieval._schema import (  # noqa: E402
    object_phrase,
    producer_graph,
    reciprocal_rank_fusion,
    toolkits,
)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import retrieval_foreign as foreign  # noqa: E402

CAR = "This tool belongs to the vehicle control system, which controls the engine, doors, lights and more."


def _tool(name: str, description: str, **params: Any) -> Tool:
    props = {p: (v if isinstance(v, dict) else {"type": "string", "description": v}) for p, v in params.items()}
    return Tool.from_openai({"name": name, "description": description,
                             "parameters": {"type": "object", "properties": props, "required": list(props)}})


FILLER = [
    _tool("bake_bread", "Bake a loaf of sourdough bread.", flour="Grams of flour."),
    _tool("water_plants", "Water the garden plants.", litres="Litres of water."),
    _tool("tune_guitar", "Tune a guitar to standard pitch.", string="Which string."),
    _tool("book_dentist", "Book a dentist appointment.", day="The day."),
    _tool("play_chess", "Play a chess move.", move="The move in algebraic notation."),
    _tool("translate_text", "Translate text between languages.", text="The text."),
    _tool("count_calories", "Count the calories of a meal.", meal="The meal."),
    _tool("walk_dog", "Take the dog for a walk.", minutes="How long."),
    _tool("paint_wall", "Paint a wall in a colour.", colour="The colour."),
    _tool("order_pizza", "Order a pizza for delivery.", topping="The topping."),
    _tool("fold_laundry", "Fold the clean laundry.", basket="Which basket."),
]


def test_reciprocal_rank_fusion_adds_ranks_ties_share_and_zero_is_no_evidence() -> None:
    fused = reciprocal_rank_fusion([[3.0, 1.0, 0.0], [0.5, 0.9, 0.0]], constant=1.0)
    assert fused[2] == 0.0  # scored 0 by both: no share
    assert fused[0] == pytest.approx(1 / 2 + 1 / 3) and fused[1] == pytest.approx(1 / 3 + 1 / 2)
    tied = reciprocal_rank_fusion([[2.0, 2.0, 1.0]], constant=0.0)
    assert tied[0] == pytest.approx(1 / 1.5) and tied[1] == pytest.approx(1 / 1.5) and tied[2] == pytest.approx(1 / 3)
    assert len(reciprocal_rank_fusion([])) == 0


def test_object_phrase_is_what_the_name_acts_on() -> None:
    assert object_phrase("get_zipcode_based_on_city") == ("zipcode",)
    assert object_phrase("get_user_id") == ("user", "id")
    assert object_phrase("lockDoors") == ("door",)
    assert object_phrase("search") == ()


def test_producer_graph_links_a_parameter_to_the_tool_that_produces_it() -> None:
    registry = ToolRegistry([
        _tool("estimate_distance", "Estimate the distance between two cities.", cityA="The zipcode of the first city.",
              cityB="The zipcode of the second city."),
        _tool("get_zipcode_based_on_city", "Gets the zipcode of a city.", city="The name of the city."),
        _tool("send_message", "Send a message.", receiver_id="The user id of the receiver.", message="What to say."),
        _tool("get_user_id", "The id of a user by name.", user="The user's name."),
        *FILLER,
    ])
    graph = producer_graph(registry)
    assert graph["estimate_distance"] == {"get_zipcode_based_on_city": 0.25}
    assert graph["send_message"] == {"get_user_id": 0.5}
    assert "get_zipcode_based_on_city" not in graph  # its own name holds the phrase: it is the producer
    # A phrase in the parameters of most tools (here "city", the object of nothing; "zipcode" in 2 of 4) is generic.
    many = ToolRegistry([_tool(f"t{i}_zipcode_user", "x", zipcode="zipcode") for i in range(5)]
                        + [_tool("get_zipcode", "zipcode of a city", city="city")])
    assert producer_graph(many, max_df=0.02) == {}


def test_producers_stay_inside_a_toolkit() -> None:
    registry = ToolRegistry([
        _tool("estimate_distance", f"{CAR} Estimates a distance.", cityA="The zipcode of the first city."),
        _tool("startEngine", f"{CAR} Starts the engine.", mode="START or STOP."),
        _tool("lockDoors", f"{CAR} Locks the doors.", door="Which doors."),
        _tool("get_zipcode_of_town", "Gets the zipcode of a town.", town="The town."),
    ])
    kits, _, _ = toolkits([registry[n].description for n in registry])
    assert producer_graph(registry) == {"estimate_distance": {"get_zipcode_of_town": 0.25}}
    assert producer_graph(registry, kits=kits) == {}


def test_toolkits_group_shared_boilerplate_and_strip_it() -> None:
    descriptions = [f"{CAR} Starts the engine.", f"{CAR} Locks the doors.", f"{CAR} Sets the headlights.",
                    "Bake a loaf of sourdough bread, which is the best bread there is.", "Short."]
    kits, stripped, openings = toolkits(descriptions)
    assert kits == [0, 0, 0, -1, -1]
    assert stripped[:3] == ["Starts the engine.", "Locks the doors.", "Sets the headlights."]
    assert stripped[3] == descriptions[3]
    assert openings == [CAR]


def test_tool_document_lists_enum_values_once() -> None:
    tool = _tool("set_mode", "Set the mode.", mode={"type": "string", "enum": ["ECO", "SPORT"]},
                 unit={"type": "string", "description": "Unit. [Enum]: [\"km\", \"mi\"]", "enum": ["km", "mi"]})
    doc = tool_document(tool)
    assert "(ECO, SPORT)" in doc
    assert "(km, mi)" not in doc  # already in the description
    assert "ECO" not in tool_document(_tool("set_mode", "Set the mode.", mode="The mode."))


def _foreign_registry() -> ToolRegistry:
    return ToolRegistry([
        _tool("startEngine", f"{CAR} Starts the engine.", ignitionMode="The ignition mode."),
        _tool("lockDoors", f"{CAR} Locks the doors of the vehicle.", door="The doors to lock."),
        _tool("estimate_distance", f"{CAR} Estimates the distance between two cities.",
              cityA="The zipcode of the first city.", cityB="The zipcode of the second city."),
        _tool("get_zipcode_based_on_city", f"{CAR} Gets the zipcode based on the city.", city="The city."),
        _tool("displayCarStatus", f"{CAR} Displays the status of the vehicle.", option="What to show."),
        *FILLER,
    ])


def test_untrained_hybrid_offers_a_small_registry_whole() -> None:
    registry = ToolRegistry(FILLER[:6])
    hybrid = HybridRetriever(embedder=False, k=2, max_tools=6)
    hybrid.fit(registry)
    assert set(hybrid.retrieve("bake some bread").tools) == set(registry)


def test_untrained_hybrid_pulls_in_the_producer_a_parameter_needs() -> None:
    hybrid = HybridRetriever(embedder=False, k=1, max_tools=4, fill_ratio=1.0)
    hybrid.fit(_foreign_registry())
    tools = hybrid.retrieve("How far is it from San Francisco to Rivermist? Estimate the distance").tools
    assert tools[0] == "estimate_distance" and "get_zipcode_based_on_city" in tools
    off = HybridRetriever(embedder=False, k=1, max_tools=4, fill_ratio=1.0, expand_dependencies=False)
    off.fit(_foreign_registry())
    assert "get_zipcode_based_on_city" not in off.retrieve(
        "How far is it from San Francisco to Rivermist? Estimate the distance").tools


def test_untrained_hybrid_prefers_toolkit_mates_and_never_exceeds_max_tools() -> None:
    hybrid = HybridRetriever(embedder=False, k=1, max_tools=5, fill_ratio=0.0)
    hybrid.fit(_foreign_registry())
    tools = hybrid.retrieve("start the engine of my car").tools
    assert len(tools) <= 5
    assert tools[0] == "startEngine"
    assert set(tools) <= {"startEngine", "lockDoors", "estimate_distance", "get_zipcode_based_on_city",
                          "displayCarStatus"}
    # A toolkit's boilerplate ("vehicle control system") ranks its tools above unrelated ones.
    ranked = hybrid.rank("something for the vehicle")
    assert set(ranked[:5]) == {"startEngine", "lockDoors", "estimate_distance", "get_zipcode_based_on_city",
                               "displayCarStatus"}


def test_foreign_requests_keep_even_cases_inside_the_suites_and_turns_with_calls() -> None:
    cases = [
        {"id": "multi_turn_base_0", "involved_classes": ["VehicleControlAPI"],
         "question": [[{"role": "user", "content": "Start the car"}], [{"role": "user", "content": "thanks"}],
                      [{"role": "user", "content": "How far to Rivermist?"}]]},
        {"id": "multi_turn_base_1", "involved_classes": ["VehicleControlAPI"],
         "question": [[{"role": "user", "content": "odd: held out"}]]},
        {"id": "multi_turn_base_2", "involved_classes": ["VehicleControlAPI", "TwitterAPI"],
         "question": [[{"role": "user", "content": "not all classes in the suites"}]]},
    ]
    answers = {"multi_turn_base_0": [["lockDoors(unlock=False, door=['driver'])", "startEngine(ignitionMode='START')"],
                                     [], ["get_zipcode_based_on_city('Rivermist')"]],
               "multi_turn_base_1": [["startEngine(ignitionMode='START')"]],
               "multi_turn_base_2": [["startEngine(ignitionMode='START')"]]}
    requests = foreign.turn_requests(cases, answers, {"VehicleControlAPI"})
    assert [(r.id, r.query, r.gold) for r in requests] == [
        ("multi_turn_base_0#0", "Start the car", frozenset({"lockDoors", "startEngine"})),
        ("multi_turn_base_0#2", "How far to Rivermist?", frozenset({"get_zipcode_based_on_city"})),
    ]
    assert foreign.call_name("a.b(x=1)") == "a.b"
    with pytest.raises(ValueError):
        foreign.call_name("x + 1")


class _Fixed:
    def __init__(self, answers: dict[str, tuple[str, ...]]) -> None:
        self.answers = answers

    def retrieve(self, query: str) -> Retrieval:
        return Retrieval(tools=self.answers[query])


def test_foreign_recall_computation_on_a_fixture() -> None:
    requests = [foreign.Request("a", "q1", frozenset({"x", "y"})), foreign.Request("b", "q2", frozenset({"z"})),
                foreign.Request("c", "q3", frozenset({"x"}))]
    fake = _Fixed({"q1": ("x", "w", "v"), "q2": ("z",), "q3": ("x", "y")})
    summary = foreign.measure(fake, requests).summary()
    assert summary["recall"] == pytest.approx((0.5 + 1 + 1) / 3, abs=1e-4)
    assert summary["all_tools_found"] == pytest.approx(2 / 3, abs=1e-4)
    assert summary["mean_tools_offered"] == pytest.approx(2.0)
    assert summary["max_tools_offered"] == 3
    assert summary["requests"] == 3
    assert summary["most_missed"] == {"y": 1}
    assert summary["latency_ms_p95"] >= summary["latency_ms_p50"] >= 0


def test_foreign_registry_measurement_fits_with_no_examples() -> None:
    mine = _foreign_registry()
    registry = foreign.with_distractors(mine.to_openai(), 20)
    assert len(registry) == len(mine) + 20 and list(registry)[: len(mine)] == list(mine)
    requests = [foreign.Request("r", "start the engine of my car", frozenset({"startEngine"}))]
    entry = foreign.measure_registry(lambda: HybridRetriever(embedder=False), registry, requests)
    assert entry["recall"] == 1.0 and entry["registry_size"] == len(registry)
    assert entry["mean_tools_offered"] <= 10
