"""The agent loop and the streaming executor, on the scripted model; plus integration runs on a real GGUF."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from dataclasses import dataclass, replace

import pytest

from tinyagent import (
    Agent,
    AgentSettings,
    AnswerEvent,
    Call,
    Example,
    Plan,
    Ref,
    StepPlanned,
    ToolFinished,
    ToolRegistry,
    ToolStarted,
    tool,
)
from tinyagent._executor import Executor
from tinyagent.errors import PlanValidationError, UserError
from tinyagent.models import ModelRequest, Preference, ScriptedModel

CALLS: list[tuple[str, float]] = []


@tool
async def get_email_address(name: str) -> str:
    """Look up a contact's email address."""
    CALLS.append(("lookup:" + name, time.perf_counter()))
    await asyncio.sleep(0.2)
    return f"{name.lower()}@example.com"


@tool
def send_email(to: list[str], subject: str, body: str = "") -> str:
    """Send an email."""
    CALLS.append(("send", time.perf_counter()))
    return f"sent to {', '.join(to)}"


@tool
def sleep_tool(seconds: float) -> float:
    """Sleep in a thread."""
    time.sleep(seconds)
    return seconds


@tool(timeout=0.2)
def hang() -> str:
    """Never returns in time."""
    time.sleep(2)
    return "late"


@tool
def explode(why: str) -> str:
    """Always fails."""
    raise ValueError(why)


TOOLS = [get_email_address, send_email, sleep_tool, hang, explode]
FANOUT = (
    '1. get_email_address(name="Sid")\n2. get_email_address(name="Ann")\n'
    '3. send_email(to=[$1, $2], subject="Lunch")\n4. join()\n<END_OF_PLAN>'
)


async def test_run_streams_events_passes_real_values_and_answers() -> None:
    model = ScriptedModel([FANOUT, "Answer: Sent the lunch email to Sid and Ann."])
    agent = Agent(TOOLS, model=model, joiner="llm")
    events = [ev async for ev in agent.run_stream("email sid and ann about lunch", today=dt.date(2026, 12, 1))]
    kinds = [ev.type for ev in events]
    assert kinds[-1] == "answer" and kinds.count("step_planned") == 3 and kinds.count("tool_finished") == 3
    result = events[-1].result  # type: ignore[union-attr]
    assert result.answer == "Sent the lunch email to Sid and Ann."
    send = result.steps[2]
    assert send.result == "sent to sid@example.com, ann@example.com"  # real values, not "$1"
    assert [s.status for s in result.steps] == ["ok", "ok", "ok"]
    assert result.usage.requests == 2 and result.timings["total"] > 0
    # the prompt carries today's date and the tools
    prompt = model.requests[0].messages
    assert "2026-12-01 (Tuesday)" in prompt[-1]["content"] and "get_email_address(name: str)" in prompt[0]["content"]
    assert model.requests[0].grammar is not None and "send_email(" in model.requests[0].grammar


async def test_first_step_dispatches_while_the_plan_is_still_streaming() -> None:
    model = ScriptedModel([FANOUT, "Answer: ok"], chunk_chars=4, delay_s=0.01)
    agent = Agent(TOOLS, model=model)
    order = []
    # A first call whose values come from the request streams on past the no-tool check.
    async for ev in agent.run_stream("Email Sid and Ann about lunch"):
        if isinstance(ev, StepPlanned | ToolStarted):
            order.append((ev.type, getattr(ev, "step", None) or ev.call.id))  # type: ignore[union-attr]
    # step 1 starts before step 3 is even planned
    assert order.index(("tool_started", 1)) < order.index(("step_planned", 3))


async def test_independent_steps_run_in_parallel() -> None:
    plan = "".join(f'{i}. sleep_tool(seconds=0.3)\n' for i in range(1, 5)) + "5. join()\n<END_OF_PLAN>"
    agent = Agent(TOOLS, model=ScriptedModel([plan, "Answer: done"]))
    started = time.perf_counter()
    result = await agent.run("sleep four times")
    elapsed = time.perf_counter() - started
    assert [s.result for s in result.steps] == [0.3] * 4
    assert elapsed < 0.9, elapsed  # sequential would take 1.2 s


async def test_failure_cancels_dependents_and_joiner_sees_errors() -> None:
    plan = ('1. explode(why="disk full")\n2. send_email(to=[$1], subject="x")\n'
            '3. get_email_address(name="Bo")\n4. join()\n<END_OF_PLAN>')
    model = ScriptedModel([plan, "Answer: The lookup worked but the first step failed."])
    result = await Agent(TOOLS, model=model, max_replans=0).run("x")
    status = {s.id: s.status for s in result.steps}
    assert status == {1: "error", 2: "skipped", 3: "ok"}
    assert "disk full" in (result.steps[0].error or "")
    joiner_prompt = model.requests[-1].messages[-1]["content"]
    assert "ERROR" in joiner_prompt and "SKIPPED" in joiner_prompt


async def test_timeout_is_reported_not_hung() -> None:
    model = ScriptedModel(["1. hang()\n2. join()\n<END_OF_PLAN>", "Answer: it timed out"])
    started = time.perf_counter()
    result = await Agent(TOOLS, model=model, max_replans=0).run("x")
    assert time.perf_counter() - started < 1.5
    assert result.steps[0].status == "timeout"


async def test_replan_keeps_results_and_continues_numbering() -> None:
    first = '1. get_email_address(name="Sid")\n2. explode(why="nope")\n3. join()\n<END_OF_PLAN>'
    second = '3. send_email(to=[$1], subject="hi")\n4. join()\n<END_OF_PLAN>'
    model = ScriptedModel([first, "Replan: step 2 failed, send directly", second, "Answer: sent"])
    result = await Agent(TOOLS, model=model).run("x")
    assert result.replans == 1 and result.answer == "sent"
    assert [s.id for s in result.steps] == [1, 2, 3]
    assert result.steps[2].result == "sent to sid@example.com"
    assert len(result.plans) == 2
    replan_prompt = model.requests[2].messages[-1]["content"]
    assert "numbered from 3" in replan_prompt and "sid@example.com" in replan_prompt
    assert model.requests[2].grammar is not None and 'ref-3 ::= "$1"' in model.requests[2].grammar


async def test_invalid_plan_is_replanned_then_answer_is_never_lost() -> None:
    model = ScriptedModel(['1. nosuchtool(x=1)\n2. join()', '1. nosuchtool(x=1)\n2. join()',
                           '1. nosuchtool(x=1)\n2. join()', "Answer: I could not do that."])
    result = await Agent(TOOLS, model=model).run("x")
    assert result.replans == 2
    assert result.answer == "I could not do that."
    assert any("unknown tool" in n for n in result.notes)


async def test_no_tool_needed_gives_empty_plan_and_direct_answer() -> None:
    model = ScriptedModel(["1. join()\n<END_OF_PLAN>", "Answer: Hello! How can I help?"])
    result = await Agent(TOOLS, model=model).run("hi there")
    assert result.steps == [] and len(result.plan) == 0
    assert result.answer == "Hello! How can I help?"


async def test_joiner_failure_falls_back_to_template_answer() -> None:
    calls = iter([FANOUT])

    def script(req: ModelRequest) -> str:
        return next(calls)  # second call raises StopIteration -> wrapped as ModelError below

    class Flaky(ScriptedModel):
        async def stream(self, request):  # type: ignore[no-untyped-def,override]
            if len(self.requests) >= 1:
                self.requests.append(request)
                from tinyagent.errors import ModelError

                raise ModelError("joiner crashed")
            async for item in super().stream(request):
                yield item

    result = await Agent(TOOLS, model=Flaky(script), joiner="llm").run("x")
    assert "sent to sid@example.com" in result.answer
    assert any("joiner failed" in n for n in result.notes)


async def test_plan_only() -> None:
    model = ScriptedModel([FANOUT])
    res = await Agent(TOOLS, model=model).plan("x")
    assert [c.name for c in res.plan] == ["get_email_address", "get_email_address", "send_email"]
    assert res.tools_offered == tuple(t.name for t in TOOLS) and res.prompt_tokens > 100


async def test_executor_rejects_cycles_and_unknown_tools() -> None:
    ex = Executor({t.name: t for t in TOOLS})
    with pytest.raises(PlanValidationError, match="cycle"):
        await ex.execute_plan(Plan(calls=(Call(1, "send_email", {"to": [Ref(2)], "subject": "a"}),
                                          Call(2, "send_email", {"to": [Ref(1)], "subject": "b"}))))
    with pytest.raises(PlanValidationError, match="unknown tool"):
        await ex.execute_plan(Plan(calls=(Call(1, "rm_rf", {}),)))
    records = await ex.execute_plan(Plan(calls=(Call(1, "get_email_address", {"name": "Z"}),
                                                Call(2, "send_email", {"to": [Ref(1)], "subject": "s"}))))
    assert records[2].result == "sent to z@example.com"


async def test_type_errors_after_resolution_fail_the_step() -> None:
    plan = '1. sleep_tool(seconds=0.01)\n2. send_email(to=$1, subject="x")\n3. join()\n<END_OF_PLAN>'
    result = await Agent(TOOLS, model=ScriptedModel([plan, "Answer: no"]), max_replans=0).run("x")
    assert result.steps[1].status == "error" and "to" in (result.steps[1].error or "")


def test_sync_facade_and_misuse() -> None:
    result = Agent(TOOLS, model=ScriptedModel(["1. join()", "Answer: hi"])).run_sync("hello")
    assert result.answer == "hi"
    with pytest.raises(UserError, match="unknown agent setting"):
        Agent(TOOLS, model=ScriptedModel(), colour="blue")

    async def inside() -> None:
        with pytest.raises(UserError, match="running event loop"):
            Agent(TOOLS, model=ScriptedModel()).run_sync("x")

    asyncio.run(inside())


def test_model_requests_can_be_blocked(monkeypatch: pytest.MonkeyPatch) -> None:
    import tinyagent.models as models
    from tinyagent.errors import ModelRequestsBlocked
    from tinyagent.models._base import check_allowed

    monkeypatch.setattr(models, "ALLOW_MODEL_REQUESTS", False)
    with pytest.raises(ModelRequestsBlocked):
        check_allowed("qwen")


# -- integration: a real GGUF --------------------------------------------------------------------------------------


@pytest.mark.slow
async def test_real_model_plans_and_executes(qwen05_model) -> None:  # type: ignore[no-untyped-def]
    agent = Agent([get_email_address, send_email], model=qwen05_model)
    events = [ev async for ev in agent.run_stream("Email Sid that lunch moved to noon", today=dt.date(2026, 12, 1))]
    result = events[-1].result  # type: ignore[union-attr]
    assert isinstance(events[-1], AnswerEvent)
    names = [s.name for s in result.steps]
    assert "send_email" in names
    send = next(s for s in result.steps if s.name == "send_email")
    assert send.status == "ok"
    assert result.answer and result.usage.input_tokens > 100
    assert any(isinstance(e, ToolFinished) for e in events)


@pytest.mark.slow
async def test_real_model_plan_only_is_valid_under_grammar(qwen05_model) -> None:  # type: ignore[no-untyped-def]
    agent = Agent([get_email_address, send_email], model=qwen05_model)
    res = await agent.plan("Look up Ann's and Bo's email addresses")
    assert res.plan.calls and all(c.name in {"get_email_address", "send_email"} for c in res.plan)
    assert res.elapsed_s > 0 and res.prompt_tokens > 50


@pytest.mark.slow
async def test_a_preference_floor_is_measured_and_taken_only_at_or_above_it(qwen05_model) -> None:  # type: ignore[no-untyped-def]
    messages = [{"role": "user", "content": "Name one fruit."}]
    plain = await qwen05_model.complete(ModelRequest(messages, max_tokens=4))
    measure = Preference("fruit", r"\A\Z", "Zebra", min_prob=2.0)
    measured = await qwen05_model.complete(ModelRequest(messages, max_tokens=4, prefer=[measure]))
    assert measured.text == plain.text  # measuring changes nothing
    [(name, prob, taken)] = measured.preference_probs
    assert name == "fruit" and 0.0 <= prob < 0.5 and not taken
    forced = await qwen05_model.complete(ModelRequest(messages, max_tokens=4, prefer=[replace(measure, min_prob=0.0)]))
    assert forced.text.startswith("Z") and forced.preference_probs[0][2] is True


@pytest.mark.slow
async def test_no_tool_floor_turns_a_tool_call_into_a_direct_answer(qwen05_model) -> None:  # type: ignore[no-untyped-def]
    query = "Look up Ann's email address"
    agent = Agent([get_email_address, send_email], model=qwen05_model)
    res = await agent.plan(query)
    assert res.plan.calls and res.no_tool_prob is not None and 0.0 <= res.no_tool_prob < 1.0
    assert len(res.stop_probs) >= len(res.plan.calls)  # measured at every later step
    floor = Agent([get_email_address, send_email], model=qwen05_model,
                  settings=AgentSettings(no_tool_threshold=res.no_tool_prob / 2))
    gated = await floor.plan(query)
    assert not gated.plan.calls and gated.text.startswith("1. join()")


async def test_refused_confirmation_ends_without_replanning() -> None:
    @tool(requires_confirmation=True)
    def wire_money(amount: int) -> str:
        """Send money."""
        return "sent"

    model = ScriptedModel(["1. wire_money(amount=5)\n2. join()\n<END_OF_PLAN>", "Answer: Not sent: you declined."])
    result = await Agent([wire_money], model=model, confirm=lambda req: False).run("send 5")
    assert result.replans == 0 and result.steps[0].error_type == "ConfirmationDenied"
    assert "Replan" not in (model.requests[-1].grammar or "")


async def test_joiner_continues_the_planner_conversation_so_the_kv_cache_covers_it() -> None:
    plan = '1. get_email_address(name="Bo")\n2. join()\n<END_OF_PLAN>'
    model = ScriptedModel([plan, "Answer: Bo's address is bo@example.com."])
    result = await Agent(TOOLS, model=model, joiner="llm").run("what is Bo's address")
    planner, joiner = model.requests[0].messages, model.requests[1].messages
    assert joiner[: len(planner)] == planner  # the whole planner prompt is a prefix of the joiner's
    assert joiner[len(planner)] == {"role": "assistant", "content": result.plan_texts[0]}
    assert "Request: what is Bo's address" in joiner[-1]["content"] and "Answer:" in joiner[-1]["content"]
    assert result.answer == "Bo's address is bo@example.com."


async def test_format_examples_fill_in_only_when_no_worked_example_fits() -> None:
    model = ScriptedModel(["1. join()\n<END_OF_PLAN>", "Answer: hi"])
    await Agent(TOOLS, model=model).plan("hello")
    system = model.requests[0].messages[0]["content"]
    assert "Examples (with other tools than yours" in system and "convert_currency(" in system
    own = Example("Email Bo", Plan.from_json([{"id": 1, "name": "get_email_address", "args": {"name": "Bo"}}]))
    model = ScriptedModel(["1. join()\n<END_OF_PLAN>"])
    await Agent(TOOLS, model=model, examples=[own]).plan("hello")
    assert "other tools" not in model.requests[0].messages[0]["content"]
    model = ScriptedModel(["1. join()\n<END_OF_PLAN>"])
    await Agent(TOOLS, model=model, format_examples=False).plan("hello")
    assert "Examples" not in model.requests[0].messages[0]["content"]


class _SmallContext(ScriptedModel):
    """The scripted model with a context size, counting a prompt's tokens as its words."""

    n_ctx = 1300

    def prompt_tokens(self, messages: list[dict[str, object]]) -> int:
        return sum(len(str(m.get("content", "")).split()) for m in messages)


async def test_examples_give_way_when_the_prompt_would_leave_the_plan_no_room_in_the_context() -> None:
    examples = [Example(f"Email Bo about topic {i} " + "and more words " * 20, Plan.from_json(
        [{"id": 1, "name": "get_email_address", "args": {"name": f"Bo{i}"}}])) for i in range(8)]
    roomy = ScriptedModel(["1. join()\n<END_OF_PLAN>"])
    await Agent(TOOLS, model=roomy, examples=examples, max_examples=8).plan("email Bo about topic 1")
    small = _SmallContext(["1. join()\n<END_OF_PLAN>"])
    await Agent(TOOLS, model=small, examples=examples, max_examples=8).plan("email Bo about topic 1")
    full, fitted = roomy.requests[0].messages, small.requests[0].messages
    assert small.prompt_tokens(fitted) + 512 <= small.n_ctx < small.prompt_tokens(full) + 512
    assert 0 < fitted[0]["content"].count("topic") < full[0]["content"].count("topic")
    assert fitted[-1] == full[-1]  # the request itself is whole


class _ByQuery:
    """A retriever (the core protocol, no tinyagent.retrieval) that offers different tools per request."""

    def fit(self, registry: object, examples: object = ()) -> None:
        return None

    def retrieve(self, query: str) -> _Offered:
        return _Offered(("get_email_address", "send_email") if "email" in query else ("sleep_tool", "explode"))

    def widen(self, query: str, previous: _Offered, hint: str = "") -> _Offered:
        return _Offered((*previous.tools, "hang"), uncertain=True)


@dataclass(frozen=True)
class _Offered:
    tools: tuple[str, ...]
    examples: tuple[Example, ...] = ()
    uncertain: bool = False


async def test_two_concurrent_runs_on_one_agent_share_no_state() -> None:
    """One run replans (and widens its tools) while the other runs straight through; neither sees the other."""

    def script(request: ModelRequest) -> str:
        user = str(request.messages[-1]["content"])
        mine = "Request: email sid" in user
        if "Actions and results:" in user:  # the joiner
            if not mine and "`Replan:" in user and "A previous plan" not in str(request.messages):
                return "Replan: the nap failed, try a shorter one"
            return "Answer: emailed Sid." if mine else "Answer: napped."
        if mine:
            return '1. get_email_address(name="Sid")\n2. send_email(to=[$1], subject="Hi")\n3. join()\n<END_OF_PLAN>'
        if "A previous plan was tried" in user:
            return "3. sleep_tool(seconds=0.05)\n4. join()\n<END_OF_PLAN>"
        return '1. sleep_tool(seconds=0.3)\n2. explode(why="boom")\n3. join()\n<END_OF_PLAN>'

    model = ScriptedModel(script, delay_s=0.002)
    agent = Agent(TOOLS, model=model, retriever=_ByQuery(), joiner="llm")
    assert agent.router.local is model  # the default router is made on first use (configuration, not run state)
    before = dict(vars(agent))
    started = time.perf_counter()
    mail, nap = await asyncio.gather(agent.run("email sid hello"), agent.run("take a nap"))
    elapsed = time.perf_counter() - started
    assert dict(vars(agent)) == before  # the agent holds no per-run state
    assert [(s.id, s.name, s.status) for s in mail.steps] == [(1, "get_email_address", "ok"), (2, "send_email", "ok")]
    assert [(s.id, s.name, s.status) for s in nap.steps] == [(1, "sleep_tool", "ok"), (2, "explode", "error"),
                                                           (3, "sleep_tool", "ok")]
    assert (mail.replans, nap.replans) == (0, 1)
    assert (mail.answer, nap.answer) == ("emailed Sid.", "napped.")
    assert mail.steps[1].result == "sent to sid@example.com"
    prompts = {str(r.messages[-1]["content"]): str(r.messages[0]["content"]) for r in model.requests}
    mail_prompts = [s for u, s in prompts.items() if "Request: email sid" in u]
    nap_replan = next(s for u, s in prompts.items() if "A previous plan was tried" in u)
    assert all("- sleep_tool(" not in s and "- hang(" not in s for s in mail_prompts)
    assert "- hang(" in nap_replan and "- send_email(" not in nap_replan  # widened for that run only
    grammars = [r.grammar or "" for r in model.requests if "Request: email sid" in str(r.messages[-1]["content"])]
    assert grammars[0] and "sleep_tool" not in grammars[0]
    assert elapsed < 0.3 + 0.05 + 0.2 + 1.0  # they overlapped rather than queued behind each other


def test_examples_written_for_other_parameters_are_dropped() -> None:
    """A worked example for a same-named tool with other parameters (the built-in library's beside a user's own)
    never reaches the prompt; one that fits stays."""
    tools = ToolRegistry.from_openai([{"type": "function", "function": {
        "name": "create_note", "description": "Make a note.",
        "parameters": {"type": "object", "required": ["heading"], "properties": {"heading": {"type": "string"}}}}}])
    fits = Example("Note: buy milk", Plan.from_json([{"id": 1, "name": "create_note", "args": {"heading": "milk"}}]))
    other = Example("Note: call mom", Plan.from_json([{"id": 1, "name": "create_note",
                                                         "args": {"title": "call mom", "body": ""}}]))
    agent = Agent(tools=tools, model=ScriptedModel(["1. join()\n"]), examples=[other, fits])
    assert agent.examples == (fits,)
