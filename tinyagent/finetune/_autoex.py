"""Automatic worked examples for a registry that has none: synthesize, verify, cache.

:func:`build_examples` writes requests with known plans from the tools' schemas (:mod:`._autoex_synth`), lets a
teacher model paraphrase them (optional), checks every example with :func:`example_problem`, and caches the kept ones
on disk keyed by a hash of the registry. An :class:`~tinyagent.Agent` built over the same tools without examples of
its own reads that cache, and its example selector then shows the most similar examples per request.

The checks are semantic, not only syntactic, because a teacher's plan (or a paraphrase) carries its mistakes:

1. ``schema``: tools and arguments exist, required ones are present, static values fit their types, references point
   to earlier steps;
2. ``grammar``: the plan text re-parses to the same plan;
3. ``complete``: the plan calls exactly the tools the request asks for, once per action (a "video meeting" request
   planned as a calendar event fails here);
4. ``grounded``: every literal argument appears in the request (strings, numbers, enum values), so nothing is
   invented, and only a ``$k`` reference may stand for a value the request does not give;
5. ``reference``: a parameter described as an e-mail address, phone number or URL gets one (or a lookup's result),
   never a person's name;
6. ``order``: in a plan that acts, every lookup's result feeds a later step;
7. ``request``: the request reads like a user's (no code, no tool identifiers).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import re
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._example_cache import example_cache_path, load_cached_examples, registry_key, save_cached_examples
from .._plan import Example, Plan, find_refs
from .._plan_parser import check_call, parse_plan
from .._text import strip_accents
from .._tools import Tool, ToolRegistry
from ..errors import PlanParseError, PlanValidationError
from ..models import Model, ModelRequest
from ._autoex_synth import name_words, synthesize
from ._verify import normalize_request, request_problem, unused_result_problem

__all__ = ["AutoExamples", "build_examples", "example_problem"]

log = logging.getLogger("tinyagent.finetune.autoex")

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_REF_KINDS = (
    (re.compile(r"e-?mail"), lambda v: bool(_EMAIL.search(v)), "an e-mail address"),
    (re.compile(r"phone|mobile"), lambda v: sum(c.isdigit() for c in v) >= 5, "a phone number"),
    (re.compile(r"zip ?code|postal code"), lambda v: any(c.isdigit() for c in v), "a postal code"),
    (re.compile(r"\burl\b|\blink\b"), lambda v: "://" in v or v.startswith("www."), "a URL"),
)


@dataclass
class AutoExamples:
    """What :func:`build_examples` did.

    Attributes:
        path: the cache file.
        examples: the kept examples.
        key: the registry's hash.
        dropped: drop reasons and their counts.
        paraphrased: examples whose request the teacher rewrote (and that still passed every check).
        seconds: build time.
        cached: the file already existed and was reused.
    """

    path: Path
    examples: tuple[Example, ...]
    key: str
    dropped: dict[str, int] = field(default_factory=dict)
    paraphrased: int = 0
    seconds: float = 0.0
    cached: bool = False


def _folded(text: str) -> str:
    return strip_accents(text.casefold())


def _number_in(value: float, query: str) -> bool:
    forms = {str(value)}
    if isinstance(value, float) and value.is_integer():
        forms.add(str(int(value)))
    return any(re.search(rf"(?<![\d.]){re.escape(f)}(?![\d])", query) for f in forms)


def _leaf_problem(key: str, value: Any, query: str, schema: Mapping[str, Any]) -> str:
    folded = _folded(query)
    if isinstance(value, bool):
        words = [w for w in name_words(key) if len(w) > 2]
        return "" if not words or any(w in folded for w in words) else f"{key}={value} is not asked for"
    if isinstance(value, int | float):
        return "" if _number_in(value, query) else f"{key}={value} is not in the request"
    if isinstance(value, str):
        text = value.strip()
        if not text or _folded(text) in folded:
            return ""
        if "enum" in schema and all(w in folded for w in name_words(text)):
            return ""
        return f"{key}={value!r} is not in the request"
    return ""


def _grounding_problem(query: str, plan: Plan, tools: Mapping[str, Tool]) -> tuple[str, str]:
    for call in plan.calls:
        props: Mapping[str, Any] = tools[call.name].parameters.get("properties") or {}
        for key, value in call.args.items():
            schema = props.get(key) or {}
            described = " ".join(name_words(key)) + " " + str(schema.get("description") or "").lower()
            items = value if isinstance(value, list | tuple) else [value]
            for leaf in items:
                if any(True for _ in find_refs(leaf)):
                    continue
                item_schema = schema.get("items") or {} if isinstance(value, list | tuple) else schema
                problem = _leaf_problem(key, leaf, query, item_schema)
                if problem:
                    return "grounded", f"step {call.id}: {problem}"
                if isinstance(leaf, str):
                    for pattern, ok, what in _REF_KINDS:
                        if pattern.search(described) and not ok(leaf):
                            return "reference", (f"step {call.id}: {key} takes {what}, got {leaf!r} "
                                                 "(look it up first and pass $k)")
    return "", ""


def example_problem(query: str, plan: Plan, tools: Mapping[str, Tool],
                    expected: Sequence[str] | None = None) -> tuple[str, str]:
    """Why ``plan`` is not a good worked example for ``query`` (see the module docstring); ``("", "")`` if it is.

    Args:
        query: the request.
        plan: its plan.
        tools: the registry.
        expected: the tool names the request asks for, one per action (None: skip the completeness check).

    Returns:
        ``(reason, detail)``: the failed check's name and what is wrong.
    """
    known: list[int] = []
    try:
        for call in plan.calls:
            check_call(call, tools, known)
            known.append(call.id)
    except PlanValidationError as exc:
        return "schema", str(exc)
    try:
        again = parse_plan(plan.to_text(), tools)
    except (PlanParseError, PlanValidationError) as exc:
        return "grammar", str(exc)
    if again.to_json() != plan.to_json():
        return "grammar", "the plan text does not round-trip"
    if expected is not None and Counter(c.name for c in plan.calls) != Counter(expected):
        got = sorted(c.name for c in plan.calls)
        return "complete", f"the request asks for {sorted(expected)}, the plan calls {got}"
    reason, detail = _grounding_problem(query, plan, tools)
    if reason:
        return reason, detail
    problem = unused_result_problem(plan)
    if problem:
        return "order", problem
    problem = request_problem(query, [t for t in tools if "_" in t])
    if problem:
        return "request", problem
    return "", ""


_PARAPHRASE = """\
Rewrite the request below the way a person would type it to their assistant: natural and short, one or two \
sentences. Keep every value exactly as written (names, quoted text, numbers, dates, addresses). Do not add anything.
Request: {query}
Rewritten:"""


def _paraphrase(teacher: Model, query: str) -> str:
    request = ModelRequest(messages=[{"role": "user", "content": _PARAPHRASE.format(query=query)}],
                           max_tokens=80, stop=("\n",))
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        completion = asyncio.run(teacher.complete(request))
    else:  # called from async code: run the model call on its own loop in a worker thread
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            completion = pool.submit(asyncio.run, teacher.complete(request)).result()
    return completion.text.strip().strip('"').strip()


def _cached_result(tools: Sequence[Tool], root: Path | None) -> AutoExamples | None:
    examples = load_cached_examples(tools, root=root)
    if not examples:
        return None
    return AutoExamples(example_cache_path(tools, root), examples, registry_key(tools), cached=True)


def build_examples(
    tools: ToolRegistry | Sequence[Tool],
    *,
    teacher: Model | None = None,
    root: Path | None = None,
    force: bool = False,
    seed: int = 0,
    max_paraphrases: int = 48,
    kinds: Sequence[str] | None = None,
) -> AutoExamples:
    """Synthesize, verify and cache worked examples for ``tools`` (see the module docstring).

    Args:
        tools: the registry (or its tools).
        teacher: a model that rewrites the template requests into natural ones (each rewrite is checked again and
            dropped for the template if it loses a value); None keeps the templates (seconds, no model).
        root: the cache folder (default ``cache_dir()/examples``).
        force: rebuild even when the cache already has a file for this registry.
        seed: the synthesis seed.
        max_paraphrases: rewrite at most this many requests (bounds the build time with a teacher).
        kinds: keep only these kinds (``single``, ``chain``, ``fanout``, ``no_tool``); None: all.

    Returns:
        The kept examples, where they were written, and what was dropped.
    """
    started = time.perf_counter()
    listed = list(tools.values()) if isinstance(tools, ToolRegistry) else list(tools)
    if not force and (hit := _cached_result(listed, root)) is not None:
        return hit
    by_name = {t.name: t for t in listed}
    dropped: Counter[str] = Counter()
    kept: list[Example] = []
    seen: set[str] = set()
    paraphrased = 0
    for synth in synthesize(listed, seed=seed):
        if kinds is not None and synth.kind not in kinds:
            continue
        query = synth.query
        if teacher is not None and synth.plan.calls and paraphrased < max_paraphrases:
            rewritten = _paraphrase(teacher, query)
            why = example_problem(rewritten, synth.plan, by_name, synth.expected)[0] if rewritten else "empty"
            if not why:
                query, paraphrased = rewritten, paraphrased + 1
            else:  # the template request stays
                dropped["paraphrase_" + why] += 1
        reason, detail = example_problem(query, synth.plan, by_name, synth.expected)
        key = normalize_request(query)
        if reason or key in seen:
            dropped[reason or "duplicate"] += 1
            log.debug("dropped %r: %s %s", query, reason or "duplicate", detail)
            continue
        seen.add(key)
        kept.append(Example(query, synth.plan))
    seconds = round(time.perf_counter() - started, 2)
    meta = {"seconds": seconds, "dropped": dict(dropped), "paraphrased": paraphrased,
            "teacher": teacher.name if teacher is not None else None, "seed": seed,
            "kinds": list(kinds) if kinds is not None else None}
    path = save_cached_examples(listed, kept, root=root, meta=meta)
    log.info("built %d automatic examples for %d tools in %.1f s (%s)", len(kept), len(listed), seconds, path)
    return AutoExamples(path, tuple(kept), registry_key(listed), dict(dropped), paraphrased, seconds)
