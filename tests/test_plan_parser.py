"""Plan parsing (whole and streamed), validation, and a hypothesis fuzz: typed errors only, no hangs."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinyagent import Call, Plan, Ref, tool
from tinyagent._plan_parser import PlanStreamParser, parse_plan
from tinyagent.errors import PlanError, PlanParseError, PlanValidationError


@tool
def get_email_address(name: str) -> str:
    """Look up an email address."""
    return name


@tool
def send_email(to: list[str], subject: str, body: str = "", cc: dict | None = None) -> str:
    """Send an email."""
    return "ok"


TOOLS = {t.name: t for t in (get_email_address, send_email)}

PLAN = (
    '1. get_email_address(name="Sid")\n'
    '2. get_email_address(name="Ann \\"A\\" Lee")\n'
    '3. send_email(to=[$1, $2], subject="Lunch", body="at noon", cc={"x": $1})\n'
    "4. join()\n<END_OF_PLAN>"
)


def test_parse_whole_plan_with_refs_in_lists_and_objects() -> None:
    plan = parse_plan(PLAN, TOOLS)
    assert [c.name for c in plan] == ["get_email_address", "get_email_address", "send_email"]
    assert plan.calls[1].args == {"name": 'Ann "A" Lee'}
    assert plan.calls[2].args["to"] == [Ref(1), Ref(2)]
    assert plan.calls[2].args["cc"] == {"x": Ref(1)}
    assert plan.calls[2].deps == {1, 2}


def test_text_and_json_round_trip() -> None:
    plan = parse_plan(PLAN, TOOLS)
    assert parse_plan(plan.to_text(), TOOLS) == plan
    assert Plan.from_json(plan.to_json()) == plan
    assert plan.to_json()[2]["args"]["to"] == ["$1", "$2"]


def test_streaming_emits_each_call_when_its_line_completes() -> None:
    parser = PlanStreamParser(TOOLS)
    seen: list[list[int]] = []
    for i in range(0, len(PLAN), 5):
        seen.append([c.id for c in parser.feed(PLAN[i : i + 5])])
    flat = [x for chunk in seen for x in chunk]
    assert flat == [1, 2, 3]
    # the first call is available long before the plan ends
    first_chunk = next(i for i, chunk in enumerate(seen) if chunk)
    assert first_chunk < len(seen) // 3
    assert parser.done


def test_lenient_forms_from_ungrammared_models() -> None:
    text = ("Thought: look up first\n```\n1. get_email_address(name='Sid')\n"
            "2: send_email(to=[$1], subject='x', cc=None)\n```")
    plan = parse_plan(text, TOOLS)
    assert plan.calls[1].args == {"to": [Ref(1)], "subject": "x", "cc": None}


def test_empty_plan() -> None:
    assert len(parse_plan("1. join()\n<END_OF_PLAN>", TOOLS)) == 0


@pytest.mark.parametrize(
    ("text", "error", "match"),
    [
        ('1. send_email(to=[$2], subject="x")', PlanValidationError, "forward reference"),
        ('1. send_email(to=[$1], subject="x")', PlanValidationError, "own result"),
        ('1. get_email_address(name="a")\n2. send_email(to=[$7], subject="x")', PlanValidationError, "forward"),
        ('1. delete_everything(path="/")', PlanValidationError, "unknown tool"),
        ('1. send_email(to="a@b.c", subject="x")', PlanValidationError, "expected a list"),
        ('1. send_email(subject="x")', PlanValidationError, "missing required"),
        ('1. send_email(to=[], subject="x", colour="red")', PlanValidationError, "no argument"),
        ('1. get_email_address(name="Sid"', PlanParseError, "not a call"),
        ('2. get_email_address(name="Sid")', PlanParseError, "numbered in order"),
        ('1. get_email_address(name="Sid", name="Ann")', PlanParseError, "twice"),
        ("hello there", PlanParseError, "numbered step"),
        ('1. get_email_address(name="unterminated)', PlanParseError, "unterminated"),
    ],
)
def test_bad_plans_raise_typed_errors(text: str, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        parse_plan(text, TOOLS)


def test_cycles_and_missing_refs_in_json_plans() -> None:
    cyclic = Plan(calls=(Call(1, "send_email", {"to": [Ref(2)], "subject": "a"}),
                         Call(2, "send_email", {"to": [Ref(1)], "subject": "b"})))
    with pytest.raises(PlanValidationError, match="cycle"):
        cyclic.topological_order()
    with pytest.raises(PlanValidationError, match="do not exist"):
        Plan(calls=(Call(1, "x", {"a": Ref(9)}),)).topological_order()
    with pytest.raises(PlanValidationError, match="numbered 1"):
        Plan(calls=(Call(1, "x"), Call(1, "y"))).topological_order()


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=300))
def test_fuzz_arbitrary_text_gives_typed_errors_only(text: str) -> None:
    with contextlib.suppress(PlanError):
        parse_plan(text, TOOLS)


_fragments = st.sampled_from(
    ["1. ", "2. ", "get_email_address(", "send_email(", "name=", "to=", "subject=", '"x"', "$1", "$2", "[", "]",
     "{", "}", ",", ")", "\n", "join()", "<END_OF_PLAN>", "'", "\\", "3.5", "true", "null", ":", "=", " "]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_fragments, max_size=40), st.integers(min_value=1, max_value=7))
def test_fuzz_plan_like_text_streamed_in_chunks(parts: list[str], chunk: int) -> None:
    text = "".join(parts)
    parser = PlanStreamParser(TOOLS)
    try:
        for i in range(0, len(text), chunk):
            parser.feed(text[i : i + chunk])
        parser.close()
    except PlanError:
        pass


def test_quoted_references_are_references() -> None:
    plan = parse_plan('1. get_email_address(name="Sid")\n2. send_email(to=["$1"], subject="$ 5 off")', TOOLS)
    assert plan.calls[1].args == {"to": [Ref(1)], "subject": "$ 5 off"}
    with pytest.raises(PlanValidationError, match="forward"):
        parse_plan('1. send_email(to=["$2"], subject="x")', TOOLS)


def test_the_end_marker_inside_a_quoted_value_does_not_end_the_plan() -> None:
    text = '1. send_email(to=["a@b.co"], subject="x", body="see <END_OF_PLAN> below")\n2. join()\n<END_OF_PLAN>'
    parser = PlanStreamParser(TOOLS)
    for i in range(0, len(text), 5):
        parser.feed(text[i : i + 5])
    plan = parser.close()
    assert plan.calls[0].args["body"] == "see <END_OF_PLAN> below"
    assert parse_plan('1. get_email_address(name="Sid") <END_OF_PLAN> trailing', TOOLS).calls[0].name \
        == "get_email_address"
