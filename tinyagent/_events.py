"""Typed results and run events (what ``Agent.run_stream`` yields and ``Agent.run`` returns)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ._plan import Call, Plan, refs_to_strings
from ._prompts import brief_result, format_observation
from .models import Usage

__all__ = [
    "AnswerDelta",
    "AnswerEvent",
    "NoToolCheck",
    "PlanResult",
    "ReplanEvent",
    "RunEvent",
    "RunResult",
    "StepPlanned",
    "StepRecord",
    "ToolFinished",
    "ToolStarted",
]

StepStatus = Literal["pending", "running", "ok", "error", "timeout", "skipped"]


def _jsonable(value: Any) -> Any:
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_jsonable(v) for v in value]
    return str(value)


@dataclass
class StepRecord:
    """What happened to one step.

    Attributes:
        id: the step number.
        name: the tool.
        args: the arguments as planned (references as ``"$k"``).
        status: ``ok``, ``error``, ``timeout`` or ``skipped`` (a dependency failed).
        result: the tool's return value (the real Python object).
        error: the error message, when it failed.
        error_type: the exception class name, when it failed.
        started_s: seconds from the start of the run to dispatch.
        elapsed_s: seconds the tool ran.
        attempt: which plan (0 = first, 1 = first replan …) produced the step.
        provenance: where each argument's value came from: ``"user"`` (the request, the user's own turns, or
            written by the planner), ``"lookup:k"`` (a lookup at step k of something the user named, e.g. a
            contact's address) or ``"tool:k"`` (data returned by step k: a note, a mail, a file). See
            :mod:`tinyagent._provenance`.
        exception: the exception the step failed with (not serialised), for ``isinstance`` checks.
    """

    id: int
    name: str
    args: dict[str, Any]
    status: StepStatus = "pending"
    result: Any = None
    error: str | None = None
    error_type: str | None = None
    started_s: float = 0.0
    elapsed_s: float = 0.0
    attempt: int = 0
    provenance: dict[str, str] = field(default_factory=dict)
    exception: BaseException | None = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        """Whether the step succeeded."""
        return self.status == "ok"

    def observation(self, used_by: Sequence[int] | None = None) -> str:
        """``k. tool(args) -> result`` for the joiner and replan prompts.

        Args:
            used_by: for the joiner: the steps that took this result as input. The result is then written without
                what the call line shows, and cut when later steps used it (:func:`~tinyagent._prompts.brief_result`);
                None (replans, grounding) writes it whole.
        """
        call = Call(self.id, self.name, self.args).to_text() if self.args is not None else f"{self.id}. {self.name}()"
        if not self.ok:
            return f"{call} -> {self.status.upper()}: {self.error}"
        if used_by is None:
            return f"{call} -> {format_observation(self.result)}"
        return f"{call} -> {brief_result(self.result, self.args or {}, used_by)}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict."""
        return {
            "id": self.id,
            "name": self.name,
            "args": _jsonable(refs_to_strings(self.args)),
            "status": self.status,
            "result": _jsonable(self.result),
            "error": self.error,
            "error_type": self.error_type,
            "started_s": round(self.started_s, 4),
            "elapsed_s": round(self.elapsed_s, 4),
            "attempt": self.attempt,
            "provenance": dict(self.provenance),
        }


@dataclass(frozen=True)
class NoToolCheck:
    """The no-tool decision on one plan.

    Attributes:
        features: the model's inputs (see the module docstring); ``verify`` is absent when the question was skipped
            or the backend reports no probabilities.
        probability: the fitted probability that the request needs no tool.
        refused: the plan's calls were dropped (the plan became ``join()`` only).
        asked: the verification question was asked.
        elapsed_s: seconds the decision took (the question, mostly).
    """

    features: Mapping[str, float] = field(default_factory=dict)
    probability: float = 0.0
    refused: bool = False
    asked: bool = False
    elapsed_s: float = 0.0


@dataclass
class PlanResult:
    """The outcome of planning only.

    Attributes:
        plan: the parsed plan.
        text: the raw text the model produced.
        usage: tokens used.
        elapsed_s: seconds for the planner call.
        ttft_s: seconds to the first generated text.
        prompt_tokens: tokens in the planner prompt.
        tools_offered: the tool names put in the prompt and grammar.
        model: the planner model's name.
        mean_logprob: the plan's mean token log-probability (when measured).
        retrieval_uncertain: whether tool retrieval widened the set.
        example_disagreement: the plan calls a different set of tools than the most similar worked example in the
            prompt (a routing signal; False without examples).
        no_tool_prob: the planner's probability of ``join`` as the first step (llama.cpp backends; else None).
        stop_probs: its probability of ``join`` at each later step.
        no_tool_check: the no-tool decision on the plan (``AgentSettings.no_tool_check``); when it refused, ``plan``
            is ``join()`` only and ``text`` still holds what the model wrote.
    """

    plan: Plan
    text: str
    usage: Usage = field(default_factory=Usage)
    elapsed_s: float = 0.0
    ttft_s: float = 0.0
    prompt_tokens: int = 0
    tools_offered: tuple[str, ...] = ()
    model: str = ""
    mean_logprob: float | None = None
    retrieval_uncertain: bool = False
    example_disagreement: bool = False
    no_tool_prob: float | None = None
    stop_probs: tuple[float, ...] = ()
    no_tool_check: NoToolCheck | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (references as ``"$k"``)."""
        return {
            "calls": self.plan.to_json(),
            "answer": self.plan.answer,
            "text": self.text,
            "elapsed_s": round(self.elapsed_s, 4),
            "ttft_s": round(self.ttft_s, 4),
            "prompt_tokens": self.prompt_tokens,
            "tools_offered": list(self.tools_offered),
            "model": self.model,
            "usage": {"input_tokens": self.usage.input_tokens, "output_tokens": self.usage.output_tokens},
        }


@dataclass
class RunResult:
    """The outcome of a run.

    Attributes:
        query: the request.
        answer: the final answer (never lost: if the joiner fails, it is built from the observations).
        plans: every plan made (the first, then replans).
        plan_texts: the raw planner output of each plan.
        steps: every step executed or skipped, in step order.
        usage: tokens used by all model calls.
        cost: money spent (priced models only).
        timings: seconds: ``plan``, ``first_dispatch``, ``execute``, ``join``, ``total``, and ``join_first_token``
            (from the start of the join to the answer's first words; 0 for a template answer).
        replans: how many replans happened.
        models: the model used for each model call, in order.
        status: ``ok``, ``degraded`` (fell back, e.g. budget or offline) or ``failed`` (no step could be planned).
        notes: human-readable notes about degradations and errors.
        routing: the router's status (spend, remaining budget, decisions).
    """

    query: str
    answer: str
    plans: list[Plan] = field(default_factory=list)
    plan_texts: list[str] = field(default_factory=list)
    steps: list[StepRecord] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)
    replans: int = 0
    models: list[str] = field(default_factory=list)
    status: Literal["ok", "degraded", "failed"] = "ok"
    notes: list[str] = field(default_factory=list)
    routing: dict[str, Any] = field(default_factory=dict)

    @property
    def plan(self) -> Plan:
        """The last plan."""
        return self.plans[-1] if self.plans else Plan()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict."""
        return {
            "query": self.query,
            "answer": self.answer,
            "plans": [p.to_json() for p in self.plans],
            "steps": [s.to_dict() for s in self.steps],
            "usage": {"input_tokens": self.usage.input_tokens, "output_tokens": self.usage.output_tokens,
                      "requests": self.usage.requests},
            "cost": self.cost,
            "timings": {k: round(v, 4) for k, v in self.timings.items()},
            "replans": self.replans,
            "models": list(self.models),
            "status": self.status,
            "notes": list(self.notes),
            "routing": _jsonable(self.routing),
        }


@dataclass(frozen=True)
class StepPlanned:
    """A step was parsed from the planner's stream (it may already be running)."""

    call: Call
    attempt: int = 0
    type: Literal["step_planned"] = "step_planned"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "attempt": self.attempt, **self.call.to_json()}


@dataclass(frozen=True)
class ToolStarted:
    """A step's tool was dispatched."""

    step: int
    name: str
    args: dict[str, Any]
    type: Literal["tool_started"] = "tool_started"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "step": self.step, "name": self.name, "args": _jsonable(self.args)}


@dataclass(frozen=True)
class ToolFinished:
    """A step finished (or was skipped because a dependency failed)."""

    record: StepRecord
    type: Literal["tool_finished"] = "tool_finished"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **self.record.to_dict()}


@dataclass(frozen=True)
class ReplanEvent:
    """The agent is planning again."""

    attempt: int
    reason: str
    model: str = ""
    type: Literal["replanning"] = "replanning"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "attempt": self.attempt, "reason": self.reason, "model": self.model}


@dataclass(frozen=True)
class AnswerDelta:
    """A piece of the answer's text, as the joiner writes it (the pieces of one attempt, joined, are the answer).

    A template answer arrives as one piece. The :class:`AnswerEvent` that ends the run still carries the whole
    answer, which differs from the pieces only when the joiner's text was unusable and the answer was rebuilt.
    """

    text: str
    attempt: int = 0
    type: Literal["answer_delta"] = "answer_delta"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "text": self.text, "attempt": self.attempt}


@dataclass(frozen=True)
class AnswerEvent:
    """The final answer; ``result`` holds everything about the run."""

    answer: str
    result: RunResult
    type: Literal["answer"] = "answer"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "answer": self.answer, "result": self.result.to_dict()}


RunEvent = StepPlanned | ToolStarted | ToolFinished | ReplanEvent | AnswerDelta | AnswerEvent
