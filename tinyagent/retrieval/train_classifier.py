"""Train the multi-label tool classifier for one registry, calibrate its thresholds, export it to ONNX.

Usage::

    python -m tinyagent.retrieval.train_classifier --tools tinyagent.functions:builtin_tools \\
        --data tinyagent/functions/data/evalset.jsonl --split train --out ~/.cache/tinyagent/classifiers/builtin

``--tools`` is ``module:attribute`` (a registry, a list of tools, or a function returning one) or a JSON file of
OpenAI function specs. ``--data`` is JSONL, one request a line: ``{"query": ..., "calls": [{"id", "name", "args"}]}``
(the eval set and the teacher pipeline's format; ``"plan"`` or ``"tools"`` (names) work too). Rows with a
``"split"`` field are used only when it is in ``--split``.

Training: out-of-fold predictions (k folds) calibrate the thresholds, so the recall target is met on requests
the model did not see; then one model is trained on all rows and exported with ``torch.onnx.export(dynamo=False)``.
The ONNX file runs on onnxruntime alone. Needs the ``retrieval-train`` extra (torch, rich); the exported
MiniLM embedder is used for the sentence features (``python -m tinyagent.retrieval.export_embedder``).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import math
import random
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._plan import Call, Plan
from .._tools import Tool, ToolRegistry
from ..errors import ConfigurationError, TinyAgentError, TrainingError
from ._classifier import META_FILE, MODEL_FILE, ClassifierModel, Thresholds, featurize, zero_shot_scorer
from ._deps import require
from ._embedding import Embedder, OnnxEmbedder
from ._examples import _HASH_DIM as EXAMPLE_HASH_DIM
from ._examples import DependencyGraph
from ._text import HASH_DIM, hashed_features, tool_document, words

__all__ = [
    "TrainConfig",
    "TrainingRow",
    "calibrate_thresholds",
    "load_rows",
    "load_tools",
    "neighbour_tools",
    "train_classifier",
]

log = logging.getLogger("tinyagent.retrieval")
_EXTRA = "retrieval-train"

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class TrainingRow:
    """One labelled request: the query, the tools its plan calls, and the plan (for dependencies)."""

    query: str
    tools: frozenset[str]
    plan: Plan | None = None


@dataclass(frozen=True)
class TrainConfig:
    """Training settings.

    Attributes:
        hidden: hidden units.
        epochs: passes over the data.
        batch_size: rows per step.
        lr: AdamW learning rate.
        weight_decay: AdamW weight decay.
        dropout: dropout before the output layer.
        folds: folds for the out-of-fold predictions that calibrate the thresholds (2 at least).
        target_recall: the held-out mean recall the ``offer`` threshold must reach.
        hash_dim: width of the hashed word features (0 for none).
        use_embedding: feed the MiniLM sentence embedding too.
        doc_weight: the weight of the rows made from each tool's own name, description and document.
        pos_weight: the weight of a positive label in the loss (tools are rare labels; >1 lifts their recall).
        max_uncertain_rate: the ``wide`` threshold is set so at most this share of held-out requests is uncertain.
        example_ks: the numbers of most similar examples whose tools the rule may add (0 turns that off).
        seed: random seed.
        threads: torch threads.
    """

    hidden: int = 256
    epochs: int = 40
    batch_size: int = 32
    lr: float = 2e-3
    weight_decay: float = 1e-4
    dropout: float = 0.2
    folds: int = 5
    target_recall: float = 0.99
    hash_dim: int = HASH_DIM
    use_embedding: bool = True
    doc_weight: float = 1.0
    pos_weight: float = 3.0
    max_uncertain_rate: float = 0.15
    example_ks: tuple[int, ...] = (0, 1, 2, 3, 4, 5)
    seed: int = 0
    threads: int = 2


def load_tools(spec: str) -> ToolRegistry:
    """A registry from ``module:attribute`` or a JSON file of OpenAI specs.

    Raises:
        ConfigurationError: the spec cannot be resolved.
    """
    path = Path(spec)
    if spec.endswith(".json") and path.is_file():
        data = json.loads(path.read_text())
        specs = data.get("tools", data) if isinstance(data, dict) else data
        return ToolRegistry.from_openai(specs)
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
        obj: Any = getattr(module, attr or "TOOLS")
    except (ImportError, AttributeError) as exc:
        raise ConfigurationError(
            f"--tools {spec!r}: not a JSON file nor an importable module:attribute ({exc})"
        ) from exc
    if callable(obj) and not isinstance(obj, Tool):
        obj = obj()
    if isinstance(obj, ToolRegistry):
        return obj
    if isinstance(obj, Iterable):
        return ToolRegistry(obj)
    raise ConfigurationError(f"--tools {spec!r} gave {type(obj).__name__}, not a registry or a list of tools")


def _row_from_json(data: dict[str, Any]) -> TrainingRow:
    query = str(data.get("query") or data.get("question") or "")
    if not query:
        raise ConfigurationError("a training row has no 'query'")
    calls = data.get("calls", data.get("plan"))
    if isinstance(calls, dict):  # {"calls": [...], "answer": ...}
        calls = calls.get("calls", [])
    if calls is not None:
        plan = Plan(calls=tuple(Call.from_json(c) for c in calls))
        return TrainingRow(query, frozenset(c.name for c in plan.calls), plan)
    return TrainingRow(query, frozenset(str(t) for t in data.get("tools", [])))


def load_rows(paths: Sequence[Path], splits: Sequence[str] = ("train",)) -> list[TrainingRow]:
    """Labelled requests from JSONL files; rows with a ``split`` outside ``splits`` are skipped.

    Raises:
        ConfigurationError: a file is missing or a line is not a request.
    """
    rows: list[TrainingRow] = []
    wanted = set(splits)
    for path in paths:
        if not path.is_file():
            raise ConfigurationError(f"--data {path}: no such file")
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                if "split" in data and wanted and data["split"] not in wanted:
                    continue
                rows.append(_row_from_json(data))
            except (ValueError, TinyAgentError) as exc:
                raise ConfigurationError(f"{path}:{n}: not a training row: {exc}") from exc
    return rows


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


def _tool_texts(tool: Tool) -> list[str]:
    """Short texts that mean "this tool": its name in words, its description, and its whole document."""
    name = " ".join(words(tool.name))
    texts = [name, f"{name}: {tool.description}".strip().rstrip(":"), tool_document(tool)]
    return list(dict.fromkeys(t for t in texts if t))


def _build_model(torch: Any, emb_dim: int, hash_dim: int, hidden: int, n_tools: int, dropout: float) -> Any:
    class ToolClassifier(torch.nn.Module):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.emb = torch.nn.Linear(emb_dim, hidden) if emb_dim else None
            self.words = torch.nn.Linear(hash_dim, hidden, bias=not emb_dim) if hash_dim else None
            self.head = torch.nn.Sequential(
                torch.nn.GELU(), torch.nn.Dropout(dropout), torch.nn.Linear(hidden, n_tools)
            )

        def logits(self, embedding: Any, words: Any) -> Any:
            h = 0
            if self.emb is not None:
                h = h + self.emb(embedding)
            if self.words is not None:
                h = h + self.words(words)
            return self.head(h)

        def forward(self, embedding: Any, words: Any) -> Any:
            return torch.sigmoid(self.logits(embedding, words))

    return ToolClassifier()


def _fit(
    torch: Any, x_emb: Any, x_words: Any, y: Any, w: Any, cfg: TrainConfig, seed: int, tick: Callable[[], None]
) -> Any:
    torch.manual_seed(seed)
    model = _build_model(torch, x_emb.shape[1], x_words.shape[1], cfg.hidden, y.shape[1], cfg.dropout)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    te, tw, ty, tweight = (torch.from_numpy(a) for a in (x_emb, x_words, y, w))
    pos_weight = torch.full((y.shape[1],), float(cfg.pos_weight))
    n = len(y)
    gen = torch.Generator().manual_seed(seed)
    model.train()
    for _ in range(cfg.epochs):
        for idx in torch.randperm(n, generator=gen).split(cfg.batch_size):
            logits = model.logits(te[idx], tw[idx])
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                logits, ty[idx], reduction="none", pos_weight=pos_weight
            )
            loss = (loss.mean(dim=1) * tweight[idx]).sum() / tweight[idx].sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        tick()
    model.eval()
    return model


def train_classifier(
    registry: ToolRegistry,
    rows: Sequence[TrainingRow],
    out: Path,
    config: TrainConfig | None = None,
    embedder: Embedder | None = None,
    progress: Progress | None = None,
) -> ClassifierModel:
    """Train, calibrate on out-of-fold predictions, export to ONNX, check onnxruntime against torch.

    Args:
        registry: the tools to classify (one output per tool).
        rows: labelled requests; rows naming tools outside the registry are dropped (logged).
        out: the folder to write ``classifier.onnx`` and ``classifier.json``.
        config: training settings.
        embedder: the sentence embedder (default: the exported MiniLM) when ``config.use_embedding``.
        progress: called as ``progress(stage, done, total)``.

    Returns:
        The exported classifier, loaded back through onnxruntime.

    Raises:
        MissingDependencyError: torch or onnx is missing.
        ConfigurationError: too few usable rows.
        TrainingError: training or export failed, or ONNX output differs from torch.
    """
    cfg = config or TrainConfig()
    torch = require("torch", _EXTRA)
    require("onnx", _EXTRA)
    np = require("numpy")
    torch.set_num_threads(max(1, cfg.threads))
    names = list(registry)
    column = {n: i for i, n in enumerate(names)}
    usable = [r for r in rows if r.tools <= set(names)]
    if len(usable) < len(rows):
        log.warning("dropped %d training row(s) that call tools outside the registry", len(rows) - len(usable))
    if len(usable) < 2 * max(2, cfg.folds):
        raise ConfigurationError(
            f"only {len(usable)} usable training rows; the classifier needs at least "
            f"{2 * max(2, cfg.folds)} (give more --data or fewer --folds)"
        )
    if cfg.use_embedding and embedder is None:
        embedder = OnnxEmbedder()
    report = progress or (lambda stage, done, total: None)

    # Each tool also teaches from its own text (name, description, full document), so rare tools are not unknown.
    doc_rows = [(j, text) for j, n in enumerate(names) for text in _tool_texts(registry[n])]
    queries = [r.query for r in usable]
    report("features", 0, 1)
    feats = featurize(queries + [t for _, t in doc_rows], embedder if cfg.use_embedding else None, cfg.hash_dim)
    report("features", 1, 1)
    y = np.zeros((len(usable) + len(doc_rows), len(names)), dtype=np.float32)
    for i, r in enumerate(usable):
        for t in r.tools:
            y[i, column[t]] = 1.0
    for k, (j, _) in enumerate(doc_rows):
        y[len(usable) + k, j] = 1.0
    weight = np.ones(len(y), dtype=np.float32)
    weight[len(usable) :] = float(cfg.doc_weight)
    x_emb, x_words = feats["embedding"], feats["words"]

    # Out-of-fold predictions for calibration: each request is predicted by a model that never saw it.
    rng = random.Random(cfg.seed)
    order = list(range(len(usable)))
    rng.shuffle(order)
    folds = [order[f :: cfg.folds] for f in range(cfg.folds)]
    oof = np.zeros((len(usable), len(names)), dtype=np.float32)
    total_epochs = cfg.epochs * (cfg.folds + 1)
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        report("train", done, total_epochs)

    try:
        for f, held in enumerate(folds):
            held_set = set(held)
            train_idx = np.array([i for i in range(len(y)) if i not in held_set], dtype=np.int64)
            model = _fit(
                torch,
                x_emb[train_idx],
                x_words[train_idx],
                y[train_idx],
                weight[train_idx],
                cfg,
                cfg.seed + f + 1,
                tick,
            )
            with torch.no_grad():
                oof[held] = model(torch.from_numpy(x_emb[held]), torch.from_numpy(x_words[held])).numpy()
        final = _fit(torch, x_emb, x_words, y, weight, cfg, cfg.seed, tick)
    except TinyAgentError:
        raise
    except Exception as exc:  # noqa: BLE001 - torch failures are wrapped
        raise TrainingError(f"training the tool classifier failed: {type(exc).__name__}: {exc}") from exc

    labels = y[: len(usable)]
    graph = DependencyGraph.from_plans(r.plan if r.plan is not None else r.tools for r in usable)
    needs = np.zeros((len(names), len(names)), dtype=np.float32)
    for a, bs in graph.needs.items():
        for b in bs:
            needs[column[a], column[b]] = 1.0
    # The rule also takes the best zero-shot matches (tool text vs request, no training): computed as retrieval will.
    scorer = zero_shot_scorer(registry, names, embedder if cfg.use_embedding else None)
    zero_shot = np.stack([scorer.scores(q, x_emb[i] if cfg.use_embedding else None) for i, q in enumerate(queries)])
    # And the tools of the most similar few-shot examples, with the training rows as the pool (as the agent uses
    # them), each row compared with the others only; similarity as the ExampleSelector computes it.
    vectors = x_emb[: len(usable)] if cfg.use_embedding else hashed_features(queries, EXAMPLE_HASH_DIM)
    neighbours = neighbour_tools(vectors, queries, labels, max(cfg.example_ks, default=0))
    thresholds = calibrate_thresholds(
        oof,
        labels,
        cfg.target_recall,
        needs,
        cfg.max_uncertain_rate,
        zero_shot=zero_shot,
        neighbours=neighbours,
        example_ks=cfg.example_ks,
    )
    metrics = _oof_metrics(oof, labels, thresholds, needs, zero_shot, neighbours)
    log.info("calibrated %s; held-out %s", thresholds, metrics)
    report("export", 0, 1)
    _export(torch, final, x_emb[:4], x_words[:4], out)
    digest = hashlib.sha256((out / MODEL_FILE).read_bytes()).hexdigest()
    meta = {
        "format": 1,
        "tools": names,
        "thresholds": {
            "offer": thresholds.offer,
            "wide": thresholds.wide,
            "top_k": thresholds.top_k,
            "zero_shot_k": thresholds.zero_shot_k,
            "example_k": thresholds.example_k,
        },
        "features": {
            "embedding": cfg.use_embedding,
            "embedder": getattr(embedder, "name", "") if cfg.use_embedding else "",
            "embedding_dim": int(x_emb.shape[1]),
            "hash_dim": cfg.hash_dim,
        },
        "dependencies": graph.to_json(),
        "metrics": metrics,
        "training": {
            "rows": len(usable),
            "config": {k: getattr(cfg, k) for k in cfg.__dataclass_fields__},
            "registry_sha256": hashlib.sha256(
                "\n".join(tool_document(registry[n]) for n in names).encode()
            ).hexdigest(),
        },
        "sha256": digest,
    }
    (out / META_FILE).write_text(json.dumps(meta, indent=2) + "\n")
    loaded = ClassifierModel.load(out)
    got = loaded.predict({"embedding": x_emb[:16], "words": x_words[:16]})
    with torch.no_grad():
        want = final(torch.from_numpy(x_emb[:16]), torch.from_numpy(x_words[:16])).numpy()
    diff = float(np.abs(got - want).max())
    if diff > 1e-4:
        raise TrainingError(f"the ONNX classifier differs from torch by {diff:.2e} (> 1e-4)")
    report("export", 1, 1)
    return loaded


def _oof_metrics(
    probs: Any, labels: Any, thresholds: Thresholds, needs: Any, zero_shot: Any = None, neighbours: Any = None
) -> dict[str, float]:
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


def _export(torch: Any, model: Any, x_emb: Any, x_words: Any, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the legacy exporter (dynamo=False) is the one asked for
            torch.onnx.export(
                model,
                (torch.from_numpy(x_emb), torch.from_numpy(x_words)),
                str(out / MODEL_FILE),
                input_names=["embedding", "words"],
                output_names=["probabilities"],
                dynamic_axes={"embedding": {0: "batch"}, "words": {0: "batch"}, "probabilities": {0: "batch"}},
                opset_version=17,
                dynamo=False,
            )
    except Exception as exc:  # noqa: BLE001 - exporter failures are wrapped
        raise TrainingError(f"exporting the tool classifier to ONNX failed: {exc}") from exc


if __name__ == "__main__":  # the same command as ``tinyagent retrieval train-classifier``
    from tinyagent.apps.cli import main_with_prefix

    main_with_prefix(["retrieval", "train-classifier"])
