"""OpenAIModel: streaming, usage, grammar, log-probabilities, retries, timeouts and faults, never leaking the key.

Unit tests inject an ``httpx2.MockTransport``; the fault tests run a real HTTP server on 127.0.0.1 (``FaultServer``);
the slow tests run the real ``llama_cpp.server`` with SmolLM2-135M as the "cloud".
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

pytest.importorskip("openai", reason="the openai extra is not installed: pip install 'tinyagent[openai]'")
httpx2 = pytest.importorskip("httpx2")

from llama_server import FaultServer, LlamaServer, free_port, llama_server_fixture, ok_stream, smollm2_path  # noqa: E402

import tinyagent.models  # noqa: E402
from tinyagent.errors import (  # noqa: E402
    ConfigurationError,
    EndpointError,
    MissingDependencyError,
    ModelRequestsBlocked,
)
from tinyagent.models import Completion, ModelRequest, OpenAIModel, Pricing  # noqa: E402
from tinyagent.models._openai import EndpointStatusError, EndpointUnreachable, MalformedReply  # noqa: E402

# These drive the real OpenAIModel against a mock transport or a local fault server, so real requests stay on.
pytestmark = pytest.mark.real_model

SECRET = "sk-test-DO-NOT-LEAK-0123456789"
REQ = ModelRequest(messages=[{"role": "user", "content": "hello"}], max_tokens=16)

Handler = Callable[[Any], Any]


def mock_model(handler: Handler, **kwargs: Any) -> OpenAIModel:
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    defaults: dict[str, Any] = {"base_url": "http://127.0.0.1:1/v1", "api_key": SECRET, "backoff": 0.01}
    return OpenAIModel("test-model", http_client=client, **(defaults | kwargs))


def sse_response(body: bytes = b"") -> Any:
    return httpx2.Response(200, content=body or ok_stream(), headers={"content-type": "text/event-stream"})


async def collect(model: OpenAIModel, request: ModelRequest = REQ) -> tuple[list[str], Completion]:
    deltas: list[str] = []
    final: Completion | None = None
    async for item in model.stream(request):
        if isinstance(item, Completion):
            final = item
        else:
            deltas.append(item)
    assert final is not None
    return deltas, final


# -- the happy path ----------------------------------------------------------------------------------------------
async def test_stream_yields_deltas_then_a_completion_with_server_usage_and_logprobs() -> None:
    seen: list[Any] = []

    def handler(request: Any) -> Any:
        seen.append(request)
        return sse_response(ok_stream("one two three", prompt_tokens=11))

    model = mock_model(handler, pricing=Pricing(1.0, 2.0))
    deltas, final = await collect(model, ModelRequest(messages=REQ.messages, max_tokens=16, logprobs=True,
                                                      stop=("<END>",), grammar='root ::= "x"'))
    assert deltas == ["one", " two", " three"]
    assert final.text == "one two three"
    assert (final.usage.input_tokens, final.usage.output_tokens) == (11, 3)
    assert final.mean_logprob == pytest.approx(-0.25)
    assert final.finish_reason == "stop"
    body = json.loads(seen[0].content)
    assert body["model"] == "test-model"
    assert body["stream"] is True
    assert body["max_tokens"] == 16
    assert body["stop"] == ["<END>"]
    assert body["stream_options"] == {"include_usage": True}
    assert body["logprobs"] is True and body["top_logprobs"] == 1
    assert "grammar" not in body  # supports_grammar is off by default
    assert seen[0].headers["authorization"] == f"Bearer {SECRET}"
    await model.aclose()


async def test_grammar_is_sent_to_a_llama_cpp_endpoint() -> None:
    bodies: list[dict[str, Any]] = []

    def handler(request: Any) -> Any:
        bodies.append(json.loads(request.content))
        return sse_response()

    model = mock_model(handler, supports_grammar=True, stream_usage=False)
    await model.complete(ModelRequest(messages=REQ.messages, grammar='root ::= "yes" | "no"'))
    assert bodies[0]["grammar"] == 'root ::= "yes" | "no"'
    assert "stream_options" not in bodies[0]


async def test_missing_usage_falls_back_to_upper_bounds() -> None:
    base = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    chunks = [
        {**base, "choices": [{"index": 0, "delta": {"content": "abcdefgh"}, "finish_reason": "stop"}]},
    ]
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks).encode() + b"data: [DONE]\n\n"
    model = mock_model(lambda r: sse_response(body))
    request = ModelRequest(messages=[{"role": "user", "content": "ünïcode prompt"}], max_tokens=100)
    final = await model.complete(request)
    assert final.usage.input_tokens == model.prompt_token_bound(request)
    assert final.usage.input_tokens >= len("ünïcode prompt".encode())
    assert final.usage.output_tokens == 9  # one token per byte, plus one: an upper bound
    counted = mock_model(lambda r: sse_response(body), tokenizer=lambda s: len(s.split()) or 1)
    assert (await counted.complete(request)).usage.output_tokens == 2


# -- the key ----------------------------------------------------------------------------------------------------
async def test_api_key_comes_from_the_environment_and_never_shows(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("MY_KEY_VAR", SECRET)
    headers: list[str] = []

    def handler(request: Any) -> Any:
        headers.append(request.headers["authorization"])
        if len(headers) == 1:
            return httpx2.Response(401, json={"error": {"message": "bad key"}})
        return sse_response()

    caplog.set_level(logging.DEBUG)
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    model = OpenAIModel("m", base_url="https://api.example.invalid/v1", api_key_env="MY_KEY_VAR", http_client=client)
    with pytest.raises(EndpointError) as info:
        await model.complete(REQ)
    final = await model.complete(REQ)
    assert headers == [f"Bearer {SECRET}"] * 2
    assert "$MY_KEY_VAR" in str(info.value)
    for text in (repr(model), str(vars(model)), str(info.value), caplog.text, repr(final)):
        assert SECRET not in text


def test_a_remote_endpoint_without_a_key_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="set the environment variable OPENAI_API_KEY"):
        OpenAIModel("gpt", base_url="https://api.example.invalid/v1")
    assert OpenAIModel("local", base_url="http://127.0.0.1:8080/v1").is_local  # no key needed on this machine


def test_bad_settings_are_rejected() -> None:
    with pytest.raises(ConfigurationError, match="timeout"):
        OpenAIModel("m", base_url="http://127.0.0.1:1/v1", timeout=0)
    with pytest.raises(ConfigurationError, match="model name"):
        OpenAIModel("", base_url="http://127.0.0.1:1/v1")


def test_missing_openai_extra_names_the_pip_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(MissingDependencyError, match=r"tinyagent\[openai\]"):
        OpenAIModel("m", base_url="http://127.0.0.1:1/v1")


async def test_requests_are_blocked_when_real_models_are_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tinyagent.models, "ALLOW_MODEL_REQUESTS", False)
    calls: list[Any] = []
    model = mock_model(lambda r: calls.append(r) or sse_response())
    with pytest.raises(ModelRequestsBlocked):
        await model.complete(REQ)
    assert calls == []


# -- retries and failures ------------------------------------------------------------------------------------------
async def test_429_is_retried_honouring_retry_after() -> None:
    times: list[float] = []

    def handler(request: Any) -> Any:
        times.append(time.perf_counter())
        if len(times) == 1:
            return httpx2.Response(429, json={"error": {"message": "slow down"}}, headers={"retry-after": "0.3"})
        return sse_response()

    final = await mock_model(handler).complete(REQ)
    assert final.text == "hello world"
    assert len(times) == 2
    assert times[1] - times[0] >= 0.29


async def test_5xx_is_retried_with_backoff_then_raised() -> None:
    calls: list[Any] = []

    def handler(request: Any) -> Any:
        calls.append(request)
        return httpx2.Response(503, text="unavailable")

    model = mock_model(handler, max_retries=2)
    with pytest.raises(EndpointStatusError) as info:
        await model.complete(REQ)
    assert len(calls) == 3
    assert info.value.status == 503 and info.value.retryable
    assert "try again later" in str(info.value)
    assert model.last_error is info.value


async def test_4xx_other_than_429_is_not_retried() -> None:
    calls: list[Any] = []

    def handler(request: Any) -> Any:
        calls.append(request)
        return httpx2.Response(400, json={"error": {"message": "bad request"}})

    with pytest.raises(EndpointError) as info:
        await mock_model(handler).complete(REQ)
    assert len(calls) == 1
    assert info.value.status == 400 and not info.value.retryable


async def test_a_retry_after_longer_than_max_backoff_is_not_waited_for() -> None:
    calls: list[Any] = []

    def handler(request: Any) -> Any:
        calls.append(request)
        return httpx2.Response(429, json={}, headers={"retry-after": "3600"})

    start = time.perf_counter()
    with pytest.raises(EndpointError) as info:
        await mock_model(handler, max_backoff=1).complete(REQ)
    assert time.perf_counter() - start < 1
    assert len(calls) == 1 and info.value.status == 429


def test_backoff_grows_exponentially_with_jitter() -> None:
    model = mock_model(lambda r: sse_response(), backoff=1.0, max_backoff=100, max_retries=5)
    error = EndpointError("x", status=500, retryable=True)
    delays = [model._retry_delay(error, attempt) for attempt in range(5)]
    for attempt, delay in enumerate(delays):
        assert delay is not None
        assert 0.5 * 2**attempt <= delay <= 1.5 * 2**attempt
    assert model._retry_delay(error, 5) is None
    assert model._retry_delay(EndpointError("x", status=400, retryable=False), 0) is None


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b'{"choices": [ {"delta": ', "application/json"),  # truncated JSON, not a stream
        (b"data: {not json\n\ndata: [DONE]\n\n", "text/event-stream"),  # a stream of garbage
        (b'data: {"foo": 1}\n\ndata: [DONE]\n\n', "text/event-stream"),  # JSON of the wrong shape
        (b'data: {"choices": "nope"}\n\ndata: [DONE]\n\n', "text/event-stream"),
        (b"<html>502 bad gateway</html>", "text/html"),
    ],
)
async def test_a_malformed_reply_is_an_endpoint_error_never_a_crash(body: bytes, content_type: str) -> None:
    calls: list[Any] = []

    def handler(request: Any) -> Any:
        calls.append(request)
        return httpx2.Response(200, content=body, headers={"content-type": content_type})

    with pytest.raises(MalformedReply, match=r"not|no chat-completion") as info:
        await mock_model(handler).complete(REQ)
    assert info.value.status is None and not info.value.retryable
    assert len(calls) == 1


async def test_any_transport_exception_is_wrapped() -> None:
    def refuse(request: Any) -> Any:
        raise httpx2.ConnectError("refused", request=request)

    with pytest.raises(EndpointUnreachable, match="cannot reach"):
        await mock_model(refuse, max_retries=1).complete(REQ)

    def boom(request: Any) -> Any:
        raise RuntimeError("a bug in a proxy")

    with pytest.raises(EndpointError):
        await mock_model(boom, max_retries=0).complete(REQ)


async def test_a_slow_endpoint_times_out_and_is_retried() -> None:
    calls: list[Any] = []

    async def handler(request: Any) -> Any:
        calls.append(request)
        if len(calls) == 1:
            await asyncio.sleep(5)
        return sse_response()

    start = time.perf_counter()
    final = await mock_model(handler, timeout=0.3).complete(REQ)
    assert final.text == "hello world"
    assert len(calls) == 2
    assert time.perf_counter() - start < 2


class _BreakingStream(httpx2.AsyncByteStream):  # type: ignore[misc,name-defined]
    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield ok_stream("partial answer").split(b"\n\n")[0] + b"\n\n"
        raise httpx2.ReadError("connection reset")


async def test_a_failure_after_text_was_streamed_is_not_retried() -> None:
    calls: list[Any] = []

    def handler(request: Any) -> Any:
        calls.append(request)
        return httpx2.Response(200, stream=_BreakingStream(), headers={"content-type": "text/event-stream"})

    deltas: list[str] = []
    with pytest.raises(EndpointError):
        async for item in mock_model(handler).stream(REQ):
            if isinstance(item, str):
                deltas.append(item)
    assert deltas == ["partial"]
    assert len(calls) == 1  # the text already went out: a retry would duplicate it


def test_prompt_token_bound_is_an_upper_bound_with_margin() -> None:
    model = mock_model(lambda r: sse_response())
    request = ModelRequest(messages=[{"role": "system", "content": "abc"}, {"role": "user", "content": "déf"}])
    assert model.prompt_token_bound(request) == 64 + 2 * 10 + 3 + 4
    tokenized = mock_model(lambda r: sse_response(), tokenizer=lambda s: 1)
    assert tokenized.prompt_token_bound(request) == 64 + 2 * 10 + 2
    assert tokenized.count_tokens("anything at all") == 1


# -- real servers on 127.0.0.1 -------------------------------------------------------------------------------------
def fault_model(server: FaultServer, **kwargs: Any) -> OpenAIModel:
    defaults: dict[str, Any] = {"api_key": SECRET, "backoff": 0.01, "timeout": 10.0}
    return OpenAIModel("fault", base_url=server.base_url, **(defaults | kwargs))


async def test_server_down_is_unreachable_and_ping_says_so() -> None:
    model = OpenAIModel("m", base_url=f"http://127.0.0.1:{free_port()}/v1", backoff=0.01, max_retries=1, timeout=5)
    start = time.perf_counter()
    with pytest.raises(EndpointUnreachable) as info:
        await model.complete(REQ)
    assert info.value.retryable and info.value.status is None
    assert time.perf_counter() - start < 5
    assert await model.ping() is False
    await model.aclose()


@pytest.mark.parametrize(
    ("script", "error", "status", "requests"),
    [
        (["500"], EndpointStatusError, 500, 3),
        (["429"], EndpointStatusError, 429, 3),
        (["badjson"], MalformedReply, None, 1),
        (["garbage-sse"], MalformedReply, None, 1),
        (["drop"], EndpointError, None, 3),
    ],
)
async def test_fault_server_failures(script: list[str], error: type[EndpointError], status: int | None,
                                     requests: int) -> None:
    async with FaultServer(script) as server:
        model = fault_model(server, max_retries=2)
        with pytest.raises(error) as info:
            await model.complete(REQ)
        await model.aclose()
    assert info.value.status == status
    assert len(server.requests) == requests


async def test_fault_server_429_then_success_is_retried() -> None:
    async with FaultServer(["429", "500", "ok"], retry_after="0.2") as server:
        model = fault_model(server, max_retries=3)
        final = await model.complete(REQ)
        assert await model.ping() is True
        await model.aclose()
    assert final.text == "hello world"
    assert final.usage.input_tokens == 7
    assert len(server.requests) == 3
    assert server.headers_seen[0]["authorization"] == f"Bearer {SECRET}"


async def test_fault_server_slow_reply_times_out() -> None:
    async with FaultServer(["slow"], slow_s=3.0) as server:
        model = fault_model(server, timeout=0.5, max_retries=1)
        start = time.perf_counter()
        with pytest.raises(EndpointError, match="timeout|timed out|within") as info:
            await model.complete(REQ)
        await model.aclose()
    assert info.value.retryable
    assert len(server.requests) == 2
    assert time.perf_counter() - start < 2.5


# -- the real llama_cpp.server -------------------------------------------------------------------------------------
smol_server = llama_server_fixture(smollm2_path)


@pytest.mark.slow
async def test_real_server_streams_text_and_usage(smol_server: LlamaServer) -> None:
    model = OpenAIModel(smol_server.model, base_url=smol_server.base_url, supports_grammar=True, timeout=120,
                        name="smollm2-server")
    request = ModelRequest(messages=[{"role": "user", "content": "Name a colour."}], max_tokens=12, logprobs=True)
    deltas, final = await collect(model, request)
    await model.aclose()
    assert len(deltas) >= 1
    assert final.text == "".join(deltas)
    assert 1 <= final.usage.output_tokens <= 12
    assert final.usage.input_tokens >= 10
    assert final.mean_logprob is not None and final.mean_logprob < 0
    assert final.finish_reason in ("stop", "length")


@pytest.mark.slow
async def test_real_server_enforces_the_grammar(smol_server: LlamaServer) -> None:
    model = OpenAIModel(smol_server.model, base_url=smol_server.base_url, supports_grammar=True, timeout=120)
    grammar = 'root ::= ("yes" | "no") "."'
    for question in ("Is water wet?", "Write a poem about the sea."):
        final = await model.complete(
            ModelRequest(messages=[{"role": "user", "content": question}], grammar=grammar, max_tokens=8)
        )
        assert final.text in ("yes.", "no.")
    assert await model.ping() is True
    await model.aclose()
