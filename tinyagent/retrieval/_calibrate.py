"""Calibrating the tool classifier's decision rule on held-out probabilities (numpy only, no torch)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ._classifier import Thresholds
from ._deps import require

__all__ = ["calibrate_thresholds", "neighbour_tools", "oof_metrics"]


def _expand(offered: Any, needs: Any) -> Any:
    """Boolean ``offered`` (rows x tools) plus the dependencies in ``needs`` (tools x tools), transitively."""
    np = require("numpy")
    out = offered.copy()
    for _ in range(3):
        more = out | ((out.astype(np.float32) @ needs) > 0)
        if (more == out).all():
            break
        out = more
    return out


def _recall(offered: Any, labels: Any) -> float:
    np = require("numpy")
    has = labels.sum(axis=1) > 0
    if not has.any():
        return 1.0
    gold = labels[has] > 0
    return float(np.mean((offered[has] & gold).sum(axis=1) / gold.sum(axis=1)))


def _offered(
    probs: Any,
    offer: float,
    top_k: int,
    zero_shot: Any = None,
    zero_shot_k: int = 0,
    neighbours: Any = None,
    example_k: int = 0,
) -> Any:
    np = require("numpy")
    out = probs >= offer
    top = np.argsort(-probs, axis=1, kind="stable")[:, :top_k]
    np.put_along_axis(out, top, True, axis=1)
    if zero_shot is not None and zero_shot_k > 0:
        np.put_along_axis(out, np.argsort(-zero_shot, axis=1, kind="stable")[:, :zero_shot_k], True, axis=1)
    if neighbours is not None and example_k > 0:
        out |= neighbours[:, :example_k].any(axis=1)
    return out


def neighbour_tools(vectors: Any, queries: Sequence[str], labels: Any, depth: int) -> Any:
    """Leave-one-out example tools: for each row, the tools of its ``depth`` most similar *other* rows, in order.

    This is what :class:`ExampleSelector` does at retrieval time with the training rows as the few-shot pool, for a
    request that is not in the pool (rows with the same query text are left out too).

    Args:
        vectors: L2-normalised row vectors, shape ``(n, d)`` (the embeddings, or hashed words).
        queries: the rows' texts.
        labels: 0/1 tool labels, shape ``(n, tools)``.
        depth: how many neighbours to keep.

    Returns:
        A boolean array of shape ``(n, depth, tools)``.
    """
    np = require("numpy")
    n = len(queries)
    depth = max(0, min(depth, n - 1))
    sims = np.asarray(vectors, dtype=np.float32) @ np.asarray(vectors, dtype=np.float32).T
    text = np.array(queries, dtype=object)
    sims[text[:, None] == text[None, :]] = -np.inf  # itself and verbatim duplicates
    order = np.argsort(-sims, axis=1, kind="stable")[:, :depth]
    valid = np.take_along_axis(sims, order, axis=1) > -np.inf
    return (labels[order] > 0) & valid[:, :, None]


def calibrate_thresholds(
    probs: Any,
    labels: Any,
    target_recall: float,
    needs: Any = None,
    max_uncertain_rate: float = 0.15,
    top_ks: Sequence[int] = (1, 2, 3),
    zero_shot: Any = None,
    zero_shot_ks: Sequence[int] = (0, 1, 2, 3),
    neighbours: Any = None,
    example_ks: Sequence[int] = (0, 1, 2, 3, 4, 5),
) -> Thresholds:
    """Choose the decision rule on held-out probabilities.

    For each ``top_k`` (and ``zero_shot_k`` when ``zero_shot`` scores are given, and ``example_k`` when
    ``neighbours`` are), the largest ``offer`` threshold whose mean recall (over rows that need a tool, after
    dependency expansion) reaches ``target_recall``; the combination that offers the fewest tools wins. Then
    ``wide`` is the lowest threshold at which at most ``max_uncertain_rate`` of the rows have a borderline tool.

    Args:
        probs: held-out probabilities, shape ``(n, tools)``.
        labels: 0/1 labels of the same shape.
        target_recall: e.g. 0.99.
        needs: a ``(tools, tools)`` 0/1 matrix of dependencies (row tool needs column tool), or None.
        max_uncertain_rate: the share of rows allowed to be uncertain.
        top_ks: the ``top_k`` values to try.
        zero_shot: :class:`ZeroShotScorer` scores of the same rows, shape ``(n, tools)``, or None.
        zero_shot_ks: the ``zero_shot_k`` values to try (only 0 without ``zero_shot``).
        neighbours: held-out example tools from :func:`neighbour_tools`, shape ``(n, depth, tools)``, or None.
        example_ks: the ``example_k`` values to try (only 0 without ``neighbours``; at most ``depth``).
    """
    np = require("numpy")
    deps = needs if needs is not None else np.zeros((probs.shape[1], probs.shape[1]), dtype=np.float32)
    candidates = sorted({float(p) for p in probs[labels > 0]} | {0.5}, reverse=True)
    candidates = [c for c in candidates if c <= 0.5] + [0.0]
    zks = [z for z in zero_shot_ks if z >= 0] if zero_shot is not None else [0]
    depth = neighbours.shape[1] if neighbours is not None else 0
    eks = [e for e in example_ks if 0 <= e <= depth] if neighbours is not None else [0]
    best: tuple[float, int, int, int, float] | None = None  # (mean tools, top_k, zero_shot_k, example_k, offer)
    for top_k in top_ks:
        for zk in zks or [0]:
            for ek in eks or [0]:
                for c in candidates:  # descending: the first that reaches the target offers the fewest tools
                    offered = _expand(_offered(probs, c, top_k, zero_shot, zk, neighbours, ek), deps)
                    if _recall(offered, labels) >= target_recall:
                        size = float(offered.sum(axis=1).mean())
                        if best is None or size < best[0] - 1e-9:
                            best = (size, top_k, zk, ek, c)
                        break
    fallback = (0.0, max(top_ks), max(zks or [0]), max(eks or [0]), 0.0)
    _, top_k, zk, ek, offer = best if best is not None else fallback
    sure = _offered(probs, offer, top_k, zero_shot, zk, neighbours, ek)
    left = np.where(sure, -1.0, probs).max(axis=1)  # the most probable tool left out, per row
    wide = float(np.quantile(left, 1.0 - max_uncertain_rate)) if len(left) else offer
    wide = min(max(wide, 0.0), offer)
    # Land just below the deciding probability, so float noise between torch and onnxruntime cannot flip a tool.
    offer = _just_below(offer)
    wide = min(_just_below(wide), offer)
    return Thresholds(offer=offer, wide=wide, top_k=top_k, zero_shot_k=zk, example_k=ek)


def _just_below(value: float) -> float:
    """``value`` rounded down to 6 decimals and then some, so the probability that decided it stays above it."""
    return max(0.0, math.floor(value * 1e6 - 1) / 1e6) if value > 0 else 0.0


def oof_metrics(
    probs: Any, labels: Any, thresholds: Thresholds, needs: Any, zero_shot: Any = None, neighbours: Any = None
) -> dict[str, float]:
    """Held-out recall, tools offered and uncertain rate of ``thresholds`` on out-of-fold probabilities."""
    t = thresholds
    sure = _offered(probs, t.offer, t.top_k, zero_shot, t.zero_shot_k, neighbours, t.example_k)
    borderline = ~sure & (probs >= thresholds.wide)
    offered = _expand(sure | borderline, needs)
    has = labels.sum(axis=1) > 0
    full = (offered | (labels == 0)).all(axis=1)[has]
    return {
        "heldout_recall_sure": round(_recall(_expand(sure, needs), labels), 4),
        "heldout_recall": round(_recall(offered, labels), 4),
        "heldout_all_tools_found": round(float(full.mean()) if full.size else 1.0, 4),
        "heldout_mean_tools_offered": round(float(offered.sum(axis=1).mean()), 3),
        "heldout_uncertain_rate": round(float(borderline.any(axis=1).mean()), 4),
        "rows": float(len(labels)),
    }
