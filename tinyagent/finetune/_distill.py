"""``distill``: synthesize requests with a teacher, plan them with the teacher through the Agent's own planner,
verify every plan, and write the survivors as chat-format JSONL for training. Resumable after a kill.

Run folder layout (everything is append-only or written atomically)::

    progress.json     configuration fingerprint, phase and counts (refuses to resume a different configuration)
    requests.jsonl    one line per teacher batch: the requests it produced, and the duplicates it dropped
    kept.jsonl        one line per verified example (request, plan, prompt messages, tools, repairs, split)
    rejected.jsonl    one line per dropped example (request, reason, detail, teacher text)
    train.jsonl       the training set: {"messages": [system, user, assistant], "tools": [...]} per line
    valid.jsonl       the held-out set, same shape
    stats.json        kept / dropped counts, by reason and by request kind

A killed run resumes where it stopped: finished batches and examples are never redone (nothing duplicated), and the
example in flight is redone (nothing lost).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import hashlib
import json
import logging
import random
import time
import zlib
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._grammar import GrammarOptions
from .._plan import Example, Plan
from .._prompts import build_planner_messages
from .._tools import Tool, ToolRegistry
from ..errors import ConfigurationError, EndpointError, ModelError, PlanError, PlanParseError, TrainingError
from ..models import Completion, Model, ModelRequest, ScriptedModel
from ._files import atomic_write_json, read_json
from ._grammar_check import GrammarChecker
from ._jsonl import JsonlLog, write_jsonl
from ._progress import ProgressCallback, ProgressEvent, emit
from ._synth import (
    DEFAULT_MIX,
    BatchSpec,
    SynthRequest,
    add_typos,
    list_grammar,
    parse_request_list,
    plan_batches,
    request_messages,
)
from ._verify import Deduper, DryRun, Verdict, Verifier, VerifyStats

__all__ = ["DistillConfig", "DistillResult", "distill", "distill_sync", "training_record"]

log = logging.getLogger("tinyagent.finetune")

_FILES = ("progress.json", "requests.jsonl", "kept.jsonl", "rejected.jsonl", "train.jsonl", "valid.jsonl",
          "stats.json")


@dataclass(frozen=True)
class DistillConfig:
    """Knobs of :func:`distill`.

    Attributes:
        n_requests: requests to ask the teacher for (verification then drops some).
        batch_size: requests per teacher call.
        mix: weight per request kind (see ``tinyagent.finetune.DEFAULT_MIX``).
        seed: seeds the batch plan, the dates and the typos.
        valid_fraction: share of examples held out in ``valid.jsonl``.
        dedupe_threshold: similarity (difflib ratio) at which two requests count as duplicates.
        include_examples: add the user's examples (with their own plans, verified) to the training set.
        request_temperature: sampling temperature when the teacher writes requests.
        typos_per_request: typos added to each ``typo`` request.
        check_dates: run the relative-date check.
        grammar: the caps of the student's plan grammar (plans beyond them are dropped).
        concurrency: examples planned at once (useful for endpoints; a local model serialises anyway).
    """

    n_requests: int = 200
    batch_size: int = 5
    mix: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_MIX))
    seed: int = 0
    valid_fraction: float = 0.1
    dedupe_threshold: float = 0.9
    include_examples: bool = True
    request_temperature: float = 0.8
    typos_per_request: int = 2
    check_dates: bool = True
    grammar: GrammarOptions = field(default_factory=GrammarOptions)
    concurrency: int = 1

    def to_json(self) -> dict[str, Any]:
        """JSON-able fields."""
        data = dataclasses.asdict(self)
        data["mix"] = dict(self.mix)
        return data


@dataclass
class DistillResult:
    """What :func:`distill` produced.

    Attributes:
        out_dir: the run folder.
        train_path: ``train.jsonl``.
        valid_path: ``valid.jsonl``.
        stats: kept / dropped counts (see ``stats.json``).
        requests: requests synthesized (after deduplication, user examples included).
        seconds: wall time of this call.
        resumed: whether earlier work in ``out_dir`` was reused.
    """

    out_dir: Path
    train_path: Path
    valid_path: Path
    stats: dict[str, Any]
    requests: int
    seconds: float
    resumed: bool

    @property
    def kept(self) -> int:
        """Examples kept."""
        return int(self.stats.get("kept", 0))

    @property
    def dropped(self) -> int:
        """Examples dropped (duplicates included)."""
        return int(self.stats.get("dropped", 0))


class _Recorder(Model):
    """Wraps the teacher to keep the exact request and text of the last call."""

    def __init__(self, inner: Model) -> None:
        self.inner = inner
        self.name = inner.name
        self.pricing = inner.pricing
        self.supports_grammar = inner.supports_grammar
        self.request: ModelRequest | None = None
        self.text = ""

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | Completion]:
        self.request = request
        self.text = ""
        parts: list[str] = []
        async for item in self.inner.stream(request):
            if isinstance(item, Completion):
                self.text = item.text
            else:
                parts.append(item)
                self.text = "".join(parts)
            yield item

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def prompt_tokens(self, messages: Sequence[dict[str, Any]]) -> int:
        counter = getattr(self.inner, "prompt_tokens", None)
        if callable(counter):
            return int(counter(messages))
        return self.inner.count_tokens("".join(str(m.get("content", "")) for m in messages))


def _fingerprint(
    config: DistillConfig,
    registry: ToolRegistry,
    examples: Sequence[Example],
    hint: str,
    student_examples: Sequence[Example] | None,
    agent_options: Mapping[str, Any] | None,
) -> str:
    """The fingerprint of everything that shapes the data set, so a resumed run must match it."""
    student_key = "teacher" if student_examples is None else json.dumps([e.query for e in student_examples])
    agent_key = json.dumps({k: v if isinstance(v, int | float | str | bool) else type(v).__name__
                            for k, v in sorted((agent_options or {}).items())})
    payload = {
        "config": config.to_json(),
        "tools": [t.to_openai() for t in registry.values()],
        "examples": [[e.query, e.plan.to_json(), e.today.isoformat() if e.today else None] for e in examples],
        "extra": f"{hint}|{student_key}|{agent_key}",
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]


def training_record(
    messages: Sequence[Mapping[str, Any]], plan: Plan, tools: Iterable[Tool]
) -> dict[str, Any]:
    """One training example in the chat shape trl reads: the planner prompt, the plan as the assistant turn.

    Args:
        messages: the planner prompt (system + user), exactly as the Agent builds it.
        plan: the target plan; its canonical text (``Plan.to_text()``) is the assistant turn.
        tools: the tools offered, for the ``tools`` column (OpenAI format).
    """
    prompt = [{"role": str(m["role"]), "content": str(m["content"])} for m in messages if m.get("role") != "assistant"]
    return {
        "messages": [*prompt, {"role": "assistant", "content": plan.to_text()}],
        "tools": [t.to_openai() for t in tools],
    }


def _split_of(request_id: str, fraction: float) -> str:
    return "valid" if zlib.crc32(request_id.encode()) % 1000 < fraction * 1000 else "train"


@dataclass
class _Run:
    """What both phases of one distillation run share."""

    registry: ToolRegistry
    teacher: Model
    examples: Sequence[Example]
    cfg: DistillConfig
    out: Path
    hint: str
    progress: ProgressCallback | None
    stats: VerifyStats = field(default_factory=VerifyStats)


async def distill(
    tools: Iterable[Tool] | ToolRegistry,
    teacher: Model,
    out_dir: str | Path,
    *,
    examples: Sequence[Example] = (),
    config: DistillConfig | None = None,
    dry_run: DryRun | None = None,
    hint: str = "",
    student_examples: Sequence[Example] | None = None,
    agent_options: Mapping[str, Any] | None = None,
    grammar_vocab: str | Path | None = None,
    resume: bool = True,
    progress: ProgressCallback | None = None,
) -> DistillResult:
    """Synthesize and verify a planning data set for ``tools`` with ``teacher``.

    Args:
        tools: the user's tools (a registry or tools).
        teacher: any :class:`~tinyagent.models.Model` (an endpoint or a local GGUF); it writes the requests and
            plans them through the same planner (prompt and grammar) the :class:`~tinyagent.Agent` uses.
        out_dir: the run folder (created; reused when resuming).
        examples: a few worked examples from the user: they seed the requests' style, go into the teacher's planner
            prompt, and (``config.include_examples``) into the training set.
        config: the knobs.
        dry_run: executes each plan on scratch data (e.g. :func:`~tinyagent.finetune.builtin_dry_run`); None only
            validates.
        hint: facts about the user's data that requests may mention (default: the dry run's ``hint``).
        student_examples: few-shot examples for the *student's* prompt in the training data; None keeps the
            teacher's prompt exactly (what ``Agent(tools, examples=examples)`` shows).
        agent_options: keyword arguments for the teacher's :class:`~tinyagent.Agent` (``retriever``,
            ``max_examples``, ``examples`` …), so the teacher plans with the prompt the student will see; the
            training prompt then holds the retrieved tools only.
        grammar_vocab: a GGUF whose vocabulary llama.cpp uses to check each plan against the plan grammar (only the
            vocabulary is loaded); default: the teacher's GGUF for a local teacher, else no token-level check.
        resume: continue the run in ``out_dir``; False starts over (deleting its files).
        progress: receives :class:`ProgressEvent` updates (``requests`` and ``plans`` stages).

    Returns:
        Paths of the written data set and its statistics.

    Raises:
        ConfigurationError: ``out_dir`` holds a run with a different configuration, or the configuration is bad.
        TrainingError: the run folder is corrupt.
    """
    start = time.perf_counter()
    registry = tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools)
    cfg = config or DistillConfig()
    if not 0 <= cfg.valid_fraction < 1:
        raise ConfigurationError("valid_fraction must be in [0, 1)")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    hint = hint or str(getattr(dry_run, "hint", "") or "")
    fingerprint = _fingerprint(cfg, registry, examples, hint, student_examples, agent_options)
    resumed = _open_run_folder(out, fingerprint, resume)
    progress_state: dict[str, Any] = {"fingerprint": fingerprint, "config": cfg.to_json(), "phase": "requests",
                                      "teacher": teacher.name, "updated": time.time()}
    atomic_write_json(out / "progress.json", progress_state)
    run = _Run(registry, teacher, examples, cfg, out, hint, progress)

    requests = await _request_phase(run)
    progress_state.update(phase="plans", requests=len(requests), updated=time.time())
    atomic_write_json(out / "progress.json", progress_state)
    retry_later = await _plan_phase(run, requests, dry_run=dry_run, grammar_vocab=grammar_vocab,
                                    student_examples=student_examples, agent_options=agent_options)

    n_train, n_valid = _write_dataset(out)
    summary = run.stats.to_json()
    summary.update(requests=len(requests), train=n_train, valid=n_valid, retry_later=retry_later,
                   tolerated_in_dry_run=dict(getattr(dry_run, "tolerated", {}) or {}),
                   teacher=teacher.name, seconds=round(time.perf_counter() - start, 1))
    atomic_write_json(out / "stats.json", summary)
    progress_state.update(phase="done" if retry_later == 0 else "plans", kept=summary["kept"],
                          dropped=summary["dropped"], updated=time.time())
    atomic_write_json(out / "progress.json", progress_state)
    log.info("distilled %d examples (%d dropped) into %s", summary["kept"], summary["dropped"], out)
    return DistillResult(out_dir=out, train_path=out / "train.jsonl", valid_path=out / "valid.jsonl", stats=summary,
                         requests=len(requests), seconds=time.perf_counter() - start, resumed=resumed)


def _open_run_folder(out: Path, fingerprint: str, resume: bool) -> bool:
    """Whether ``out`` holds a run to resume; clears it when not resuming, refuses a different configuration."""
    state = read_json(out / "progress.json")
    if state is None:
        return False
    if not resume:
        for name in _FILES:
            (out / name).unlink(missing_ok=True)
        return False
    if state.get("fingerprint") != fingerprint:
        raise ConfigurationError(
            f"{out} holds a distillation run with a different configuration (tools, examples or settings); "
            "use a new folder, or pass resume=False to start over"
        )
    return True


# -- phase 1: requests ----------------------------------------------------------------------------------------
async def _request_phase(run: _Run) -> list[SynthRequest]:
    """Every request of the run: those logged by an earlier attempt, the user's examples, then new teacher batches."""
    cfg = run.cfg
    specs = plan_batches(list(run.registry.values()), cfg.n_requests, batch_size=cfg.batch_size, mix=cfg.mix,
                         seed=cfg.seed)
    request_log = JsonlLog(run.out / "requests.jsonl")
    deduper = Deduper(cfg.dedupe_threshold)
    requests, done_batches = _logged_requests(request_log, deduper, run.stats)
    if cfg.include_examples and run.examples and "examples" not in done_batches:
        requests = _example_requests(run.examples, request_log, deduper, run.stats) + requests
    pending = [s for s in specs if s.id not in done_batches]
    emit(run.progress, ProgressEvent("requests", len(specs) - len(pending), len(specs),
                                     message=f"{len(requests)} requests so far"))
    rng_root = random.Random(cfg.seed)
    typo_seeds = {s.id: rng_root.randrange(2**31) for s in specs}
    for spec in pending:
        texts = await _ask_for_requests(run.teacher, spec, run.registry, run.examples, run.hint, cfg)
        batch = _batch_requests(spec, texts, random.Random(typo_seeds[spec.id]), cfg, request_log, deduper,
                                run.stats)
        requests.extend(batch)
        done_batches.add(spec.id)
        emit(run.progress, ProgressEvent("requests", len(done_batches & {s.id for s in specs}), len(specs),
                                         message=f"{len(requests)} requests so far"))
    return requests


def _logged_requests(request_log: JsonlLog, deduper: Deduper,
                     stats: VerifyStats) -> tuple[list[SynthRequest], set[str]]:
    """The requests and finished batch ids an earlier attempt logged (their duplicates counted again)."""
    requests: list[SynthRequest] = []
    done_batches: set[str] = set()
    for record in request_log.load():
        done_batches.add(str(record["batch"]))
        for item in record.get("requests", []):
            req = SynthRequest.from_json(item)
            deduper.add(req.query)
            requests.append(req)
        for _ in record.get("duplicates", []):
            stats.add(str(record.get("kind", "?")), None, "duplicate")
    return requests, done_batches


def _example_requests(
    examples: Sequence[Example], request_log: JsonlLog, deduper: Deduper, stats: VerifyStats
) -> list[SynthRequest]:
    """The user's examples as requests (duplicates dropped), logged as the ``examples`` batch."""
    batch = []
    duplicates = []
    for i, ex in enumerate(examples):
        if deduper.check_and_add(ex.query):
            duplicates.append(ex.query)
            continue
        batch.append(SynthRequest(id=f"ex{i:04d}", query=ex.query, kind="example",
                                  tools=tuple(sorted(ex.tool_names)), today=ex.today or dt.date(2026, 6, 1),
                                  source="example"))
    request_log.append({"batch": "examples", "kind": "example", "requests": [r.to_json() for r in batch],
                        "duplicates": duplicates})
    for _ in duplicates:
        stats.add("example", None, "duplicate")
    return batch


def _batch_requests(spec: BatchSpec, texts: Sequence[str], rng: random.Random, cfg: DistillConfig,
                    request_log: JsonlLog, deduper: Deduper, stats: VerifyStats) -> list[SynthRequest]:
    """The requests of one teacher batch (typos added for ``typo`` batches, duplicates dropped), logged."""
    batch, duplicates = [], []
    for j, text in enumerate(texts):
        query = add_typos(text, rng, cfg.typos_per_request) if spec.kind == "typo" else text
        if deduper.check_and_add(query):
            duplicates.append(query)
            stats.add(spec.kind, None, "duplicate")
            continue
        batch.append(SynthRequest(id=f"{spec.id}-{j}", query=query, kind=spec.kind, tools=spec.tools,
                                  today=spec.today))
    request_log.append({"batch": spec.id, "kind": spec.kind, "asked": spec.count, "got": len(texts),
                        "requests": [r.to_json() for r in batch], "duplicates": duplicates})
    return batch


# -- phase 2: plans and verification --------------------------------------------------------------------------
async def _plan_phase(run: _Run, requests: Sequence[SynthRequest], *, dry_run: DryRun | None,
                      grammar_vocab: str | Path | None, student_examples: Sequence[Example] | None,
                      agent_options: Mapping[str, Any] | None) -> int:
    """Plans and verifies every request not yet decided, concurrently; returns how many a resumed run retries."""
    kept_log, rejected_log = JsonlLog(run.out / "kept.jsonl"), JsonlLog(run.out / "rejected.jsonl")
    done_ids = _logged_verdicts(kept_log, rejected_log, run.stats)
    vocab = grammar_vocab or getattr(run.teacher, "path", None)
    checker = GrammarChecker(vocab) if vocab is not None and str(vocab).endswith(".gguf") else None
    verifier = Verifier(run.registry, grammar=run.cfg.grammar, dry_run=dry_run, check_dates=run.cfg.check_dates,
                        grammar_checker=checker)
    todo = [r for r in requests if r.id not in done_ids]
    total = len(requests)
    emit(run.progress, ProgressEvent("plans", total - len(todo), total, metrics=run.stats.to_json()))
    options: dict[str, Any] = {"examples": list(run.examples), "grammar": run.cfg.grammar,
                               **dict(agent_options or {})}
    planner = _Planner(run, verifier, options, student_examples, kept_log, rejected_log, total,
                       finished=total - len(todo))
    for _ in range(max(1, run.cfg.concurrency)):
        planner.pool.put_nowait(planner.make_agent(run.teacher))
    try:
        async with asyncio.TaskGroup() as group:
            for req in todo:
                group.create_task(planner.one(req))
    finally:
        if checker is not None:
            checker.close()
    return planner.retry_later


def _logged_verdicts(kept_log: JsonlLog, rejected_log: JsonlLog, stats: VerifyStats) -> set[str]:
    """The ids of requests an earlier attempt kept or rejected (their verdicts counted again)."""
    kept_records = kept_log.load()
    done_ids = {str(r["id"]) for r in kept_records}
    for r in kept_records:
        stats.add(str(r.get("kind", "?")), Verdict(None, None, "", tuple(r.get("repairs", ()))))
    for r in rejected_log.load():
        done_ids.add(str(r["id"]))
        stats.add(str(r.get("kind", "?")), None, str(r.get("reason", "?")))
    return done_ids


_Planned = tuple[dict[str, Any], list[Tool], Verdict, list[Any]]


@dataclass
class _Planner:
    """Plans one request at a time with a pooled teacher Agent, verifies the plan, and logs it kept or rejected."""

    run: _Run
    verifier: Verifier
    options: dict[str, Any]
    student_examples: Sequence[Example] | None
    kept_log: JsonlLog
    rejected_log: JsonlLog
    total: int
    finished: int
    retry_later: int = 0
    pool: asyncio.Queue[tuple[Any, _Recorder]] = field(default_factory=asyncio.Queue)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def __post_init__(self) -> None:
        self.by_query = {e.query: e for e in self.run.examples}

    def make_agent(self, model: Model) -> tuple[Any, _Recorder]:
        from .._agent import Agent

        recorder = _Recorder(model)
        return Agent(self.run.registry, model=recorder, **self.options), recorder

    async def store(self, sink: JsonlLog, record: dict[str, Any], kind: str, verdict: Verdict | None,
                    reason: str | None) -> None:
        async with self.lock:
            sink.append(record)
            self.run.stats.add(kind, verdict, reason)
            self.finished += 1
            outcome = "kept" if sink is self.kept_log else str(record.get("reason"))
            emit(self.run.progress, ProgressEvent("plans", self.finished, self.total, message=f"{kind}: {outcome}",
                                                  metrics=self.run.stats.to_json()))

    async def one(self, req: SynthRequest) -> None:
        example = self.by_query.get(req.query) if req.source == "example" else None
        wording = self.verifier.request_problem(req) if example is None else ""
        if wording:  # dropped before the teacher spends a plan on it
            await self.store(self.rejected_log, {**req.to_json(), "reason": "request", "detail": wording}, req.kind,
                             Verdict(None, "request", wording), None)
            return
        planned = await self._plan(req, example)
        if planned is not None:
            await self._log_verdict(req, example, *planned)

    async def _plan(self, req: SynthRequest, example: Example | None) -> _Planned | None:
        """The teacher's plan for ``req`` verified (None when the teacher failed: logged or left for a resume)."""
        if example is not None:
            # A user example plans through the same prompt (retrieval included) with its own plan as the answer.
            agent, recorder = self.make_agent(ScriptedModel([example.plan.to_text()], name="example"))
            borrowed = False
        else:
            agent, recorder = await self.pool.get()
            borrowed = True
        try:
            record: dict[str, Any] = {**req.to_json()}
            offered: list[Tool] = list(self.run.registry.values())
            early: Verdict | None = None
            try:
                result = await agent.plan(req.query, today=req.today)
                offered = [self.run.registry[n] for n in result.tools_offered if n in self.run.registry] or offered
            except PlanError as exc:
                # The planner stops reading at the first bad step, so the text is cut there: classify the error.
                early = Verdict(None, _reason_of(exc), str(exc))
            except ModelError as exc:
                if isinstance(exc, EndpointError) and exc.retryable:
                    self.retry_later += 1
                    log.warning("teacher failed on %s (%s); a resumed run retries it", req.id, exc)
                    return None
                record.update(reason="teacher_error", detail=str(exc))
                await self.store(self.rejected_log, record, req.kind, None, "teacher_error")
                return None
            text = recorder.text
            record["teacher_text"] = text
            verdict = early or await self.verifier.verify(req, text, offered)
            messages = list(recorder.request.messages) if recorder.request is not None else []
        finally:
            if borrowed:
                self.pool.put_nowait((agent, recorder))
        return record, offered, verdict, messages

    async def _log_verdict(self, req: SynthRequest, example: Example | None, record: dict[str, Any],
                           offered: list[Tool], verdict: Verdict, messages: list[Any]) -> None:
        """Logs a verified plan as a training example, or a failed one with its reason."""
        if verdict.ok and verdict.plan is not None:
            if self.student_examples is not None or not messages:
                messages = build_planner_messages(offered, req.query, req.today, self.student_examples or (),
                                                  format_examples=True)
            record.update(training_record(messages, verdict.plan, offered))
            record.update(plan=verdict.plan.to_json(), repairs=list(verdict.repairs),
                          split="train" if example is not None else _split_of(req.id, self.run.cfg.valid_fraction))
            await self.store(self.kept_log, record, req.kind, verdict, None)
        else:
            record.update(reason=str(verdict.reason), detail=verdict.detail)
            if verdict.plan is not None:
                record["plan"] = verdict.plan.to_json()
            await self.store(self.rejected_log, record, req.kind, verdict, None)


def _write_dataset(out: Path) -> tuple[int, int]:
    """Writes the kept examples as ``train.jsonl`` and ``valid.jsonl``; returns their sizes."""
    kept_records = JsonlLog(out / "kept.jsonl").load()
    shape = ("messages", "tools")
    n_train = write_jsonl(out / "train.jsonl",
                          ({k: r[k] for k in shape} for r in kept_records if r.get("split") != "valid"))
    n_valid = write_jsonl(out / "valid.jsonl",
                          ({k: r[k] for k in shape} for r in kept_records if r.get("split") == "valid"))
    return n_train, n_valid


def _reason_of(exc: PlanError) -> str:
    if isinstance(exc, PlanParseError):
        return "parse"
    text = str(exc)
    return "dag" if ("reference" in text or "cycle" in text) else "schema"


async def _ask_for_requests(
    teacher: Model,
    spec: BatchSpec,
    registry: ToolRegistry,
    examples: Sequence[Example],
    hint: str,
    cfg: DistillConfig,
) -> list[str]:
    messages = request_messages(spec, registry, examples, hint)
    grammar = list_grammar(spec.count) if teacher.supports_grammar else None
    request = ModelRequest(messages=messages, grammar=grammar, max_tokens=90 * spec.count + 20,
                           temperature=cfg.request_temperature)
    try:
        completion = await teacher.complete(request)
    except ModelError as exc:
        raise TrainingError(f"the teacher {teacher.name!r} failed while writing requests ({exc}); fix the teacher "
                            "and resume: finished batches are kept") from exc
    texts = parse_request_list(completion.text)
    if not texts:
        log.warning("batch %s: the teacher's reply held no requests: %.200s", spec.id, completion.text)
    return texts[: spec.count]


def distill_sync(*args: Any, **kwargs: Any) -> DistillResult:
    """Synchronous :func:`distill` (runs its own event loop)."""
    return asyncio.run(distill(*args, **kwargs))
