"""Sentence embeddings on onnxruntime (no torch at run time) and the embedding retriever."""

from __future__ import annotations

import json
import logging
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .._tools import ToolRegistry
from ..errors import ConfigurationError, ModelError
from ._cache import default_embedder_dir
from ._deps import require
from ._scoring import ScoringRetriever

__all__ = ["Embedder", "EmbeddingRetriever", "LlamaCppEmbedder", "OnnxEmbedder"]

log = logging.getLogger("tinyagent.retrieval")


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised vectors (one row per text)."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> Any:
        """A float32 array of shape ``(len(texts), dim)``, rows of unit length."""
        ...


class _Memo:
    """A small LRU of text → vector, so a request's query is embedded once across retrieve/widen."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[str, Any] = OrderedDict()

    def get(self, text: str) -> Any:
        vec = self._items.get(text)
        if vec is not None:
            self._items.move_to_end(text)
        return vec

    def clear(self) -> None:
        self._items.clear()

    def put(self, text: str, vec: Any) -> None:
        if self.size <= 0:
            return
        self._items[text] = vec
        if len(self._items) > self.size:
            self._items.popitem(last=False)


class OnnxEmbedder:
    """all-MiniLM-L6-v2 on onnxruntime, tokenised by ``tokenizers``: no torch at run time.

    Create the model once with ``python -m tinyagent.retrieval.export_embedder``.

    Args:
        path: the folder holding ``model.onnx``, ``tokenizer.json`` and ``meta.json``; defaults to the cache.
        threads: onnxruntime intra-op threads (1 is fastest for one short query on a busy 2-core machine).
        memo_size: how many recent texts to remember.
        int8: use the int8-quantised copy written by the export (faster, slightly less accurate).

    Raises:
        ConfigurationError: the folder holds no exported embedder.
        MissingDependencyError: onnxruntime, tokenizers or numpy is missing.
        ModelError: onnxruntime cannot load the model.
    """

    def __init__(
        self, path: str | Path | None = None, *, threads: int = 1, memo_size: int = 512, int8: bool = False
    ) -> None:
        folder = Path(path) if path is not None else default_embedder_dir()
        model = folder / ("model.int8.onnx" if int8 else "model.onnx")
        tokenizer, meta_path = folder / "tokenizer.json", folder / "meta.json"
        if not (model.is_file() and tokenizer.is_file() and meta_path.is_file()):
            raise ConfigurationError(
                f"no ONNX embedder in {folder}; export it once with: python -m tinyagent.retrieval.export_embedder "
                "(needs pip install 'tinyagent[retrieval-train]'), or set TINYAGENT_CACHE to where it was exported"
            )
        ort = require("onnxruntime")
        tokenizers = require("tokenizers")
        self._np = require("numpy")
        meta = json.loads(meta_path.read_text())
        self.name = str(meta.get("name", folder.name)) + ("-int8" if int8 else "")
        self.dim = int(meta["dim"])
        self.path = folder
        try:
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            options.log_severity_level = 3
            self._session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
            self._tokenizer = tokenizers.Tokenizer.from_file(str(tokenizer))
        except Exception as exc:  # noqa: BLE001 - onnxruntime/tokenizers errors are wrapped
            raise ModelError(f"cannot load the ONNX embedder in {folder}: {exc}; export it again with --force") from exc
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(int(meta.get("max_length", 256)))
        self._memo = _Memo(memo_size)

    def embed(self, texts: Sequence[str], batch_size: int = 32) -> Any:
        """Embed ``texts``; rows are L2-normalised float32 vectors.

        Raises:
            ModelError: onnxruntime failed.
        """
        np = self._np
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        todo = []
        for i, text in enumerate(texts):
            hit = self._memo.get(text)
            if hit is None:
                todo.append(i)
            else:
                out[i] = hit
        # Similar lengths share a batch, so little time goes on padding.
        todo.sort(key=lambda i: len(texts[i]))
        for start in range(0, len(todo), batch_size):
            rows = todo[start : start + batch_size]
            encodings = self._tokenizer.encode_batch([texts[i] for i in rows])
            width = max(len(e.ids) for e in encodings)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros_like(ids)
            for j, enc in enumerate(encodings):
                ids[j, : len(enc.ids)] = enc.ids
                mask[j, : len(enc.ids)] = 1
            try:
                vectors = self._session.run(
                    None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
                )[0]
            except Exception as exc:  # noqa: BLE001 - onnxruntime errors are wrapped
                raise ModelError(f"the ONNX embedder failed: {exc}") from exc
            for j, i in enumerate(rows):
                out[i] = vectors[j]
                self._memo.put(texts[i], vectors[j])
        return out

    def forget(self) -> None:
        """Drop the remembered texts (for timing, or to free memory)."""
        self._memo.clear()

    def __repr__(self) -> str:
        return f"OnnxEmbedder({str(self.path)!r})"


class LlamaCppEmbedder:
    """Embeddings from a GGUF model in llama.cpp's embedding mode (mean pooling), e.g. the planner's own model.

    Measured against MiniLM in ``docs/retrieval.md``; it is slower and, for a chat model, less discriminative.

    Args:
        model_path: the GGUF file.
        threads: llama.cpp threads.
        n_ctx: context length for one text.

    Raises:
        MissingDependencyError: llama-cpp-python is missing.
        ModelError: the model cannot be loaded.
    """

    def __init__(self, model_path: str | Path, *, threads: int = 2, n_ctx: int = 512, memo_size: int = 512) -> None:
        llama_cpp = require("llama_cpp", "llama", package="llama-cpp-python")
        from ..models import new_llama

        self._np = require("numpy")
        try:
            self._llm = new_llama(
                model_path=str(model_path),
                embedding=True,
                n_ctx=n_ctx,
                n_batch=n_ctx,
                n_ubatch=n_ctx,
                n_threads=threads,
                pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN,
                verbose=False,
            )
        except Exception as exc:  # noqa: BLE001 - llama.cpp errors are wrapped
            raise ModelError(f"cannot load {model_path} in embedding mode: {exc}") from exc
        self.name = Path(model_path).name
        self.dim = int(self._llm.n_embd())
        self._n_ctx = n_ctx
        self._memo = _Memo(memo_size)

    def embed(self, texts: Sequence[str]) -> Any:
        """Embed ``texts`` one at a time; rows are L2-normalised float32 vectors.

        Raises:
            ModelError: llama.cpp failed.
        """
        from ..models import on_llama_thread

        np = self._np
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            hit = self._memo.get(text)
            if hit is None:
                tokens = self._llm.tokenize(text.encode("utf-8"))[: self._n_ctx - 8]
                try:
                    text_in = self._llm.detokenize(tokens).decode("utf-8", "ignore")
                    vec = np.asarray(on_llama_thread(self._llm.embed, text_in), dtype=np.float32)
                except Exception as exc:  # noqa: BLE001 - llama.cpp errors are wrapped
                    raise ModelError(f"llama.cpp embedding failed: {exc}") from exc
                if vec.ndim > 1:
                    vec = vec.mean(axis=0)
                norm = float(np.linalg.norm(vec))
                hit = vec / norm if norm > 0 else vec
                self._memo.put(text, hit)
            out[i] = hit
        return out

    def forget(self) -> None:
        """Drop the remembered texts."""
        self._memo.clear()

    def close(self) -> None:
        """Free the model."""
        self._llm.close()


def load_embedder(embedder: Embedder | str | Path | None) -> Embedder:
    """An :class:`Embedder` from an instance, a folder, or None for the default exported MiniLM.

    Raises:
        ConfigurationError: no embedder was exported there.
    """
    if embedder is None or isinstance(embedder, str | Path):
        return OnnxEmbedder(embedder)
    if not isinstance(embedder, Embedder):
        raise ConfigurationError(f"not an embedder: {embedder!r}; pass an OnnxEmbedder, a folder or None")
    return embedder


class EmbeddingRetriever(ScoringRetriever):
    """Semantic retrieval: cosine similarity of the request to each tool's document, by brute force in numpy.

    Args:
        embedder: an :class:`Embedder`, a folder with an exported MiniLM, or None for the default one.
        k: tools offered when sure.
        wide_k: tools offered when unsure.
        n_examples: few-shot examples per request (chosen by the same embeddings).
        expand_dependencies: also offer the tools a chosen tool usually needs.
        margin: uncertainty margin on normalised scores.
        floor: a best cosine at or below this means nothing matched.

    Raises:
        ConfigurationError: no embedder was exported.
    """

    def __init__(
        self,
        embedder: Embedder | str | Path | None = None,
        *,
        k: int = 5,
        wide_k: int | None = None,
        n_examples: int = 3,
        expand_dependencies: bool = True,
        margin: float = 0.02,
        floor: float = 0.1,
    ) -> None:
        super().__init__(
            k=k,
            wide_k=wide_k,
            n_examples=n_examples,
            expand_dependencies=expand_dependencies,
            margin=margin,
            floor=floor,
        )
        self.embedder = load_embedder(embedder)
        self._np = require("numpy")
        self._docs: Any = None

    def _index(self, registry: ToolRegistry, documents: list[str]) -> None:
        self._docs = self.embedder.embed(documents)

    def _encode(self, query: str) -> Any:
        return self.embedder.embed([query])[0]

    def _embed_texts(self) -> Any:
        return self.embedder.embed

    def _score(self, query: str, vector: Any, sims: Any = None) -> Any:
        return self._docs @ vector

    def _normalized(self, raw: Any) -> Any:
        # Cosines of unrelated texts sit around 0.1, not 0: measure from the worst tool, not from zero.
        np = self._np
        low, top = float(raw.min()), float(raw.max())
        if top <= low:
            return np.zeros_like(raw)
        return (raw - low) / (top - low)
