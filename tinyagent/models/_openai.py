"""A model behind an OpenAI-compatible chat-completions endpoint (a paid API, or ``llama_cpp.server`` on the LAN).

The ``openai`` SDK makes the requests; its own retries are switched off, because this module retries itself (429,
5xx, connection errors and timeouts, with exponential backoff, jitter and ``Retry-After``) and only before the first
token has been streamed. Every failure, malformed replies included, becomes an
:class:`~tinyagent.errors.EndpointError`. The API key is read from the environment and never logged or shown.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import math
import os
import random
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ..errors import (
    ConfigurationError,
    EndpointError,
    EndpointStatusError,
    EndpointUnreachable,
    MalformedReply,
    MissingDependencyError,
)
from ._base import Completion, Model, ModelRequest, Pricing, Usage, check_allowed

__all__ = ["EndpointStatusError", "EndpointUnreachable", "MalformedReply", "OpenAIModel"]

log = logging.getLogger(__name__)

_LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}
_NO_KEY = "sk-no-key-needed"
_PER_MESSAGE_OVERHEAD = 10
_FIXED_OVERHEAD = 64


class _Secret:
    """Holds the API key so that neither repr, vars() nor logging can show it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def get(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "_Secret('***')"

    __str__ = __repr__


class OpenAIModel(Model):
    """A chat model behind an OpenAI-compatible endpoint, streamed.

    Args:
        model: the model name the endpoint expects.
        base_url: the endpoint, e.g. ``http://127.0.0.1:8080/v1``; None means the SDK's default (OpenAI).
        api_key: the key; by default it is read from the environment variable ``api_key_env``. A local endpoint
            (127.0.0.1, localhost) needs none.
        api_key_env: the environment variable holding the key.
        pricing: price per million input/output tokens and a latency estimate, for routing and budgets.
        name: the name shown in results and routing decisions; defaults to ``model``.
        timeout: seconds one attempt may take, from connecting to the last token.
        max_retries: retries after the first attempt, on 429, 5xx, connection errors and timeouts.
        backoff: the first retry's base delay in seconds; it doubles each retry, with jitter.
        max_backoff: the longest delay; a ``Retry-After`` longer than this is not waited for.
        supports_grammar: the endpoint is llama.cpp and enforces ``ModelRequest.grammar`` (sent as ``grammar``).
        stream_usage: ask for usage in the stream (``stream_options``); switch off for servers that reject it.
        tokenizer: a function counting the tokens of a text with the endpoint's tokenizer (e.g. a local GGUF of the
            same family); without it token counts are estimates and worst cases count one token per byte.
        http_client: an ``httpx2.AsyncClient`` to use (tests inject a ``MockTransport`` this way).
        extra_body: more JSON fields sent with every request.

    Raises:
        ConfigurationError: no API key for a remote endpoint, or a bad setting.
        MissingDependencyError: the ``openai`` extra is not installed.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        pricing: Pricing | None = None,
        name: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        supports_grammar: bool = False,
        stream_usage: bool = True,
        tokenizer: Callable[[str], int] | None = None,
        http_client: Any = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        _import_openai()
        if not model:
            raise ConfigurationError("OpenAIModel needs the endpoint's model name, e.g. model='gpt-4o-mini'")
        if not (timeout > 0 and math.isfinite(timeout)):
            raise ConfigurationError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if max_retries < 0 or backoff < 0 or max_backoff < 0:
            raise ConfigurationError("max_retries, backoff and max_backoff must be >= 0")
        self.model = model
        self.name = name or model
        self.base_url = base_url.rstrip("/") if base_url else None
        self.pricing = pricing or Pricing()
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.supports_grammar = supports_grammar
        self.stream_usage = stream_usage
        self.extra_body = dict(extra_body or {})
        self._tokenizer = tokenizer
        self._http_client = http_client
        key = api_key if api_key is not None else os.environ.get(api_key_env)
        if not key:
            if not self.is_local:
                raise ConfigurationError(
                    f"no API key for {self.base_url or 'the default OpenAI endpoint'}: "
                    f"set the environment variable {api_key_env} (or pass api_key=)"
                )
            key = _NO_KEY
        self._api_key = _Secret(key)
        self.api_key_env = api_key_env
        #: the error of the last failed call, for routers deciding whether the endpoint is offline.
        self.last_error: EndpointError | None = None

    # -- public helpers ------------------------------------------------------------------------------------------
    @property
    def is_local(self) -> bool:
        """Whether the endpoint is on this machine."""
        if not self.base_url:
            return False
        return (urlsplit(self.base_url).hostname or "") in _LOCAL_HOSTS

    def __repr__(self) -> str:
        return f"OpenAIModel(name={self.name!r}, model={self.model!r}, base_url={self.base_url!r})"

    def count_tokens(self, text: str) -> int:
        """Tokens in ``text``: exact with a ``tokenizer``, otherwise an estimate (about four characters a token)."""
        if self._tokenizer is not None:
            return int(self._tokenizer(text))
        return super().count_tokens(text)

    def prompt_token_bound(self, request: ModelRequest) -> int:
        """An upper bound on the prompt tokens of ``request``, used for budget worst cases.

        With a tokenizer it is the exact content count plus a chat-template margin; without one, one token per UTF-8
        byte (no byte-level BPE token is shorter than a byte) plus the margin.
        """
        total = _FIXED_OVERHEAD
        for message in request.messages:
            content = _content_text(message.get("content"))
            counted = self._tokenizer(content) if self._tokenizer is not None else len(content.encode("utf-8"))
            total += _PER_MESSAGE_OVERHEAD + int(counted)
        return total

    async def ping(self) -> bool:
        """Whether the endpoint answers ``GET /models`` within ``timeout`` (one attempt, no retries)."""
        check_allowed(self.name)
        client = self._client()
        try:
            async with asyncio.timeout(self.timeout):
                await client.models.list()
        except Exception as exc:  # noqa: BLE001 - any failure means "not reachable"
            log.info("%s: endpoint not reachable: %s", self.name, type(exc).__name__)
            return False
        finally:
            await self._close(client)
        return True

    async def aclose(self) -> None:
        """Nothing to release: each call opens and closes its own connection (an injected client is its owner's)."""

    # -- the model interface -------------------------------------------------------------------------------------
    async def stream(self, request: ModelRequest) -> AsyncIterator[str | Completion]:
        """Stream the reply: text deltas, then one :class:`Completion` with the server's usage.

        Raises:
            EndpointError: the endpoint failed after all retries, timed out, or sent a malformed reply
                (:class:`MalformedReply`); :class:`EndpointUnreachable` when it could not be reached.
            ModelRequestsBlocked: real model requests are switched off.
        """
        check_allowed(self.name)
        self.last_error = None
        attempt = 0
        client = self._client()
        try:
            while True:
                emitted = False
                try:
                    async for item in self._attempt(client, request):
                        emitted = emitted or isinstance(item, str)
                        yield item
                    return
                except EndpointError as exc:
                    self.last_error = exc
                    delay = self._retry_delay(exc, attempt) if not emitted else None
                    if delay is None:
                        raise
                    attempt += 1
                    log.warning(
                        "%s: attempt %d failed (%s); retrying in %.2f s", self.name, attempt, _describe(exc), delay
                    )
                    await asyncio.sleep(delay)
        finally:
            await self._close(client)

    # -- internals -----------------------------------------------------------------------------------------------
    def _client(self) -> Any:
        """A fresh SDK client for one call (or one that wraps the injected ``http_client``).

        One client per call, closed when the call ends: a client's pooled connections belong to the event loop that
        opened them, and ``run_sync`` makes a new loop per call, so a cached client would leak sockets.
        """
        openai = _import_openai()
        kwargs: dict[str, Any] = {"api_key": self._api_key.get(), "timeout": self.timeout, "max_retries": 0}
        if self.base_url:
            kwargs["base_url"] = self.base_url
        if self._http_client is not None:
            kwargs["http_client"] = self._http_client
        return openai.AsyncOpenAI(**kwargs)

    async def _close(self, client: Any) -> None:
        if self._http_client is None:  # an injected http_client belongs to its owner
            try:
                await client.close()
            except Exception:  # noqa: BLE001 - closing must not mask the call's own outcome
                log.debug("%s: closing the HTTP client failed", self.name, exc_info=True)

    def _payload(self, request: ModelRequest) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in request.messages],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "stream": True,
        }
        if request.stop:
            kwargs["stop"] = list(request.stop)
        if self.stream_usage:
            kwargs["stream_options"] = {"include_usage": True}
        if request.logprobs:
            kwargs["logprobs"] = True
            kwargs["top_logprobs"] = 1  # llama.cpp's server sends no log-probabilities without it
        extra = dict(self.extra_body)
        if request.grammar:
            if self.supports_grammar:
                extra["grammar"] = request.grammar
            else:
                log.debug("%s: endpoint does not enforce grammars; the grammar is not sent", self.name)
        if extra:
            kwargs["extra_body"] = extra
        return kwargs

    async def _attempt(self, client: Any, request: ModelRequest) -> AsyncIterator[str | Completion]:
        openai = _import_openai()
        reply = _Reply(start=time.perf_counter())
        deadline = reply.start + self.timeout
        stream: Any = None
        try:
            async with asyncio.timeout(self.timeout):
                stream = await client.chat.completions.create(**self._payload(request))
            iterator = stream.__aiter__()
            while True:
                try:
                    async with asyncio.timeout(max(0.0, deadline - time.perf_counter())):
                        chunk = await iterator.__anext__()
                except StopAsyncIteration:
                    break
                delta = reply.add(chunk, self.name)
                if delta:
                    yield delta
        except EndpointError:
            raise
        except Exception as exc:  # noqa: BLE001 - a dependency's failure must never leak out unwrapped
            raise self._endpoint_error(openai, exc) from exc
        finally:
            if stream is not None:
                try:
                    await stream.close()
                except Exception:  # noqa: BLE001 - closing a broken stream may fail again; nothing to do
                    log.debug("%s: closing the stream failed", self.name, exc_info=True)
        yield self._completion(request, reply)

    def _endpoint_error(self, openai: Any, exc: Exception) -> EndpointError:
        """The typed, one-line error for a failure of the SDK or the transport during one attempt."""
        if isinstance(exc, openai.APIStatusError):  # never a TimeoutError, so checking it first changes nothing
            return _status_error(self.name, self._where(), exc, self.api_key_env)
        cls: type[EndpointError] = EndpointError
        if isinstance(exc, TimeoutError):
            retryable, message = True, (f"no complete reply within {self.timeout:g} s from {self._where()}; "
                                        "the server is slow or overloaded: raise timeout= or try later")
        elif isinstance(exc, openai.APITimeoutError):
            retryable, message = True, (f"request to {self._where()} timed out after {self.timeout:g} s; "
                                        "raise timeout= or check the server")
        elif isinstance(exc, openai.APIConnectionError):
            cls, retryable = EndpointUnreachable, True
            message = (f"cannot reach {self._where()} ({_cause(exc)}); check the URL and that the server is running, "
                       "or route to the local model")
        elif isinstance(exc, openai.APIResponseValidationError | json.JSONDecodeError | UnicodeDecodeError):
            cls, retryable = MalformedReply, False
            message = (f"{self._where()} sent a body that is not a chat completion ({type(exc).__name__}); "
                       "check that base_url points at an OpenAI-compatible /v1 endpoint")
        elif isinstance(exc, openai.APIError):
            retryable = False
            message = f"{self._where()} reported an error: {_short(getattr(exc, 'message', str(exc)))}"
        else:
            retryable = _is_transport_error(exc)
            cls = EndpointError if retryable else MalformedReply
            message = f"the call to {self._where()} failed: {type(exc).__name__}: {_short(str(exc))}"
        return cls(f"{self.name}: {message}", status=None, retryable=retryable)

    def _completion(self, request: ModelRequest, reply: _Reply) -> Completion:
        """The finished reply (usage bounded when the server reported none); a stream without chunks is malformed."""
        if reply.chunks == 0 or (reply.finish_reason is None and not reply.parts and reply.usage is None):
            raise MalformedReply(
                f"{self.name}: {self._where()} sent no chat-completion chunks; "
                "check that base_url points at an OpenAI-compatible /v1 endpoint",
                status=None,
                retryable=False,
            )
        text = "".join(reply.parts)
        usage = reply.usage
        if usage is None:
            # The server did not report usage (llama.cpp's server does not, when streaming): use upper bounds, so
            # that budgets stay safe; with a tokenizer they are close to the truth.
            counted = self._tokenizer(text) if self._tokenizer is not None else len(text.encode("utf-8"))
            usage = Usage(self.prompt_token_bound(request), min(request.max_tokens, int(counted) + 1), 1)
        mean_logprob = sum(reply.logprobs) / len(reply.logprobs) if reply.logprobs else None
        return Completion(
            text=text,
            usage=usage,
            model=reply.model_name or self.name,
            finish_reason=reply.finish_reason or "stop",
            mean_logprob=mean_logprob,
            ttft_s=reply.ttft,
            elapsed_s=time.perf_counter() - reply.start,
        )

    def _retry_delay(self, exc: EndpointError, attempt: int) -> float | None:
        """Seconds to wait before the next attempt, or None to give up."""
        if not exc.retryable or attempt >= self.max_retries:
            return None
        retry_after = exc.retry_after if isinstance(exc, EndpointStatusError) else None
        if retry_after is not None:
            if retry_after > self.max_backoff:
                log.warning("%s: server asked to wait %.1f s, more than max_backoff; giving up", self.name, retry_after)
                return None
            return float(retry_after)
        base = self.backoff * (2**attempt)
        return float(min(self.max_backoff, base * random.uniform(0.5, 1.5)))  # noqa: S311 - jitter, not crypto

    def _where(self) -> str:
        return self.base_url or "the OpenAI API"


# -- helpers ---------------------------------------------------------------------------------------------------------
def _import_openai() -> Any:
    try:
        import openai
    except ImportError as exc:
        raise MissingDependencyError("openai", "openai") from exc
    return openai


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # multi-part content: count the text parts
        return "".join(str(p.get("text", "")) if isinstance(p, Mapping) else str(p) for p in content)
    return str(content)


@dataclass
class _Reply:
    """What the chunks of one streamed reply add up to."""

    start: float
    parts: list[str] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    usage: Usage | None = None
    finish_reason: str | None = None
    model_name: str = ""
    chunks: int = 0
    ttft: float = 0.0

    def add(self, chunk: Any, name: str) -> str:
        """Takes in one stream chunk (checking its shape); returns its text delta."""
        delta, usage, finish, logprobs, model = _read_chunk(chunk, name)
        self.chunks += 1
        self.model_name = model or self.model_name
        if usage is not None:
            self.usage = usage
        if finish:
            self.finish_reason = finish
        self.logprobs.extend(logprobs)
        if delta:
            if not self.parts:
                self.ttft = time.perf_counter() - self.start
            self.parts.append(delta)
        return delta


def _read_chunk(chunk: Any, name: str) -> tuple[str, Usage | None, str | None, list[float], str]:
    """Pull text, usage, finish reason and log-probabilities out of one stream chunk, checking its shape."""
    choices = getattr(chunk, "choices", None)
    raw_usage = getattr(chunk, "usage", None)
    if choices is None and raw_usage is None:
        raise MalformedReply(
            f"{name}: a stream chunk has neither choices nor usage ({_short(repr(chunk))}); "
            "the endpoint is not OpenAI-compatible",
            status=None,
            retryable=False,
        )
    if choices is not None and not isinstance(choices, list):
        raise MalformedReply(f"{name}: 'choices' is not a list in a stream chunk", status=None, retryable=False)
    usage = None
    if raw_usage is not None:
        prompt = getattr(raw_usage, "prompt_tokens", None)
        completion = getattr(raw_usage, "completion_tokens", None)
        if not isinstance(prompt, int) or not isinstance(completion, int) or prompt < 0 or completion < 0:
            raise MalformedReply(f"{name}: malformed usage in the stream: {_short(repr(raw_usage))}",
                                 status=None, retryable=False)
        usage = Usage(prompt, completion, 1)
    text = ""
    finish: str | None = None
    logprobs: list[float] = []
    for choice in choices or []:
        if getattr(choice, "index", 0) not in (0, None):
            continue
        delta = getattr(choice, "delta", None)
        content = getattr(delta, "content", None) if delta is not None else None
        if content is not None and not isinstance(content, str):
            raise MalformedReply(f"{name}: delta content is not text: {_short(repr(content))}",
                                 status=None, retryable=False)
        text += content or ""
        reason = getattr(choice, "finish_reason", None)
        if isinstance(reason, str) and reason:
            finish = reason
        lp = getattr(choice, "logprobs", None)
        for token in getattr(lp, "content", None) or []:
            value = getattr(token, "logprob", None)
            if isinstance(value, int | float) and math.isfinite(value):
                logprobs.append(float(value))
    model = getattr(chunk, "model", None)
    return text, usage, finish, logprobs, model if isinstance(model, str) else ""


def _status_error(name: str, where: str, exc: Any, key_env: str) -> EndpointStatusError:
    status = int(getattr(exc, "status_code", 0) or 0)
    retryable = status in (408, 409, 429) or status >= 500
    detail = _short(str(getattr(exc, "message", "") or ""))
    if status in (401, 403):
        advice = f"check the API key in ${key_env} and its permissions"
    elif status == 429:
        advice = "the endpoint is rate-limiting: slow down, or raise max_retries/max_backoff"
    elif status >= 500:
        advice = "the server failed; try again later or route to the local model"
    elif status == 404:
        advice = "check base_url and the model name"
    else:
        advice = "check the request (model name, max_tokens, grammar support)"
    headers = getattr(getattr(exc, "response", None), "headers", None)
    return EndpointStatusError(
        f"{name}: HTTP {status} from {where}: {detail}; {advice}",
        status=status,
        retryable=retryable,
        retry_after=_retry_after(headers) if headers is not None else None,
    )


def _retry_after(headers: Any) -> float | None:
    """Seconds from ``Retry-After-Ms`` or ``Retry-After`` (seconds or an HTTP date), if present."""
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000)
        value = headers.get("retry-after")
        if value is None:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            when = email.utils.parsedate_to_datetime(value)
            return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError, OverflowError):
        return None


def _is_transport_error(exc: BaseException) -> bool:
    try:
        import httpx2
    except ImportError:  # pragma: no cover - openai 3 depends on httpx2
        return False
    return isinstance(exc, httpx2.TransportError | OSError)


def _cause(exc: BaseException) -> str:
    cause = exc.__cause__ or exc.__context__
    return type(cause).__name__ if cause is not None else type(exc).__name__


def _describe(exc: EndpointError) -> str:
    return f"HTTP {exc.status}" if exc.status else type(exc).__name__


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
