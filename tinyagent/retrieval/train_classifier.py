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
import random
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._plan import Call, Plan
from .._tools import Tool, ToolRegistry
from ..errors import ConfigurationError, TinyAgentError, TrainingError
from ._calibrate import calibrate_thresholds, neighbour_tools, oof_metrics
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
    usable = _usable_rows(rows, names, cfg)
    if cfg.use_embedding and embedder is None:
        embedder = OnnxEmbedder()
    report = progress or (lambda stage, done, total: None)
    queries = [r.query for r in usable]
    x_emb, x_words, y, weight = _training_set(np, registry, usable, embedder if cfg.use_embedding else None, cfg,
                                              report)
    oof, final = _train_out_of_fold(torch, np, x_emb, x_words, y, weight, len(usable), cfg, report)
    labels = y[: len(usable)]
    graph = DependencyGraph.from_plans(r.plan if r.plan is not None else r.tools for r in usable)
    needs = _needs_matrix(np, names, graph)
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
    metrics = oof_metrics(oof, labels, thresholds, needs, zero_shot, neighbours)
    log.info("calibrated %s; held-out %s", thresholds, metrics)
    report("export", 0, 1)
    _export(torch, final, x_emb[:4], x_words[:4], out)
    meta = _metadata(out, registry, names, thresholds, cfg, embedder, int(x_emb.shape[1]), graph, metrics, len(usable))
    (out / META_FILE).write_text(json.dumps(meta, indent=2) + "\n")
    loaded = ClassifierModel.load(out)
    _check_onnx_matches_torch(torch, np, loaded, final, x_emb[:16], x_words[:16])
    report("export", 1, 1)
    return loaded


def _usable_rows(rows: Sequence[TrainingRow], names: Sequence[str], cfg: TrainConfig) -> list[TrainingRow]:
    """The rows whose tools are all in the registry; enough of them for ``cfg.folds``, or ConfigurationError."""
    usable = [r for r in rows if r.tools <= set(names)]
    if len(usable) < len(rows):
        log.warning("dropped %d training row(s) that call tools outside the registry", len(rows) - len(usable))
    if len(usable) < 2 * max(2, cfg.folds):
        raise ConfigurationError(
            f"only {len(usable)} usable training rows; the classifier needs at least "
            f"{2 * max(2, cfg.folds)} (give more --data or fewer --folds)"
        )
    return usable


def _training_set(
    np: Any, registry: ToolRegistry, usable: Sequence[TrainingRow], embedder: Embedder | None, cfg: TrainConfig,
    report: Progress,
) -> tuple[Any, Any, Any, Any]:
    """Features, labels and weights: the requests first, then each tool's own texts (so rare tools are known)."""
    names = list(registry)
    column = {n: i for i, n in enumerate(names)}
    doc_rows = [(j, text) for j, n in enumerate(names) for text in _tool_texts(registry[n])]
    report("features", 0, 1)
    feats = featurize([r.query for r in usable] + [t for _, t in doc_rows], embedder, cfg.hash_dim)
    report("features", 1, 1)
    y = np.zeros((len(usable) + len(doc_rows), len(names)), dtype=np.float32)
    for i, r in enumerate(usable):
        for t in r.tools:
            y[i, column[t]] = 1.0
    for k, (j, _) in enumerate(doc_rows):
        y[len(usable) + k, j] = 1.0
    weight = np.ones(len(y), dtype=np.float32)
    weight[len(usable) :] = float(cfg.doc_weight)
    return feats["embedding"], feats["words"], y, weight


def _train_out_of_fold(
    torch: Any, np: Any, x_emb: Any, x_words: Any, y: Any, weight: Any, n_rows: int, cfg: TrainConfig,
    report: Progress,
) -> tuple[Any, Any]:
    """Out-of-fold predictions for calibration (each request predicted by a model that never saw it), then the
    final model trained on everything."""
    rng = random.Random(cfg.seed)
    order = list(range(n_rows))
    rng.shuffle(order)
    folds = [order[f :: cfg.folds] for f in range(cfg.folds)]
    oof = np.zeros((n_rows, y.shape[1]), dtype=np.float32)
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
    return oof, final


def _needs_matrix(np: Any, names: Sequence[str], graph: DependencyGraph) -> Any:
    column = {n: i for i, n in enumerate(names)}
    needs = np.zeros((len(names), len(names)), dtype=np.float32)
    for a, bs in graph.needs.items():
        for b in bs:
            needs[column[a], column[b]] = 1.0
    return needs


def _metadata(
    out: Path, registry: ToolRegistry, names: Sequence[str], thresholds: Thresholds, cfg: TrainConfig,
    embedder: Embedder | None, embedding_dim: int, graph: DependencyGraph, metrics: dict[str, float], rows: int,
) -> dict[str, Any]:
    """``classifier.json``: the tools, the rule, the features, the dependencies, the metrics and the model's sha256."""
    return {
        "format": 1,
        "tools": list(names),
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
            "embedding_dim": embedding_dim,
            "hash_dim": cfg.hash_dim,
        },
        "dependencies": graph.to_json(),
        "metrics": metrics,
        "training": {
            "rows": rows,
            "config": {k: getattr(cfg, k) for k in cfg.__dataclass_fields__},
            "registry_sha256": hashlib.sha256(
                "\n".join(tool_document(registry[n]) for n in names).encode()
            ).hexdigest(),
        },
        "sha256": hashlib.sha256((out / MODEL_FILE).read_bytes()).hexdigest(),
    }


def _check_onnx_matches_torch(torch: Any, np: Any, loaded: ClassifierModel, final: Any, x_emb: Any,
                              x_words: Any) -> None:
    got = loaded.predict({"embedding": x_emb, "words": x_words})
    with torch.no_grad():
        want = final(torch.from_numpy(x_emb), torch.from_numpy(x_words)).numpy()
    diff = float(np.abs(got - want).max())
    if diff > 1e-4:
        raise TrainingError(f"the ONNX classifier differs from torch by {diff:.2e} (> 1e-4)")


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
    from tinyagent.apps import run_command

    run_command(["retrieval", "train-classifier"])
