"""The agent's tunables (data, no behaviour)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .._grammar import GrammarOptions

__all__ = ["AgentSettings", "NO_TOOL_CEILING", "NO_TOOL_FLOOR", "NO_TOOL_MODEL", "NO_TOOL_PREF", "NO_TOOL_THRESHOLD",
           "STOP_PREF", "STOP_THRESHOLD"]

NO_TOOL_PREF = "no_tool"
STOP_PREF = "stop"
# Fitted by benchmarks/calibrate_no_tool.py on held-out data (benchmarks/results/no_tool.json, qwen2.5-coder-1.5b).
# No floor for "no tool": P(join) at step 1 separates the requests that need no tool too weakly (0.002-0.16 for
# BFCL irrelevance, 0.001-0.21 for requests that need a call); the best floor (0.06) would drop 16% of needed calls.
NO_TOOL_THRESHOLD: float | None = None
# Greedy decoding took ``join`` at step 1 at P(join) 0.05-0.27 for requests that need a call, on a personal-assistant
# registry with no worked examples (the tool names split the rest). A ceiling of 0.5 turned 2 of them into right
# plans but 3 of 7 requests no tool serves into calls the no-tool check did not catch (benchmarks/results/
# pa_proxy_full.json vs pa_proxy_ceiling.json), and P(join) does not separate the two kinds: off by default.
NO_TOOL_CEILING: float = 0.0
# Stopping: P(join) after a call is decisive (0.6-1.0 where the plan is complete); the floor fitted there loses no
# needed call on the held-out data and ends the plans that went on past the request.
STOP_THRESHOLD: float | None = 0.46
# The no-tool decision after the first plan (tinyagent/run/_no_tool.py): a logistic model over P(join) at step 1
# (as a logit), argument grounding, request/tool word overlap and how much of the called tools' names the request
# says, fitted by benchmarks/calibrate_no_tool.py on 144 even-indexed BFCL cases (94 that need a call, 44 irrelevant
# ones where the planner called something; benchmarks/results/no_tool.json). Cross-validated: 33 of 44 wrong calls
# dropped, 3 of 94 needed ones (2 of them wrong plans anyway). The model's yes/no verification of its own plan got
# weight but no better result under cross-validation, and costs ~0.7 s, so the shipped model leaves it out.
NO_TOOL_MODEL: dict[str, float] = {"bias": 3.4725, "p_join": 0.4311, "verify": 0.0, "grounded": -2.6174,
                                   "overlap": -0.4913, "named": -1.4828}
NO_TOOL_FLOOR: float = 0.7


@dataclass(frozen=True)
class AgentSettings:
    """Tunables of the agent loop.

    Attributes:
        max_replans: replans after the first plan (the answer is kept either way).
        max_examples: few-shot examples in the planner prompt (the most similar of the pool). Two, not four: on the
            functions test split (95 requests, 1.5B) two planned as well (DAG 84.2% vs 83.2%) with ~140 fewer
            prompt tokens to evaluate per request (plan p50 4.8 s vs 6.8 s; ``benchmarks/bench_planner.py``).
        planner_max_tokens: generation cap for a plan.
        joiner_max_tokens: generation cap for the answer.
        joiner: who writes the answer. ``"auto"`` (default): the template (no model call) when it says everything
            the results say, that is, every step succeeded and each read no later step used returned a short value
            (an action request, or a lookup); else the model, streamed. ``"llm"``: always the model; ``"template"``:
            never (see :mod:`tinyagent.run._template`).
        use_grammar: constrain decoding with the generated grammar (where the model supports it).
        grammar: caps of the generated grammar.
        tool_timeout: default seconds per tool call (a tool's own ``timeout`` wins).
        streaming_execution: dispatch steps while the plan is still streaming.
        format_examples: when no worked example fits the offered tools, show a few format-only examples with other
            tools (the grammar still allows only the offered ones).
        no_tool_threshold: answer without tools (a plan of only ``join``) when the planner gives ``join`` as the first
            step at least this probability, even if a tool is likelier. Small models call a loosely related tool
            rather than none; the default is fitted on held-out data (``benchmarks/calibrate_no_tool.py``). None:
            plain greedy decoding (the default: on held-out data no floor separated the two kinds of request without
            dropping needed calls). Applies to backends that expose logits (llama.cpp); the probability is measured
            either way and reported as ``PlanResult.no_tool_prob``.
        no_tool_ceiling: write a call rather than ``join`` as the first step unless the planner gives ``join`` at
            least this probability (the no-tool check then decides whether the calls fit). Greedy decoding compares
            ``join`` with each tool name's first token alone, so ``join`` won at 0.25 against tools that shared
            the other 0.75 between them; 0.5 compares it with all of them together. 0 (default): plain greedy
            (on a personal-assistant registry the ceiling lost as many no-tool requests as it won calls).
        no_tool_check: after the first plan, decide whether its calls fit the request at all, and drop them when
            not (``tinyagent.run._no_tool``): ``"auto"`` asks the planner model a short yes/no question about its
            plan (sharing the plan's KV prefix) only when the answer could change the decision; ``"measure"``
            always asks and never changes the plan (calibration); ``"off"``: no check. The first plan of a run is
            then buffered before it runs.
        no_tool_floor: drop the calls when the fitted probability that no tool is needed reaches this.
        no_tool_second_choice: when the no-tool decision drops a first plan's calls and other tools are offered,
            plan once more with the dropped plan's tools left out of the grammar (the prompt is unchanged, so only
            the plan is decoded again) and keep the new plan if it calls a tool the decision lets through; the
            planner's second choice is often the tool a paraphrased request meant.
        stop_threshold: the same floor for ``join`` at every later step (ends a plan that goes on past the request);
            None: greedy.
        tool_order: how retrieved tools are listed in the prompt. ``"registry"`` (default): in registry order, so
            requests that retrieve overlapping sets share a longer prompt prefix, which llama.cpp (and the on-disk
            prefix cache) need not evaluate again; ``"relevance"``: the retriever's ranking.
        grounding: resolve relative dates and times in the request against today ("tomorrow at 10", "next
            Monday", "in two weeks") and show the planner the resolved values, in the format each offered date
            parameter's schema or description asks for (``tinyagent._grounding``).
        given_identifiers: identifiers (email addresses, phone numbers: parameters whose schema or description
            says so) come from the request or from a step, never from the planner: where the plan passes a
            lookup's result but the request writes that identifier itself, pass it as written (``Agent.plan`` also
            drops the lookup); a call that passes one found nowhere in the request, the conversation or the results
            is rejected before it runs and the planner asked again once, with the reason
            (``tinyagent.run._repair``).
        identifier_grammar: the plan grammar lets an identifier parameter (e-mail addresses, phone numbers, by
            schema and description) take only the identifiers the request or the conversation writes, as written,
            or a ``$k`` reference; a tool that needs one the planner has neither of is not offered at that step,
            so the lookup comes first (:func:`tinyagent._grammar.plan_grammar`). False: any value of the shape.
        last_plan_repairs: repairs of the last plan of ``Agent.plan`` (after planning again with the reason), which
            need no model: a second plan that dropped an action of the first keeps the first, with the second's
            new lookups for what it made up (``tinyagent.run._producers``); a made-up value one offered tool would
            give gets that call (an address built from a name the request writes; a file name whose parameter
            names its source tool) and a made-up optional identifier goes; unused results go where a later
            parameter takes them and wrong-kind references in identifier lists become the plan's lookups
            (``_wiring``); stray reads, lookups by address and repeated calls go (``_tidy``).
        ruled_out_tools: leave out of the plan grammar the tools the request rules out by what it says, read from
            the tools' descriptions: one that acts on an existing message or note where the request points at none
            but a tool makes a new one, one that makes a new one where the request points at an existing one
            ("the dinner on Friday email"), and one that sends by the other channel where the request asks for a
            text or an e-mail (``tinyagent.run._items``, ``tinyagent.run._channels``). The prompt is unchanged.
        ungrounded_optionals: ``"drop"``: leave out an optional argument that is a number or a short text found
            nowhere in the request (``year=2026``, ``price_min=100``: the tool's default is the better value);
            ``"keep"``: pass what the planner wrote.
        clause_check: for a request of several clauses, plan each clause alone up to its first tool (a short
            request that shares the plan's prompt) and plan again, with that tool required, when the plan never
            calls it: a dropped clause (``tinyagent.run._coverage``). Off by default: it finds dropped clauses, but
            measured end to end (session 25) the plans made again from them were no better (the same outcomes on
            the fresh set, ~1.3 s more per multi-clause request).
    """

    max_replans: int = 2
    max_examples: int = 2
    format_examples: bool = True
    planner_max_tokens: int = 512
    joiner_max_tokens: int = 160
    joiner: Literal["auto", "llm", "template"] = "auto"
    use_grammar: bool = True
    grammar: GrammarOptions = field(default_factory=GrammarOptions)
    tool_timeout: float | None = None
    streaming_execution: bool = True
    no_tool_threshold: float | None = NO_TOOL_THRESHOLD
    no_tool_ceiling: float = NO_TOOL_CEILING
    stop_threshold: float | None = STOP_THRESHOLD
    no_tool_check: Literal["auto", "measure", "off"] = "auto"
    no_tool_floor: float = NO_TOOL_FLOOR
    no_tool_second_choice: bool = True
    tool_order: Literal["registry", "relevance"] = "registry"
    grounding: bool = True
    given_identifiers: bool = True
    identifier_grammar: bool = False
    last_plan_repairs: bool = True
    ruled_out_tools: bool = True
    ungrounded_optionals: Literal["drop", "keep"] = "drop"
    clause_check: bool = False
