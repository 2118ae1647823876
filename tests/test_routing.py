"""Routing: pure policy decisions, the budget-enforcing Router, calibration, the CLI, and the agent with a router."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyagent._routing_base import RouteSignals, RoutingHook
from tinyagent.apps.cli import run_cli as main
from tinyagent.errors import BudgetExceeded, ConfigurationError, EndpointError
from tinyagent.models import Completion, ModelRequest, Pricing, ScriptedModel, Usage
from tinyagent.routing import (
    AlwaysCloud,
    AlwaysLocal,
    Budget,
    BudgetLedger,
    EscalationThresholds,
    LocalFirst,
    Router,
    RouteRecord,
    calibrate,
    cost_of,
    frontier,
    load_records,
    simulate,
    worst_case_cost,
)

CLOUD_PRICE = Pricing(input_per_mtok=1000.0, output_per_mtok=4000.0)  # $0.001 / $0.004 per token: easy numbers
REQ = ModelRequest(messages=[{"role": "user", "content": "x" * 40}], max_tokens=10)


def models() -> tuple[ScriptedModel, ScriptedModel]:
    return ScriptedModel(name="local"), ScriptedModel(name="cloud", pricing=CLOUD_PRICE)


def done(model: ScriptedModel, input_tokens: int = 5, output_tokens: int = 5) -> Completion:
    return Completion(text="ok", usage=Usage(input_tokens, output_tokens, 1), model=model.name)


# -- pure decisions ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("stage", "signals", "target"),
    [
        ("plan", RouteSignals(), "local"),
        ("plan", RouteSignals(retrieval_uncertain=True), "local"),  # off by default
        ("verify", RouteSignals(previous_model="local", mean_logprob=-0.1), "local"),
        ("verify", RouteSignals(previous_model="local", mean_logprob=-2.0), "cloud"),
        ("verify", RouteSignals(previous_model="local", mean_logprob=None), "local"),
        ("verify", RouteSignals(previous_model="cloud", mean_logprob=-9.0), "cloud"),  # keep the cloud's plan
        ("replan", RouteSignals(attempt=1, parse_failed=True, previous_model="local"), "cloud"),
        ("replan", RouteSignals(attempt=1, validation_failed=True, previous_model="local"), "cloud"),
        ("replan", RouteSignals(attempt=1, step_failed=True, previous_model="local"), "cloud"),
        ("replan", RouteSignals(attempt=1, replan_requested=True, previous_model="local"), "cloud"),
        ("replan", RouteSignals(attempt=1, previous_model="local"), "local"),
        ("replan", RouteSignals(attempt=2, previous_model="cloud"), "cloud"),  # stays escalated
        ("join", RouteSignals(previous_model="cloud", step_failed=True), "local"),
    ],
)
def test_local_first_decisions(stage: Any, signals: RouteSignals, target: str) -> None:
    policy = LocalFirst(EscalationThresholds(min_mean_logprob=-1.0))
    decision = policy.decide(stage, signals, cloud_name="cloud")
    assert decision.target == target
    assert (decision.reasons != ()) == (target == "cloud")


def test_disabled_signals_do_not_escalate_and_the_call_cap_holds() -> None:
    quiet = LocalFirst(EscalationThresholds(escalate_on_parse_failure=False, escalate_on_step_failure=False))
    assert quiet.decide("replan", RouteSignals(parse_failed=True, step_failed=True), cloud_name="c").target == "local"
    retrieval = LocalFirst(EscalationThresholds(escalate_on_retrieval_uncertain=True))
    decision = retrieval.decide("plan", RouteSignals(retrieval_uncertain=True), cloud_name="c")
    assert decision == dataclasses.replace(decision, target="cloud", reasons=("retrieval uncertain",))
    capped = LocalFirst(EscalationThresholds(max_cloud_calls_per_task=1))
    assert capped.decide("replan", RouteSignals(parse_failed=True), cloud_name="c", cloud_calls=1).target == "local"
    assert AlwaysLocal().decide("replan", RouteSignals(parse_failed=True), cloud_name="c").target == "local"
    assert AlwaysCloud().decide("plan", RouteSignals(), cloud_name="c").target == "cloud"


def test_thresholds_round_trip_and_reject_unknown_keys() -> None:
    t = EscalationThresholds(min_mean_logprob=-0.7, escalate_on_replan=False)
    assert EscalationThresholds.from_dict(json.loads(json.dumps(t.to_dict()))) == t
    with pytest.raises(ConfigurationError, match="unknown threshold"):
        EscalationThresholds.from_dict({"min_logprob": -1})
    with pytest.raises(ConfigurationError):
        EscalationThresholds(min_mean_logprob=float("nan"))


# -- the router ----------------------------------------------------------------------------------------------------
def test_router_has_every_member_the_agent_uses() -> None:
    """What the agent calls or probes on its router (RoutingHook's methods, plus what tinyagent/_agent.py reads with
    getattr until the run loop stops probing) is all on Router, with the right kind."""
    import ast

    import tinyagent

    root = Path(tinyagent.__file__).parent
    nodes = [node for path in [root / "_agent.py", *sorted((root / "run").glob("*.py"))] if path.is_file()
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))]
    probed = {node.args[1].value for node in nodes
              if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "getattr" and len(node.args) >= 2
              and "router" in ast.unparse(node.args[0]) and isinstance(node.args[1], ast.Constant)}
    called = {node.attr for node in nodes
              if isinstance(node, ast.Attribute) and ast.unparse(node.value).endswith("router")}
    local, cloud = models()
    router = Router(local, cloud)
    expected = {"local", "select", "before_call", "after_call", "status", "start_task", "wants_logprobs",
                "needs_verification"}
    members = (probed | called | expected) - {"__class__"}
    for name in sorted(members):
        assert hasattr(router, name), name
    assert callable(router.start_task) and isinstance(router.wants_logprobs, bool)
    assert isinstance(router.needs_verification, bool)


def test_router_implements_the_routing_hook_protocol() -> None:
    local, cloud = models()
    router = Router(local, cloud)
    assert isinstance(router, RoutingHook)
    assert router.local is local
    assert not router.needs_verification and not router.wants_logprobs
    confident = Router(local, cloud, LocalFirst(EscalationThresholds(min_mean_logprob=-1.0)))
    assert confident.needs_verification and confident.wants_logprobs


def test_router_rejects_same_names_and_double_budgets() -> None:
    with pytest.raises(ConfigurationError, match="different names"):
        Router(ScriptedModel(name="m"), ScriptedModel(name="m"))
    with pytest.raises(ConfigurationError, match="not both"):
        Router(ScriptedModel(name="a"), ledger=BudgetLedger(), task_budget=Budget(1))


def test_router_escalates_charges_the_cloud_and_records_decisions() -> None:
    local, cloud = models()
    router = Router(local, cloud, LocalFirst(EscalationThresholds(min_mean_logprob=-1.0)), session_budget=Budget(1.0))
    assert router.select("plan", RouteSignals()) is local
    router.before_call(local, REQ)
    router.after_call(local, REQ, done(local, 100, 100))
    stronger = router.select("verify", RouteSignals(previous_model="local", mean_logprob=-3.0))
    assert stronger is cloud
    router.before_call(cloud, REQ)
    assert router.ledger.reserved.usd == pytest.approx(worst_case_cost(cloud, REQ).usd)
    router.after_call(cloud, REQ, done(cloud, 20, 5))
    status = router.status()
    assert status["spent"] == pytest.approx(20 * 0.001 + 5 * 0.004)
    assert status["spent_tokens"] == 25  # the local call is free and not metered
    assert status["calls"] == {"local": 1, "cloud": 1, "cloud_failed": 0}
    assert status["degraded"] is False and status["budget_violations"] == 0
    decisions = status["decisions"]
    assert [d["model"] for d in decisions] == ["local", "cloud"]  # type: ignore[index]
    assert "low confidence" in decisions[1]["reasons"][0]  # type: ignore[index]
    json.dumps(status)  # plain data


def test_a_call_that_could_overshoot_is_refused_and_the_task_degrades_to_local() -> None:
    local, cloud = models()
    worst = worst_case_cost(cloud, REQ).usd
    router = Router(local, cloud, AlwaysCloud(), task_budget=Budget(worst * 1.5))
    assert router.select("plan", RouteSignals()) is cloud
    router.before_call(cloud, REQ)
    router.after_call(cloud, REQ, done(cloud, 40, 10))  # $0.08 of the $0.162: less than a worst case is left
    with pytest.raises(BudgetExceeded, match="task budget"):
        router.before_call(cloud, REQ)  # 1.5 worst cases minus what was spent: a second call could overshoot
    status = router.status()
    assert status["degraded"] is True and status["reason"] == "budget"
    assert "was not made" in str(status["message"])
    assert router.select("replan", RouteSignals(attempt=1)) is local  # the rest of the task stays local
    # a new task gets a fresh task budget
    assert router.select("plan", RouteSignals()) is cloud
    assert router.status()["degraded"] is False


def test_failed_cloud_calls_are_charged_their_worst_case_unless_told_otherwise() -> None:
    for charge, expected in ((True, worst_case_cost(models()[1], REQ).usd), (False, 0.0)):
        local, cloud = models()
        router = Router(local, cloud, AlwaysCloud(), session_budget=Budget(1.0), charge_failed_calls=charge)
        router.select("plan", RouteSignals())
        router.before_call(cloud, REQ)
        router.after_call(cloud, REQ, None)
        assert router.ledger.session_spent.usd == pytest.approx(expected)
        assert router.ledger.reserved.usd == 0


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_offline_cloud_routes_locally_then_recovers_after_the_cooldown() -> None:
    local, cloud = models()
    clock = FakeClock()
    router = Router(local, cloud, AlwaysCloud(), offline_after_failures=2, offline_cooldown_s=30, clock=clock)
    for _ in range(2):
        assert router.select("plan", RouteSignals()) is cloud
        router.before_call(cloud, REQ)
        router.after_call(cloud, REQ, None)
    assert router.is_offline()
    assert router.select("plan", RouteSignals()) is local
    status = router.status()
    assert status["degraded"] is True and status["reason"] == "offline" and status["offline"] is True
    clock.now += 31
    assert router.select("plan", RouteSignals()) is cloud
    router.before_call(cloud, REQ)
    router.after_call(cloud, REQ, done(cloud))
    assert not router.is_offline()


def test_an_unreachable_endpoint_is_offline_after_one_failure() -> None:
    from tinyagent.errors import EndpointUnreachable

    local, cloud = models()
    router = Router(local, cloud, AlwaysCloud(), offline_after_failures=5)
    router.select("plan", RouteSignals())
    router.before_call(cloud, REQ)
    cloud.last_error = EndpointUnreachable("down", retryable=True)  # type: ignore[attr-defined]
    router.after_call(cloud, REQ, None)
    assert router.select("replan", RouteSignals(attempt=1, previous_model="cloud")) is local
    assert router.status()["reason"] == "offline"


def test_no_cloud_model_means_local_with_a_reason() -> None:
    local = ScriptedModel(name="local")
    router = Router(local, None, AlwaysCloud())
    assert router.select("plan", RouteSignals()) is local
    assert router.status()["decisions"][0]["reasons"][-1] == "no cloud model configured"  # type: ignore[index]


async def test_probe_uses_the_cloud_ping() -> None:
    class Pingable(ScriptedModel):
        up = False

        async def ping(self) -> bool:
            return self.up

    local, cloud = ScriptedModel(name="local"), Pingable(name="cloud")
    router = Router(local, cloud, AlwaysCloud())
    assert await router.probe() is False and router.is_offline()
    cloud.up = True
    assert await router.probe() is True and not router.is_offline()


def test_status_never_shows_the_api_key() -> None:
    pytest.importorskip("openai")
    from tinyagent.models import OpenAIModel

    secret = "sk-status-SECRET-42"
    cloud = OpenAIModel("gpt", base_url="https://api.example.invalid/v1", api_key=secret, pricing=CLOUD_PRICE)
    router = Router(ScriptedModel(name="local"), cloud, AlwaysCloud(), session_budget=Budget(1.0))
    router.select("plan", RouteSignals())
    router.before_call(cloud, REQ)
    router.after_call(cloud, REQ, None)
    assert secret not in json.dumps(router.status()) + repr(router)


# -- property: over random request and cost sequences, spend never exceeds the budget ---------------------------
_step = st.fixed_dictionaries(
    {
        "new_task": st.booleans(),
        "stage": st.sampled_from(["plan", "verify", "replan", "join"]),
        "parse_failed": st.booleans(),
        "mean_logprob": st.one_of(st.none(), st.floats(-5, 0)),
        "prompt_chars": st.integers(0, 4000),
        "max_tokens": st.integers(1, 1024),
        "output_fraction": st.floats(0, 1),
        "fails": st.booleans(),
    }
)


@settings(max_examples=1000, deadline=None)
@given(
    unit=st.sampled_from(["usd", "tokens"]),
    task_limit=st.one_of(st.none(), st.floats(0, 0.05)),
    session_limit=st.one_of(st.none(), st.floats(0, 0.2)),
    input_price=st.floats(0, 50),
    output_price=st.floats(0, 200),
    policy=st.sampled_from(["local-first", "always-cloud"]),
    charge_failed=st.booleans(),
    steps=st.lists(_step, min_size=1, max_size=40),
)
def test_property_router_spend_never_exceeds_the_budget(
    unit: str,
    task_limit: float | None,
    session_limit: float | None,
    input_price: float,
    output_price: float,
    policy: str,
    charge_failed: bool,
    steps: list[dict[str, Any]],
) -> None:
    scale = 1.0 if unit == "usd" else 200_000.0  # token budgets of up to 10k / 40k tokens
    task = Budget(task_limit * scale, unit) if task_limit is not None else None  # type: ignore[arg-type]
    session = Budget(session_limit * scale, unit) if session_limit is not None else None  # type: ignore[arg-type]
    local = ScriptedModel(name="local")
    cloud = ScriptedModel(name="cloud", pricing=Pricing(input_price, output_price))
    chosen = LocalFirst(EscalationThresholds(min_mean_logprob=-1.0)) if policy == "local-first" else AlwaysCloud()
    router = Router(local, cloud, chosen, task_budget=task, session_budget=session, charge_failed_calls=charge_failed)
    task_spent = 0.0
    for step in steps:
        if step["new_task"]:
            router.select("plan", RouteSignals())
            task_spent = 0.0
        signals = RouteSignals(attempt=1, parse_failed=step["parse_failed"], mean_logprob=step["mean_logprob"],
                               previous_model="local")
        model = router.select(step["stage"], signals)
        request = ModelRequest(messages=[{"role": "user", "content": "y" * step["prompt_chars"]}],
                               max_tokens=step["max_tokens"])
        try:
            router.before_call(model, request)
        except BudgetExceeded:
            assert model is cloud
            assert router.status()["reason"] == "budget"
            model = router.local
            router.before_call(model, request)
        completion = None
        if not step["fails"]:
            prompt = model.count_tokens(request.messages[0]["content"]) if request.messages[0]["content"] else 0
            usage = Usage(prompt, int(step["max_tokens"] * step["output_fraction"]), 1)
            completion = Completion(text="", usage=usage, model=model.name)
        router.after_call(model, request, completion)
        if model is cloud:
            charged = cost_of(cloud.pricing, completion.usage) if completion is not None else (
                worst_case_cost(cloud, request) if charge_failed else cost_of(cloud.pricing, Usage()))
            task_spent += charged.usd if unit == "usd" else charged.tokens
        status = router.status()
        assert status["budget_violations"] == 0
        budget = status["budget"]
        for scope, cap in (("task", task), ("session", session)):
            if cap is not None:
                spent = budget[scope]["spent_usd" if unit == "usd" else "spent_tokens"]  # type: ignore[index]
                assert spent <= cap.limit * (1 + 1e-9) + 1e-12
        if task is not None:
            assert task_spent <= task.limit * (1 + 1e-9) + 1e-12
    assert router.ledger.overruns == 0
    assert router.ledger.reserved == router.ledger.reserved.__class__()  # nothing left open


# -- calibration ---------------------------------------------------------------------------------------------------
def synthetic_records() -> list[RouteRecord]:
    # Confident local plans are right, unsure ones wrong; the cloud is right 9 times in 10 and costs 1.0 each.
    records = []
    for i in range(100):
        lp = -0.05 * i
        records.append(RouteRecord(id=str(i), local_success=lp > -2.5, cloud_success=i % 10 != 0,
                                   local_mean_logprob=lp, cloud_cost=1.0))
    return records


def test_simulate_always_local_always_cloud_and_local_first() -> None:
    records = synthetic_records()
    local = simulate(records, AlwaysLocal())
    cloud = simulate(records, AlwaysCloud())
    assert (local.success, local.cost, local.escalated) == (0.5, 0.0, 0.0)
    assert (cloud.success, cloud.cost, cloud.escalated) == (0.9, 100.0, 1.0)
    mid = simulate(records, LocalFirst(EscalationThresholds(min_mean_logprob=-2.5)))
    assert mid.escalated == 0.49 and mid.cost == 49.0
    assert mid.success == pytest.approx((51 + 44) / 100)
    with pytest.raises(ConfigurationError, match="no records"):
        simulate([], AlwaysLocal())


def test_parse_failures_escalate_in_the_simulation() -> None:
    records = [RouteRecord("a", False, True, local_parse_failed=True, cloud_cost=2.0)]
    assert simulate(records, LocalFirst()).success == 1.0
    quiet = LocalFirst(EscalationThresholds(escalate_on_parse_failure=False))
    assert simulate(records, quiet).success == 0.0


def test_frontier_is_monotone_in_cost() -> None:
    points = frontier(synthetic_records())
    assert len(points) == 101  # None, then one threshold per distinct logprob
    costs = [p.cost for p in points]
    assert costs == sorted(costs) and costs[0] == 0.0 and costs[-1] == 100.0


def test_calibrate_for_a_target_cost_and_a_target_accuracy() -> None:
    records = synthetic_records()
    by_cost = calibrate(records, target_cost=0.5)
    point = simulate(records, LocalFirst(by_cost))
    assert point.cost_per_request <= 0.5 and point.success == pytest.approx(0.95)
    by_accuracy = calibrate(records, target_accuracy=0.9)
    point = simulate(records, LocalFirst(by_accuracy))
    assert point.success >= 0.9 and point.cost_per_request <= 0.45
    relative = calibrate(records, target_cost=0.4, target_accuracy=0.95, relative=True)
    point = simulate(records, LocalFirst(relative))
    assert point.cost_per_request <= 0.4 and point.success >= 0.95 * 0.9
    with pytest.raises(ConfigurationError, match="target"):
        calibrate(records)


def test_calibrate_keeps_the_other_settings() -> None:
    base = EscalationThresholds(escalate_on_replan=False, max_cloud_calls_per_task=2)
    fitted = calibrate(synthetic_records(), target_cost=0.2, base=base)
    assert fitted.escalate_on_replan is False and fitted.max_cloud_calls_per_task == 2
    assert fitted.min_mean_logprob is not None


def test_records_load_from_jsonl_and_bad_lines_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join(json.dumps(r.to_dict()) for r in synthetic_records()[:3]) + "\n\n")
    assert [r.id for r in load_records(path)] == ["0", "1", "2"]
    path.write_text('{"id": 1}\n')
    with pytest.raises(ConfigurationError, match="local_success"):
        load_records(path)
    path.write_text("not json\n")
    with pytest.raises(ConfigurationError, match=":1: not JSON"):
        load_records(path)


def test_calibrate_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join(json.dumps(r.to_dict()) for r in synthetic_records()))
    assert main(["routing", "calibrate", "--records", str(path), "--target-cost", "0.4", "--relative"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["records"] == 100
    assert out["expected"]["cost_per_request"] <= 0.4
    assert out["always_cloud"]["success"] == 0.9
    assert main(["routing", "calibrate", "--records", str(tmp_path / "missing.jsonl"), "--target-cost", "1"]) == 1


def test_python_dash_m_entry_point(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join(json.dumps(r.to_dict()) for r in synthetic_records()))
    proc = subprocess.run(
        [sys.executable, "-W", "error", "-m", "tinyagent.routing", "calibrate", "--records", str(path),
         "--target-accuracy", "0.9"],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["expected"]["success"] >= 0.9


# -- the agent with a router ---------------------------------------------------------------------------------------
class Confidence(ScriptedModel):
    """A scripted model whose completions report a chosen mean log-probability."""

    def __init__(self, *args: Any, mean_logprob: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.mean = mean_logprob

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | Completion]:
        async for item in super().stream(request):
            yield dataclasses.replace(item, mean_logprob=self.mean) if isinstance(item, Completion) else item


def lookup(name: str) -> str:
    """Look up a contact's phone number."""
    return f"+1-555-{len(name):04d}"


GOOD = '1. lookup(name="Sid")\n2. join()\n<END_OF_PLAN>'


async def test_agent_escalates_an_unparseable_local_plan_and_keeps_spend_in_the_result() -> None:
    from tinyagent import Agent

    local = ScriptedModel(["1. this is not a plan((\n<END_OF_PLAN>", "Answer: done"], name="local")
    cloud = ScriptedModel([GOOD], name="cloud", pricing=CLOUD_PRICE)
    router = Router(local, cloud, session_budget=Budget(10.0))
    agent = Agent([lookup], router=router, joiner="template")
    result = await agent.run("what is Sid's number?", today=dt.date(2026, 12, 1))
    assert result.models[:2] == ["local", "cloud"]
    assert [s.result for s in result.steps] == ["+1-555-0003"]
    assert result.routing["calls"]["cloud"] == 1
    assert result.cost == pytest.approx(router.ledger.session_spent.usd) and result.cost > 0
    assert result.routing["budget_violations"] == 0


async def test_agent_replans_a_low_confidence_plan_in_the_cloud_before_executing_it() -> None:
    from tinyagent import Agent

    local = Confidence(['1. lookup(name="Bob")\n2. join()\n<END_OF_PLAN>'], name="local", mean_logprob=-3.0)
    cloud = Confidence([GOOD], name="cloud", pricing=CLOUD_PRICE, mean_logprob=-0.01)
    router = Router(local, cloud, LocalFirst(EscalationThresholds(min_mean_logprob=-1.0)))
    agent = Agent([lookup], router=router, joiner="template")
    result = await agent.run("what is Sid's number?")
    assert local.requests[0].logprobs is True
    assert [s.result for s in result.steps] == ["+1-555-0003"]  # only the cloud plan ran
    assert [d["model"] for d in result.routing["decisions"]][:3] == ["local", "cloud", "cloud"]


def explode(why: str) -> str:
    """Always fails."""
    raise ValueError(why)


async def test_agent_replans_a_failed_step_in_the_cloud_and_keeps_the_local_results() -> None:
    from tinyagent import Agent

    local = ScriptedModel(['1. lookup(name="Anna")\n2. explode(why="disk full")\n3. join()\n<END_OF_PLAN>',
                           "Replan: step 2 failed", "Answer: Sid's number is +1-555-0003."], name="local")
    cloud = ScriptedModel(['3. lookup(name="Sid")\n4. join()\n<END_OF_PLAN>'], name="cloud", pricing=CLOUD_PRICE)
    router = Router(local, cloud, session_budget=Budget(10.0))
    agent = Agent([lookup, explode], router=router)
    result = await agent.run("what is Sid's number?")
    assert result.models == ["local", "local", "cloud", "local"]  # plan, join, replan in the cloud, join
    assert [(s.id, s.status) for s in result.steps][:2] == [(1, "ok"), (2, "error")]
    assert result.steps[0].result == "+1-555-0004"  # the local step's result is kept, not redone
    assert result.steps[-1].result == "+1-555-0003" and result.steps[-1].id == 3
    replan = [d for d in result.routing["decisions"] if d["stage"] == "replan"][0]
    assert replan["model"] == "cloud" and "a step failed" in replan["reasons"]
    assert result.answer == "Sid's number is +1-555-0003."


async def test_agent_degrades_to_local_when_the_budget_is_too_small() -> None:
    from tinyagent import Agent

    local = ScriptedModel(["1. nonsense((\n<END_OF_PLAN>", GOOD], name="local")
    cloud = ScriptedModel([GOOD], name="cloud", pricing=CLOUD_PRICE)
    router = Router(local, cloud, task_budget=Budget(0.0001))
    agent = Agent([lookup], router=router, joiner="template")
    result = await agent.run("what is Sid's number?")
    assert cloud.requests == []  # never called
    assert result.status == "degraded"
    assert result.routing["reason"] == "budget"
    assert [s.result for s in result.steps] == ["+1-555-0003"]
    assert result.cost == 0.0


async def test_agent_falls_back_to_local_when_the_cloud_fails() -> None:
    from tinyagent import Agent

    local = ScriptedModel(["1. nonsense((\n<END_OF_PLAN>", GOOD], name="local")
    cloud = ScriptedModel([GOOD], name="cloud", pricing=CLOUD_PRICE,
                          fail_with=EndpointError("HTTP 500", status=500, retryable=True))
    router = Router(local, cloud, session_budget=Budget(10.0))
    agent = Agent([lookup], router=router, joiner="template")
    result = await agent.run("what is Sid's number?")
    assert len(cloud.requests) == 1
    assert result.routing["offline"] is True and result.routing["reason"] == "offline"
    assert [s.result for s in result.steps] == ["+1-555-0003"]
    assert result.routing["budget_violations"] == 0


# -- real servers --------------------------------------------------------------------------------------------------
def _openai_available() -> None:
    pytest.importorskip("openai", reason="the openai extra is not installed: pip install 'tinyagent[openai]'")


@pytest.mark.real_model  # the real OpenAIModel against a closed port
async def test_agent_with_an_unreachable_cloud_answers_locally_and_says_so() -> None:
    _openai_available()
    from llama_server import free_port

    from tinyagent import Agent
    from tinyagent.models import OpenAIModel

    local = ScriptedModel(["1. nonsense((\n<END_OF_PLAN>", GOOD], name="local")
    cloud = OpenAIModel("gpt", base_url=f"http://127.0.0.1:{free_port()}/v1", name="cloud", pricing=CLOUD_PRICE,
                        max_retries=1, backoff=0.01, timeout=5)
    router = Router(local, cloud, session_budget=Budget(10.0))
    agent = Agent([lookup], router=router, joiner="template")
    result = await agent.run("what is Sid's number?")
    await cloud.aclose()
    assert [s.result for s in result.steps] == ["+1-555-0003"]
    assert result.status == "degraded"
    assert result.routing["offline"] is True and result.routing["reason"] == "offline"
    assert "unreachable" in str(result.routing["message"])


@pytest.mark.real_model  # the real OpenAIModel against a local fault server
async def test_router_with_a_rate_limited_cloud_is_charged_once_after_the_retry() -> None:
    _openai_available()
    from llama_server import FaultServer

    from tinyagent import Agent
    from tinyagent.models import OpenAIModel

    async with FaultServer(["429", "ok"], retry_after="0.1") as server:
        local = ScriptedModel(["1. nonsense((\n<END_OF_PLAN>"], name="local")
        cloud = OpenAIModel("fault", base_url=server.base_url, name="cloud", pricing=CLOUD_PRICE, backoff=0.01)
        router = Router(local, cloud, session_budget=Budget(10.0))
        agent = Agent([lookup], router=router, joiner="template", max_replans=1)
        result = await agent.run("what is Sid's number?")
        await cloud.aclose()
    assert len(server.requests) == 2
    assert result.routing["calls"]["cloud"] == 1
    # the fault server reports 7 prompt and 2 completion tokens
    assert router.ledger.session_spent.usd == pytest.approx(7 * 0.001 + 2 * 0.004)
    assert result.routing["budget_violations"] == 0


class RecordingRouter(Router):
    """A router that also keeps every completion of the cloud model, for checking the charges."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cloud_usage: list[Usage] = []

    def after_call(self, model: Any, request: ModelRequest, completion: Completion | None) -> None:
        if model is self.cloud and completion is not None:
            self.cloud_usage.append(completion.usage)
        super().after_call(model, request, completion)


@pytest.mark.slow
def test_real_cloud_server_is_charged_its_usage_within_the_budget() -> None:
    _openai_available()
    from llama_server import llama_server, smollm2_path

    from tinyagent import Agent
    from tinyagent.models import OpenAIModel

    with llama_server(smollm2_path()) as server:
        price = Pricing(input_per_mtok=0.5, output_per_mtok=1.5)
        cloud = OpenAIModel(server.model, base_url=server.base_url, name="cloud", pricing=price,
                            supports_grammar=True, timeout=120)
        budget = 0.01
        router = RecordingRouter(ScriptedModel(["1. nonsense((\n<END_OF_PLAN>"], name="local"), cloud,
                                 task_budget=Budget(budget))
        agent = Agent([lookup], router=router, joiner="template", max_replans=1, planner_max_tokens=64)
        result = agent.run_sync("what is Sid's number?")
        status = result.routing
        assert result.models[:2] == ["local", "cloud"]
        assert status["calls"]["cloud"] == 1 and len(router.cloud_usage) == 1
        usage = router.cloud_usage[0]
        assert 1 <= usage.output_tokens <= 64 and usage.input_tokens > 50
        assert status["spent"] == pytest.approx(price.cost(usage))
        assert 0 < status["spent"] <= budget
        assert status["budget_violations"] == 0
        # a budget below one worst case: the cloud is never called, and the run says why
        tight = Router(ScriptedModel(["1. nonsense((\n<END_OF_PLAN>", GOOD], name="local"), cloud,
                       task_budget=Budget(1e-6))
        degraded = Agent([lookup], router=tight, joiner="template", max_replans=1).run_sync("Sid's number?")
        assert degraded.status == "degraded" and degraded.routing["reason"] == "budget"
        assert degraded.routing["calls"]["cloud"] == 0 and degraded.routing["spent"] == 0
        assert [s.result for s in degraded.steps] == ["+1-555-0003"]


def test_python_dash_m_without_typer_names_the_extra(tmp_path: Path) -> None:
    code = "import sys, runpy\nsys.modules['typer'] = None\nrunpy.run_module('tinyagent.routing', run_name='__main__')"
    proc = subprocess.run([sys.executable, "-c", code, "calibrate"], capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 2
    assert "pip install 'tinyagent[cli]'" in proc.stderr
