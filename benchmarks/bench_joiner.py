"""The joiner, three ways, on the functions eval set: ``llm`` (the model writes every answer), ``auto`` (the default:
the template when the results already answer, else the model) and ``template`` (never the model).

    python benchmarks/bench_joiner.py [--model qwen2.5-coder-1.5b] [--threads 2] [--limit 20]

Writes benchmarks/results/joiner.json, with the machine's load before and after (run it alone: a second llama.cpp
process on 2 cores slows both by 5-20x).

Planning noise is taken out: each case's gold plan is executed against fresh demo data (``init_demo``), so every
joiner answers the same results. The planner call is scripted with the gold plan, but its prompt is still
evaluated by the real model (one token generated), so the LLM joiner, which continues the planner's conversation,
finds the KV cache as warm as in a real run. ``auto`` runs again from scratch; where it asks the model, the model's
reply from the ``llm`` run is replayed (the same greedy answer) and the time of that run is counted.

Answer quality is checked automatically (:func:`check`), per case:

* **facts**: what the results establish, from each step the answer must speak for (every step except the reads
  that only fed later steps): the title, subject or name of each action and each address it went to (lookups
  resolved), each date and time in its arguments; for a read that answers a question, its value (a short result),
  the titles of the records it listed, or the fact that it listed none; for a step that failed, the failure. A fact
  is found when the answer holds it: text case-insensitively, a phone number by its digits, a path by its file name,
  a date as ISO or as day and month in words (or "today"/"tomorrow"/its weekday within a week), a time as 14:00,
  2pm, 2:00 PM or noon; a failure by a negative ("could not", "not", "failed", "no contact" …); an empty listing
  by "no", "none", "nothing", "free" ….
* **hallucinations**: email addresses, phone numbers, URLs and ISO dates in the answer that appear neither in the
  request nor in any result or argument.
* a case **passes** when every fact is found and nothing is hallucinated. The **lenient** variant also accepts a
  recipient that was looked up when the answer names whom it was looked up for ("sent to Zoë" for
  zoe.mueller@example.de), and a label in any case or with its words in another order.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import re
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from tinyagent import Agent, Ref, StepRecord, Tool
from tinyagent.evals import EvalCase, load_evalset
from tinyagent.functions import FunctionsSettings, builtin_examples, builtin_tools, init_demo
from tinyagent.models import Completion, LlamaCppModel, Model, ModelRequest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_latency import log, machine  # noqa: E402 - the benchmarks folder is not a package

RESULTS = Path(__file__).parent / "results"
END_OF_PLAN = "<END_OF_PLAN>"
JOINER_MARK = "Actions and results:"
LABEL_KEYS = ("title", "subject", "name")
MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december"]
NEGATIVE = re.compile(r"\b(not|couldn't|could not|unable|failed|no contact|error|sorry|cannot|can't|isn't|wasn't|"
                      r"doesn't|didn't|no such|none|missing|no email|no phone|no note|no reminder list)\b", re.I)
EMPTY = re.compile(r"\b(no|none|nothing|free|empty|not any|don't have|do not have|aren't|isn't|clear)\b", re.I)
ISO = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:T(\d{2}):(\d{2}))?$")
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
URL = re.compile(r"https?://[^\s)\"'<>]+")
PHONE = re.compile(r"\+?\d[\d\s().-]{6,}\d")
ISO_IN_TEXT = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")




# -- the models ------------------------------------------------------------------------------------------------------
class GoldPlanner(Model):
    """Plans with the case's gold plan (warming the real model's KV cache with the planner prompt when ``warm``);
    every other request (the joiner, a summary a tool asks for) goes to the real model, or, for joiner requests,
    to ``replay`` when it is set."""

    def __init__(self, real: LlamaCppModel, plan: str, *, warm: bool, replay: str | None = None) -> None:
        self.real, self.plan, self.warm, self.replay = real, plan, warm, replay
        self.name = real.name
        self.supports_grammar = real.supports_grammar
        self.joiner_calls = 0

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | Completion]:
        if END_OF_PLAN in request.stop:
            if self.warm:
                await self.real.complete(ModelRequest(messages=request.messages, max_tokens=1))
            yield self.plan
            yield Completion(text=self.plan, model=self.name)
            return
        if JOINER_MARK in str(request.messages[-1].get("content", "")):
            self.joiner_calls += 1
            if self.replay is not None:
                yield self.replay
                yield Completion(text=self.replay, model=self.name)
                return
        async for item in self.real.stream(request):
            yield item


async def allow(request: Any) -> bool:
    return True


async def run_case(case: EvalCase, real: LlamaCppModel, joiner: str, replay: str | None = None) -> dict[str, Any]:
    data = Path(tempfile.mkdtemp(prefix="bench-joiner-"))
    init_demo(data, today=case.today, timezone="UTC")
    tools = builtin_tools(FunctionsSettings(data_dir=data, timezone="UTC"))
    model = GoldPlanner(real, case.plan.to_text() + "\n" + END_OF_PLAN, warm=joiner == "llm", replay=replay)
    agent = Agent(tools=tools, model=model, examples=builtin_examples(), confirm=allow, joiner=joiner)
    result = await agent.run(case.query, today=case.today)
    registry = {t.name: t for t in tools}
    return {"answer": result.answer, "join_s": result.timings.get("join", 0.0),
            "first_words_s": result.timings.get("join_first_token"), "model_called": model.joiner_calls > 0,
            "raw_answer": model.replay if replay is not None else None,
            "check": check(case.query, result.steps, registry, result.answer, case.today)}


# -- the quality check -----------------------------------------------------------------------------------------------
def _resolve(value: Any, records: dict[int, StepRecord]) -> list[Any]:
    if isinstance(value, Ref):
        got = records[value.step].result if value.step in records else None
        return list(got) if isinstance(got, list | tuple) else [got]
    if isinstance(value, list | tuple):
        return [v for item in value for v in _resolve(item, records)]
    return [value]


def _atoms(value: Any) -> list[str] | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return [str(value)]
    if isinstance(value, str) and "\n" not in value.strip() and len(value.split()) <= 4:
        return [value.strip()]
    if isinstance(value, list) and value and all(isinstance(v, str) and len(v.split()) <= 4 for v in value):
        return [str(v) for v in value]
    return None


def lookup_names(steps: Sequence[StepRecord]) -> dict[str, list[str]]:
    """For each value a step's result holds, the string arguments of that step (whom it was looked up for)."""
    out: dict[str, list[str]] = {}
    for step in steps:
        if step.ok:
            for value in _resolve(step.result, {}):
                if isinstance(value, str):
                    out.setdefault(value, []).extend(v for v in step.args.values() if isinstance(v, str))
    return out


def facts(steps: Sequence[StepRecord], tools: dict[str, Tool]) -> list[tuple[str, str]]:
    """``(kind, value)`` pairs the answer must hold (see the module docstring)."""
    records = {s.id: s for s in steps}
    used = {leaf.step for s in steps for leaf in _leaves(s.args) if isinstance(leaf, Ref)}
    out: list[tuple[str, str]] = []
    for step in steps:
        tool = tools.get(step.name)
        read = tool is not None and tool.read_only
        if not step.ok:
            if step.status != "skipped":
                out.append(("failure", step.error or step.status))
            continue
        if read and step.id in used:
            continue  # a lookup behind an action: the action's facts carry what it found
        for name, raw in step.args.items():
            for value in _resolve(raw, records):
                if not isinstance(value, str) or not value.strip():
                    continue
                if ISO.match(value):
                    out.append(("when", value))
                elif name in LABEL_KEYS and not read:
                    out.append(("label", value))
                elif tool is not None and name in tool.target_params and (EMAIL.search(value) or PHONE.search(value)):
                    out.append(("recipient", value))
        if read:
            out += _read_facts(step.result)
    return list(dict.fromkeys(out))


def _read_facts(result: Any) -> list[tuple[str, str]]:
    atoms = _atoms(result)
    if atoms is not None:
        return [("value", a) for a in atoms]
    if isinstance(result, dict):
        lists = [v for v in result.values() if isinstance(v, list)]
        if lists and all(not v for v in lists):
            return [("empty", "")]
        labels = [str(item[k]) for v in lists for item in v if isinstance(item, dict)
                  for k in LABEL_KEYS[:1] if isinstance(item.get(k), str)]
        return [("value", lab) for lab in labels[:5]]
    return []  # free text: no fact can be named without the gold answer


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [x for v in value.values() for x in _leaves(v)]
    if isinstance(value, list | tuple):
        return [x for v in value for x in _leaves(v)]
    return [value]


def _digits(text: str) -> str:
    return re.sub(r"\D", "", text)


def found(kind: str, value: str, answer: str, today: dt.date) -> bool:
    low = answer.casefold()
    if kind == "failure":
        return bool(NEGATIVE.search(answer))
    if kind == "empty":
        return bool(EMPTY.search(answer))
    if kind == "when":
        return _date_found(value, low, today)
    if PHONE.fullmatch(value.strip()) and len(_digits(value)) >= 7:
        return _digits(value) in _digits(answer)
    if "/" in value:
        return value.rsplit("/", 1)[-1].casefold() in low or value.casefold() in low
    return value.casefold().strip() in low


def _date_found(value: str, low: str, today: dt.date) -> bool:
    match = ISO.match(value)
    if match is None:
        return value.casefold() in low
    day = dt.date.fromisoformat(match.group(1))
    month = MONTHS[day.month - 1]
    words = [day.isoformat(), f"{month} {day.day}", f"{month[:3]} {day.day}", f"{day.day} {month}",
             f"{day.day} {month[:3]}", f"{month} {day.day}th", f"{month} {day.day}st", f"{month} {day.day}nd",
             f"{month} {day.day}rd", f"{day.month}/{day.day}"]
    relative = {0: "today", 1: "tomorrow", -1: "yesterday"}.get((day - today).days)
    if relative:
        words.append(relative)
    if 0 <= (day - today).days < 7:
        words.append(day.strftime("%A").lower())
    date_ok = any(w in low for w in words)
    if not match.group(2):
        return date_ok
    hour, minute = int(match.group(2)), int(match.group(3))
    h12 = hour % 12 or 12
    suffix = "am" if hour < 12 else "pm"
    times = [rf"\b{hour:02d}:{minute:02d}\b", rf"\b{hour}:{minute:02d}\b",
             rf"\b{h12}(:{minute:02d})?\s*({suffix}|{suffix[0]}\.m\.)"]
    if minute == 0:
        times.append(rf"\bat {h12}\b(?![:\d])")
    if hour == 12 and minute == 0:
        times.append(r"\bnoon\b")
    return date_ok and any(re.search(t, low) for t in times)


def check(query: str, steps: Sequence[StepRecord], tools: dict[str, Tool], answer: str,
          today: dt.date) -> dict[str, Any]:
    """Facts found and missed, and values in the answer that nothing supports."""
    want = facts(steps, tools)
    missed = [f"{k}: {v}" for k, v in want if not found(k, v, answer, today)]
    names = lookup_names(steps)
    words = set(re.findall(r"\w+", answer.casefold()))
    lenient = [f"{k}: {v}" for k, v in want if not found(k, v, answer, today)
               and not (k == "recipient" and any(n.casefold() in answer.casefold() for n in names.get(v, [])))
               and not (k == "label" and set(re.findall(r"\w+", v.casefold())) <= words)]
    support = (query + "\n" + "\n".join(s.observation() for s in steps) + "\n"
               + json.dumps([s.to_dict() for s in steps], ensure_ascii=False, default=str)).casefold()
    support_digits = _digits(support)
    invented = [e for e in EMAIL.findall(answer) if e.casefold().rstrip(".") not in support]
    invented += [u for u in URL.findall(answer) if u.casefold().rstrip(".") not in support]
    invented += [p for p in PHONE.findall(answer) if len(_digits(p)) >= 7 and _digits(p) not in support_digits
                 and not ISO_IN_TEXT.search(p)]
    invented += [d for d in ISO_IN_TEXT.findall(answer) if d not in support]
    return {"facts": len(want), "found": len(want) - len(missed), "missed": missed, "invented": invented,
            "pass": not missed and not invented, "found_lenient": len(want) - len(lenient),
            "pass_lenient": not lenient and not invented}


# -- the benchmark ---------------------------------------------------------------------------------------------------
def pick(limit: int) -> list[EvalCase]:
    """``limit`` test cases with calls, spread evenly over the set (its categories come in blocks), plus the first
    case shaped like the README's demo request (mail a note, then a calendar event: four steps)."""
    cases = [c for c in load_evalset("test") if c.calls]
    if limit >= len(cases):
        return cases
    picked = [cases[round(i * (len(cases) - 1) / max(1, limit - 1))] for i in range(limit)]
    demo = next((c for c in cases if c.category == "standup_combo"), None)
    return picked + ([demo] if demo is not None and demo not in picked else [])


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    times = [r["join_s"] for r in rows]
    first = [r["first_words_s"] for r in rows if r["first_words_s"] is not None]
    checks = [r["check"] for r in rows]
    total = sum(c["facts"] for c in checks)
    return {
        "cases": len(rows),
        "pass_rate": round(sum(c["pass"] for c in checks) / len(rows), 3),
        "fact_recall": round(sum(c["found"] for c in checks) / total, 3) if total else None,
        "pass_rate_lenient": round(sum(c["pass_lenient"] for c in checks) / len(rows), 3),
        "fact_recall_lenient": round(sum(c["found_lenient"] for c in checks) / total, 3) if total else None,
        "invented_values": sum(len(c["invented"]) for c in checks),
        "model_calls": sum(r["model_called"] for r in rows),
        "answer_s_mean": round(statistics.fmean(times), 3),
        "answer_s_p50": round(statistics.median(times), 3),
        "answer_s_max": round(max(times), 3),
        "first_words_s_p50": round(statistics.median(first), 3) if first else None,
        "first_words_s_max": round(max(first), 3) if first else None,
    }


async def bench(real: LlamaCppModel, cases: list[EvalCase]) -> list[dict[str, Any]]:
    rows = []
    for n, case in enumerate(cases, 1):
        started = time.perf_counter()
        llm = await run_case(case, real, "llm")
        reply = "Answer: " + llm["answer"]
        auto = await run_case(case, real, "auto", replay=reply)
        if auto["model_called"]:  # the same greedy reply: count the llm run's time for it
            auto["join_s"], auto["first_words_s"] = llm["join_s"], llm["first_words_s"]
        template = await run_case(case, real, "template", replay=reply)
        rows.append({"id": case.id, "category": case.category, "query": case.query,
                     "llm": llm, "auto": auto, "template": template})
        log(f"[{n}/{len(cases)}] {case.id} llm {llm['join_s']:.2f}s pass={llm['check']['pass']} | auto "
            f"{'model' if auto['model_called'] else 'template'} pass={auto['check']['pass']} | template "
            f"pass={template['check']['pass']} ({time.perf_counter() - started:.1f}s)")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--limit", type=int, default=20, help="eval-set cases (with calls), spread over the set")
    parser.add_argument("--output", type=Path, default=RESULTS / "joiner.json")
    args = parser.parse_args()
    out: dict[str, Any] = {"model": args.model, "threads": args.threads, "machine_before": machine(),
                           "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
    started = time.perf_counter()
    real = LlamaCppModel(args.model, n_threads=args.threads)
    rows = asyncio.run(bench(real, pick(args.limit)))
    for row in rows:
        for joiner in ("llm", "auto", "template"):
            row[joiner].pop("raw_answer", None)
            row[joiner]["join_s"] = round(row[joiner]["join_s"], 3)
            if row[joiner]["first_words_s"] is not None:
                row[joiner]["first_words_s"] = round(row[joiner]["first_words_s"], 3)
    out["summary"] = {j: summary([r[j] for r in rows]) for j in ("llm", "auto", "template")}
    routed = [r for r in rows if not r["auto"]["model_called"]]
    out["auto_template_cases"] = {"count": len(routed), "llm_pass_rate_on_them": round(
        sum(r["llm"]["check"]["pass"] for r in routed) / len(routed), 3) if routed else None,
        "auto_pass_rate_on_them": round(sum(r["auto"]["check"]["pass"] for r in routed) / len(routed), 3)
        if routed else None}
    out["cases"] = rows
    out["wall_s"] = round(time.perf_counter() - started, 1)
    out["machine_after"] = machine()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    log(json.dumps(out["summary"], indent=1))
    log(f"wrote {args.output}")


if __name__ == "__main__":
    main()
