"""A scripted model that ships in the library, for unit tests and demos."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import Any

from ..errors import ConfigurationError, ModelError
from ._base import Completion, Model, ModelRequest, Pricing, Usage

__all__ = ["LogprobScript", "PreferenceScript", "ScriptedModel"]

Script = Callable[[ModelRequest], str]
LogprobScript = float | None | Sequence[float | None] | Callable[[ModelRequest], float | None]
"""A mean log-probability: one value for every call, one per call in order (the last repeats), or a function."""
PreferenceScript = Mapping[str, float] | Callable[[ModelRequest], Mapping[str, float]] | None
"""Probabilities of the request's :class:`~tinyagent.models.Preference` continuations, by preference name."""


class ScriptedModel(Model):
    """Answers from a script instead of a network or weights.

    Args:
        responses: the replies in order (the last one repeats), or a function from request to reply.
        chunk_chars: characters per streamed delta, so streaming code paths are exercised.
        delay_s: sleep before each delta, to simulate generation speed.
        name: the model name.
        pricing: pretend price, for routing tests.
        fail_with: an exception to raise on every call (for fault tests).
        mean_logprob: what :attr:`Completion.mean_logprob` reports (confidence, for routing tests): one value, one
            per call in order (the last repeats), or a function of the request.
        preference_probs: the probability the model "gives" each preference of a request, by name (a mapping or a
            function of the request). Each preference of the request with a scripted probability is reported in
            :attr:`Completion.preference_probs` as ``(name, probability, probability >= min_prob)``, so floors can
            be unit-tested; the reply text is still the script's (script the text the floor would produce).

    Attributes:
        requests: every request received, for assertions.
    """

    supports_grammar = True

    def __init__(
        self,
        responses: Iterable[str] | Script = ("1. join()\n<END_OF_PLAN>",),
        *,
        chunk_chars: int = 3,
        delay_s: float = 0.0,
        name: str = "scripted",
        pricing: Pricing | None = None,
        fail_with: Exception | None = None,
        mean_logprob: LogprobScript = -0.1,
        preference_probs: PreferenceScript = None,
    ) -> None:
        self._script: Script | None = responses if callable(responses) else None
        self._responses: list[str] = [] if callable(responses) else list(responses)
        if self._script is None and not self._responses:
            raise ConfigurationError("ScriptedModel needs at least one response")
        if isinstance(mean_logprob, Sequence) and not mean_logprob:
            raise ConfigurationError("ScriptedModel needs at least one mean_logprob when given a sequence")
        self._index = 0
        self.chunk_chars = max(1, chunk_chars)
        self.delay_s = delay_s
        self.name = name
        self.pricing = pricing or Pricing()
        self.fail_with = fail_with
        self.mean_logprob = mean_logprob
        self.preference_probs = preference_probs
        self.requests: list[ModelRequest] = []

    def _next_reply(self, request: ModelRequest) -> str:
        if self._script is not None:
            return self._script(request)
        reply = self._responses[min(self._index, len(self._responses) - 1)]
        self._index += 1
        return reply

    def _logprob(self, request: ModelRequest, call: int) -> float | None:
        script = self.mean_logprob
        if callable(script):
            return script(request)
        if isinstance(script, Sequence):
            return script[min(call, len(script) - 1)]
        return script

    def _preferences(self, request: ModelRequest) -> tuple[tuple[str, float, bool], ...]:
        script = self.preference_probs
        if script is None or not request.prefer:
            return ()
        probs = script(request) if callable(script) else script
        return tuple((p.name, probs[p.name], probs[p.name] >= p.min_prob) for p in request.prefer if p.name in probs)

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | Completion]:
        self.requests.append(request)
        if self.fail_with is not None:
            if isinstance(self.fail_with, ModelError):
                raise self.fail_with
            raise ModelError(f"{self.name}: {self.fail_with}") from self.fail_with
        start = time.perf_counter()
        call = len(self.requests) - 1
        reply = self._next_reply(request)
        for stop in request.stop:
            if stop and stop in reply:
                reply = reply[: reply.index(stop)]
        ttft = 0.0
        for i in range(0, len(reply), self.chunk_chars):
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            else:
                await asyncio.sleep(0)
            if i == 0:
                ttft = time.perf_counter() - start
            yield reply[i : i + self.chunk_chars]
        prompt = "".join(str(m.get("content", "")) for m in request.messages)
        usage = Usage(self.count_tokens(prompt), self.count_tokens(reply) if reply else 0, 1)
        yield Completion(
            text=reply, usage=usage, model=self.name, ttft_s=ttft, elapsed_s=time.perf_counter() - start,
            mean_logprob=self._logprob(request, call), preference_probs=self._preferences(request),
        )

    def __repr__(self) -> str:
        return f"ScriptedModel(name={self.name!r})"

    def reset(self) -> None:
        """Start the script over and forget recorded requests."""
        self._index = 0
        self.requests.clear()

    def __getstate__(self) -> dict[str, Any]:  # pragma: no cover - scripted models are process-local
        raise TypeError("ScriptedModel cannot be pickled")
