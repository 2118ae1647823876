"""Verification of synthesized examples: drop or repair every plan that fails a check, and deduplicate requests.

Checks, in order (the first failure names the drop reason):

1. ``parse``: the teacher's text parses as a plan.
2. ``dag``: steps reference only earlier, existing steps; no cycles.
3. ``schema``: tools exist; arguments exist, required ones are present, static values fit the schema.
4. ``grammar``: the canonical plan text re-parses to the same plan, fits the plan grammar's caps (steps, string
   length, list length) and, when a :class:`GrammarChecker` is given, is accepted token by token by llama.cpp's
   grammar engine under the plan grammar of the offered tools. The student is never trained on text its grammar
   would forbid.
5. ``kind``: a ``no_tool`` request got an empty plan, every other request a non-empty one.
6. ``relative_date``: where the request names one relative date ("tomorrow", "next Friday", "in 3 days") and the
   plan passes ISO dates, one of them is that date.
7. ``request``: the synthesized request reads like a user's, not like code: no backticks, no ``name(key=…)`` calls,
   no tool names (small teachers sometimes paste the call they were asked to motivate), and it is the user's own
   words, not a description of them ("They need to …", "The user wants …").
8. ``ungrounded``: every contact name a lookup takes (``name=``), every e-mail address and phone number in the plan
   appears in the request, and no argument is a template placeholder (``{date}``, ``<name>``): the teacher invented
   it, and the student would learn to invent recipients.
9. ``unused_result``: in a plan that acts (sends, creates …), every lookup's result (``get_``/``find_``/``list_``/
   ``resolve_``/``open_`` …) feeds a later step; a lookup nobody reads is a teacher that looked up one thing and then
   wrote another. None of the hand-written eval plans (train and test) fails 7-9.
10. ``dry_run``: the plan executes cleanly against the real tools on a scratch copy of the data (optional).

Repairs (recorded, not dropped): arguments reordered to schema order, optional ``null`` arguments removed, static
values coerced to their schema type (``"3"`` is not coerced; ``3`` becomes ``3.0`` for a number). Two repairs use
what the synthesis knows and the teacher got wrong (``repair_known=True``, the default):

- ``emptied_no_tool_plan``: a ``no_tool`` request (written as a greeting or general question) whose plan calls
  tools gets the empty plan. Small planners over-call tools on chit-chat; these are the examples that teach them not to.
- ``fixed_relative_date``: a plan whose ISO dates are all one wrong day gets the day the request means (the
  coming one for "next Friday"), time of day kept. A plan with several different dates is dropped instead.
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
import zlib
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._grammar import GrammarOptions, plan_grammar
from .._plan import END_OF_PLAN, Call, Plan, find_refs
from .._plan_parser import check_call, parse_plan
from .._provenance import leaves
from .._schema import SchemaValidationError, validate_value
from .._text import strip_accents
from .._tools import Tool
from ..errors import PlanParseError, PlanValidationError
from ._grammar_check import GrammarChecker
from ._synth import LOOKUP_NAME, SynthRequest

__all__ = ["DryRun", "Deduper", "Verdict", "VerifyStats", "Verifier", "normalize_request"]

#: ``await dry_run(plan, today)`` returns an error description per failed step (empty: the plan ran cleanly).
DryRun = Callable[[Plan, dt.date], Awaitable[Mapping[int, str]]]

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_RELATIVE = re.compile(
    r"\b(day after tomorrow|tomorrow|today|tonight|in (?:\d+|one|two|three|four|five|six|seven) (?:days?|weeks?)"
    r"|(?:next|this|on|coming) (?:" + "|".join(_WEEKDAYS) + r"))\b",
    re.IGNORECASE,
)
_NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}
_JOIN_LINE = re.compile(r"^\s*\d+\.\s*join\(\s*\)", re.MULTILINE)
_ISO_DATE = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:[T ]\d{2}:\d{2}(?::\d{2})?)?$")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_PHONE = re.compile(r"\+?\(?\d[\d\s().-]{5,}\d")
_PLACEHOLDER = re.compile(r"\{[^{}]*\}|<[^<>]*>|\[[A-Z][A-Z_ ]*\]")
_CODE = re.compile(r"`|\b\w+\([^()]*=|\b[a-z]+_[a-z_]+\(", re.IGNORECASE)
_THIRD_PERSON = re.compile(
    r"^\W*(?:the\s+)?(?:user|they|he|she|customer|client)\s+(?:needs?|wants?|asks?|would|is|are|has|have)\b",
    re.IGNORECASE,
)
_NAME_PARAMS = frozenset({"name", "person", "contact", "contact_name"})


@dataclass(frozen=True)
class Verdict:
    """The outcome of verifying one example.

    Attributes:
        plan: the (possibly repaired) plan; None when it did not parse.
        reason: None when kept, else the drop reason (``parse``, ``dag``, ``schema``, ``grammar``, ``kind``,
            ``relative_date``, ``request``, ``ungrounded``, ``unused_result``, ``dry_run``).
        detail: a human-readable explanation.
        repairs: the repairs applied.
    """

    plan: Plan | None
    reason: str | None = None
    detail: str = ""
    repairs: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Whether the example is kept."""
        return self.reason is None


@dataclass
class VerifyStats:
    """Counts of what was kept, dropped (and why) and repaired."""

    kept: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    repaired: Counter[str] = field(default_factory=Counter)
    by_kind: dict[str, Counter[str]] = field(default_factory=dict)

    def add(self, kind: str, verdict: Verdict | None, reason: str | None = None) -> None:
        """Count one example (``verdict`` None with a ``reason`` for drops before planning, e.g. duplicates)."""
        why = reason if verdict is None else verdict.reason
        per_kind = self.by_kind.setdefault(kind, Counter())
        if why is None:
            self.kept += 1
            per_kind["kept"] += 1
        else:
            self.dropped[why] += 1
            per_kind[why] += 1
        if verdict is not None:
            for r in verdict.repairs:
                self.repaired[r] += 1

    @property
    def total_dropped(self) -> int:
        """Every drop, whatever the reason."""
        return sum(self.dropped.values())

    def to_json(self) -> dict[str, Any]:
        """JSON-able counts."""
        return {
            "kept": self.kept,
            "dropped": self.total_dropped,
            "dropped_by_reason": dict(sorted(self.dropped.items())),
            "repaired": dict(sorted(self.repaired.items())),
            "by_kind": {k: dict(sorted(v.items())) for k, v in sorted(self.by_kind.items())},
        }


class Verifier:
    """Checks (and repairs) plans for synthesized requests.

    Args:
        tools: the tools plans may use.
        grammar: the caps of the student's plan grammar.
        dry_run: executes a plan on scratch data and reports failed steps; None skips the dry run.
        check_dates: run the relative-date check.
        grammar_checker: checks the plan text against the generated GBNF with llama.cpp (None: structural checks
            only).
        repair_known: repair a ``no_tool`` request's tool calls and a single wrong relative date (see the module
            docstring) instead of dropping the example.
        check_grounding: run checks 7-9 (request wording, grounded values, used lookups).
    """

    def __init__(
        self,
        tools: Mapping[str, Tool],
        *,
        grammar: GrammarOptions | None = None,
        dry_run: DryRun | None = None,
        check_dates: bool = True,
        grammar_checker: GrammarChecker | None = None,
        repair_known: bool = True,
        check_grounding: bool = True,
    ) -> None:
        self.tools = tools
        self.check_grounding = check_grounding
        self.repair_known = repair_known
        self.grammar = grammar or GrammarOptions()
        self.dry_run = dry_run
        self.check_dates = check_dates
        self.grammar_checker = grammar_checker

    async def verify(self, request: SynthRequest, text: str, offered: Sequence[Tool] | None = None) -> Verdict:
        """Verify the teacher's plan ``text`` for ``request`` (``offered``: the tools its prompt and grammar had;
        default: all)."""
        try:
            raw = parse_plan(text, self.tools, validate=False)
        except PlanParseError as exc:
            return Verdict(None, "parse", str(exc))
        if not _JOIN_LINE.search(text) and END_OF_PLAN not in text:
            return Verdict(raw, "parse", "the plan stops before its join() step (cut off by the token limit?)")
        return await self.verify_plan(request, raw, offered)

    async def verify_plan(self, request: SynthRequest, raw: Plan, offered: Sequence[Tool] | None = None) -> Verdict:
        """Verify an already parsed plan for ``request``."""
        known_repairs: tuple[str, ...] = ()
        if self.repair_known and request.kind == "no_tool" and raw.calls:
            raw, known_repairs = Plan(calls=(), answer=raw.answer), ("emptied_no_tool_plan",)
        try:
            _check_dag(raw)
        except PlanValidationError as exc:
            return Verdict(raw, "dag", str(exc))
        plan, repairs = self.repair(raw)
        repairs = known_repairs + repairs
        known: list[int] = []
        try:
            for call in plan.calls:
                check_call(call, self.tools, known)
                known.append(call.id)
        except PlanValidationError as exc:
            return Verdict(plan, "schema", str(exc), repairs)
        problem = self._grammar_problem(plan, offered)
        if problem:
            return Verdict(plan, "grammar", problem, repairs)
        if request.kind == "no_tool" and plan.calls:
            return Verdict(plan, "kind", "the request needs no tool, but the plan calls tools", repairs)
        if request.kind != "no_tool" and not plan.calls:
            return Verdict(plan, "kind", "the request needs a tool, but the plan is empty", repairs)
        if self.check_dates:
            problem = relative_date_problem(request.query, request.today, plan)
            fixed = fix_relative_date(request.query, request.today, plan) if problem and self.repair_known else None
            if fixed is not None:
                plan, problem, repairs = fixed, "", (*repairs, "fixed_relative_date")
            if problem:
                return Verdict(plan, "relative_date", problem, repairs)
        if self.check_grounding:
            checks: tuple[tuple[str, Callable[[], str]], ...] = (
                ("request", lambda: self.request_problem(request)),
                ("ungrounded", lambda: ungrounded_problem(request.query, plan)),
                ("unused_result", lambda: unused_result_problem(plan)),
            )
            for reason, check in checks:
                problem = check()
                if problem:
                    return Verdict(plan, reason, problem, repairs)
        if self.dry_run is not None and plan.calls:
            failures = await self.dry_run(plan, request.today)
            if failures:
                detail = "; ".join(f"step {k}: {v}" for k, v in sorted(failures.items()))
                return Verdict(plan, "dry_run", detail[:500], repairs)
        return Verdict(plan, None, "", repairs)

    def request_problem(self, request: SynthRequest) -> str:
        """Why the request itself is unusable (check 7), before any plan is made; "" when it is fine."""
        return request_problem(request.query, self.tools) if self.check_grounding else ""

    def repair(self, plan: Plan) -> tuple[Plan, tuple[str, ...]]:
        """Reorder arguments to schema order, drop optional nulls, coerce static values; return what changed."""
        repairs: list[str] = []
        calls = []
        for call in plan.calls:
            tool = self.tools.get(call.name)
            if tool is None:
                calls.append(call)
                continue
            props: Mapping[str, Any] = tool.parameters.get("properties", {})
            required = set(tool.required)
            args = dict(call.args)
            for key in [k for k, v in args.items() if v is None and k not in required and k in props]:
                if not props[key].get("nullable"):
                    del args[key]
                    repairs.append("dropped_null_arg")
            for key, value in list(args.items()):
                if key in props and not any(True for _ in find_refs(value)):
                    try:
                        coerced = validate_value(props[key], value, key)
                    except SchemaValidationError:
                        continue
                    if coerced != value or type(coerced) is not type(value):
                        args[key] = coerced
                        repairs.append("coerced_value")
            ordered = {k: args[k] for k in props if k in args}
            ordered.update({k: v for k, v in args.items() if k not in ordered})
            if list(ordered) != [k for k in call.args if k in ordered]:
                repairs.append("reordered_args")
            calls.append(Call(id=call.id, name=call.name, args=ordered))
        return Plan(calls=tuple(calls), answer=plan.answer), tuple(dict.fromkeys(repairs))

    def _grammar_problem(self, plan: Plan, offered: Sequence[Tool] | None) -> str:
        opts = self.grammar
        if len(plan.calls) > opts.max_steps:
            return f"{len(plan.calls)} steps; the plan grammar allows {opts.max_steps}"
        for call in plan.calls:
            for value in leaves(call.args):
                if isinstance(value, str) and len(value) > opts.max_string_chars:
                    return f"step {call.id}: a string of {len(value)} characters (cap {opts.max_string_chars})"
            for value in _lists(call.args):
                if len(value) > opts.max_array_items:
                    return f"step {call.id}: a list of {len(value)} items (cap {opts.max_array_items})"
        text = plan.to_text()
        try:
            again = parse_plan(text, self.tools)
        except (PlanParseError, PlanValidationError) as exc:
            return f"the canonical plan text does not re-parse: {exc}"
        if again.to_json() != plan.to_json():
            return "the canonical plan text does not round-trip"
        if self.grammar_checker is not None:
            tools = list(offered) if offered is not None else list(self.tools.values())
            return self.grammar_checker.problem(plan_grammar(tools, options=opts), text)
        return ""


def _check_dag(plan: Plan) -> None:
    for call in plan.calls:
        for ref in find_refs(call.args):
            if ref.step >= call.id:
                raise PlanValidationError(f"reference ${ref.step} is not to an earlier step", step=call.id)
    plan.topological_order()


def _lists(value: Any) -> Iterable[list[Any] | tuple[Any, ...]]:
    if isinstance(value, Mapping):
        for v in value.values():
            yield from _lists(v)
    elif isinstance(value, list | tuple):
        yield value
        for v in value:
            yield from _lists(v)


def expected_dates(query: str, today: dt.date) -> set[dt.date] | None:
    """The date(s) the single relative expression in ``query`` can mean, or None (none, or several of them).

    "next Friday" is ambiguous in English (the coming one, or the one after), so both are accepted.
    """
    found = {m.group(1).lower() for m in _RELATIVE.finditer(query)}
    if len(found) != 1:
        return None
    expr = found.pop()
    if expr in ("today", "tonight"):
        return {today}
    if expr == "tomorrow":
        return {today + dt.timedelta(days=1)}
    if expr == "day after tomorrow":
        return {today + dt.timedelta(days=2)}
    if expr.startswith("in "):
        _, amount, unit = expr.split(" ")
        n = _NUMBER_WORDS.get(amount) or int(amount)
        return {today + dt.timedelta(days=n * (7 if unit.startswith("week") else 1))}
    qualifier, day_name = expr.split(" ")
    target = _WEEKDAYS.index(day_name)
    ahead = (target - today.weekday()) % 7
    coming = today + dt.timedelta(days=ahead or 7)
    options = {coming}
    if qualifier == "next":
        options.add(coming + dt.timedelta(days=7))
    if qualifier in ("this", "on") and ahead == 0:
        options.add(today)
    return options


def relative_date_problem(query: str, today: dt.date, plan: Plan) -> str:
    """Why the plan's dates contradict the request's relative date ("" when they agree or nothing is checkable)."""
    wanted = expected_dates(query, today)
    if not wanted:
        return ""
    dates = set()
    for call in plan.calls:
        for value in leaves(call.args):
            if isinstance(value, str) and (m := _ISO_DATE.match(value.strip())):
                try:
                    dates.add(dt.date.fromisoformat(m.group(1)))
                except ValueError:
                    return f"{value!r} is not a real date"
    if not dates or dates & wanted:
        return ""
    shown = ", ".join(sorted(d.isoformat() for d in wanted))
    return f"the request means {shown}, but the plan uses {', '.join(sorted(d.isoformat() for d in dates))}"


def fix_relative_date(query: str, today: dt.date, plan: Plan) -> Plan | None:
    """``plan`` with its one (wrong) ISO date replaced by the date ``query`` means; None when that is not possible.

    Only a plan whose ISO dates are all the same day is fixed: with several days, which one the relative date
    belongs to is a guess. "next Friday" takes the coming Friday.
    """
    wanted = expected_dates(query, today)
    if not wanted:
        return None
    dates = {m.group(1) for call in plan.calls for value in leaves(call.args)
             if isinstance(value, str) and (m := _ISO_DATE.match(value.strip()))}
    if len(dates) != 1:
        return None
    old, new = dates.pop(), min(wanted).isoformat()

    def fix(value: Any) -> Any:
        if isinstance(value, str) and _ISO_DATE.match(value.strip()):
            return value.replace(old, new, 1)
        if isinstance(value, Mapping):
            return {k: fix(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(fix(v) for v in value)
        return value

    calls = tuple(Call(id=c.id, name=c.name, args=fix(dict(c.args))) for c in plan.calls)
    return Plan(calls=calls, answer=plan.answer)


def _folded(text: str) -> str:
    """Case and accents folded (``"Zoë"`` matches ``"zoe"``)."""
    return strip_accents(text.casefold())


def request_problem(query: str, tools: Iterable[str]) -> str:
    """Why ``query`` does not read like a user's request (code, a tool's name, the third person), or ""."""
    if m := _CODE.search(query):
        return f"the request holds code ({m.group(0)!r})"
    for name in tools:
        if "_" in name and re.search(rf"\b{re.escape(name)}\b", query, re.IGNORECASE):
            return f"the request names the tool {name!r}"
    if _THIRD_PERSON.match(query):
        return "the request talks about the user instead of being the user's (\"They need to …\")"
    return ""


def ungrounded_problem(query: str, plan: Plan) -> str:
    """The first contact name, address, phone number or placeholder in ``plan`` that ``query`` does not give, or ""."""
    folded = _folded(query)
    digits = re.sub(r"\D", "", query)
    for call in plan.calls:
        for key, value in call.args.items():
            for leaf in leaves(value):
                if not isinstance(leaf, str):
                    continue
                text = leaf.strip()
                if m := _PLACEHOLDER.search(text):
                    return f"step {call.id}: {key}={text!r} is a placeholder ({m.group(0)})"
                if key in _NAME_PARAMS and _folded(text) not in folded:
                    return f"step {call.id}: {key}={text!r} is not in the request"
                if _EMAIL.fullmatch(text) and _folded(text) not in folded:
                    return f"step {call.id}: the address {text!r} is not in the request"
                if _PHONE.fullmatch(text) and not _ISO_DATE.match(text) and re.sub(r"\D", "", text) not in digits:
                    return f"step {call.id}: the number {text!r} is not in the request"
    return ""


def unused_result_problem(plan: Plan) -> str:
    """The first lookup whose result no later step reads, in a plan that also acts; "" otherwise."""
    if all(LOOKUP_NAME.match(c.name) for c in plan.calls):
        return ""
    read = {ref.step for c in plan.calls for ref in find_refs(c.args)}
    for call in plan.calls:
        if LOOKUP_NAME.match(call.name) and call.id not in read:
            return f"step {call.id}: the result of {call.name}() is never used"
    return ""


def normalize_request(text: str) -> str:
    """Lower case, punctuation removed, whitespace collapsed: the exact-duplicate key."""
    return " ".join(re.sub(r"[^\w@.$+-]+", " ", text.lower()).split())


class Deduper:
    """Finds exact and near-identical requests (MinHash over character 4-grams, confirmed with difflib).

    Args:
        threshold: the difflib similarity ratio at or above which two requests are duplicates.
        bands: LSH bands (2 hashes each); more bands find more candidates.
    """

    def __init__(self, threshold: float = 0.9, bands: int = 16) -> None:
        self.threshold = threshold
        self.bands = bands
        self._exact: set[str] = set()
        self._texts: list[str] = []
        self._buckets: dict[tuple[int, int, int], list[int]] = {}

    def _signature(self, text: str) -> list[int]:
        grams = {text[i : i + 4] for i in range(max(1, len(text) - 3))}
        encoded = [g.encode("utf-8") for g in grams]
        return [min(zlib.crc32(g, seed * 0x9E3779B1 & 0xFFFFFFFF) for g in encoded) for seed in range(2 * self.bands)]

    def is_duplicate(self, text: str) -> bool:
        """Whether ``text`` duplicates (or nearly duplicates) an added request."""
        key = normalize_request(text)
        if key in self._exact:
            return True
        sig = self._signature(key)
        seen: set[int] = set()
        for b in range(self.bands):
            for idx in self._buckets.get((b, sig[2 * b], sig[2 * b + 1]), ()):
                if idx in seen:
                    continue
                seen.add(idx)
                other = self._texts[idx]
                matcher = difflib.SequenceMatcher(None, key, other, autojunk=False)
                if matcher.quick_ratio() >= self.threshold and matcher.ratio() >= self.threshold:
                    return True
        return False

    def add(self, text: str) -> None:
        """Remember ``text``."""
        key = normalize_request(text)
        if key in self._exact:
            return
        self._exact.add(key)
        idx = len(self._texts)
        self._texts.append(key)
        sig = self._signature(key)
        for b in range(self.bands):
            self._buckets.setdefault((b, sig[2 * b], sig[2 * b + 1]), []).append(idx)

    def check_and_add(self, text: str) -> bool:
        """Add ``text`` unless it is a duplicate; return True when it was a duplicate."""
        if self.is_duplicate(text):
            return True
        self.add(text)
        return False

    def __len__(self) -> int:
        return len(self._texts)


def unique(texts: Sequence[str], threshold: float = 0.9) -> list[str]:
    """``texts`` without exact or near duplicates, first occurrence kept."""
    d = Deduper(threshold)
    return [t for t in texts if not d.check_and_add(t)]
