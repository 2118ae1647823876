"""A learned multi-label tool classifier, run by onnxruntime (trained by ``tinyagent.retrieval.train_classifier``)."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._plan import Example
from .._tools import ToolRegistry
from ..errors import ConfigurationError, ModelError, ModelIntegrityError
from ._deps import require
from ._embedding import Embedder, load_embedder
from ._examples import DependencyGraph, ExampleSelector
from ._scoring import ScoringRetriever
from ._text import hashed_features, tool_document
from ._zeroshot import ZeroShotScorer

__all__ = ["ClassifierModel", "ClassifierRetriever", "Thresholds", "add_example_tools", "featurize"]

log = logging.getLogger("tinyagent.retrieval")

MODEL_FILE = "classifier.onnx"
META_FILE = "classifier.json"


@dataclass(frozen=True)
class Thresholds:
    """The calibrated decision rule: offer the ``top_k`` most probable tools, every tool at ``offer`` or above, the
    ``zero_shot_k`` tools whose own text matches the request best (:class:`ZeroShotScorer`, which covers tools the
    training data rarely shows) and every tool called by the ``example_k`` most similar examples of the few-shot
    pool (a plan that copies an example can call its tools); a tool left out but at ``wide`` or above makes the
    retrieval uncertain, and then it is offered too.

    Attributes:
        offer: probability at or above which a tool is offered.
        wide: probability at or above which a left-out tool counts as borderline (``wide <= offer``).
        top_k: how many of the most probable tools are always offered.
        zero_shot_k: how many of the best zero-shot matches are always offered.
        example_k: how many of the most similar pool examples bring their tools.
    """

    offer: float
    wide: float
    top_k: int = 1
    zero_shot_k: int = 0
    example_k: int = 0


def featurize(texts: Sequence[str], embedder: Embedder | None, hash_dim: int) -> dict[str, Any]:
    """The classifier's inputs for ``texts``: a sentence embedding and hashed word n-grams.

    Args:
        texts: requests.
        embedder: the sentence embedder, or None when the classifier uses no embedding.
        hash_dim: width of the hashed bag of words (0 for none).

    Returns:
        ``{"embedding": (n, d), "words": (n, hash_dim)}`` float32 arrays (a zero-width array for an unused input).
    """
    np = require("numpy")
    n = len(texts)
    emb = embedder.embed(texts) if embedder is not None else np.zeros((n, 0), dtype=np.float32)
    words = hashed_features(texts, hash_dim) if hash_dim > 0 else np.zeros((n, 0), dtype=np.float32)
    return {"embedding": np.asarray(emb, dtype=np.float32), "words": words}


@dataclass
class ClassifierModel:
    """A trained classifier: the ONNX graph, its tool columns, thresholds and the dependencies seen in training.

    Load one with :meth:`load`.
    """

    tools: tuple[str, ...]
    thresholds: Thresholds
    hash_dim: int
    uses_embedding: bool
    embedder_name: str
    dependencies: DependencyGraph
    metrics: Mapping[str, Any] = field(default_factory=dict)
    path: Path = Path()
    _session: Any = None
    _inputs: tuple[str, ...] = ("embedding", "words")

    @classmethod
    def load(cls, path: str | Path, threads: int = 1) -> ClassifierModel:
        """Load ``classifier.onnx`` and ``classifier.json`` from a folder (or from the JSON file's folder).

        Raises:
            ConfigurationError: the files are missing.
            ModelIntegrityError: the ONNX file does not match the sha256 recorded at training.
            ModelError: onnxruntime cannot load it.
        """
        folder = Path(path)
        if folder.is_file():
            folder = folder.parent
        meta_path, model_path = folder / META_FILE, folder / MODEL_FILE
        if not meta_path.is_file() or not model_path.is_file():
            raise ConfigurationError(
                f"no trained tool classifier in {folder} ({META_FILE} and {MODEL_FILE} expected); train one with: "
                "python -m tinyagent.retrieval.train_classifier --tools ... --data ... --out " + str(folder)
            )
        meta = json.loads(meta_path.read_text())
        digest = hashlib.sha256(model_path.read_bytes()).hexdigest()
        if meta.get("sha256") and meta["sha256"] != digest:
            raise ModelIntegrityError(
                f"{model_path} does not match the sha256 in {meta_path}; train the classifier again"
            )
        ort = require("onnxruntime")
        try:
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            options.log_severity_level = 3
            session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # noqa: BLE001 - onnxruntime errors are wrapped
            raise ModelError(f"cannot load the tool classifier {model_path}: {exc}") from exc
        thr = meta["thresholds"]
        return cls(
            tools=tuple(meta["tools"]),
            thresholds=Thresholds(
                offer=float(thr["offer"]),
                wide=float(thr["wide"]),
                top_k=int(thr.get("top_k", 1)),
                zero_shot_k=int(thr.get("zero_shot_k", 0)),
                example_k=int(thr.get("example_k", 0)),
            ),
            hash_dim=int(meta["features"]["hash_dim"]),
            uses_embedding=bool(meta["features"]["embedding"]),
            embedder_name=str(meta["features"].get("embedder", "")),
            dependencies=DependencyGraph(meta.get("dependencies", {})),
            metrics=meta.get("metrics", {}),
            path=folder,
            _session=session,
            _inputs=tuple(i.name for i in session.get_inputs()),
        )

    def predict(self, features: Mapping[str, Any]) -> Any:
        """Probabilities, shape ``(n, len(tools))``, for inputs from :func:`featurize`.

        Raises:
            ModelError: onnxruntime failed.
        """
        # The exporter drops an input the model does not use (no embedding, or no hashed words).
        feeds = {name: features[name] for name in self._inputs}
        try:
            return self._session.run(None, feeds)[0]
        except Exception as exc:  # noqa: BLE001 - onnxruntime errors are wrapped
            raise ModelError(f"the tool classifier failed: {exc}") from exc


def load_classifier(classifier: ClassifierModel | str | Path, threads: int = 1) -> ClassifierModel:
    """A :class:`ClassifierModel` from an instance or a folder."""
    return classifier if isinstance(classifier, ClassifierModel) else ClassifierModel.load(classifier, threads)


class ClassifierRetriever(ScoringRetriever):
    """A multi-label classifier trained for one registry: every tool at or above a calibrated probability is offered.

    Tools the classifier was not trained on score 0 and are offered only when the set is widened; use
    :class:`HybridRetriever` for registries that grow after training.

    Decision rule (:class:`Thresholds`, calibrated at training): the ``top_k`` most probable tools and every tool at
    or above ``offer``; a tool between ``wide`` and ``offer`` marks the retrieval uncertain and is offered too.

    Args:
        classifier: a folder written by ``train_classifier`` or a loaded :class:`ClassifierModel`.
        embedder: the sentence embedder the classifier was trained with (default: the exported MiniLM).
        k: not used by the threshold rule; kept for :meth:`calibrate` compatibility.
        wide_k: tools offered by :meth:`widen` at least.
        n_examples: few-shot examples per request.
        expand_dependencies: also offer the tools a chosen tool usually needs (from training data and examples).
        threads: onnxruntime threads.

    Raises:
        ConfigurationError: no classifier (or no embedder) was found.
    """

    def __init__(
        self,
        classifier: ClassifierModel | str | Path,
        *,
        embedder: Embedder | str | Path | None = None,
        k: int = 3,
        wide_k: int | None = None,
        n_examples: int = 3,
        expand_dependencies: bool = True,
        threads: int = 1,
    ) -> None:
        super().__init__(
            k=k, wide_k=wide_k, n_examples=n_examples, expand_dependencies=expand_dependencies, margin=0.0, floor=0.0
        )
        self.model = load_classifier(classifier, threads)
        self.embedder: Embedder | None = load_embedder(embedder) if self.model.uses_embedding else None
        self._np = require("numpy")
        self._columns: Any = None
        self._zero_shot: ZeroShotScorer | None = None

    def _index(self, registry: ToolRegistry, documents: list[str]) -> None:
        np = self._np
        position = {name: i for i, name in enumerate(self.model.tools)}
        self._columns = np.array([position.get(n, -1) for n in self._names], dtype=np.int64)
        known = [n for n in self._names if n in position]
        self._zero_shot = None
        if self.model.thresholds.zero_shot_k > 0 and known:
            self._zero_shot = zero_shot_scorer(registry, known, self.embedder)
        unknown = [n for n in self._names if n not in position]
        if unknown:
            log.warning(
                "the tool classifier was not trained on %d tool(s) (%s%s); they are offered only when widening. "
                "Retrain it, or use HybridRetriever",
                len(unknown),
                ", ".join(unknown[:5]),
                "…" if len(unknown) > 5 else "",
            )

    def fit(self, registry: ToolRegistry, examples: Sequence[Example] = ()) -> None:
        """Bind the classifier's columns to ``registry``; learn dependencies from ``examples`` and training data."""
        super().fit(registry, examples)
        if self.expand_dependencies:
            self._graph = self._graph.merged(self.model.dependencies)

    def _encode(self, query: str) -> Any:
        return self.embedder.embed([query])[0] if self.embedder is not None else None

    def _embed_texts(self) -> Any:
        return self.embedder.embed if self.embedder is not None else None

    def probabilities(self, query: str, vector: Any = None) -> Any:
        """The probability of every registry tool (0 for tools the classifier does not know)."""
        np = self._np
        emb = vector if vector is not None else self._encode(query)
        features = {
            "embedding": (emb[None, :] if emb is not None else np.zeros((1, 0), dtype=np.float32)).astype(np.float32),
            "words": hashed_features([query], self.model.hash_dim),
        }
        probs = self.model.predict(features)[0]
        out = np.where(self._columns >= 0, probs[np.maximum(self._columns, 0)], 0.0)
        return out.astype(np.float32)

    def _score(self, query: str, vector: Any, sims: Any = None) -> Any:
        return self.probabilities(query, vector)

    def _normalized(self, raw: Any) -> Any:
        return raw

    def _choose(self, raw: Any, sims: Any, query: str = "", vector: Any = None) -> tuple[list[str], bool]:
        np = self._np
        if self._zero_shot is None:
            tools, unsure = choose_by_threshold(raw, self._names, self.model.thresholds)
        else:
            known = np.flatnonzero(self._columns >= 0)
            names = [self._names[int(i)] for i in known]
            zero_shot = self._zero_shot.scores(query, vector)
            tools, unsure = choose_by_threshold(raw[known], names, self.model.thresholds, zero_shot)
        return add_example_tools(tools, self._selector, sims, self.model.thresholds.example_k), unsure


def choose_by_threshold(
    probs: Any, names: Sequence[str], thresholds: Thresholds, zero_shot: Any = None
) -> tuple[list[str], bool]:
    """Apply :class:`Thresholds` to ``probs`` (one per name) and ``zero_shot`` scores (the same shape, or None);
    returns the tools (by probability, then the zero-shot additions) and whether the retrieval was uncertain (a
    borderline tool was added). At least one tool is always offered."""
    np = require("numpy")
    order = np.argsort(-probs, kind="stable")
    sure = probs >= thresholds.offer
    sure[order[: max(1, thresholds.top_k)]] = True
    borderline = ~sure & (probs >= thresholds.wide)
    chosen = [int(i) for i in order if sure[i] or borderline[i]]
    if zero_shot is not None and thresholds.zero_shot_k > 0:
        taken = set(chosen)
        best = np.argsort(-zero_shot, kind="stable")[: thresholds.zero_shot_k]
        chosen.extend(int(i) for i in best if int(i) not in taken)
    return [names[i] for i in chosen], bool(borderline.any())


def add_example_tools(tools: list[str], selector: ExampleSelector | None, sims: Any, example_k: int) -> list[str]:
    """``tools`` followed by the tools of the ``example_k`` pool examples most similar to the request (see
    :attr:`Thresholds.example_k`), each once."""
    if selector is None or example_k <= 0:
        return tools
    return list(dict.fromkeys([*tools, *selector.nearest_tools(sims, example_k)]))


def zero_shot_scorer(
    registry: ToolRegistry, names: Sequence[str], embedder: Embedder | None, docs: Any = None
) -> ZeroShotScorer:
    """The :class:`ZeroShotScorer` over ``names`` (the classifier's tools present in ``registry``); ``docs`` are
    their document embeddings when already computed."""
    texts = [tool_document(registry[n]) for n in names]
    if docs is None and embedder is not None:
        docs = embedder.embed(texts)
    return ZeroShotScorer(texts, docs)
