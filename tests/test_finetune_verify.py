"""Verification: every check drops what it should, repairs are recorded, dates are checked, duplicates found."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from tinyagent import tool
from tinyagent._grammar import GrammarOptions
from tinyagent._plan import Call, Plan, Ref
from tinyagent.finetune import ToolDryRun, Verifier, VerifyStats
from tinyagent.finetune._synth import SynthRequest
from tinyagent.finetune._verify import Deduper, expected_dates, relative_date_problem, unique

TODAY = dt.date(2026, 12, 2)  # a Wednesday


@tool
def get_email_address(name: str) -> str:
    """Look up a contact's email address."""
    if name == "Nobody":
        raise ValueError("the address book is broken")
    return f"{name.lower()}@example.com"


@tool
def send_email(to: list[str], subject: str, body: str = "") -> str:
    """Send an email."""
    return "sent"


@tool
def create_event(title: str, date: str, guests: int = 1) -> str:
    """Create a calendar event on a date (YYYY-MM-DD)."""
    return "ok"


TOOLS = {t.name: t for t in (get_email_address, send_email, create_event)}


def req(query: str = "Email Sid the notes", kind: str = "single") -> SynthRequest:
    return SynthRequest(id="b00000-0", query=query, kind=kind, tools=(), today=TODAY)


async def verdict(text: str, request: SynthRequest | None = None, **kwargs: object):  # type: ignore[no-untyped-def]
    return await Verifier(TOOLS, **kwargs).verify(request or req(), text)  # type: ignore[arg-type]


GOOD = '1. get_email_address(name="Sid")\n2. send_email(to=[$1], subject="Notes")\n3. join()\n'


async def test_a_good_plan_is_kept_unchanged() -> None:
    v = await verdict(GOOD)
    assert v.ok and v.reason is None and v.repairs == ()
    assert v.plan is not None and v.plan.to_text() == GOOD + "<END_OF_PLAN>"


@pytest.mark.parametrize(
    ("text", "reason", "fragment"),
    [
        ("Sure, here is the plan: send it", "parse", "numbered step"),
        ('1. get_email_address(name="Sid)\n2. join()', "parse", "unterminated"),
        ('1. get_email_address(name="Sid")\n2. send_email(to=[$1], subject="N', "parse", ""),
        ('1. get_email_address(name="Sid")\n', "parse", "join()"),
        ('1. send_email(to=[$2], subject="x")\n2. get_email_address(name="Sid")\n3. join()', "dag", "earlier"),
        ('1. send_email(to=[$1], subject="x")\n2. join()', "dag", "earlier"),
        ('1. fetch_weather(city="Oslo")\n2. join()', "schema", "unknown tool"),
        ('1. send_email(to=["a@b.c"], subject="x", cc="d")\n2. join()', "schema", "cc"),
        ('1. send_email(subject="x")\n2. join()', "schema", "missing required"),
        ('1. send_email(to="a@b.c", subject="x")\n2. join()', "schema", "list"),
    ],
)
async def test_bad_plans_are_dropped_with_the_reason(text: str, reason: str, fragment: str) -> None:
    v = await verdict(text)
    assert v.reason == reason, v
    assert fragment in v.detail


async def test_grammar_caps_drop_plans_the_student_grammar_forbids() -> None:
    long_subject = "x" * 40
    text = f'1. send_email(to=["a@b.c"], subject="{long_subject}")\n2. join()'
    assert (await verdict(text, req("Email a@b.c"))).ok
    v = await verdict(text, req("Email a@b.c"), grammar=GrammarOptions(max_string_chars=30))
    assert v.reason == "grammar" and "40 characters" in v.detail
    many = "\n".join(f'{i}. get_email_address(name="P{i}")' for i in range(1, 5)) + "\n5. join()"
    v = await verdict(many, grammar=GrammarOptions(max_steps=3))
    assert v.reason == "grammar" and "4 steps" in v.detail


async def test_repairs_reorder_drop_nulls_and_coerce() -> None:
    text = '1. create_event(guests=2.0, date="2026-12-03", title="Dentist")\n2. join()'
    v = await verdict(text, req("Dentist tomorrow"))
    assert v.ok
    assert v.plan is not None
    call = v.plan.calls[0]
    assert list(call.args) == ["title", "date", "guests"]
    assert call.args["guests"] == 2 and isinstance(call.args["guests"], int)
    assert set(v.repairs) == {"reordered_args", "coerced_value"}
    v = await verdict('1. send_email(to=["a@b.c"], subject="x", body=null)\n2. join()', req("Email a@b.c"))
    assert v.ok and v.repairs == ("dropped_null_arg",)
    assert v.plan is not None and "body" not in v.plan.calls[0].args


async def test_kind_checks() -> None:
    assert (await verdict("1. join()", req("hi there, how are you?", "no_tool"))).ok
    v = await verdict(GOOD, req("hi there", "no_tool"), repair_known=False)
    assert v.reason == "kind" and "needs no tool" in v.detail
    # By default the synthesis knows better than the teacher: a greeting's plan is the empty one.
    v = await verdict(GOOD, req("hi there", "no_tool"))
    assert v.ok and v.repairs == ("emptied_no_tool_plan",)
    assert v.plan is not None and v.plan.calls == () and v.plan.to_text().startswith("1. join()")
    v = await verdict("1. join()", req("Email Sid", "single"))
    assert v.reason == "kind" and "empty" in v.detail


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Dentist tomorrow at 3", {dt.date(2026, 12, 3)}),
        ("lunch today", {TODAY}),
        ("the day after tomorrow", {dt.date(2026, 12, 4)}),
        ("in 3 days", {dt.date(2026, 12, 5)}),
        ("in two weeks", {dt.date(2026, 12, 16)}),
        ("next Friday", {dt.date(2026, 12, 4), dt.date(2026, 12, 11)}),
        ("on Monday", {dt.date(2026, 12, 7)}),
        ("this Wednesday", {TODAY, dt.date(2026, 12, 9)}),
        ("no date here", None),
        ("tomorrow or next Friday", None),
    ],
)
def test_expected_dates(query: str, expected: set[dt.date] | None) -> None:
    assert expected_dates(query, TODAY) == expected


async def test_relative_dates_are_checked() -> None:
    plan = '1. create_event(title="Dentist", date="{}")\n2. join()'
    assert (await verdict(plan.format("2026-12-03"), req("Dentist tomorrow"))).ok
    assert (await verdict(plan.format("2026-12-03T15:00"), req("Dentist tomorrow at 3pm"))).ok
    v = await verdict(plan.format("2026-12-04"), req("Dentist tomorrow"), repair_known=False)
    assert v.reason == "relative_date" and "2026-12-03" in v.detail


async def test_a_single_wrong_relative_date_is_repaired() -> None:
    plan = '1. create_event(title="Dentist", date="{}")\n2. join()'
    v = await verdict(plan.format("2026-12-04T15:00"), req("Dentist tomorrow at 3pm"))
    assert v.ok and v.repairs == ("fixed_relative_date",)
    assert v.plan is not None and v.plan.calls[0].args["date"] == "2026-12-03T15:00"
    v = await verdict(plan.format("2026-12-18"), req("Dentist next Friday"))  # the coming Friday
    assert v.ok and v.plan is not None and v.plan.calls[0].args["date"] == "2026-12-04"
    two = ('1. create_event(title="A", date="2026-12-05")\n2. create_event(title="B", date="2026-12-06")\n'
           "3. join()")
    v = await verdict(two, req("Dentist tomorrow"))  # which of the two is "tomorrow" is a guess: dropped
    assert v.reason == "relative_date" and v.repairs == ()
    assert (await verdict(plan.format("2026-12-04"), req("Dentist tomorrow"), check_dates=False)).ok
    calls = Plan((Call(1, "create_event", {"title": "x", "date": "2026-02-30"}),))
    assert "not a real date" in relative_date_problem("x tomorrow", TODAY, calls)


async def test_dry_run_failures_drop_the_plan_and_data_misses_are_tolerated(tmp_path: Path) -> None:
    class ContactNotFound(Exception):
        pass

    @tool
    def lookup(name: str) -> str:
        """Find a contact."""
        if name == "Ghost":
            raise ContactNotFound(name)
        if name == "Crash":
            raise RuntimeError("disk on fire")
        (folder / "looked-up.txt").write_text(name)
        return name

    seen: list[Path] = []
    data = tmp_path / "data"
    data.mkdir()
    (data / "seed.txt").write_text("seed")
    folder = tmp_path

    def make_tools(scratch: Path) -> list:  # type: ignore[type-arg]
        nonlocal folder
        folder = scratch
        seen.append(scratch)
        assert (scratch / "seed.txt").read_text() == "seed"
        return [lookup]

    dry = ToolDryRun(make_tools, data, tolerate=("ToolExecutionError",))
    ok = await Verifier({"lookup": lookup}, dry_run=dry).verify(req("find Sid"), '1. lookup(name="Sid")\n2. join()')
    assert ok.ok
    assert not (data / "looked-up.txt").exists()  # the user's data was never written
    strict = ToolDryRun(make_tools, data, tolerate=())
    crash = '1. lookup(name="Crash")\n2. join()'
    v = await Verifier({"lookup": lookup}, dry_run=strict).verify(req("find Crash"), crash)
    assert v.reason == "dry_run" and "disk on fire" in v.detail
    assert len(seen) == 2 and seen[0] != seen[1]  # a fresh scratch copy per plan


async def test_dry_run_with_the_builtin_tools(tmp_path: Path) -> None:
    pytest.importorskip("icalendar", reason="the functions extra is not installed: pip install 'tinyagent[functions]'")
    from tinyagent.finetune import builtin_dry_run
    from tinyagent.functions import builtin_tools

    tools = {t.name: t for t in builtin_tools()}
    with builtin_dry_run() as dry:
        assert "Sid Patel" in dry.hint
        verifier = Verifier(tools, dry_run=dry)
        good = '1. get_email_address(name="Sid Patel")\n2. send_email(to=[$1], subject="Hi", body="Lunch?")\n3. join()'
        assert (await verifier.verify(req("Email Sid Patel about lunch"), good)).ok
        missing = '1. get_email_address(name="Nina Unknown")\n2. join()'
        assert (await verifier.verify(req("Nina Unknown's address"), missing)).ok  # a data miss is tolerated
        assert dry.tolerated["ContactNotFound"] == 1
        bad = '1. create_calendar_event(title="x", start="not a date")\n2. join()'
        v = await verifier.verify(req("meeting"), bad)
        assert v.reason == "dry_run", v


def test_stats_count_kept_dropped_and_repairs() -> None:
    from tinyagent.finetune import Verdict

    stats = VerifyStats()
    stats.add("single", Verdict(Plan(), None, "", ("reordered_args",)))
    stats.add("single", Verdict(None, "parse", "bad"))
    stats.add("typo", None, "duplicate")
    data = stats.to_json()
    assert data["kept"] == 1 and data["dropped"] == 2
    assert data["dropped_by_reason"] == {"duplicate": 1, "parse": 1}
    assert data["repaired"] == {"reordered_args": 1}
    assert data["by_kind"] == {"single": {"kept": 1, "parse": 1}, "typo": {"duplicate": 1}}


def test_deduper_finds_exact_and_near_duplicates_only() -> None:
    d = Deduper(threshold=0.9)
    assert not d.check_and_add("Email Sid about the quarterly budget review")
    assert d.check_and_add("email sid about the quarterly budget review!")  # exact after normalisation
    assert d.check_and_add("Email Sid about the quarterly budget reveiw")  # a typo away
    assert not d.check_and_add("Email Alex about lunch on Friday")
    assert not d.check_and_add("Remind me to water the plants tomorrow morning")
    assert len(d) == 3
    texts = [f"Send {n} the slides from the design review" for n in ("Sid", "Sidd", "Priya", "Alexander")]
    # One name changed in a long sentence is near-identical; a short request with another name is not.
    assert unique(texts) == [texts[0], texts[3]]
    short = ["Email Sid about lunch", "Email Bob about lunch"]
    assert unique(short) == short


def test_plan_refs_survive_repair() -> None:
    plan = Plan((Call(1, "get_email_address", {"name": "Sid"}),
                 Call(2, "send_email", {"subject": "x", "to": [Ref(1)]})))
    fixed, repairs = Verifier(TOOLS).repair(plan)
    assert repairs == ("reordered_args",)
    assert fixed.calls[1].args == {"to": [Ref(1)], "subject": "x"}


def test_grammar_checker_asks_llama_cpp(smollm2_path: Path) -> None:
    from tinyagent._grammar import plan_grammar
    from tinyagent.finetune._grammar_check import GrammarChecker

    checker = GrammarChecker(smollm2_path)
    try:
        grammar = plan_grammar([get_email_address, send_email])
        assert checker.problem(grammar, GOOD + "<END_OF_PLAN>") == ""
        assert checker.problem(grammar, '1. get_email_address(name="Zoë Müller")\n2. join()\n<END_OF_PLAN>') == ""
        # Arguments out of schema order, and a reference to a later step, are not in the grammar's language.
        wrong_order = '1. send_email(subject="Hi", to=["a@b.c"])\n2. join()\n<END_OF_PLAN>'
        assert "rejects" in checker.problem(grammar, wrong_order)
        assert "rejects" in checker.problem(grammar, '1. send_email(to=[$1], subject="x")\n2. join()\n<END_OF_PLAN>')
    finally:
        checker.close()


async def test_verifier_uses_the_grammar_of_the_offered_tools(smollm2_path: Path) -> None:
    from tinyagent.finetune._grammar_check import GrammarChecker

    checker = GrammarChecker(smollm2_path)
    try:
        verifier = Verifier(TOOLS, grammar_checker=checker)
        assert (await verifier.verify(req(), GOOD)).ok
        # The same plan is refused when its prompt did not offer send_email.
        v = await verifier.verify(req(), GOOD, offered=[get_email_address])
        assert v.reason == "grammar" and "rejects" in v.detail
    finally:
        checker.close()


@pytest.mark.parametrize(
    ("query", "text", "reason"),
    [
        # The teacher pasted the call it was asked to motivate into the request.
        ("Email Sid, use the command: `send_email(to=['Sid'])`", GOOD, "request"),
        ("Run get_email_address for Sid and mail him the notes", GOOD, "request"),
        ("Get_Email_Address('Sid') then email Sid the notes", GOOD, "request"),
        ("They need to email Sid the notes", GOOD, "request"),
        ("The user wants to email Sid the notes", GOOD, "request"),
        # A recipient the request never names (the student would learn to invent people).
        ("Email the team the notes",
         '1. get_email_address(name="John")\n2. send_email(to=[$1], subject="Notes")\n3. join()\n', "ungrounded"),
        ("Email HR the notes", '1. send_email(to=["hr@acme.io"], subject="Notes")\n2. join()\n', "ungrounded"),
        ("Plan the review", '1. create_event(title="Review", date="{date}")\n2. join()\n', "ungrounded"),
        # A lookup whose result nothing reads, in a plan that acts.
        ("Email Sid the notes",
         '1. get_email_address(name="Sid")\n2. send_email(to=["sid@example.com"], subject="Notes")\n3. join()\n',
         "ungrounded"),
        ("Email sid@example.com the notes, Sid's address",
         '1. get_email_address(name="Sid")\n2. send_email(to=["sid@example.com"], subject="Notes")\n3. join()\n',
         "unused_result"),
    ],
)
async def test_grounding_checks_drop_invented_values_and_unused_lookups(query: str, text: str, reason: str) -> None:
    v = await verdict(text, req(query))
    assert v.reason == reason, v.detail
    assert not (await verdict(text, req(query), check_grounding=False)).reason


async def test_grounded_plans_pass_with_typos_accents_and_lookups_alone() -> None:
    assert (await verdict('1. get_email_address(name="Zoë Müller")\n2. send_email(to=[$1], subject="Hi")\n3. join()\n',
                          req("emial zoe muller hi pls"))).ok
    assert (await verdict('1. get_email_address(name="Sid")\n2. join()\n', req("What is Sid's address?"))).ok
    assert (await verdict('1. send_email(to=["sid@example.com"], subject="Hi")\n2. join()\n',
                          req("Say hi to SID@example.com"))).ok
    assert (await verdict(GOOD, req("Theo asked me to email Sid the notes"))).ok
