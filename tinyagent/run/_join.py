"""Stage 4, join: answer from the results (or ask for a replan). The answer comes from the template when it already
says everything the results say (:mod:`tinyagent.run._template`), else from the joiner model, streamed."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Literal

from .._events import AnswerDelta
from .._grammar import joiner_grammar
from .._plan import Plan
from .._prompts import build_joiner_followup, build_joiner_messages, planner_system_prompt
from ..errors import BudgetExceeded, ModelError
from ..models import Completion, ModelRequest
from ._plan import call_model
from ._state import RunSetup, RunState
from ._template import template_answer, template_covers
from ._warm import JoinWarmer, finished_lines

__all__ = ["Verdict", "join", "template_answer"]

Verdict = Literal["answer", "replan"]


async def join(setup: RunSetup, state: RunState, allow_replan: bool,
               planner_messages: Sequence[Mapping[str, Any]] = (),
               warmer: JoinWarmer | None = None) -> tuple[Verdict, str]:
    """The answer: from the template when it covers the results (``joiner="auto"``/``"template"``), else from the
    joiner model, streamed as :class:`AnswerDelta` events (or, when ``allow_replan``, a replan and why).

    ``warmer`` evaluated the prompt's start while the steps ran (:mod:`~._warm`); the prompt here starts with it.

    Sets ``state.timings["join_first_token"]``: seconds from the start of the join to the answer's first words.

    Returns:
        ``("answer", text)`` (empty text: build the answer from the results) or ``("replan", reason)``.
    """
    settings, result = setup.settings, state.result
    started = time.perf_counter()
    if warmer is not None:
        await warmer.settle()
    state.timings.pop("join_first_token", None)
    records = [state.records[k] for k in sorted(state.records)]
    if settings.joiner == "template" or (settings.joiner == "auto"
                                         and template_covers(records, setup.registry) is None):
        text = template_answer(list(state.records.values()), setup.registry)
        state.timings["join_first_token"] = time.perf_counter() - started
        await state.emit(AnswerDelta(text, state.attempt))
        return "answer", text
    model = setup.router.select("join", state.signals)
    observations = finished_lines(state.records)
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
        completion = await _stream_answer(stream, state, started)
    except (ModelError, BudgetExceeded) as exc:
        result.notes.append(f"joiner failed ({exc}); the answer was built from the results")
        return "answer", ""
    result.usage = result.usage + completion.usage
    return _verdict(completion.text, allow_replan)


async def _stream_answer(stream: AsyncIterator[str | Completion], state: RunState, started: float) -> Completion:
    """Consume the joiner's stream, emitting the answer's text (without its ``Answer:`` prefix) as it comes."""
    completion: Completion | None = None
    deltas = _AnswerText()
    async for item in stream:
        if isinstance(item, Completion):
            completion = item
            continue
        piece = deltas.feed(item)
        if piece:
            if "join_first_token" not in state.timings:
                state.timings["join_first_token"] = time.perf_counter() - started
            await state.emit(AnswerDelta(piece, state.attempt))
    if completion is None:
        raise ModelError("the joiner returned no completion")
    return completion


class _AnswerText:
    """Turns the joiner's raw deltas into the answer's text: holds back the ``Answer:`` prefix (and everything after
    ``Replan:``, which is no answer), then passes text on as it arrives."""

    _PREFIXES = ("answer:", "replan:")

    def __init__(self) -> None:
        self.raw = ""
        self.mode: Literal["prefix", "answer", "replan"] = "prefix"
        self.started = False

    def feed(self, delta: str) -> str:
        self.raw += delta
        if self.mode == "prefix":
            head = self.raw.lstrip().lower()
            if any(p.startswith(head) for p in self._PREFIXES):
                return ""  # still could be either prefix
            if head.startswith("replan:"):
                self.mode = "replan"
                return ""
            self.mode = "answer"
            text = self.raw.lstrip()
            delta = text.split(":", 1)[1] if head.startswith("answer:") else text
        if self.mode == "replan":
            return ""
        if not self.started:
            delta = delta.lstrip()
            self.started = bool(delta)
        return delta


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
