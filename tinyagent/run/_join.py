"""Stage 4, join: answer from the results (or ask for a replan), and the template answer used when no model answer
is available."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from .._events import StepRecord
from .._grammar import joiner_grammar
from .._plan import Plan
from .._prompts import build_joiner_followup, build_joiner_messages, planner_system_prompt
from ..errors import BudgetExceeded, ModelError
from ..models import Completion, ModelRequest
from ._plan import call_model
from ._state import RunSetup, RunState

__all__ = ["Verdict", "join", "template_answer"]

Verdict = Literal["answer", "replan"]


async def join(setup: RunSetup, state: RunState, allow_replan: bool,
               planner_messages: Sequence[Mapping[str, Any]] = ()) -> tuple[Verdict, str]:
    """Ask the joiner model for the answer (or, when ``allow_replan``, for a replan and why).

    Returns:
        ``("answer", text)`` (empty text: build the answer from the results) or ``("replan", reason)``.
    """
    settings, result = setup.settings, state.result
    if settings.joiner == "template":
        return "answer", ""
    model = setup.router.select("join", state.signals)
    observations = state.observations()
    if planner_messages and result.plan_texts and result.models and result.models[-1] == model.name:
        # Same model as the plan: continue its conversation, so the KV cache covers everything but the results.
        messages = build_joiner_followup(planner_messages, result.plan_texts[-1], state.query, observations,
                                         allow_replan=allow_replan, boundary=state.boundary)
    else:
        messages = build_joiner_messages(state.query, state.today, result.plan if result.plans else Plan(),
                                         observations, allow_replan=allow_replan, history=state.history,
                                         shared_prefix=planner_system_prompt(state.offer.tools.values()),
                                         boundary=state.boundary)
    grammar = joiner_grammar(allow_replan) if (settings.use_grammar and model.supports_grammar) else None
    request = ModelRequest(messages=messages, grammar=grammar, max_tokens=settings.joiner_max_tokens)
    try:
        model, stream = await call_model(setup.router, model, request, "join", result.notes)
        result.models.append(model.name)
        completion: Completion | None = None
        async for item in stream:
            if isinstance(item, Completion):
                completion = item
        if completion is None:
            raise ModelError("the joiner returned no completion")
    except (ModelError, BudgetExceeded) as exc:
        result.notes.append(f"joiner failed ({exc}); the answer was built from the results")
        return "answer", ""
    result.usage = result.usage + completion.usage
    return _verdict(completion.text, allow_replan)


def _verdict(raw: str, allow_replan: bool) -> tuple[Verdict, str]:
    text = raw.strip()
    lowered = text.lower()
    if allow_replan and lowered.startswith("replan:"):
        return "replan", text.split(":", 1)[1].strip()
    if lowered.startswith("answer:"):
        text = text.split(":", 1)[1].strip()
    elif lowered.startswith("replan:"):
        text = ""
    return "answer", text


def template_answer(records: Sequence[StepRecord]) -> str:
    """An answer built from the observations, used when no model answer is available."""
    if not records:
        return "I could not make a plan for that request."
    lines = [r.observation() for r in sorted(records, key=lambda r: r.id)]
    head = "Done." if all(r.ok for r in records) else "Some steps did not succeed."
    return head + "\n" + "\n".join(lines)
