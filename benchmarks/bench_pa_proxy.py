"""A personal-assistant registry whose names and descriptions are not ours, with no user examples.

The functions test split (``tinyagent.evals.load_evalset("test")``) converted onto a disguised registry
(``benchmarks/data/pa_proxy/tools.json``: every tool and parameter renamed, descriptions in another vendor's voice,
date-times ``YYYY-MM-DD HH:MM:SS``; see :mod:`tinyagent.evals._pa_proxy`). Each case is planned exactly as
``tinyagent plan --tools tools.json --input requests.jsonl`` plans it for a new user: the registry loaded by the
CLI's loader, the agent built by the CLI's own ``build_agent`` (for a 16-60 tool foreign registry that is no
retrieval and no built-in examples) and no example cache; ``today`` from each case; ``Agent.plan`` only.

Usage (runs the 1.5B planner: use the shared lock)::

    flock /tmp/llama.lock nice -n 10 python benchmarks/bench_pa_proxy.py --limit 40
    flock /tmp/llama.lock nice -n 10 python benchmarks/bench_pa_proxy.py --limit 40 --auto-examples
    python benchmarks/bench_pa_proxy.py --model smollm2-135m --limit 2 --output /tmp/pa.json
    python benchmarks/bench_pa_proxy.py --only-failed benchmarks/results/pa_proxy_full.json --output /tmp/pa.json
    flock /tmp/llama.lock python benchmarks/bench_pa_proxy.py --cases benchmarks/data/pa_multistep/cases.jsonl

``--only-failed RESULTS`` plans only the cases that failed in an earlier results file (a quick look at whether a
change turns them into right plans; the full run says whether it broke others).

``--cases FILE`` plans the cases of a JSONL file of :class:`tinyagent.evals.EvalCase` records written over the same
registry (e.g. ``benchmarks/data/pa_multistep/cases.jsonl``, a hand-made development set of multi-step requests)
instead of the converted test split; ``--limit N`` then takes the first N. Its results go to
``results/<the file's folder name>.json`` (``..._autoex.json``) unless ``--output`` says otherwise, so the test
split's results are not overwritten.

``--tools T.json --cases FILE`` plans a set written over another registry: ``benchmarks/data/pa_fresh`` holds 16 tools
of a registry of its own (other names, parameter names and description style: ``abook.findEmail``, ``mail.send(to,
cc, attach)``, ``remind.set(what, at)``) and 32 requests over it (4 need no tool, 6 one call, 10 two or three, 12
four to six; 3 with typos), written in session 25 before any run, as a held-out set::

    python benchmarks/bench_pa_proxy.py --tools benchmarks/data/pa_fresh/tools.json \
        --cases benchmarks/data/pa_fresh/cases.jsonl --output benchmarks/results/pa_fresh.json

``benchmarks/data/pa_fresh2`` holds a third (18 PascalCase tools with camelCase parameters: ``DispatchEmail(
recipientAddresses, ...)``, ``ScheduleMeeting(eventStart, durationMinutes, ...)``) and 40 requests (5 no tool, 8 one
call, 13 two or three, 14 four to six; 4 typos), written in session 26 before any run::

    python benchmarks/bench_pa_proxy.py --tools benchmarks/data/pa_fresh2/tools.json \
        --cases benchmarks/data/pa_fresh2/cases.jsonl --output benchmarks/results/pa_fresh2.json

``benchmarks/data/pa_fresh3`` holds a fourth (20 noun-first snake_case tools with terse parameters: one contact card
``people_directory_lookup(who)`` for both channels, ``mail_outbox_send(to, subj, body)``, ``sms_gateway_push(to,
txt)``, ``calendar_entry_insert(title, from_iso, until_iso)``; weather, timer, units and to-do tools) and 40 requests
(5 no tool, 9 one call, 13 two or three, 13 four to six; 4 typos), written in session 27 before any run::

    python benchmarks/bench_pa_proxy.py --tools benchmarks/data/pa_fresh3/tools.json \
        --cases benchmarks/data/pa_fresh3/cases.jsonl --output benchmarks/results/pa_fresh3.json

``benchmarks/data/pa_fresh4`` holds a fifth (18 lowerCamelCase verb-first tools with verbose snake_case parameters:
``findContactMailbox`` and ``findContactMobileLine``, ``sendMailMessage(recipient_addresses, subject_line,
message_body)``, ``sendSmsText`` to one number, ``scheduleCalendarEvent(start_datetime, duration_minutes, ...)``;
enums, integers, booleans) and 40 requests (5 no tool, 10 one call, 13 two or three, 12 four to six; 4 typos),
written in session 28 before any run::

    python benchmarks/bench_pa_proxy.py --tools benchmarks/data/pa_fresh4/tools.json \
        --cases benchmarks/data/pa_fresh4/cases.jsonl --output benchmarks/results/pa_fresh4.json

``benchmarks/data/pa_fresh5`` holds a sixth (20 MCP-style tools named ``server__action``: ``wx__forecast``,
``geo__route``, ``pim__people-resolve(who, want: "email" | "phone")``, ``mail__send(to, cc, subject, body,
attach)``; short parameters, ``Returns: {...}`` descriptions, times as ``YYYY-MM-DDTHH:MM``) and 40 requests (5 no
tool, 10 one call, 13 two or three, 12 four to six; 4 casual or misspelt), written in session 29 before any run::

    python benchmarks/bench_pa_proxy.py --tools benchmarks/data/pa_fresh5/tools.json \
        --cases benchmarks/data/pa_fresh5/cases.jsonl --output benchmarks/results/pa_fresh5.json

``benchmarks/data/pa_fresh6`` holds a seventh (20 tools named ``juno_<verb>_<noun>``: a product prefix on every
name; events take ``date`` and ``start_time`` apart, reminders ``YYYY-MM-DDTHH:MM:SS``, meeting links an ISO 8601
``duration``; ``juno_find_contact(query, field: "email" | "phone")``) and 40 requests, written in session 30 before
any run::

    python benchmarks/bench_pa_proxy.py --tools benchmarks/data/pa_fresh6/tools.json \
        --cases benchmarks/data/pa_fresh6/cases.jsonl --output benchmarks/results/pa_fresh6.json

``benchmarks/data/pa_fresh7`` holds an eighth (20 kebab-case, noun-first tools such as ``contact-lookup(contact_name,
ret_field: "email" | "phone")`` and ``calendar-event-create(event_title, event_date, start_time, duration_hrs)``; US
dates ``MM/DD/YYYY`` and a 12-hour clock ``hh:mm AM/PM``) and 40 requests, written in session 31 before any run::

    python benchmarks/bench_pa_proxy.py --tools benchmarks/data/pa_fresh7/tools.json \
        --cases benchmarks/data/pa_fresh7/cases.jsonl --output benchmarks/results/pa_fresh7.json

``--auto-examples`` also plans every case with the automatic examples of :func:`tinyagent.finetune.build_examples`
(what ``tinyagent examples build --tools tools.json`` caches and ``Agent(auto_examples=True)`` then reads; built
once into a scratch folder, outside the timed part).

Writes ``benchmarks/results/pa_proxy.json`` (``pa_proxy_autoex.json`` with ``--auto-examples``):
``{"runs": {"without"[, "with"]: {"overall": {dag, strict, strict_exact, date_format_ok, no_tool, p50_s, p95_s,
prompt_tokens, n, ...}, "by_category": {...}, "failures": {kind: count}}}, "machine", "settings",
"cases": {run: [rows]}}``. Rates are 0 to 1. ``strict_exact`` also requires every date argument in its documented
format (strict success itself compares dates in a canonical form).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import logging
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tinyagent import AgentSettings
from tinyagent.apps import build_agent, load_model_spec, load_tools
from tinyagent.errors import ConfigurationError
from tinyagent.evals import EvalCase, load_evalset, load_pa_registry, pa_proxy_cases, plan_pa_proxy, summarize

TOOLS = Path(__file__).parent / "data" / "pa_proxy" / "tools.json"
RESULTS = Path(__file__).parent / "results" / "pa_proxy.json"
DEFAULT_MODEL = "qwen2.5-coder-1.5b"


def machine(stage: str, into: dict[str, Any]) -> None:
    into[f"loadavg_{stage}"] = [round(x, 2) for x in os.getloadavg()]
    into["nproc"] = os.cpu_count()


def summarize_rows(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Overall and per-category rates, plus the failure counts."""
    def rates(group: Sequence[dict[str, Any]]) -> dict[str, Any]:
        out = summarize(group)
        n = len(group)
        fmt = [bool(r["date_format_ok"]) for r in group if r.get("date_format_ok") is not None]
        out["strict_exact"] = round(sum(bool(r["strict_exact"]) for r in group) / n, 4) if n else None
        out["date_format_ok"] = round(sum(fmt) / len(fmt), 4) if fmt else None
        return out

    by_cat: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_cat.setdefault(row["category"] or "-", []).append(row)
    return {
        "overall": rates(rows),
        "by_category": {c: {k: v for k, v in rates(g).items() if k in ("dag", "strict", "strict_exact", "n")}
                        for c, g in sorted(by_cat.items())},
        "failures": dict(Counter(r["failure"] for r in rows if r.get("failure")).most_common()),
    }


def plan_cases(cases: Sequence[EvalCase], model_spec: str | Any, *, threads: int = 2, tools: Path = TOOLS,
               auto_root: Path | None = None, overrides: Mapping[str, Any] | None = None,
               ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Plan ``cases`` over the disguised registry; with ``auto_root``, with automatic examples built there first.

    Args:
        cases: converted cases (:func:`tinyagent.evals.pa_proxy_cases`).
        model_spec: a ``--model`` value (catalog name, .gguf path) or a model object (closed afterwards).
        threads: llama.cpp threads.
        tools: the disguised registry file.
        auto_root: a scratch folder for the automatic examples; None plans without examples.
        overrides: :class:`tinyagent.AgentSettings` fields to change (an A/B experiment: ``--set``).

    Returns:
        The per-case rows and build information (``{"examples", "build_s"}`` with automatic examples, else {}).
    """
    registry = load_tools(str(tools))  # the CLI's --tools loader: ToolRegistry.from_openai over the JSON
    scoring_registry = load_pa_registry(tools)
    model = load_model_spec(model_spec, threads=threads) if isinstance(model_spec, str) else model_spec
    info: dict[str, Any] = {}
    extra: dict[str, Any] = {"settings": AgentSettings(**overrides)} if overrides else {}
    if auto_root is not None:
        from tinyagent.finetune import build_examples

        built = build_examples(registry, root=auto_root)  # outside the timed part
        info = {"examples": len(built.examples), "build_s": round(built.seconds, 3)}
        agent = build_agent(registry, model, examples=list(built.examples), auto_examples=False, **extra)
    else:
        # A new user has no example cache; auto_examples=False keeps any cache on this machine out of the run.
        agent = build_agent(registry, model, auto_examples=False, **extra)

    async def go() -> list[dict[str, Any]]:
        try:
            return await plan_pa_proxy(cases, agent, scoring_registry, model=model)
        finally:
            close = getattr(model, "aclose", None)
            if close is not None:
                await close()

    return asyncio.run(go()), info


def file_cases(path: Path, limit: int | None = None) -> list[EvalCase]:
    """The first ``limit`` cases of a JSONL file of eval-case records over the disguised registry (``--cases``).

    Raises:
        ConfigurationError: a negative limit, or the file is missing or not eval-case JSONL.
    """
    if limit is not None and limit < 0:
        raise ConfigurationError(f"limit must be a positive number of cases, got {limit}")
    cases = load_evalset(path=path)
    return cases if limit is None else cases[:limit]


def run(args: argparse.Namespace) -> dict[str, Any]:
    cases = file_cases(args.cases, args.limit) if args.cases is not None else pa_proxy_cases(args.limit)
    if args.only_failed is not None:
        cases = [c for c in cases if c.id in failed_ids(args.only_failed)]
    info: dict[str, Any] = {}
    machine("before", info)
    start = time.perf_counter()
    runs: dict[str, list[dict[str, Any]]] = {}
    builds: dict[str, Any] = {}
    if not args.skip_without:
        runs["without"], _ = plan_cases(cases, args.model, threads=args.threads, tools=args.tools,
                                        overrides=args.set)
        print(f"without: {json.dumps(summarize_rows(runs['without'])['overall'])}", file=sys.stderr, flush=True)
    if args.auto_examples:
        with tempfile.TemporaryDirectory(prefix="tinyagent-pa-autoex-") as root:
            runs["with"], builds = plan_cases(cases, args.model, threads=args.threads, tools=args.tools,
                                              auto_root=Path(root), overrides=args.set)
        print(f"with: {json.dumps(summarize_rows(runs['with'])['overall'])}", file=sys.stderr, flush=True)
    machine("after", info)
    return {
        "runs": {name: summarize_rows(rows) for name, rows in runs.items()},
        "auto_examples": builds or None,
        "machine": info,
        "settings": {"model": args.model, "limit": args.limit, "threads": args.threads,
                     "split": "test" if args.cases is None else sorted({c.split for c in cases}),
                     "cases_file": None if args.cases is None else str(args.cases),
                     "tools": str(args.tools), "n_tools": len(load_pa_registry(args.tools)),
                     "agent": "tinyagent.apps build_agent over load_tools(tools.json), no example cache",
                     "overrides": args.set,
                     "date": dt.date.today().isoformat(), "seconds": round(time.perf_counter() - start, 1)},
        "cases": runs,
    }


def failed_ids(results: Path) -> set[str]:
    """The ids of the cases that failed (DAG) in an earlier results file's first run."""
    data = json.loads(results.read_text(encoding="utf-8"))
    rows = next(iter(data["cases"].values()))
    return {str(r["id"]) for r in rows if not r.get("dag")}


def _setting(text: str) -> tuple[str, Any]:
    """``field=value`` (the value as JSON, else as a string) for ``--set``."""
    field, sep, value = text.partition("=")
    if not sep or field not in AgentSettings.__dataclass_fields__:
        raise argparse.ArgumentTypeError(f"not an AgentSettings field=value: {text!r}")
    try:
        return field, json.loads(value)
    except json.JSONDecodeError:
        return field, value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=DEFAULT_MODEL, help="planner (catalog name or .gguf)")
    parser.add_argument("--limit", type=int, default=None,
                        help="cases, round-robin over the categories (default all; with --cases the first N)")
    parser.add_argument("--threads", type=int, default=2, help="llama.cpp threads")
    parser.add_argument("--tools", type=Path, default=TOOLS, help="the disguised registry (OpenAI JSON)")
    parser.add_argument("--cases", type=Path, default=None, metavar="FILE",
                        help="plan these EvalCase JSONL records (same registry) instead of the converted test split")
    parser.add_argument("--only-failed", type=Path, default=None, metavar="RESULTS",
                        help="plan only the cases that failed in an earlier results file (a quick A/B on them)")
    parser.add_argument("--auto-examples", action="store_true", help="also plan with automatic examples")
    parser.add_argument("--skip-without", action="store_true", help="with --auto-examples: only the 'with' run")
    parser.add_argument("--output", type=Path, default=None,
                        help="result file (default results/pa_proxy.json, or pa_proxy_autoex.json; with --cases "
                             "results/<its folder>.json)")
    parser.add_argument("--set", type=_setting, action="append", default=[], metavar="FIELD=VALUE",
                        help="an AgentSettings field for this run (JSON value), e.g. format_examples=false")
    args = parser.parse_args(argv)
    args.set = dict(args.set)
    logging.basicConfig(level=logging.WARNING)
    default = RESULTS if args.cases is None else RESULTS.with_name(f"{args.cases.resolve().parent.name}.json")
    output = args.output or (default.with_name(f"{default.stem}_autoex.json") if args.auto_examples else default)
    result = run(args)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps({name: r["overall"] for name, r in result["runs"].items()}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
