"""Budgets and the ledger: hard caps that are never exceeded, per task and per session."""

from __future__ import annotations

import random
import threading
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyagent.errors import BudgetExceeded, ConfigurationError
from tinyagent.models import ModelRequest, Pricing, ScriptedModel, Usage
from tinyagent.routing import (
    Budget,
    BudgetLedger,
    Cost,
    ReservationError,
    cost_of,
    prompt_token_bound,
    worst_case_cost,
)


def test_budget_rejects_bad_settings() -> None:
    with pytest.raises(ConfigurationError, match="finite number >= 0"):
        Budget(-1)
    with pytest.raises(ConfigurationError, match="finite number"):
        Budget(float("nan"))
    with pytest.raises(ConfigurationError, match="'usd' or 'tokens'"):
        Budget(1, unit="eur")  # type: ignore[arg-type]


def test_reserve_commit_release_track_spend_and_remaining() -> None:
    ledger = BudgetLedger(session=Budget(1.0))
    r1 = ledger.reserve(Cost(usd=0.5, tokens=100), label="cloud")
    assert ledger.remaining()["session"] == pytest.approx(0.5)
    ledger.commit(r1, Cost(usd=0.125, tokens=40))
    assert ledger.session_spent == Cost(0.125, 40)
    assert ledger.remaining()["session"] == pytest.approx(0.875)
    r2 = ledger.reserve(Cost(usd=0.25))
    ledger.release(r2)
    assert ledger.session_spent == Cost(0.125, 40)
    assert ledger.remaining() == {"task": None, "session": pytest.approx(0.875)}
    assert ledger.reserved == Cost()


def test_a_reservation_that_could_overshoot_is_refused_with_a_clear_message() -> None:
    ledger = BudgetLedger(task=Budget(0.01))
    held = ledger.reserve(Cost(usd=0.006))
    with pytest.raises(BudgetExceeded, match="task budget") as info:
        ledger.reserve(Cost(usd=0.005), label="gpt")
    assert info.value.needed == pytest.approx(0.005)
    assert info.value.remaining == pytest.approx(0.004)
    assert "gpt could cost up to $0.005000" in str(info.value)
    assert "raise the task budget" in str(info.value)
    assert ledger.refused == 1
    ledger.release(held)
    ledger.reserve(Cost(usd=0.005))  # fits once the other reservation is gone


def test_token_budget_counts_tokens_not_money() -> None:
    ledger = BudgetLedger(session=Budget(1000, unit="tokens"))
    r = ledger.reserve(Cost(usd=100.0, tokens=999))
    ledger.commit(r, Cost(usd=100.0, tokens=600))
    with pytest.raises(BudgetExceeded, match="400 tokens"):
        ledger.reserve(Cost(tokens=401))
    ledger.reserve(Cost(tokens=400))


def test_task_budget_resets_per_task_and_session_budget_carries_on() -> None:
    ledger = BudgetLedger(task=Budget(0.5), session=Budget(1.0))
    for _ in range(2):
        ledger.start_task()
        r = ledger.reserve(Cost(usd=0.5))
        ledger.commit(r, Cost(usd=0.5))
        with pytest.raises(BudgetExceeded, match="task budget"):
            ledger.reserve(Cost(usd=0.0625))
    ledger.start_task()
    assert ledger.task_spent == Cost()
    assert ledger.session_spent.usd == pytest.approx(1.0)
    with pytest.raises(BudgetExceeded, match="session budget"):
        ledger.reserve(Cost(usd=0.0625))


def test_an_open_reservation_from_an_earlier_task_still_counts_for_the_session() -> None:
    ledger = BudgetLedger(task=Budget(1.0), session=Budget(1.0))
    old = ledger.reserve(Cost(usd=0.75))
    ledger.start_task()
    with pytest.raises(BudgetExceeded, match="session"):
        ledger.reserve(Cost(usd=0.5))
    ledger.commit(old, Cost(usd=0.25))
    assert ledger.task_spent == Cost()  # charged to the session only: its task is over
    assert ledger.session_spent.usd == pytest.approx(0.25)


def test_committing_twice_or_a_foreign_reservation_is_an_error() -> None:
    ledger = BudgetLedger(session=Budget(1.0))
    r = ledger.reserve(Cost(usd=0.1))
    ledger.commit(r, Cost(usd=0.1))
    with pytest.raises(ReservationError, match="commit or release each reservation once"):
        ledger.commit(r, Cost(usd=0.1))
    with pytest.raises(ReservationError):
        BudgetLedger().release(r)


def test_negative_costs_are_rejected() -> None:
    ledger = BudgetLedger(session=Budget(1.0))
    with pytest.raises(ConfigurationError, match="finite and >= 0"):
        ledger.reserve(Cost(usd=-0.1))
    r = ledger.reserve(Cost(usd=0.1))
    with pytest.raises(ConfigurationError):
        ledger.commit(r, Cost(usd=float("inf")))


def test_an_overrun_is_charged_and_reported() -> None:
    ledger = BudgetLedger(session=Budget(1.0))
    r = ledger.reserve(Cost(usd=0.5, tokens=10))
    ledger.commit(r, Cost(usd=1.5, tokens=10))  # a server reporting more than its worst case
    assert ledger.overruns == 1
    assert not ledger.within_limits()
    assert ledger.snapshot()["overruns"] == 1
    with pytest.raises(BudgetExceeded):
        ledger.reserve(Cost(usd=0.0001))


def test_exact_arithmetic_never_lets_rounding_pass_the_limit() -> None:
    ledger = BudgetLedger(session=Budget(0.3))
    spent = Fraction(0)
    for _ in range(100):
        try:
            r = ledger.reserve(Cost(usd=0.1))
        except BudgetExceeded:
            break
        ledger.commit(r, Cost(usd=0.1))
        spent += Fraction(0.1)
    assert spent <= Fraction(0.3)
    assert ledger.within_limits()


def test_snapshot_is_plain_data() -> None:
    ledger = BudgetLedger(task=Budget(10, "tokens"), session=Budget(1.0))
    ledger.commit(ledger.reserve(Cost(usd=0.01, tokens=5)), Cost(usd=0.01, tokens=3))
    snap = ledger.snapshot()
    assert snap["task"] == {"limit": 10, "unit": "tokens", "spent_usd": 0.01, "spent_tokens": 3, "remaining": 7.0}
    assert snap["session"]["remaining"] == pytest.approx(0.99)  # type: ignore[index]
    assert snap["open_reservations"] == 0


def test_worst_case_is_prompt_bound_plus_max_tokens_at_the_model_prices() -> None:
    model = ScriptedModel(pricing=Pricing(input_per_mtok=1_000_000.0, output_per_mtok=2_000_000.0))
    request = ModelRequest(messages=[{"role": "user", "content": "x" * 400}], max_tokens=50)
    bound = prompt_token_bound(model, request)
    assert bound >= model.count_tokens("x" * 400)
    worst = worst_case_cost(model, request)
    assert worst.tokens == bound + 50
    assert worst.usd == pytest.approx(bound * 1.0 + 50 * 2.0)
    assert cost_of(model.pricing, Usage(3, 4, 1)) == Cost(usd=pytest.approx(11.0), tokens=7)


def test_worst_case_uses_the_model_own_bound_when_it_has_one() -> None:
    class Bounded(ScriptedModel):
        def prompt_token_bound(self, request: ModelRequest) -> int:
            return 1234

    request = ModelRequest(messages=[{"role": "user", "content": "hi"}], max_tokens=6)
    assert worst_case_cost(Bounded(), request).tokens == 1240


def test_the_ledger_is_thread_safe() -> None:
    ledger = BudgetLedger(task=Budget(0.75), session=Budget(1.0))
    errors: list[BaseException] = []

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for _ in range(400):
                try:
                    r = ledger.reserve(Cost(usd=rng.choice([0.001, 0.01, 0.05])))
                except BudgetExceeded:
                    continue
                if rng.random() < 0.3:
                    ledger.release(r)
                else:
                    ledger.commit(r, Cost(usd=r.amount.usd * rng.random()))
        except BaseException as exc:  # noqa: BLE001 - surfaced by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert ledger.within_limits()
    assert ledger.session_spent.usd <= 0.75
    assert ledger.refused > 0  # the cap was actually reached


# -- property: spend never exceeds the budget --------------------------------------------------------------------
_op = st.one_of(
    st.tuples(st.just("reserve"), st.floats(0, 0.2, allow_nan=False), st.integers(0, 3000)),
    st.tuples(st.just("commit"), st.floats(0, 1, allow_nan=False), st.integers(0, 10)),
    st.tuples(st.just("release"), st.just(0.0), st.integers(0, 10)),
    st.tuples(st.just("task"), st.just(0.0), st.just(0)),
)


@settings(max_examples=1000, deadline=None)
@given(
    task_limit=st.one_of(st.none(), st.floats(0, 0.5, allow_nan=False)),
    session_limit=st.one_of(st.none(), st.floats(0, 1.0, allow_nan=False)),
    token_limit=st.one_of(st.none(), st.integers(0, 20_000)),
    ops=st.lists(_op, max_size=60),
)
def test_property_ledger_spend_never_exceeds_any_limit(
    task_limit: float | None,
    session_limit: float | None,
    token_limit: int | None,
    ops: list[tuple[str, float, int]],
) -> None:
    task = Budget(task_limit) if task_limit is not None else (Budget(token_limit, "tokens") if token_limit else None)
    session = Budget(session_limit) if session_limit is not None else None
    ledger = BudgetLedger(task=task, session=session)
    open_: list = []
    task_spent = Fraction(0)
    for kind, x, n in ops:
        if kind == "reserve":
            try:
                open_.append(ledger.reserve(Cost(usd=x, tokens=n)))
            except BudgetExceeded as exc:
                assert exc.needed > exc.remaining or exc.needed >= 0
        elif kind == "commit" and open_:
            r = open_.pop(n % len(open_))
            actual = Cost(usd=r.amount.usd * x, tokens=int(r.amount.tokens * x))
            ledger.commit(r, actual)
            if r.task == ledger.task and task is not None:
                task_spent += actual.amount(task.unit)
        elif kind == "release" and open_:
            ledger.release(open_.pop(n % len(open_)))
        elif kind == "task":
            ledger.start_task()
            task_spent = Fraction(0)
        # the invariant, after every operation
        assert ledger.within_limits()
        if session is not None:
            assert Fraction(ledger.session_spent.usd) <= Fraction(session.limit) + Fraction(1, 10**12)
        if task is not None:
            assert task_spent <= Fraction(task.limit)
        remaining = ledger.remaining()
        assert all(v is None or v >= 0 for v in remaining.values())
    assert ledger.overruns == 0
