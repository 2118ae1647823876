"""A scripted model that ships in the library, for unit tests and demos."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from ..errors import ModelError
from ._base import Completion, Model, ModelRequest, Pricing, Usage

__all__ = ["ScriptedModel"]

Script = Callable[[ModelRequest], str]


class ScriptedModel(Model):
    """Answers from a script instead of a network or weights.

    Args:
        responses: the replies in order (the last one repeats), or a function from request to reply.
        chunk_chars: characters per streamed delta, so streaming code paths are exercised.
        delay_s: sleep before each delta, to simulate generation speed.
        name: the model name.
        pricing: pretend price, for routing tests.
        fail_with: an exception to raise on every call (for fault tests).

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
    ) -> None:
        self._script: Script | None = responses if callable(responses) else None
        self._responses: list[str] = [] if callable(responses) else list(responses)
        if self._script is None and not self._responses:
            raise ValueError("ScriptedModel needs at least one response")
        self._index = 0
        self.chunk_chars = max(1, chunk_chars)
        self.delay_s = delay_s
        self.name = name
        self.pricing = pricing or Pricing()
        self.fail_with = fail_with
        self.requests: list[ModelRequest] = []

    def _next_reply(self, request: ModelRequest) -> str:
        if self._script is not None:
            return self._script(request)
        reply = self._responses[min(self._index, len(self._responses) - 1)]
        self._index += 1
        return reply

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | Completion]:
        self.requests.append(request)
        if self.fail_with is not None:
            if isinstance(self.fail_with, ModelError):
                raise self.fail_with
            raise ModelError(f"{self.name}: {self.fail_with}") from self.fail_with
        start = time.perf_counter()
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
            mean_logprob=-0.1,
        )

    def __repr__(self) -> str:
        return f"ScriptedModel(name={self.name!r})"

    def reset(self) -> None:
        """Start the script over and forget recorded requests."""
        self._index = 0
        self.requests.clear()

    def __getstate__(self) -> dict[str, Any]:  # pragma: no cover - scripted models are process-local
        raise TypeError("ScriptedModel cannot be pickled")
