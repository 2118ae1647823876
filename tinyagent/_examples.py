"""Worked examples most similar to a request: hashed word features and the example selector.

The agent's default way to pick few-shot examples from a pool larger than the prompt takes, without a retriever.
This is the one implementation: :mod:`tinyagent.retrieval` re-exports these names and builds on the same features.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

from ._plan import Example

__all__ = ["ExampleSelector", "fits_schemas", "hashed_features", "words"]

HASH_DIM = 4096
Embed = Callable[[Sequence[str]], Any]
_HASH_DIM = 1024  # enough for a pool of short requests; keeps the similarity product small
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD = re.compile(r"[a-z0-9]+")


def fits_schemas(example: Example, tools: Mapping[str, Any]) -> bool:
    """Whether every call of ``example`` to one of ``tools`` uses only that tool's parameters and all its required
    ones. A worked example written for another tool of the same name (the built-in ``create_calendar_event``
    beside a user's own) would teach the planner arguments the grammar then forbids."""
    for call in example.plan.calls:
        tool = tools.get(call.name)
        if tool is None:
            continue
        props = tool.parameters.get("properties", {})
        if not set(call.args) <= set(props) or not set(tool.required) <= set(call.args):
            return False
    return True


def _split_identifier(name: str) -> str:
    return _CAMEL.sub(" ", name).replace("_", " ").replace(".", " ").replace("-", " ")


def _stem(word: str) -> str:
    # Plurals only: "emails"/"email", "meetings"/"meeting", "replies"/"reply". Stripping "-ed"/"-ing" as well
    # splits "create"/"created" apart, so it costs more matches than it wins.
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def words(text: str) -> list[str]:
    """Lower-case words of ``text`` (identifiers split on ``_``, ``.`` and camelCase), stemmed, stopwords kept."""
    return [_stem(w) for w in _WORD.findall(_split_identifier(text).lower())]


def _bucket(token: str, dim: int) -> int:
    return zlib.crc32(token.encode("utf-8")) % dim


def hashed_features(texts: Iterable[str], dim: int = HASH_DIM) -> Any:
    """Hashed, L2-normalised bag of word unigrams and bigrams, as a float32 array of shape ``(n, dim)``.

    The hash is crc32, so features are stable across processes and machines (Python's ``hash`` is salted).
    """
    import numpy as np

    rows = list(texts)
    out = np.zeros((len(rows), dim), dtype=np.float32)
    for i, text in enumerate(rows):
        ws = words(text)
        grams = ws + [f"{a} {b}" for a, b in zip(ws, ws[1:], strict=False)]
        for g in grams:
            out[i, _bucket(g, dim)] += 1.0
        np.log1p(out[i], out=out[i])
        norm = float(np.linalg.norm(out[i]))
        if norm > 0:
            out[i] /= norm
    return out


class ExampleSelector:
    """Chooses the few-shot examples for a request: the most similar ones whose tools are all offered.

    Args:
        examples: the pool.
        embed: a function from texts to L2-normalised row vectors (an embedder); without one, similarity is the
            cosine of hashed word features.
    """

    def __init__(self, examples: Sequence[Example], embed: Embed | None = None) -> None:
        import numpy as np

        self.examples = tuple(examples)
        self._embed = embed
        self._tool_sets = [e.tool_names for e in self.examples]
        texts = [e.query for e in self.examples]
        if not texts:
            self._vectors = np.zeros((0, 1), dtype=np.float32)
        elif embed is not None:
            self._vectors = np.asarray(embed(texts), dtype=np.float32)
        else:
            self._vectors = hashed_features(texts, _HASH_DIM)
        self._empty = np.array([len(e.plan.calls) == 0 for e in self.examples], dtype=bool)
        self._vocab = {name: j for j, name in enumerate(sorted(set().union(*self._tool_sets)))}
        self._uses = np.zeros((len(self.examples), len(self._vocab)), dtype=bool)
        for i, names in enumerate(self._tool_sets):
            for name in names:
                self._uses[i, self._vocab[name]] = True

    def query_vector(self, query: str) -> Any:
        """The vector this selector compares ``query`` by."""
        if self._embed is not None:
            return self._embed([query])[0]
        return hashed_features([query], _HASH_DIM)[0]

    def similarities(self, query_vector: Any) -> Any:
        """Cosine similarity of the query to every example in the pool."""
        import numpy as np

        if not self.examples:
            return np.zeros(0, dtype=np.float32)
        return self._vectors @ query_vector

    def nearest_tools(self, sims: Any, m: int) -> list[str]:
        """The tools called by the ``m`` most similar examples (empty-plan ones included, bringing none), most similar
        example first, each tool once.

        Args:
            sims: similarities from :meth:`similarities`.
            m: how many examples.
        """
        import numpy as np

        if m <= 0 or not self.examples:
            return []
        n = min(m, len(self.examples))
        top = np.argpartition(-sims, n - 1)[:n] if n < len(self.examples) else np.arange(n)
        top = top[np.argsort(-sims[top], kind="stable")]
        out: dict[str, None] = {}
        for i in top:
            for name in sorted(self._tool_sets[int(i)]):
                out[name] = None
        return list(out)

    def looks_conversational(self, sims: Any) -> bool:
        """True when the most similar example in the pool needs no tool (its plan is empty)."""
        if len(self.examples) == 0:
            return False
        return bool(self._empty[int(sims.argmax())])

    def select(
        self,
        tools: Collection[str],
        k: int,
        sims: Any,
        conversational: bool = False,
    ) -> tuple[Example, ...]:
        """The ``k`` best examples whose tools are a subset of ``tools``, best first.

        Examples with a tool set not yet chosen go first, so that the prompt shows different ways to use the tools.
        When ``conversational``, the most similar empty-plan example is always included.

        Args:
            tools: the offered tools.
            k: how many examples to return at most.
            sims: similarities from :meth:`similarities`.
            conversational: include an empty-plan example.
        """
        import numpy as np

        if k <= 0 or not self.examples:
            return ()
        allowed = np.zeros(len(self._vocab), dtype=bool)
        for name in tools:
            j = self._vocab.get(name)
            if j is not None:
                allowed[j] = True
        order = np.argsort(-sims, kind="stable")
        chosen: list[int] = []
        if conversational:
            empties = order[self._empty[order]]
            if empties.size:
                chosen.append(int(empties[0]))
        ok = ~self._empty & ~(self._uses & ~allowed).any(axis=1)
        compatible = [int(i) for i in order[ok[order]]]
        seen_sets: set[frozenset[str]] = set()
        for i in compatible:  # first pass: one example per distinct tool set
            if len(chosen) >= k:
                break
            names = self._tool_sets[i]
            if names not in seen_sets:
                seen_sets.add(names)
                chosen.append(i)
        for i in compatible:  # second pass: fill up
            if len(chosen) >= k:
                break
            if i not in chosen:
                chosen.append(i)
        return tuple(self.examples[i] for i in chosen)
