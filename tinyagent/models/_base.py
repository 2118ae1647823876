"""The model interface: one async generator that is also the streaming protocol."""

from __future__ import annotations

import abc
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ModelRequestsBlocked

__all__ = ["Completion", "Model", "ModelRequest", "Preference", "Pricing", "Usage", "check_allowed"]

Message = dict[str, Any]


@dataclass(frozen=True)
class Preference:
    """A soft floor on one continuation: wherever the generated text matches ``after``, measure the model's
    probability of continuing with ``text`` and take that continuation when it reaches ``min_prob``.

    Greedy decoding takes a continuation only when it is the single likeliest token. A floor lets a caller say
    "when the model gives *this* at least p, choose it" (the agent uses it for "no tool is needed": ``join`` as the
    first step of a plan). The probability is measured on the model's own distribution before any grammar, and is
    reported in :attr:`Completion.preference_probs` even when it stays under the floor (``min_prob > 1`` only
    measures).

    Attributes:
        name: a label for the reports.
        after: a regular expression searched in the text generated so far (anchor it with ``\\Z``).
        text: the continuation (its first token, with or without a leading space, is what is measured).
        min_prob: take the continuation when its probability is at least this.
        max_prob: rule the continuation out when its probability is below this (so the model writes the likeliest
            other token the grammar allows). Greedy decoding compares single tokens, so one token can win with
            far less than half of the probability when the alternatives spread theirs over many first tokens
            (``join`` at 0.25 against ten tool names that share the other 0.75); a ceiling of 0.5 compares the
            continuation with all of them together. The default (0) never rules it out.
    """

    name: str
    after: str
    text: str
    min_prob: float = 2.0
    max_prob: float = 0.0


@dataclass(frozen=True)
class ModelRequest:
    """One completion request.

    Attributes:
        messages: chat messages (``{"role", "content"}``).
        grammar: a GBNF grammar that constrains decoding, where the backend supports it.
        max_tokens: the most tokens to generate.
        temperature: sampling temperature; 0 is greedy.
        stop: strings that end generation.
        logprobs: ask for token log-probabilities (used as a confidence signal by the router).
        prefer: soft floors on continuations (backends without access to logits ignore them).
    """

    messages: Sequence[Message]
    grammar: str | None = None
    max_tokens: int = 512
    temperature: float = 0.0
    stop: Sequence[str] = ()
    logprobs: bool = False
    prefer: Sequence[Preference] = ()


@dataclass(frozen=True)
class Usage:
    """Token counts of one or more model calls."""

    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.requests + other.requests,
        )

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class Pricing:
    """Price in currency units per million tokens (0 for local models) and a latency estimate."""

    input_per_mtok: float = 0.0
    output_per_mtok: float = 0.0
    latency_s: float = 1.0

    def cost(self, usage: Usage) -> float:
        """What ``usage`` costs."""
        return (usage.input_tokens * self.input_per_mtok + usage.output_tokens * self.output_per_mtok) / 1e6


@dataclass(frozen=True)
class Completion:
    """The end of a streamed completion.

    Attributes:
        text: the whole generated text.
        usage: token counts.
        model: the model's name.
        finish_reason: ``"stop"``, ``"length"`` …
        mean_logprob: the mean token log-probability, when asked for and available.
        ttft_s: seconds to the first generated text.
        elapsed_s: seconds for the whole call.
        preference_probs: ``(name, probability, taken)`` at each position where a :class:`Preference` applied.
    """

    text: str
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    finish_reason: str = "stop"
    mean_logprob: float | None = None
    ttft_s: float = 0.0
    elapsed_s: float = 0.0
    preference_probs: tuple[tuple[str, float, bool], ...] = ()


ALLOW_MODEL_REQUESTS = True


def check_allowed(name: str) -> None:
    """Raise if real model requests are switched off (see ``tinyagent.models.ALLOW_MODEL_REQUESTS``)."""
    from . import ALLOW_MODEL_REQUESTS as allowed  # the switch lives in the public module

    if not allowed:
        raise ModelRequestsBlocked(
            f"real model {name!r} was called while tinyagent.models.ALLOW_MODEL_REQUESTS is False; "
            "use tinyagent.models.ScriptedModel in unit tests"
        )


class Model(abc.ABC):
    """A language model backend. Implement :meth:`stream`; everything else is derived.

    Attributes:
        name: a human-readable name.
        pricing: price and latency estimate, used by the router.
        supports_grammar: whether ``ModelRequest.grammar`` is enforced.
    """

    name: str = "model"
    pricing: Pricing = Pricing()
    supports_grammar: bool = False

    @abc.abstractmethod
    def stream(self, request: ModelRequest) -> AsyncIterator[str | Completion]:
        """Yield text deltas as they are generated, then exactly one :class:`Completion`.

        Raises:
            ModelError: the backend failed (wrapped; no backend exception leaks).
        """

    async def complete(self, request: ModelRequest) -> Completion:
        """Run :meth:`stream` to the end and return its :class:`Completion`."""
        start = time.perf_counter()
        final: Completion | None = None
        parts: list[str] = []
        async for item in self.stream(request):
            if isinstance(item, Completion):
                final = item
            else:
                parts.append(item)
        if final is None:
            final = Completion(text="".join(parts), model=self.name, elapsed_s=time.perf_counter() - start)
        return final

    def count_tokens(self, text: str) -> int:
        """Tokens in ``text`` by this model's tokenizer (an estimate where none is available)."""
        return max(1, len(text) // 4)

    async def aclose(self) -> None:  # noqa: B027 - optional hook, empty by default
        """Release resources (servers, threads, memory)."""
