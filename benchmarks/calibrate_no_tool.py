"""Fit and evaluate the planner's no-tool decision (``AgentSettings.no_tool_check``) on even-indexed BFCL cases.

Small planners call a loosely related tool rather than none. P(``join``) at step 1 alone does not separate the two
kinds of request (an earlier version of this script found no usable floor), so the decision combines four signals
in a logistic model (``tinyagent/run/_no_tool.py``): P(join) at step 1, the planner's own yes/no verification of
its plan (a follow-up question sharing the plan's KV prefix), argument grounding, and request/tool word overlap.

Two steps, which can run apart (``record`` is the slow one; run it under the lock, a few categories at a time)::

    flock /tmp/llama.lock nice -n 10 python benchmarks/calibrate_no_tool.py record --limit 6 \\
        --categories simple_python,multiple,parallel,parallel_multiple
    flock /tmp/llama.lock nice -n 10 python benchmarks/calibrate_no_tool.py record --limit 12 \\
        --categories irrelevance,live_irrelevance
    python benchmarks/calibrate_no_tool.py fit

``record`` plans every case with ``no_tool_check="measure"`` (the question is always asked, the plan never
changed) and appends one record per case to ``benchmarks/results/no_tool_records.jsonl`` (keyed by id; a rerun
replaces a case). Only even-indexed cases are ever loaded. ``fit`` fits the logistic model on the records
(negatives: irrelevance and live_irrelevance; positives: simple_python, multiple, live_simple, live_multiple; the
parallel categories are scored but not fitted), evaluates it by stratified 5-fold cross-validation, picks the floor
on the out-of-fold probabilities, and writes ``benchmarks/results/no_tool.json``: coefficients, floor, BFCL
accuracy per category before / after (cross-validated and in-sample), the false-refusal rate on cases that need a
call, and the latency of the check. ``chosen`` is the model to ship (the question only if it helps under
cross-validation); paste it into ``NO_TOOL_MODEL`` / ``NO_TOOL_FLOOR`` in ``tinyagent/run/_settings.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tinyagent import Agent, AgentSettings
from tinyagent._tools import ToolRegistry
from tinyagent.errors import TinyAgentError
from tinyagent.evals import bfcl
from tinyagent.run._no_tool import no_tool_probability
from tinyagent.run._settings import NO_TOOL_FLOOR, NO_TOOL_MODEL

RESULTS = Path(__file__).parent / "results"
RECORDS = RESULTS / "no_tool_records.jsonl"
TODAY = dt.date(2026, 11, 30)
NEGATIVE = ("irrelevance", "live_irrelevance")
POSITIVE = ("simple_python", "multiple", "live_simple", "live_multiple")
FEATURES = ("p_join", "verify", "grounded", "overlap", "named")
MAX_FALSE_REFUSAL = 0.05


def _jsonable(value: Any) -> Any:
    """Argument values as JSON (references as ``"$k"``)."""
    return json.loads(json.dumps(value, default=str))


def _load() -> tuple[float, float, float]:
    return os.getloadavg()


async def record_case(model: Any, case: bfcl.BfclCase) -> dict[str, Any]:
    """Plan one case with the check measuring only; the features, the raw plan and both possible scores."""
    agent = Agent(tools=ToolRegistry.from_openai(case.functions), model=model,
                  settings=AgentSettings(no_tool_check="measure"))
    last_user = max((i for i, m in enumerate(case.messages) if m.get("role") == "user"), default=0)
    started = time.perf_counter()
    try:
        res = await agent.plan(case.question, today=TODAY, history=case.messages[:last_user])
    except TinyAgentError as exc:
        return {"id": case.id, "category": case.category, "error": str(exc)[:200],
                "correct_before": bfcl.check_case(case, [])[0], "correct_refused": bfcl.check_case(case, [])[0]}
    calls = [{"name": c.name, "args": dict(c.args)} for c in res.plan.calls]
    check = res.no_tool_check
    # What the plan would score if it stopped after k calls (k = 1..n): the data for the stop decision.
    prefix_correct = [bfcl.check_case(case, calls[:k])[0] for k in range(1, len(calls) + 1)]
    return {"id": case.id, "category": case.category, "needs_no_tool": case.expects_no_call, "query": case.question,
            "calls": [c["name"] for c in calls], "call_args": [_jsonable(c["args"]) for c in calls],
            "stop_probs": list(res.stop_probs), "prefix_correct": prefix_correct,
            "plan": res.text, "p_join": res.no_tool_prob,
            "features": dict(check.features) if check else {}, "verify_s": round(check.elapsed_s, 3) if check else 0,
            "plan_s": round(res.elapsed_s, 3), "total_s": round(time.perf_counter() - started, 3),
            "correct_before": bfcl.check_case(case, calls)[0], "correct_refused": bfcl.check_case(case, [])[0]}


async def record(args: argparse.Namespace) -> None:
    from tinyagent.models import LlamaCppModel

    cases = bfcl.load_cases(bfcl.ensure_data(), args.categories.split(","), args.limit, parity="even")
    old = {}
    if args.records.exists():
        old = {r["id"]: r for r in map(json.loads, args.records.read_text().splitlines()) if r}
    load_before = _load()
    model = LlamaCppModel(args.model, n_threads=args.n_threads)
    try:
        for case in cases:
            rec = await record_case(model, case)
            rec["load_before"] = load_before
            old[case.id] = rec
            print(json.dumps(rec), file=sys.stderr, flush=True)
    finally:
        await model.aclose()
    load_after = _load()
    for case in cases:
        old[case.id]["load_after"] = load_after
    args.records.parent.mkdir(parents=True, exist_ok=True)
    args.records.write_text("".join(json.dumps(r) + "\n" for r in old.values()))


def _matrix(records: list[dict[str, Any]]) -> Any:
    import numpy as np

    from tinyagent.run._no_tool import _logit

    rows = []
    for r in records:
        f = r["features"]
        rows.append([_logit(f.get("p_join", 0.0)), f.get("verify", 0.0), f.get("grounded", 1.0),
                     f.get("overlap", 0.0), f.get("named", 1.0)])
    return np.array(rows, dtype=float)


def _fit(x: Any, y: Any, use: tuple[str, ...] = FEATURES) -> dict[str, float]:
    from sklearn.linear_model import LogisticRegression

    cols = [FEATURES.index(f) for f in use]
    clf = LogisticRegression(C=1.0, class_weight="balanced", max_iter=1000).fit(x[:, cols], y)
    weights = dict.fromkeys(FEATURES, 0.0)
    weights.update({k: round(float(v), 4) for k, v in zip(use, clf.coef_[0], strict=True)})
    return {"bias": round(float(clf.intercept_[0]), 4), **weights}


def _cross_validate(train: list[dict[str, Any]], x: Any, y: Any, use: tuple[str, ...]) -> dict[str, float]:
    """Out-of-fold P(no tool) per fitted record (stratified 5-fold)."""
    from sklearn.model_selection import StratifiedKFold

    oof: dict[str, float] = {}
    folds = StratifiedKFold(n_splits=min(5, int(y.sum()), int((~y).sum())), shuffle=True, random_state=0)
    for tr, te in folds.split(x, y):
        coefs = _fit(x[tr], y[tr], use)
        for i in te:
            oof[train[i]["id"]] = no_tool_probability(train[i]["features"], coefs)
    return oof


def _outcomes(records: list[dict[str, Any]], probs: dict[str, float], floor: float) -> dict[str, Any]:
    """BFCL accuracy per category and the false-refusal rate, when plans with P(no tool) >= floor are refused."""
    by_cat: dict[str, list[bool]] = {}
    refused_needed = needed = refused_irrelevant = irrelevant = 0
    for r in records:
        refuse = r["id"] in probs and probs[r["id"]] >= floor
        by_cat.setdefault(r["category"], []).append(r["correct_refused"] if refuse else r["correct_before"])
        if r.get("needs_no_tool"):
            irrelevant += bool(r.get("calls"))
            refused_irrelevant += refuse
        else:
            needed += bool(r.get("calls"))
            refused_needed += refuse
    acc = {c: round(sum(v) / len(v), 4) for c, v in by_cat.items()}
    return {"accuracy": acc, "mean_accuracy": round(sum(acc.values()) / len(acc), 4),
            "false_refusal": round(refused_needed / max(1, needed), 4), "refused_needed": refused_needed,
            "needed_with_calls": needed, "caught_irrelevant": refused_irrelevant,
            "irrelevant_with_calls": irrelevant}


def _pick_floor(records: list[dict[str, Any]], probs: dict[str, float]) -> float:
    """The floor with the best mean BFCL accuracy whose false-refusal rate stays within the cap (ties: higher)."""
    grid = [round(0.05 * i, 2) for i in range(2, 20)]
    ok = [(t, _outcomes(records, probs, t)) for t in grid]
    ok = [(t, o) for t, o in ok if o["false_refusal"] <= MAX_FALSE_REFUSAL] or [(1.01, {"mean_accuracy": 0})]
    return max(ok, key=lambda item: (item[1]["mean_accuracy"], item[0]))[0]


def _first(records: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """The first ``n`` records of each category, by case index (what ``--limit n`` of bench_bfcl.py loads)."""
    by_cat: dict[str, list[dict[str, Any]]] = {}
    for r in sorted(records, key=lambda r: bfcl.case_index(r["id"])):
        by_cat.setdefault(r["category"], []).append(r)
    return [r for items in by_cat.values() for r in items[:n]]


def _evaluate(records: list[dict[str, Any]], use: tuple[str, ...]) -> dict[str, Any]:
    """Fit on the fitted categories with ``use``, cross-validate, pick the floor; probabilities per scored id."""
    import numpy as np

    train = [r for r in records if r["calls"] and r["category"] in NEGATIVE + POSITIVE]
    x, y = _matrix(train), np.array([bool(r["needs_no_tool"]) for r in train])
    coefs = _fit(x, y, use)
    # Cases outside the fitted categories (the parallel ones) are scored by the model fitted on everything.
    full = {r["id"]: no_tool_probability(r["features"], coefs) for r in records if r["calls"]}
    cv = {**full, **_cross_validate(train, x, y, use)}
    floor = _pick_floor(records, cv)
    return {"coefficients": coefs, "floor": floor, "n_fitted": len(train), "cv": cv, "full": full}


def _refresh(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records, their text features recomputed with today's code where the plan's arguments were recorded
    (so a new text feature is evaluated without planning again; the model features stay as measured)."""
    from tinyagent._plan import Plan
    from tinyagent.run._no_tool import plan_features

    records = list(records)
    cats = sorted({r["category"] for r in records})
    cases = {c.id: c for c in bfcl.load_cases(bfcl.ensure_data(), cats, None, parity="even")}
    for r in records:
        case = cases.get(r["id"])
        if case is None or not r.get("calls") or not r["features"]:
            continue
        args = r.get("call_args") or [{} for _ in r["calls"]]
        calls = Plan.from_json([{"id": i + 1, "name": n, "args": a}
                                for i, (n, a) in enumerate(zip(r["calls"], args, strict=True))]).calls
        tools = ToolRegistry.from_openai(case.functions)
        features = plan_features(case.question, calls, tools)
        # Older records kept only the tools' names: the features that need the arguments stay as measured.
        r["features"].update(features if r.get("call_args") else {"named": features["named"]})
    return records


def fit(args: argparse.Namespace) -> None:
    import numpy as np

    from tinyagent.run._no_tool import _could_refuse

    records = _refresh(r for r in map(json.loads, args.records.read_text().splitlines()) if r and "error" not in r)
    main = _evaluate(records, FEATURES)
    # Cheaper variants (no question; and without the name feature, the previous model): the shipped one is the
    # best under cross-validation, the question only if it beats every variant without it.
    variants = {"without_verify": tuple(f for f in FEATURES if f != "verify"),
                "without_verify_named": ("p_join", "grounded", "overlap")}
    cheap_fits = {name: _evaluate(records, use) for name, use in variants.items()}
    coefs, floor, cv = main["coefficients"], main["floor"], main["cv"]
    scored = [r for r in records if r["calls"]]
    asked = [r for r in scored if _could_refuse({k: v for k, v in r["features"].items() if k != "verify"},
                                                floor, coefs)]
    verify_s = [r["verify_s"] for r in scored]
    first6 = _first(records, 6)
    result = {
        "command": "python benchmarks/calibrate_no_tool.py fit",
        "n": len(records), "n_fitted": main["n_fitted"], "features": list(FEATURES),
        "coefficients": coefs, "floor": floor, "max_false_refusal": MAX_FALSE_REFUSAL,
        "before": _outcomes(records, {}, 2.0),
        "after_cross_validated": _outcomes(records, cv, floor),
        "after_in_sample": _outcomes(records, main["full"], floor),
        **{f"ablation_{name}": {"features": list(variants[name]), "coefficients": e["coefficients"],
                                "floor": e["floor"], "after_cross_validated": _outcomes(records, e["cv"], e["floor"])}
           for name, e in cheap_fits.items()},
        "limit6": {"ids": [r["id"] for r in first6], "before": _outcomes(first6, {}, 2.0),
                   "after_cross_validated": _outcomes(first6, cv, floor),
                   **{f"after_cross_validated_{name}": _outcomes(first6, e["cv"], e["floor"])
                      for name, e in cheap_fits.items()}},
        "question_asked_share": round(len(asked) / max(1, len(scored)), 3),
        "latency": {"verify_mean_s": round(float(np.mean(verify_s)), 3) if verify_s else None,
                    "verify_median_s": round(float(np.median(verify_s)), 3) if verify_s else None,
                    "plan_mean_s": round(float(np.mean([r["plan_s"] for r in records])), 3)},
        "load": {"fit": _load(), "records": sorted({tuple(r.get("load_before", ())) for r in records}
                                                     | {tuple(r.get("load_after", ())) for r in records})},
        "cv_probabilities": {k: round(v, 4) for k, v in cv.items()},
        "records": records,
    }
    best_name = max(cheap_fits, key=lambda n: result[f"ablation_{n}"]["after_cross_validated"]["mean_accuracy"])
    best = cheap_fits[best_name]
    with_q = result["after_cross_validated"]["mean_accuracy"]
    without_q = result[f"ablation_{best_name}"]["after_cross_validated"]["mean_accuracy"]
    # The question costs a model call; it goes into the shipped model only if it helps under cross-validation.
    result["chosen"] = ({"coefficients": coefs, "floor": floor, "question": True, "variant": "all"}
                        if with_q > without_q else
                        {"coefficients": best["coefficients"], "floor": best["floor"], "question": False,
                         "variant": best_name})
    result["shipped"] = {"coefficients": NO_TOOL_MODEL, "floor": NO_TOOL_FLOOR}
    (RESULTS / "no_tool.json").write_text(json.dumps(result, indent=1))
    shown = ("coefficients", "floor", "before", "after_cross_validated", "after_in_sample",
             *(f"ablation_{name}" for name in variants), "question_asked_share", "latency", "chosen", "shipped")
    print(json.dumps({k: result[k] for k in shown}, indent=1))
    print(json.dumps({k: v for k, v in result["limit6"].items() if k != "ids"}, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="step", required=True)
    rec = sub.add_parser("record", help="plan even-indexed BFCL cases and record the features (slow)")
    rec.add_argument("--model", default="qwen2.5-coder-1.5b")
    rec.add_argument("--categories", default=",".join(NEGATIVE + POSITIVE))
    rec.add_argument("--limit", type=int, default=6, help="even-indexed cases per category")
    rec.add_argument("--n-threads", type=int, default=int(os.environ.get("BENCH_THREADS", "2")))
    rec.add_argument("--records", type=Path, default=RECORDS, help="the records file (default %(default)s)")
    fit_p = sub.add_parser("fit", help="fit and cross-validate on the records (fast)")
    fit_p.add_argument("--records", type=Path, default=RECORDS)
    args = ap.parse_args()
    if args.step == "record":
        asyncio.run(record(args))
    else:
        fit(args)


if __name__ == "__main__":
    main()
