"""The no-tool decision after the first plan (tinyagent/run/_no_tool.py)."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

import pytest

from tinyagent import Agent, AgentSettings, tool
from tinyagent._plan import Call, Ref
from tinyagent.models import ModelRequest, ScriptedModel
from tinyagent.run import _no_tool as no_tool_module
from tinyagent.run._no_tool import (
    VERIFY_QUESTION,
    no_tool_probability,
    plan_features,
    verify_request,
)
from tinyagent.run._settings import NO_TOOL_FLOOR, NO_TOOL_MODEL

TODAY = dt.date(2026, 11, 30)
ROUTE_PLAN = '1. get_route(origin="Paris", destination="Lyon")\n2. join()\n<END_OF_PLAN>'
ran: list[str] = []


@tool
def get_route(origin: str, destination: str) -> str:
    """Driving directions between two cities.

    Args:
        origin: the city to start from.
        destination: the city to drive to.
    """
    ran.append(origin)
    return f"{origin} -> {destination}: 465 km"


def _is_verify(request: ModelRequest) -> bool:
    return bool(request.messages) and request.messages[-1]["content"] == VERIFY_QUESTION


def _model(verify_yes: float, p_join: float, plan: str = ROUTE_PLAN) -> ScriptedModel:
    def reply(request: ModelRequest) -> str:
        if _is_verify(request):
            return "yes" if verify_yes >= 0.5 else "no"
        if request.prefer:  # the planner measures P(join); the joiner does not
            return plan
        return "Answer: I can't do that with the tools I have."

    def probs(request: ModelRequest) -> dict[str, float]:
        if _is_verify(request):
            return {"verify:yes": verify_yes, "verify:no": 1.0 - verify_yes}
        return {"no_tool": p_join}

    return ScriptedModel(reply, preference_probs=probs)


def _plan(model: ScriptedModel, query: str, **settings: object) -> object:
    agent = Agent([get_route], model=model, settings=AgentSettings(**settings))  # type: ignore[arg-type]
    return asyncio.run(agent.plan(query, today=TODAY))


def test_grounding_counts_values_resolved_from_the_request() -> None:
    # "tomorrow" resolved by the planner's grounding line counts as taken from the request.
    model = ScriptedModel(lambda r: "1. join()", preference_probs={"no_tool": 0.05})

    @tool
    def set_reminder(text: str, date: str) -> str:
        """Set a reminder.

        Args:
            text: what to remind of.
            date: the day, YYYY-MM-DD.
        """
        return "ok"

    planner = ModelRequest(messages=[{"role": "user", "content": "Today is 2026-11-30 (Monday).\nRequest: remind "
                                      "me to call mum tomorrow\nResolved: tomorrow = 2026-12-01"}])
    text = no_tool_module.request_text(planner, "remind me to call mum tomorrow")
    features = plan_features(text, [Call(1, "set_reminder", {"text": "call mum", "date": "2026-12-01"})],
                             {"set_reminder": set_reminder})
    assert features["grounded"] == 1.0
    assert features["named"] == 1.0  # "reminder" is in the request ("remind"); "set" says nothing
    assert model.requests == []


def test_plan_features_grounding_and_overlap() -> None:
    tools = {"get_route": get_route}
    grounded = plan_features("Driving directions from Paris to Lyon please",
                             [Call(1, "get_route", {"origin": "Paris", "destination": "Lyon"})], tools)
    assert grounded["grounded"] == 1.0
    assert grounded["overlap"] == pytest.approx(0.5)  # "driving directions" are the tool's words, the cities not
    invented = plan_features("Turn off the lights in the kitchen",
                             [Call(1, "get_route", {"origin": "home", "destination": "office"})], tools)
    assert invented["grounded"] == 0.0
    assert invented["overlap"] == 0.0
    # References and numbers: a reference is not a literal; a number counts when the request writes it.
    mixed = plan_features("Route 66 please", [Call(1, "get_route", {"origin": Ref(1), "destination": 66})], tools)
    assert mixed["grounded"] == 1.0


def test_no_tool_probability_is_the_logistic_of_the_features() -> None:
    model = {"bias": 0.0, "p_join": 1.0, "verify": -1.0, "grounded": 0.0, "overlap": 0.0}
    assert no_tool_probability({"p_join": 0.5, "verify": 0.0}, model) == pytest.approx(0.5)
    assert no_tool_probability({"p_join": 0.5, "verify": -2.0}, model) == pytest.approx(0.8808, abs=1e-3)
    # The fitted model: "no" from the verifier, P(join) high and invented values mean no tool.
    assert no_tool_probability({"p_join": 0.4, "verify": -6.0, "grounded": 0.0, "overlap": 0.0}) >= NO_TOOL_FLOOR
    assert no_tool_probability({"p_join": 0.001, "verify": 6.0, "grounded": 1.0, "overlap": 1.0}) < NO_TOOL_FLOOR
    # Values copied from the request keep a plan even when P(join) is high.
    assert no_tool_probability({"p_join": 0.3, "grounded": 1.0, "overlap": 0.5}) < NO_TOOL_FLOOR
    assert no_tool_probability({"p_join": 0.05, "grounded": 0.0, "overlap": 0.0, "named": 0.0}) >= NO_TOOL_FLOOR
    # A request that names what the tool is for ("weather" for get_weather) keeps the call.
    assert no_tool_probability({"p_join": 0.05, "grounded": 0.0, "overlap": 0.0, "named": 1.0}) < no_tool_probability(
        {"p_join": 0.05, "grounded": 0.0, "overlap": 0.0, "named": 0.0})
    assert NO_TOOL_MODEL["verify"] == 0.0  # the question earned no weight for the 1.5B (benchmarks/results)


def test_verify_request_continues_the_planner_conversation() -> None:
    planner = ModelRequest(messages=[{"role": "system", "content": "rules"}, {"role": "user", "content": "q"}],
                           grammar="root ::= x", max_tokens=512)
    request = verify_request(planner, "1. get_route(origin=\"a\", destination=\"b\")\n2. join()\n")
    assert list(request.messages[:2]) == list(planner.messages)  # same prefix: the KV cache is reused
    plan = '1. get_route(origin="a", destination="b")\n2. join()'
    assert request.messages[2] == {"role": "assistant", "content": plan}
    assert request.messages[3]["content"] == VERIFY_QUESTION
    assert request.max_tokens == 1 and request.grammar is None
    assert {p.name for p in request.prefer} == {"verify:yes", "verify:Yes", "verify:no", "verify:No"}


def test_plan_drops_calls_when_no_tool_fits() -> None:
    model = _model(verify_yes=0.02, p_join=0.4)
    result = _plan(model, "Turn off the lights in the kitchen")
    assert result.plan.calls == ()  # type: ignore[attr-defined]
    check = result.no_tool_check  # type: ignore[attr-defined]
    assert check is not None and check.refused and not check.asked
    assert check.probability >= NO_TOOL_FLOOR
    assert "get_route" in result.text  # type: ignore[attr-defined]  # what the model wrote is kept
    assert not any(_is_verify(r) for r in model.requests)  # the default model decides without a model call


@pytest.mark.parametrize(("verify_yes", "refused"), [(0.01, True), (0.99, False)])
def test_question_decides_when_the_model_weighs_it(monkeypatch: pytest.MonkeyPatch, verify_yes: float,
                                                   refused: bool) -> None:
    weighted = {"bias": 0.0, "p_join": 0.0, "verify": -1.0, "grounded": 0.0, "overlap": 0.0}
    monkeypatch.setattr(no_tool_module, "NO_TOOL_MODEL", weighted)
    model = _model(verify_yes=verify_yes, p_join=0.4)
    result = _plan(model, "Water the plants in the kitchen")  # (no rule refuses it: the model weighs it)
    check = result.no_tool_check  # type: ignore[attr-defined]
    assert check.asked and check.refused is refused
    assert (result.plan.calls == ()) is refused  # type: ignore[attr-defined]
    assert sum(_is_verify(r) for r in model.requests) == 1


def test_question_skipped_when_no_answer_changes_the_decision(monkeypatch: pytest.MonkeyPatch) -> None:
    weighted = {"bias": -20.0, "p_join": 0.0, "verify": -1.0, "grounded": 0.0, "overlap": 0.0}
    monkeypatch.setattr(no_tool_module, "NO_TOOL_MODEL", weighted)
    model = _model(verify_yes=0.01, p_join=0.4)
    result = _plan(model, "Water the plants in the kitchen")
    check = result.no_tool_check  # type: ignore[attr-defined]
    assert not check.asked and not check.refused
    assert not any(_is_verify(r) for r in model.requests)


def test_plan_keeps_calls_that_fit() -> None:
    model = _model(verify_yes=0.99, p_join=0.01)
    result = _plan(model, "Driving directions from Paris to Lyon")
    assert [c.name for c in result.plan.calls] == ["get_route"]  # type: ignore[attr-defined]
    assert not result.no_tool_check.refused  # type: ignore[attr-defined]


def test_measure_always_asks_and_never_changes_the_plan() -> None:
    model = _model(verify_yes=0.02, p_join=0.4)
    result = _plan(model, "Turn off the lights in the kitchen", no_tool_check="measure")
    assert [c.name for c in result.plan.calls] == ["get_route"]  # type: ignore[attr-defined]
    check = result.no_tool_check  # type: ignore[attr-defined]
    assert check.asked and not check.refused and check.features["verify"] < -3


def test_off_asks_nothing() -> None:
    model = _model(verify_yes=0.02, p_join=0.4)
    result = _plan(model, "Turn off the lights in the kitchen", no_tool_check="off")
    assert [c.name for c in result.plan.calls] == ["get_route"]  # type: ignore[attr-defined]
    assert result.no_tool_check is None  # type: ignore[attr-defined]
    assert not any(_is_verify(r) for r in model.requests)


def test_empty_plan_is_not_checked() -> None:
    model = _model(verify_yes=0.02, p_join=0.9, plan="1. join()\n<END_OF_PLAN>")
    result = _plan(model, "Hello there")
    assert result.no_tool_check is None  # type: ignore[attr-defined]
    assert not any(_is_verify(r) for r in model.requests)


def test_run_executes_nothing_when_no_tool_fits(tmp_path: Path) -> None:
    ran.clear()
    model = _model(verify_yes=0.02, p_join=0.4)
    agent = Agent([get_route], model=model)
    result = asyncio.run(agent.run("Turn off the lights in the kitchen", today=TODAY))
    assert ran == []
    assert result.steps == []
    assert result.plan_texts == ["1. join()"]
    assert any("no tool fits" in n for n in result.notes)
    assert result.answer == "I can't do that with the tools I have."


def test_run_executes_calls_that_fit() -> None:
    ran.clear()
    model = _model(verify_yes=0.99, p_join=0.01)
    agent = Agent([get_route], model=model)
    result = asyncio.run(agent.run("Driving directions from Paris to Lyon", today=TODAY))
    assert ran == ["Paris"]
    assert [s.name for s in result.steps] == ["get_route"]


# Even-indexed BFCL irrelevance cases where the 1.5B calls a tool whose arguments it invents (before this check
# each got a call; benchmarks/results/no_tool_records.jsonl).
SLOW_CASES = ("irrelevance_2", "irrelevance_12", "live_irrelevance_12-2-0")


@pytest.mark.slow
def test_real_planner_answers_irrelevant_requests_without_a_tool() -> None:
    from tinyagent.errors import ModelIntegrityError
    from tinyagent.evals import bfcl
    from tinyagent.models import ModelCatalog, load_model

    try:
        ModelCatalog().path("qwen2.5-coder-1.5b")
    except ModelIntegrityError as exc:
        pytest.skip(f"qwen2.5-coder-1.5b is not available: {exc}")
    cases = [c for c in bfcl.load_cases(bfcl.ensure_data(), ["irrelevance", "live_irrelevance"], 8, parity="even")
             if c.id in SLOW_CASES]
    assert sorted(c.id for c in cases) == sorted(SLOW_CASES)
    model = load_model("qwen2.5-coder-1.5b", n_threads=2)
    predictor = bfcl.SdkPredictor(model, today=TODAY)
    try:
        report = bfcl.run_bfcl(predictor, cases, system="no-tool")
    finally:
        asyncio.run(model.aclose())
    for result in report.results:
        assert result.calls == () and result.correct, result
        # The planner did write a call; the no-tool check dropped it.
        assert predictor.plan_texts[result.id].lstrip().startswith("1. ") and \
            not predictor.plan_texts[result.id].lstrip().startswith("1. join"), predictor.plan_texts[result.id]


@tool
def switch_lights(room: str, on: bool) -> str:
    """Turn the lights of a room on or off.

    Args:
        room: the room, for example "kitchen".
        on: true to turn them on, false to turn them off.
    """
    return f"{room} lights {'on' if on else 'off'}"


def _second_choice_model(second: str) -> ScriptedModel:
    """Plans ``get_route`` first; once the grammar leaves it out, plans ``second``."""
    def reply(request: ModelRequest) -> str:
        if request.grammar and "get_route" not in request.grammar:
            return second
        return ROUTE_PLAN

    def probs(request: ModelRequest) -> dict[str, float]:
        return {"no_tool": 0.4 if "get_route" in (request.grammar or "") else 0.05}

    return ScriptedModel(reply, preference_probs=probs)


def test_a_refused_plan_gets_the_planners_second_choice() -> None:
    model = _second_choice_model('1. switch_lights(room="kitchen", on=false)\n2. join()\n<END_OF_PLAN>')
    agent = Agent([get_route, switch_lights], model=model)
    result = asyncio.run(agent.plan("Turn off the lights in the kitchen", today=TODAY))
    assert [(c.name, c.args) for c in result.plan.calls] == [("switch_lights", {"room": "kitchen", "on": False})]
    assert not result.no_tool_check.refused  # type: ignore[union-attr]
    second = model.requests[-1]
    assert second.grammar and "get_route" not in second.grammar and "switch_lights" in second.grammar
    assert second.messages == model.requests[0].messages  # the same prompt: its KV cache holds


def test_a_second_choice_must_be_more_likely_needed_than_not() -> None:
    from tinyagent.run._no_tool import SECOND_CHOICE_FLOOR, second_choice_settings

    assert second_choice_settings(AgentSettings()).no_tool_floor == SECOND_CHOICE_FLOOR == 0.5
    assert second_choice_settings(AgentSettings(no_tool_floor=0.3)).no_tool_floor == 0.3  # never looser
    # "Is a tomato a fruit?" planned as a lookup of "Tom": the value is not written in the request ("tom" is only
    # inside "tomato"), so the plan is not grounded and the decision refuses it outright.
    tom = plan_features("Is a tomato a fruit?", [Call(1, "get_route", {"origin": "Tom"})], {"get_route": get_route})
    assert tom["grounded"] == 0.0
    assert no_tool_probability({"p_join": 0.15, **tom}) >= NO_TOOL_FLOOR


def test_a_second_choice_the_check_refuses_too_leaves_no_call() -> None:
    model = _second_choice_model('1. switch_lights(room="garage", on=true)\n2. join()\n<END_OF_PLAN>')
    agent = Agent([get_route, switch_lights], model=model)
    result = asyncio.run(agent.plan("What is the capital of Peru?", today=TODAY))
    assert result.plan.calls == ()
    assert len([r for r in model.requests if r.grammar]) == 2


@pytest.mark.parametrize("settings", [{"no_tool_second_choice": False}, {}])
def test_no_second_choice_when_off_or_no_other_tool(settings: dict[str, object]) -> None:
    model = _second_choice_model('1. switch_lights(room="kitchen", on=false)\n2. join()\n<END_OF_PLAN>')
    tools = [get_route, switch_lights] if settings else [get_route]
    agent = Agent(tools, model=model, settings=AgentSettings(**settings))  # type: ignore[arg-type]
    result = asyncio.run(agent.plan("Turn off the lights in the kitchen", today=TODAY))
    assert result.plan.calls == () and len(model.requests) == 1


def test_a_run_executes_the_second_choice() -> None:
    done: list[str] = []

    @tool
    def dim_lights(room: str, on: bool) -> str:
        """Turn the lights of a room on or off.

        Args:
            room: the room, for example "kitchen".
            on: true to turn them on, false to turn them off.
        """
        done.append(room)
        return "ok"

    ran.clear()
    model = _second_choice_model('1. dim_lights(room="kitchen", on=false)\n2. join()\n<END_OF_PLAN>')
    agent = Agent([get_route, dim_lights], model=model, settings=AgentSettings(joiner="template"))
    result = asyncio.run(agent.run("Turn off the lights in the kitchen", today=TODAY))
    assert ran == [] and done == ["kitchen"]  # the refused route never ran; the second choice did
    assert [s.name for s in result.steps] == ["dim_lights"] and result.replans == 0
    assert any("second choice without get_route" in n for n in result.notes)
    assert result.usage.input_tokens > 0 and len([r for r in model.requests if r.grammar]) == 2


def test_a_request_in_another_script_shares_no_words_so_they_count_neither_way() -> None:
    """Even-indexed BFCL live cases in Korean were refused for sharing no words with the tools (they cannot)."""
    @tool
    def news_search(keyword: str) -> str:
        """Search the news for a keyword."""
        return keyword

    tools = {"news_search": news_search}
    korean = plan_features("최근 박지성에 관한 뉴스를 찾아줘.", [Call(1, "news_search", {"keyword": "박지성"})], tools)
    assert korean["overlap"] == 1.0 and korean["named"] == 1.0 and korean["grounded"] == 1.0
    english = plan_features("who is park ji sung", [Call(1, "news_search", {"keyword": "Park Ji Sung"})], tools)
    assert english["named"] == 0.0  # Latin script: compared as before
    weather = {"p_join": 0.43, "grounded": 0.0, "overlap": 1.0, "named": 1.0}  # "你是谁?你能做什么" -> a weather call
    assert no_tool_probability(weather) >= NO_TOOL_FLOOR


@tool
def video_room(topic: str) -> str:
    """Creates a video-conference room and returns its link.

    Args:
        topic: the meeting's topic.
    """
    return "https://meet.example.org/abc"


@tool
def reminderAdd(title: str) -> str:  # noqa: N802 - a camel-case name, as foreign registries have them
    """Adds a to-do item.

    Args:
        title: what to do.
    """
    return "ok"


def test_a_plan_serving_two_clauses_that_name_its_tools_is_never_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(no_tool_module, "NO_TOOL_MODEL", {"bias": 20.0, "p_join": 0.0, "grounded": 0.0,
                                                           "overlap": 0.0})  # refuses whatever it is asked
    both = '1. video_room(topic="Vendor selection")\n2. reminderAdd(title="Read the comparison")\n3. join()\n'
    request = "Set up a video call named Vendor selection, and remind me to read the comparison"
    agent = Agent([video_room, reminderAdd], model=_model(verify_yes=0.5, p_join=0.4, plan=both))
    result = asyncio.run(agent.plan(request, today=TODAY))
    assert [c.name for c in result.plan.calls] == ["video_room", "reminderAdd"]
    one = '1. video_room(topic="Vendor selection")\n2. join()\n'
    agent = Agent([video_room, reminderAdd], model=_model(verify_yes=0.5, p_join=0.4, plan=one),
                  settings=AgentSettings(no_tool_second_choice=False))
    result = asyncio.run(agent.plan("Set up a video call named Vendor selection", today=TODAY))
    assert result.plan.calls == () and result.no_tool_check.refused  # one clause: the decision's as before


@tool
def calendar_entry_add(title: str, venue: str = "") -> str:
    """Adds an entry to the calendar.

    Args:
        title: the entry's title.
        venue: where it happens.
    """
    return f"added {title}"


def _named_second_choice_model(second: str) -> ScriptedModel:
    """Plans ``get_route`` first (refused: Paris and Lyon are not in the request); once the grammar leaves it out,
    plans ``second``."""
    def reply(request: ModelRequest) -> str:
        return second if request.grammar and "get_route" not in request.grammar else ROUTE_PLAN

    return ScriptedModel(reply, preference_probs=lambda request: {"no_tool": 0.4})


def test_a_second_choice_of_what_a_clause_names_is_kept_in_a_plan_of_several_tools() -> None:
    request = "Set up a video call with Liz tomorrow at 9 about the design review"
    several = '1. video_room(topic="Q")\n2. calendar_entry_add(title="Q", venue=$1)\n3. join()\n<END_OF_PLAN>'
    tools = [get_route, video_room, calendar_entry_add]
    model = _named_second_choice_model(several)
    result = asyncio.run(Agent(tools, model=model).plan(request, today=TODAY))
    assert [c.name for c in result.plan.calls] == ["video_room", "calendar_entry_add"]
    one = _named_second_choice_model('1. calendar_entry_add(title="Q")\n2. join()\n<END_OF_PLAN>')
    assert asyncio.run(Agent(tools, model=one).plan(request, today=TODAY)).plan.calls == ()  # checked: refused


def test_a_refused_free_second_choice_is_planned_once_more_with_the_named_tools_required() -> None:
    request = "Set up a video call with Liz tomorrow at 9 about the design review"
    replies = iter([ROUTE_PLAN, '1. calendar_entry_add(title="Q")\n2. join()\n<END_OF_PLAN>',
                    '1. video_room(topic="Q")\n2. calendar_entry_add(title="Q", venue=$1)\n3. join()\n'
                    '<END_OF_PLAN>'])
    model = ScriptedModel(lambda request: next(replies), preference_probs=lambda request: {"no_tool": 0.4})
    tools = [get_route, video_room, calendar_entry_add]
    result = asyncio.run(Agent(tools, model=model).plan(request, today=TODAY))
    assert [c.name for c in result.plan.calls] == ["video_room", "calendar_entry_add"]
    planned = [r for r in model.requests if r.grammar]
    assert len(planned) == 3 and planned[2].grammar != planned[1].grammar  # the third requires the room tool


def test_a_plan_of_lookups_of_what_the_request_never_speaks_of_fits_no_tool() -> None:
    from _helpers_tools import TEXT, openai_fn

    from tinyagent import ToolRegistry
    from tinyagent._plan import Call
    from tinyagent.run._no_tool import lookups_for_nothing

    tools = ToolRegistry.from_openai([
        openai_fn("abook.findEmail", "Search the contacts by name and return the e-mail address.", {"who": TEXT},
                  ["who"]),
        openai_fn("geo.showPlace", "Shows a place on the map.", {"q": TEXT}, ["q"])])
    apple = [Call(1, "abook.findEmail", {"who": "Apple"})]
    assert lookups_for_nothing(apple, "quick one, what's Apple's share price right now?", tools)
    assert not lookups_for_nothing(apple, "What's Apple's email address?", tools)  # asked for
    assert not lookups_for_nothing([Call(1, "geo.showPlace", {"q": "Lisbon"})], "Weather in Lisbon?", tools)


def test_a_request_to_remove_fits_no_tool_when_no_tool_removes() -> None:
    from _helpers_tools import TEXT, openai_fn

    from tinyagent import ToolRegistry
    from tinyagent.run._no_tool import removal_unserved

    creates = [openai_fn("ScheduleMeeting", "Creates an event on the calendar.", {"title": TEXT}, ["title"]),
               openai_fn("SendTextMessage", "Sends an SMS to phone numbers.", {"to": TEXT}, ["to"])]
    tools = ToolRegistry.from_openai(creates)
    assert removal_unserved("Ugh, something came up. Cancel my dentist appointment on Friday.", tools)
    assert not removal_unserved("Put my dentist appointment on Friday", tools)  # nothing to remove
    assert not removal_unserved("Cancel practice and text Bo that it's off", tools)  # the text can still go
    removes = ToolRegistry.from_openai([*creates, openai_fn("calendar_delete_event", "Removes an event.",
                                                            {"title": TEXT}, ["title"])])
    assert not removal_unserved("Cancel my dentist appointment on Friday.", removes)


def test_a_plan_of_two_tools_for_two_asked_actions_is_not_refused() -> None:
    import asyncio

    from _helpers_tools import TEXT, openai_fn

    from tinyagent import AgentSettings, ToolRegistry
    from tinyagent._plan import Call
    from tinyagent._routing_base import LocalOnly
    from tinyagent.models import Completion, ModelRequest, ScriptedModel
    from tinyagent.run._no_tool import check_no_tool

    tools = ToolRegistry.from_openai([
        openai_fn("slot_check", "Checks a proposed slot.", {"start": TEXT}, ["start"]),
        openai_fn("task_add", "Adds a to-do item.", {"title": TEXT}, ["title"])])
    calls = [Call(1, "slot_check", {"start": "2026-12-09 10:00"}), Call(2, "task_add", {"title": "Planning sync"})]
    model = ScriptedModel()
    request = ModelRequest(messages=[{"role": "user", "content": "x"}])

    def decide(query: str) -> object:
        return asyncio.run(check_no_tool(LocalOnly(model), model, request, Completion(text="", model="m"), calls,
                                         query, {k: tools[k] for k in tools}, AgentSettings(), 0.001, []))
    kept = decide("Check whether I'm free Wednesday from 10 to 11am and invite Grace to a planning sync then")
    assert kept is not None and not kept.refused and kept.probability == 0.0
    asked = decide("Could you check the slot and add a task about the weather?")  # a question: the model decides
    assert asked is not None and asked.probability > 0.0


@pytest.mark.parametrize(("request_text", "unserved"), [
    ("Book us a table for four at Lucio's on Saturday around 8, please.", "book or reserve something"),
    ("pay the electricity bill from my current account, it's due friday", "pay or transfer money"),
    ("It's freezing in here, turn the heating up to 22 in the living room.", "control a device"),
    ("Turn the living room thermostat down to 68.", "control a device"),  # (a reminder "on the user's devices")
    ("Cancel my dentist appointment on Friday.", "remove something"),
    ("Book the dentist and put it on my calendar for Friday", None),  # a second clause a tool may serve
    ("Book a table at Lucio's and text Bo that we're on", None),  # the text can still go
    ("Put my dentist appointment on Friday", None),
])
def test_a_request_for_an_action_no_offered_tool_does_fits_no_tool(request_text: str, unserved: str | None) -> None:
    """Booking, buying, paying and switching a device need a tool made for them: with none offered (by the words
    a tool that does them would use: "reserve", "checkout", "thermostat", ...), the request's one action fits no
    tool. A tool that speaks of doing so may: a "Turn-by-turn route" is no switch, "Set the global volume for all
    audio playback" is."""
    from _helpers_tools import TEXT, openai_fn

    from tinyagent import ToolRegistry
    from tinyagent.run._no_tool import unserved_action

    tools = ToolRegistry.from_openai([
        openai_fn("cal_add", "Creates an event on the calendar.", {"title": TEXT}, ["title"]),
        openai_fn("sms", "Sends an SMS to phone numbers.", {"to": TEXT}, ["to"]),
        openai_fn("route", "Turn-by-turn route with travel time.", {"dst": TEXT}, ["dst"]),
        openai_fn("remind", "Schedules a push reminder on the user's devices.", {"what": TEXT}, ["what"]),
    ])
    assert unserved_action(request_text, tools) == unserved
    audio = ToolRegistry.from_openai([openai_fn("set_volume", "Set the global volume for all audio playback.",
                                                {"volume": {"type": "integer"}}, ["volume"])])
    assert unserved_action("could you turn it down to 70?", audio) is None
    reserves = ToolRegistry.from_openai([openai_fn("table_hold", "Reserves a restaurant table.", {"at": TEXT}, ["at"])])
    assert unserved_action("Book us a table for four at Lucio's", reserves) is None
    # a contact tool that "looks a person up in the address book" books nothing; time booked is a calendar's
    book = ToolRegistry.from_openai([*(t.to_openai() for t in tools.values()), openai_fn(
        "find_person", "Looks a person up in the user's address book.", {"who": TEXT}, ["who"])])
    assert unserved_action("Can you book a table for four at Dishoom on Friday?", book) == "book or reserve something"
    assert unserved_action("Book 30 minutes with Maria next Friday at 3pm", book) is None
    assert unserved_action("book a call with Sid tomorrow", book) is None
    # a tool that reserves another thing books nothing the request asks for; a hedge is no second action
    room = ToolRegistry.from_openai([openai_fn("make_link", "Reserve a video-meeting room and get its URL.",
                                               {"topic": TEXT}, ["topic"])])
    assert unserved_action("Book me a flight to Lisbon on the 21st, window seat if you can", room) == \
        "book or reserve something"
    assert unserved_action("Book a meeting room for the design review", room) is None
    # deleting messages sends none
    assert unserved_action("Delete every email from Pottery Barn and unsubscribe me", tools) == "remove something"


def test_a_plan_whose_first_call_is_clear_is_still_refused_when_no_tool_does_what_is_asked() -> None:
    """"Delete every email from Pottery Barn and unsubscribe me" planned as a mail search by that sender: the first
    call's values are all the request's, but no offered tool removes anything, so the plan is dropped."""
    from _helpers_tools import TEXT, openai_fn

    from tinyagent import Agent, ToolRegistry
    from tinyagent.models import ScriptedModel

    tools = ToolRegistry.from_openai([
        openai_fn("search_mail", "Search the user's mailbox.", {"sender": TEXT}, ["sender"]),
        openai_fn("send_mail", "Send an email.", {"to": TEXT, "body": TEXT}, ["to", "body"]),
    ])
    model = ScriptedModel(['1. search_mail(sender="Pottery Barn")\n2. join()\n<END_OF_PLAN>'])
    result = Agent(tools=tools, model=model).plan_sync("Delete every email from Pottery Barn and unsubscribe me",
                                                       today=dt.date(2027, 10, 13))
    assert not result.plan.calls and result.no_tool_check is not None and result.no_tool_check.refused
    assert len(model.requests) == 1  # (no second choice, no plan again for "email": it asks to remove messages)
