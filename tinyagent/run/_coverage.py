"""Whether the plan serves each clause of a request of several, asked of the planner itself.

Small planners drop a clause of a request of several ("Get directions to the airport and text them to Zoe" planned
as the text alone; "Check whether I'm free Wednesday 10-11 and invite Grace" as the invitation alone). Which tool a
clause needs is often said only in other words than the tool's ("directions" for a route, "am I free" for an
availability check), so no word match finds it (:mod:`~._clauses` catches the clauses whose verb is a word of a tool's
name). The planner knows the synonyms: asked to plan one clause alone, its first call names the tool that clause
needs. Each clause gets that one short request (the same prompt, examples and grammar, with the clause as the
request; its system message is the plan's, so llama.cpp evaluates only the clause, ~20 tokens, and decodes a tool
name, mostly fast-forwarded by the grammar), and a clause whose first tool the plan never calls is a clause the plan
dropped: the plan is planned again with that tool required.

Nothing is keyed to a tool's name: the clauses come from the request's words (:func:`~._clauses.clause_spans`), the
tools from the planner's own choice.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import replace

from .._plan import JOIN, Call, Plan
from .._plan_parser import PlanStreamParser
from .._provenance import leaves
from .._tools import Tool
from ..errors import BudgetExceeded, ModelError, PlanError
from ..models import Completion, Model
from ._channels import asked_channel
from ._clauses import GENERIC_NAME_WORDS, action_clauses, clause_spans, name_words
from ._no_tool import grounded_in, request_text
from ._plan import call_model, planner_request
from ._settings import AgentSettings
from ._state import RunSetup, RunState

__all__ = ["clause_requests", "first_call", "unplanned_clause"]

log = logging.getLogger("tinyagent.run")

_DATE_OR_TIME = re.compile(r"\d{1,4}[-/:]\d{1,2}")


def clause_requests(query: str, tools: Mapping[str, Tool]) -> list[str]:
    """The clauses of ``query`` worth planning alone: none for a request of one clause; else each action clause
    (:func:`~._clauses.action_clauses`) except those :mod:`~._clauses` and :mod:`~._channels` check (a verb that
    names an offered tool by its name; texting or e-mailing)."""
    if len(clause_spans(query, tools)) < 2:
        return []
    return [text for text, named in action_clauses(query, tools) if not named and not asked_channel(text.split()[0])]


async def first_call(setup: RunSetup, state: RunState, model: Model, clause: str) -> Call | None:
    """The call the planner writes first for ``clause`` alone, when it passes something the clause says and
    (of its required arguments) mostly what the clause says (None: ``join``, a call on made-up values, or the
    model failed)."""
    alone = replace(state, query=clause, replan_note=None, required=(), banned=frozenset(), force_call=False)
    request = planner_request(alone, setup.settings, setup.router, model, 1, ())
    request = replace(request, max_tokens=64, stop=("\n",), logprobs=False, prefer=())
    notes: list[str] = []
    text = ""
    try:
        _, stream = await call_model(setup.router, model, request, "verify", notes)
        async for item in stream:
            if isinstance(item, Completion):
                state.result.usage = state.result.usage + item.usage
                state.timings["plan"] = state.timings.get("plan", 0.0) + item.elapsed_s
                text = item.text or text
            else:
                text += item
    except (ModelError, BudgetExceeded) as exc:
        log.info("clause check skipped: %s", exc)
        return None
    try:
        calls = PlanStreamParser(state.offer.tools).feed(text.strip() + "\n")
    except PlanError:
        return None
    if not calls or calls[0].name == JOIN:
        return None
    # (what the clause refers back to, "show me where that is", is in the request's other words)
    call, said = calls[0], f"{request_text(request, clause)} {state.query}"
    required = set(state.offer.tools[call.name].parameters.get("required") or ())
    checked = [(name in required or not required, grounded_in(v, said))
               for name, value in call.args.items() for v in leaves(value)]
    counted = [ok for counts, ok in checked if counts]  # (of the required arguments, where there are some)
    if not any(ok for _, ok in checked) or sum(counted) * 2 < len(counted):
        return None  # (a call on nothing the clause says: a clock, today's agenda for "find the itinerary")
    return call


async def unplanned_clause(setup: RunSetup, state: RunState, model: Model, plan: Plan,
                           settings: AgentSettings) -> tuple[str, frozenset[str]] | None:
    """The note for planning again, and the tool the next plan must call, when a clause of the request, planned
    alone, starts with a tool the plan never calls and no call of the plan acts on what that call names
    (:func:`_served`); None otherwise. A plan with no call is the no-tool decision's, unless two clauses, each
    planned alone, start with two different tools ("Get me a video link ... and put it on my calendar ...")."""
    if not settings.clause_check:
        return None
    called = {c.name for c in plan.calls}
    found: dict[str, str] = {}
    for clause in clause_requests(state.query, state.usable_tools):
        call = await first_call(setup, state, model, clause)
        if call is None or call.name in called or call.name not in state.usable_tools or _served(call, plan) \
                or _feeds(call.name, called, state.offer.tools):
            continue
        if plan.calls:
            return (f"the request also asks to {clause!r}, and no step does; {call.name} does that",
                    frozenset({call.name}))
        found.setdefault(call.name, clause)
        if len(found) == 2:
            asks = "; ".join(f"{clause!r} ({name} does that)" for name, clause in found.items())
            return f"the request asks for actions and the plan has none: {asks}", frozenset({next(iter(found))})
    return None


def _served(call: Call, plan: Plan) -> bool:
    """Whether a call of the plan acts on what ``call`` (the clause's own first call) names, by another tool: a
    short text value of one holds the other's ("put oat milk on my Groceries list" planned alone as a new note
    titled "Groceries", in the plan as a reminder on the "Groceries" list). Dates, times and numbers do not count
    (an availability check and the event it checks for share the time), nor a long text that mentions it (a
    message that says "the airport" is no route to it)."""
    names = [v.strip().lower() for v in leaves(call.args)
             if isinstance(v, str) and len(v.strip()) >= 3 and not _DATE_OR_TIME.search(v)]
    for other in plan.calls:
        for value in leaves(other.args):
            if not isinstance(value, str):
                continue
            text = value.strip().lower()
            if any(name == text or (name in text and len(text.split()) <= len(name.split()) + 2)
                   or (len(text) >= 3 and text in name) for name in names):
                return True
    return False


def _feeds(name: str, called: set[str], tools: Mapping[str, Tool]) -> bool:
    """Whether the tool ``name`` finds what a called tool takes: a word of its name (not a verb every tool name
    uses) is in a called tool's parameters and not in that tool's own name (``get_zipcode_based_on_city`` for
    ``estimate_distance(cityA: "The zipcode of ...")``, a phone lookup for ``sms_send(phone_numbers)``). Asked
    alone, a clause starts with such a lookup where the plan has the value already (the request gives it)."""
    mine = {w for w in name_words(name) if len(w) >= 4 and w not in GENERIC_NAME_WORDS}
    for other in called:
        tool = tools.get(other)
        if tool is None:
            continue
        props = tool.parameters.get("properties", {}) or {}
        text = " ".join([*props, *(str(p.get("description", "")) for p in props.values() if isinstance(p, Mapping))])
        words = set(name_words(text))
        if (mine & words) - set(name_words(other)):
            return True
    return False
