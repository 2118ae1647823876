"""Request synthesis: the batch plan, the teacher prompt, parsing the teacher's list, typos."""

from __future__ import annotations

import datetime as dt
import json
import random
from collections import Counter

import pytest

from tinyagent import tool
from tinyagent._grammar import check_gbnf
from tinyagent._plan import Call, Example, Plan
from tinyagent.errors import ConfigurationError
from tinyagent.finetune._synth import (
    DEFAULT_MIX,
    add_typos,
    list_grammar,
    parse_request_list,
    plan_batches,
    request_messages,
)


@tool
def get_email_address(name: str) -> str:
    """Look up a contact's email address.

    Args:
        name: the contact's name.
    """
    return f"{name}@example.com"


@tool
def send_email(to: list[str], subject: str, body: str = "") -> str:
    """Send an email."""
    return "sent"


@tool
def create_event(title: str, date: str) -> str:
    """Create a calendar event on a date (YYYY-MM-DD)."""
    return "ok"


TOOLS = [get_email_address, send_email, create_event]


def test_plan_batches_is_deterministic_and_follows_the_mix() -> None:
    a = plan_batches(TOOLS, 200, batch_size=5, seed=3)
    b = plan_batches(TOOLS, 200, batch_size=5, seed=3)
    assert a == b
    assert sum(s.count for s in a) == 200
    assert len({s.id for s in a}) == len(a) == 40
    kinds = Counter(s.kind for s in a)
    for kind, weight in DEFAULT_MIX.items():
        assert abs(kinds[kind] - 40 * weight) <= 1, kinds
    assert plan_batches(TOOLS, 200, batch_size=5, seed=4) != a


def test_plan_batches_kinds_get_suitable_tools() -> None:
    specs = plan_batches(TOOLS, 300, batch_size=5, seed=0)
    for s in specs:
        if s.kind == "no_tool":
            assert s.tools == ()
        elif s.kind == "chain":
            assert len(s.tools) == 2 and s.tools[0] != s.tools[1]
            assert s.tools[0] == "get_email_address"  # the only lookup-like producer
        elif s.kind == "relative_date":
            assert s.tools == ("create_event",)  # the only tool with a date parameter
    singles = {s.tools[0] for s in specs if s.kind == "single"}
    assert singles == {t.name for t in TOOLS}  # every tool is covered
    days = {s.today for s in specs}
    assert len(days) > 20 and all(dt.date(2026, 1, 1) <= d <= dt.date(2028, 1, 1) for d in days)


def test_plan_batches_drops_kinds_the_tools_cannot_support() -> None:
    specs = plan_batches([send_email], 50, batch_size=5)
    kinds = {s.kind for s in specs}
    assert "relative_date" not in kinds and "chain" not in kinds
    assert sum(s.count for s in specs) == 50


def test_plan_batches_rejects_bad_input() -> None:
    with pytest.raises(ConfigurationError, match="unknown request kind"):
        plan_batches(TOOLS, 10, mix={"poems": 1.0})
    with pytest.raises(ConfigurationError, match="at least one tool"):
        plan_batches([], 10)


def test_request_messages_describe_tools_kind_date_and_examples() -> None:
    spec = plan_batches(TOOLS, 5, batch_size=5, mix={"chain": 1.0})[0]
    example = Example("Email Sid the notes", Plan((Call(1, "get_email_address", {"name": "Sid"}),)))
    messages = request_messages(spec, {t.name: t for t in TOOLS}, [example], hint="contacts: Sid Patel")
    user = messages[-1]["content"]
    assert "get_email_address(name: str)" in user and "send_email(" in user
    assert "`get_email_address` first" in user
    assert f"Today is {spec.today.isoformat()}" in user
    assert "Email Sid the notes" in user and "contacts: Sid Patel" in user
    assert "JSON list of 5 strings" in user


def test_parse_request_list_json_and_fallbacks() -> None:
    assert parse_request_list('Sure! ["Email Sid about lunch", "Text Alex hello there"]') == [
        "Email Sid about lunch", "Text Alex hello there"]
    assert parse_request_list("1. Email Sid about lunch\n2) Call Bob tomorrow\n- hi\n* Book a table for two") == [
        "Email Sid about lunch", "Call Bob tomorrow", "Book a table for two"]
    assert parse_request_list(json.dumps([{"request": "Remind me to pay rent"}, 3, "x" * 500])) == [
        "Remind me to pay rent"]
    assert parse_request_list("no list here") == []


def test_list_grammar_is_valid_gbnf() -> None:
    grammar = list_grammar(4)
    check_gbnf(grammar)
    assert "{0,3}" in grammar


def test_add_typos_keeps_names_numbers_and_addresses() -> None:
    text = "Please email Sid Patel at sid@example.com about the budget meeting at 3pm tomorrow."
    variants = {add_typos(text, random.Random(seed)) for seed in range(20)}
    assert len(variants) > 5
    for v in variants:
        assert "Sid Patel" in v and "sid@example.com" in v and "3pm" in v
        assert v != text
        assert sum(a != b for a, b in zip(v.split(), text.split(), strict=False)) <= 4
