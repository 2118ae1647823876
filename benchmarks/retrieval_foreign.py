"""Retrieval on registries the team did not write (issue 15), for ``bench_retrieval.py``.

Two registries, both queried with no examples (a new user's ``default_retriever()``), both with 400 distractors:

* ``bfcl_multi_turn``: the user's tools are some BFCL multi-turn API suites (``travel_booking``, ``ticket_api``,
  ``message_api``, ``vehicle_control`` by default: 59 tools), plus the 400 BFCL single-turn function docs the stress
  registry uses. The requests are every user turn of the even-indexed multi-turn base cases whose classes are all
  among those suites, with the tools BFCL's ground truth calls in that turn as the gold set (turns without a call
  are left out).
* ``bfcl_multiple``: BFCL's ``multiple`` and ``live_multiple`` categories (even-indexed cases); each case's own
  offered functions plus the 400 distractors form its registry, and the gold set is its ground truth's names.

Odd-indexed cases are never read (the BFCL rule: they are held out).
"""

from __future__ import annotations

import ast
import json
import statistics
import time
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tinyagent import ToolRegistry
from tinyagent.evals import MULTI_TURN_SUITES, load_distractors, suite_functions
from tinyagent.evals.bfcl import case_index, load_cases

DEFAULT_SUITES = ("travel_booking", "ticket_api", "message_api", "vehicle_control")
LIVE_CATEGORIES = ("multiple", "live_multiple")
DISTRACTORS = 400
_BASE = "BFCL_v4_multi_turn_base.json"


@dataclass(frozen=True)
class Request:
    """One retrieval request: its id, text and the tools it needs."""

    id: str
    query: str
    gold: frozenset[str]


def _read_rows(data: Path, name: str) -> list[dict[str, Any]]:
    """A JSON-lines file of the bfcl-eval data, from the wheel or an extracted folder."""
    if data.is_dir():
        candidates = [data / name, data / "bfcl_eval" / "data" / name, *data.glob("*.whl")]
        for c in candidates:
            if c.is_file() and c.suffix != ".whl":
                return [json.loads(line) for line in c.read_text("utf-8").splitlines() if line.strip()]
            if c.suffix == ".whl":
                return _read_rows(c, name)
        raise FileNotFoundError(f"{name} not in {data}")
    with zipfile.ZipFile(data) as zf:
        text = zf.read(f"bfcl_eval/data/{name}").decode("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def call_name(text: str) -> str:
    """The function name of one BFCL ground-truth call (``"cd(folder='x')"`` -> ``cd``)."""
    node = ast.parse(text.strip(), mode="eval").body
    if not isinstance(node, ast.Call):
        raise ValueError(f"not a call: {text!r:.80}")
    return ast.unparse(node.func)


def turn_requests(
    cases: Iterable[Mapping[str, Any]], answers: Mapping[str, Any], classes: set[str]
) -> list[Request]:
    """Every user turn with a ground-truth call, of the even-indexed cases whose classes are all in ``classes``."""
    out = []
    for entry in cases:
        case_id = str(entry["id"])
        if case_index(case_id) % 2 or not set(entry.get("involved_classes") or []) <= classes:
            continue
        for turn, (messages, truth) in enumerate(zip(entry["question"], answers.get(case_id) or [], strict=False)):
            users = [str(m.get("content") or "") for m in messages if m.get("role") == "user"]
            gold = frozenset(call_name(t) for t in truth)
            if users and gold:
                out.append(Request(f"{case_id}#{turn}", users[-1], gold))
    return out


def with_distractors(specs: Sequence[Mapping[str, Any]], count: int = DISTRACTORS) -> ToolRegistry:
    """A registry of ``specs`` followed by ``count`` BFCL distractors whose names do not collide with them."""
    registry = ToolRegistry.from_openai(specs)
    taken = {n.lower() for n in registry}
    for tool in load_distractors(count):
        if tool.name.lower() not in taken:
            taken.add(tool.name.lower())
            registry.add(tool)
    return registry


def multi_turn_setup(data: Path, suites: Sequence[str] = DEFAULT_SUITES) -> tuple[list[dict[str, Any]], list[Request]]:
    """The user's function specs (the suites') and the requests (see the module docstring)."""
    classes = {c for c, s in MULTI_TURN_SUITES.items() if s in suites}
    answers = {str(r["id"]): r.get("ground_truth") for r in _read_rows(data, f"possible_answer/{_BASE}")}
    requests = turn_requests(_read_rows(data, _BASE), answers, classes)
    specs = [f for s in suites for f in suite_functions(data, s)]
    return specs, requests


def live_setup(data: Path, limit: int | None = None) -> list[tuple[list[dict[str, Any]], Request]]:
    """Each even-indexed ``multiple``/``live_multiple`` case: its offered functions and its request."""
    out = []
    # Without BFCL's "Note that the provided function is in Python 3 syntax." (a prompt hint, not tool text).
    for case in load_cases(data, LIVE_CATEGORIES, limit, language_hint=False, parity="even"):
        gold = frozenset(next(iter(call)) for call in case.ground_truth)
        if gold:
            out.append((list(case.functions), Request(case.id, case.question, gold)))
    return out


class Tally:
    """Recall, all-tools-found, tools offered and latency over requests."""

    def __init__(self) -> None:
        self.recalls: list[float] = []
        self.found: list[float] = []
        self.offered: list[int] = []
        self.latencies: list[float] = []
        self.misses: dict[str, int] = {}

    def add(self, request: Request, offered: Sequence[str], latency_ms: float) -> None:
        got = set(offered)
        self.recalls.append(len(request.gold & got) / len(request.gold))
        self.found.append(float(request.gold <= got))
        self.offered.append(len(got))
        self.latencies.append(latency_ms)
        for name in request.gold - got:
            self.misses[name] = self.misses.get(name, 0) + 1

    def summary(self) -> dict[str, Any]:
        lat = sorted(self.latencies)

        def pct(q: float) -> float:
            return round(lat[min(len(lat) - 1, max(0, round(q / 100 * (len(lat) - 1))))], 3) if lat else 0.0

        return {
            "recall": round(statistics.mean(self.recalls), 4) if self.recalls else 0.0,
            "all_tools_found": round(statistics.mean(self.found), 4) if self.found else 0.0,
            "mean_tools_offered": round(statistics.mean(self.offered), 3) if self.offered else 0.0,
            "max_tools_offered": max(self.offered, default=0),
            "latency_ms_p50": pct(50),
            "latency_ms_p95": pct(95),
            "requests": len(self.recalls),
            "most_missed": dict(sorted(self.misses.items(), key=lambda kv: -kv[1])[:8]),
        }


def measure(retriever: Any, requests: Sequence[Request], tally: Tally | None = None) -> Tally:
    """Time ``retriever.retrieve`` on each request (already fitted) and score it against the gold tools."""
    tally = tally or Tally()
    for request in requests:
        start = time.perf_counter()
        result = retriever.retrieve(request.query)
        tally.add(request, result.tools, (time.perf_counter() - start) * 1000)
    return tally


def measure_registry(make: Callable[[], Any], registry: ToolRegistry, requests: Sequence[Request]) -> dict[str, Any]:
    """Fit a fresh retriever on ``registry`` with no examples and measure it on ``requests``."""
    retriever = make()
    start = time.perf_counter()
    retriever.fit(registry)
    fit_s = time.perf_counter() - start
    for request in requests[:3]:  # warm-up (onnxruntime allocates on first use)
        retriever.retrieve(request.query + " warm-up")
    return {**measure(retriever, requests).summary(), "registry_size": len(registry), "fit_s": round(fit_s, 3)}


def measure_per_case(make: Callable[[], Any], cases: Sequence[tuple[list[dict[str, Any]], Request]]) -> dict[str, Any]:
    """Each case's functions plus the distractors, fitted per case (no examples), one request each."""
    tally = Tally()
    sizes = []
    for specs, request in cases:
        retriever = make()
        registry = with_distractors(specs)
        sizes.append(len(registry))
        retriever.fit(registry)
        measure(retriever, [request], tally)
    return {**tally.summary(), "registry_size_mean": round(statistics.mean(sizes), 1) if sizes else 0}
