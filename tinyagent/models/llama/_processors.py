"""Logits processors of :class:`~tinyagent.models.LlamaCppModel`: log-probabilities, preference floors, and
greedy grammar checks."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...errors import ModelError
from .._base import Preference

if TYPE_CHECKING:
    from ._model import LlamaCppModel


def _template_formatter(llm: Any) -> Any:
    """The GGUF's own chat template as a formatter (None when the file has none)."""
    template = llm.metadata.get("tokenizer.chat_template")
    if not template:
        return None
    from llama_cpp import llama_chat_format

    def piece(token: int) -> str:
        return str(llm._model.token_get_text(token)) if token >= 0 else ""

    return llama_chat_format.Jinja2ChatFormatter(
        template=template, eos_token=piece(llm.token_eos()), bos_token=piece(llm.token_bos())
    )


class _LogprobTracker:
    """Records the model's own log-probability of each sampled token (before grammar masking).

    llama-cpp-python only returns logprobs with ``logits_all=True``, which costs n_ctx x vocab floats. A logits
    processor sees the last position's logits at every step; the token chosen from them is the next step's last id.
    """

    def __init__(self) -> None:
        self._pending: Any = None
        self.values: list[float] = []

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import numpy as np

        if self._pending is not None and len(input_ids):
            self.values.append(float(self._pending[int(input_ids[-1])]))
        m = float(np.max(scores))
        shifted = scores - m
        self._pending = shifted - math.log(float(np.sum(np.exp(shifted))))
        return scores

    @property
    def pending(self) -> Any:
        """The log-softmax of the logits this step saw (None before the first step)."""
        return self._pending

    def mean(self) -> float | None:
        return sum(self.values) / len(self.values) if self.values else None


class _Preferences:
    """Applies :class:`Preference` floors as a logits processor and records what it measured.

    The generated text is decoded incrementally (only the new tokens, through an incremental UTF-8 decoder), and
    when a :class:`_LogprobTracker` runs before it, its log-softmax of the same logits is reused.
    """

    def __init__(self, model: LlamaCppModel, prefs: Sequence[Preference],
                 tracker: _LogprobTracker | None = None) -> None:
        import codecs

        self._model = model
        self._prefs = [(re.compile(p.after), p) for p in prefs]
        self._tracker = tracker
        self._start: int | None = None
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._generated = ""
        self._decoded = 0
        self.seen: list[tuple[str, float, bool]] = []

    def _text(self, input_ids: Any) -> str:
        if self._start is None:
            self._start = len(input_ids)
        new = [int(t) for t in input_ids[self._start + self._decoded:]]
        if new:
            self._generated += self._decoder.decode(self._model.llama.detokenize(new))
            self._decoded += len(new)
        return self._generated

    def _probs(self, scores: Any, chosen: Any) -> Any:
        """The model's probabilities of ``chosen`` token ids at this step."""
        import numpy as np

        pending = self._tracker.pending if self._tracker is not None else None
        if pending is not None and len(pending) == len(scores):
            return np.exp(pending[chosen])
        top = float(np.max(scores))
        return np.exp(scores[chosen] - top) / float(np.sum(np.exp(scores - top)))

    def needs(self, text: str) -> bool:
        """Whether a floor applies where the generated text is ``text`` (elsewhere this processor only keeps
        count of the text, so the decoder may skip the position's logits)."""
        return any(pattern.search(text) for pattern, _ in self._prefs)

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import numpy as np

        text = self._text(input_ids)
        for pattern, pref in self._prefs:
            if not pattern.search(text):
                continue
            after_space, otherwise = self._model.opening_tokens(pref.text)
            ids = sorted(after_space if text.endswith(" ") else otherwise)
            if not ids:
                continue
            chosen = np.array(ids)
            mass = self._probs(scores, chosen)
            prob = float(np.sum(mass))
            taken = prob >= pref.min_prob
            self.seen.append((pref.name, prob, taken))
            if taken:
                scores = np.array(scores, copy=True)
                scores[int(chosen[int(np.argmax(mass))])] = float(np.max(scores)) + 1.0
                return scores
            if prob < pref.max_prob:
                scores = np.array(scores, copy=True)
                scores[chosen] = -np.inf
                return scores
        return scores


def _processor_list(processors: list[Any]) -> Any:
    from llama_cpp import LogitsProcessorList

    return LogitsProcessorList(processors)


class _GreedyGrammar:
    """Grammar-constrained greedy decoding that checks the grammar on the best token first.

    llama-cpp-python applies a grammar sampler to every candidate (150k for Qwen) at every step, which dominates
    generation time with a large plan grammar. Under greedy decoding only the winner matters: if the model's top
    token is allowed, it is the answer; only when it is not is the grammar applied to the whole vocabulary
    (as llama.cpp's own common sampler does).

    Raises:
        ModelError: llama.cpp could not parse the grammar (checked, so that a bad grammar never crashes it).
    """

    def __init__(self, llm: Any, grammar: str) -> None:
        import llama_cpp

        self._api = llama_cpp
        self._sampler = llama_cpp.llama_sampler_init_grammar(llm._model.vocab, grammar.encode("utf-8"), b"root")
        if not self._sampler:
            raise ModelError("llama.cpp rejected the grammar; this is a bug in grammar generation, please report it")
        self._started = False
        self.full_passes = 0
        self.steps = 0

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import ctypes

        import numpy as np

        api = self._api
        if self._started:
            api.llama_sampler_accept(self._sampler, int(input_ids[-1]))
        self._started = True
        self.steps += 1
        top = int(np.argmax(scores))
        one = (api.llama_token_data * 1)(api.llama_token_data(top, float(scores[top]), 0.0))
        arr = api.llama_token_data_array(data=one, size=1, selected=-1, sorted=False)
        api.llama_sampler_apply(self._sampler, ctypes.byref(arr))
        if np.isfinite(one[0].logit):
            return scores
        # The model's favourite is not allowed here: mask the whole vocabulary with the grammar.
        self.full_passes += 1
        n = len(scores)
        data = (api.llama_token_data * n)()
        view = np.ctypeslib.as_array(ctypes.cast(data, ctypes.POINTER(ctypes.c_byte)), shape=(n * 12,))
        rec = view.view(np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)]))
        rec["id"] = np.arange(n, dtype=np.intc)
        rec["logit"] = scores
        rec["p"] = 0.0
        full = api.llama_token_data_array(data=data, size=n, selected=-1, sorted=False)
        api.llama_sampler_apply(self._sampler, ctypes.byref(full))
        out = np.array(rec["logit"], dtype=scores.dtype, copy=True)
        return out

    def close(self) -> None:
        if self._sampler:
            self._api.llama_sampler_free(self._sampler)
            self._sampler = None

