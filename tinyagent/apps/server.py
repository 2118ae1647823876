"""An HTTP server for desktop apps: the agent behind a streaming endpoint and an OpenAI-compatible chat endpoint.

Endpoints (all JSON; localhost by default)::

    GET  /health                  liveness, model and tool names (no token needed)
    GET  /v1/models               the one model, OpenAI style
    POST /v1/agent/run            {"query", "today"?, "history"?} -> the run result (answer, plans, steps, usage)
    POST /v1/agent/stream         same body -> server-sent events, one per typed run event, then "done"
    POST /v1/chat/completions     OpenAI chat completions (``stream`` too); the agent plans and executes with its
                                  registered tools; the reply carries a ``tinyagent`` field with plans and steps

A bearer token (``token=`` or ``TINYAGENT_SERVER_TOKEN``) guards every endpoint but ``/health``. Requests are
admitted up to ``max_concurrency`` running plus ``max_queue`` waiting; beyond that the server answers 503 at once
rather than hanging. Bodies over ``max_body_bytes`` get 413, malformed ones 400, with an OpenAI-style JSON error.

Needs the ``server`` extra (starlette, uvicorn, sse-starlette), imported lazily.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError, MissingDependencyError, TinyAgentError, UserError
from ._runtime import jsonable, parse_today, result_to_dict

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

__all__ = ["ServerSettings", "ServerThread", "create_app", "serve"]

logger = logging.getLogger(__name__)

TOKEN_ENV = "TINYAGENT_SERVER_TOKEN"


@dataclass(frozen=True)
class ServerSettings:
    """How the server admits requests.

    Attributes:
        token: the bearer token every request (but ``/health``) must carry; None disables the check.
        max_concurrency: agent runs at the same time (the agent serialises model calls itself).
        max_queue: requests allowed to wait for a free run slot; one more gets 503.
        max_body_bytes: the largest request body accepted (413 beyond).
        request_timeout_s: seconds a run may take before the request gets 504.
        model_name: the model name reported to OpenAI clients (default: the agent model's name).
    """

    token: str | None = None
    max_concurrency: int = 1
    max_queue: int = 32
    max_body_bytes: int = 1_000_000
    request_timeout_s: float = 300.0
    model_name: str | None = None

    def __post_init__(self) -> None:
        if self.max_concurrency < 1 or self.max_queue < 0 or self.max_body_bytes < 1:
            raise ConfigurationError("max_concurrency must be >= 1, max_queue >= 0 and max_body_bytes >= 1")
        if self.token is not None and not self.token.strip():
            raise ConfigurationError("the server token is empty; pass a non-empty token or none at all")


class _HTTPError(Exception):
    """An error answered with an OpenAI-style JSON body."""

    def __init__(
        self, status: int, message: str, kind: str = "invalid_request_error", headers: Mapping[str, str] | None = None
    ) -> None:
        self.status = status
        self.message = message
        self.kind = kind
        self.headers = dict(headers or {})
        super().__init__(message)


class _Admission:
    """Counts admitted requests; at most ``max_concurrency`` run, ``max_queue`` wait, the rest are refused."""

    def __init__(self, max_concurrency: int, max_queue: int) -> None:
        self.limit = max_concurrency + max_queue
        self.admitted = 0
        self.running = asyncio.Semaphore(max_concurrency)

    def admit(self) -> _Slot:
        if self.admitted >= self.limit:
            raise _HTTPError(503, "the server is busy (queue full); retry shortly", "server_busy", {"Retry-After": "1"})
        self.admitted += 1
        return _Slot(self)


class _Slot:
    def __init__(self, admission: _Admission) -> None:
        self._admission = admission
        self._held = True

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        try:
            async with self._admission.running:
                yield
        finally:
            self.release()

    def release(self) -> None:
        if self._held:
            self._held = False
            self._admission.admitted -= 1


def _require_server_deps() -> None:
    for module, package in (("starlette", "starlette"), ("sse_starlette", "sse-starlette"), ("uvicorn", "uvicorn")):
        try:
            __import__(module)
        except ImportError as exc:
            raise MissingDependencyError(package, "server") from exc


def create_app(agent: Any, settings: ServerSettings | None = None) -> Starlette:
    """Build the ASGI app around ``agent``.

    Args:
        agent: a :class:`tinyagent.Agent` (anything with ``run`` and ``run_stream`` coroutines).
        settings: admission, token and limits; the token defaults to ``TINYAGENT_SERVER_TOKEN`` when set.

    Returns:
        A Starlette app; serve it with :func:`serve`, :class:`ServerThread` or any ASGI server.

    Raises:
        MissingDependencyError: the ``server`` extra is not installed.
    """
    _require_server_deps()
    from sse_starlette import EventSourceResponse
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    if settings is None:
        settings = ServerSettings(token=os.environ.get(TOKEN_ENV) or None)
    admission = _Admission(settings.max_concurrency, settings.max_queue)
    model = getattr(agent, "model", None)
    model_name = settings.model_name or str(getattr(model, "name", "tinyagent"))

    def error_response(exc: _HTTPError) -> Response:
        body = {"error": {"message": exc.message, "type": exc.kind, "code": exc.status}}
        return JSONResponse(body, status_code=exc.status, headers=exc.headers)

    def check_token(request: Request) -> None:
        if settings.token is None:
            return
        header = request.headers.get("authorization", "")
        scheme, _, given = header.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), settings.token.encode()):
            raise _HTTPError(401, "missing or wrong bearer token; send 'Authorization: Bearer <token>'",
                             "authentication_error", {"WWW-Authenticate": "Bearer"})

    async def read_json(request: Request) -> dict[str, Any]:
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > settings.max_body_bytes:
            raise _HTTPError(413, f"the body is over {settings.max_body_bytes} bytes", "request_too_large")
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > settings.max_body_bytes:
                raise _HTTPError(413, f"the body is over {settings.max_body_bytes} bytes", "request_too_large")
        try:
            data = json.loads(bytes(body))
        except ValueError as exc:
            raise _HTTPError(400, f"the body is not valid JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise _HTTPError(400, f"the body must be a JSON object, got {type(data).__name__}")
        return data

    def agent_kwargs(data: Mapping[str, Any]) -> dict[str, Any]:
        kwargs: dict[str, Any] = {}
        today = data.get("today")
        if today is not None:
            if not isinstance(today, str):
                raise _HTTPError(400, "'today' must be a date string like 2026-12-01")
            try:
                kwargs["today"] = parse_today(today)
            except ConfigurationError as exc:
                raise _HTTPError(400, str(exc)) from exc
        history = data.get("history")
        if history is not None:
            kwargs["history"] = _check_history(history)
        return kwargs

    def query_of(data: Mapping[str, Any]) -> str:
        query = data.get("query")
        if not isinstance(query, str) or not query.strip():
            raise _HTTPError(400, "'query' must be a non-empty string")
        return query

    async def guarded(request: Request, handler: Any) -> Response:
        try:
            check_token(request)
            response: Response = await handler(request)
            return response
        except _HTTPError as exc:
            return error_response(exc)

    async def run_agent(query: str, kwargs: dict[str, Any]) -> Any:
        try:
            async with asyncio.timeout(settings.request_timeout_s):
                return await agent.run(query, **kwargs)
        except TimeoutError as exc:
            raise _HTTPError(504, f"the agent did not finish within {settings.request_timeout_s:g} s",
                             "timeout") from exc
        except UserError as exc:
            raise _HTTPError(400, str(exc)) from exc
        except TinyAgentError as exc:
            logger.warning("agent run failed: %s", exc)
            raise _HTTPError(500, f"{type(exc).__name__}: {exc}", "agent_error") from exc

    async def health(request: Request) -> Response:
        tools = list(getattr(agent, "registry", None) or getattr(agent, "tools", None) or [])
        return JSONResponse({
            "status": "ok",
            "model": model_name,
            "tools": [str(t) for t in tools],
            "queue": {"admitted": admission.admitted, "limit": admission.limit},
        })

    async def models(request: Request) -> Response:
        async def handler(request: Request) -> Response:
            return JSONResponse({"object": "list", "data": [
                {"id": model_name, "object": "model", "created": 0, "owned_by": "tinyagent"}]})
        return await guarded(request, handler)

    async def agent_run(request: Request) -> Response:
        async def handler(request: Request) -> Response:
            data = await read_json(request)
            query, kwargs = query_of(data), agent_kwargs(data)
            slot = admission.admit()
            async with slot.run():
                result = await run_agent(query, kwargs)
            return JSONResponse(result_to_dict(result))
        return await guarded(request, handler)

    async def agent_stream(request: Request) -> Response:
        async def handler(request: Request) -> Response:
            data = await read_json(request)
            query, kwargs = query_of(data), agent_kwargs(data)
            slot = admission.admit()

            async def events() -> AsyncIterator[dict[str, str]]:
                try:
                    async with slot.run():
                        async for event in _stream_events(agent, query, kwargs, settings.request_timeout_s):
                            yield {"event": str(event.get("type", "event")), "data": json.dumps(event)}
                    yield {"event": "done", "data": json.dumps({"type": "done"})}
                finally:
                    slot.release()

            return EventSourceResponse(events(), background=_release_task(slot))
        return await guarded(request, handler)

    async def chat_completions(request: Request) -> Response:
        async def handler(request: Request) -> Response:
            data = await read_json(request)
            query, history = _chat_query(data)
            kwargs = {"history": history} if history else {}
            stream = data.get("stream", False)
            if not isinstance(stream, bool):
                raise _HTTPError(400, "'stream' must be true or false")
            completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
            created = int(time.time())
            requested_model = str(data.get("model") or model_name)
            slot = admission.admit()
            if not stream:
                async with slot.run():
                    result = await run_agent(query, kwargs)
                return JSONResponse(_chat_completion(result, completion_id, created, requested_model))

            async def chunks() -> AsyncIterator[dict[str, str]]:
                def chunk(delta: dict[str, Any], finish: str | None = None, extra: Any = None) -> dict[str, str]:
                    body: dict[str, Any] = {
                        "id": completion_id, "object": "chat.completion.chunk", "created": created,
                        "model": requested_model,
                        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
                    }
                    if extra is not None:
                        body["tinyagent"] = extra
                    return {"data": json.dumps(body)}

                try:
                    yield chunk({"role": "assistant", "content": ""})
                    async with slot.run():
                        async for event in _stream_events(agent, query, kwargs, settings.request_timeout_s):
                            if event.get("type") == "error":
                                yield {"data": json.dumps({"error": {"message": event.get("message", ""),
                                                                     "type": "agent_error"}})}
                                break
                            if event.get("type") == "answer":
                                yield chunk({"content": _answer_text(event)}, extra=event)
                            else:
                                yield chunk({}, extra=event)
                    yield chunk({}, finish="stop")
                    yield {"data": "[DONE]"}
                finally:
                    slot.release()

            return EventSourceResponse(chunks(), background=_release_task(slot))
        return await guarded(request, handler)

    async def not_found(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 404
        message = f"no route {request.method} {request.url.path}" if status == 404 else str(exc)
        return error_response(_HTTPError(status, message, "not_found" if status == 404 else "invalid_request_error"))

    async def server_error(request: Request, exc: Exception) -> Response:
        logger.exception("unhandled server error")
        return error_response(_HTTPError(500, f"internal error: {type(exc).__name__}", "server_error"))

    routes = [
        Route("/health", health, methods=["GET"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/v1/agent/run", agent_run, methods=["POST"]),
        Route("/v1/agent/stream", agent_stream, methods=["POST"]),
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
    ]
    return Starlette(routes=routes, exception_handlers={404: not_found, 405: not_found, 500: server_error})


def _release_task(slot: _Slot) -> Any:
    from starlette.background import BackgroundTask

    return BackgroundTask(slot.release)


def _check_history(history: Any) -> list[dict[str, str]]:
    if not isinstance(history, list):
        raise _HTTPError(400, "'history' must be a list of {role, content} messages")
    out = []
    for i, message in enumerate(history):
        if (
            not isinstance(message, dict)
            or message.get("role") not in ("user", "assistant")
            or not isinstance(message.get("content"), str)
        ):
            raise _HTTPError(400, f"history[{i}] must be {{'role': 'user'|'assistant', 'content': str}}")
        out.append({"role": message["role"], "content": message["content"]})
    return out


def _content_text(content: Any, index: int) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                raise _HTTPError(400, f"messages[{index}].content: only text parts are supported")
            parts.append(part["text"])
        return "".join(parts)
    if content is None:
        return ""
    raise _HTTPError(400, f"messages[{index}].content must be a string or a list of text parts")


def _chat_query(data: Mapping[str, Any]) -> tuple[str, list[dict[str, str]]]:
    """The last user message is the query; earlier user/assistant turns are the history."""
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _HTTPError(400, "'messages' must be a non-empty list")
    turns: list[dict[str, str]] = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise _HTTPError(400, f"messages[{i}] must be an object with a 'role'")
        role = message["role"]
        if role in ("user", "assistant"):
            turns.append({"role": role, "content": _content_text(message.get("content"), i)})
        elif role not in ("system", "developer", "tool"):
            raise _HTTPError(400, f"messages[{i}].role {role!r} is not one of system, user, assistant, tool")
    last_user = max((i for i, t in enumerate(turns) if t["role"] == "user"), default=None)
    if last_user is None or not turns[last_user]["content"].strip():
        raise _HTTPError(400, "the conversation has no non-empty user message to answer")
    return turns[last_user]["content"], turns[:last_user]


def _chat_completion(result: Any, completion_id: str, created: int, model: str) -> dict[str, Any]:
    details = result_to_dict(result)
    usage = details["usage"]
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": details["answer"] or ""},
            "finish_reason": "stop",
            "logprobs": None,
        }],
        "usage": {
            "prompt_tokens": usage["input_tokens"],
            "completion_tokens": usage["output_tokens"],
            "total_tokens": usage["input_tokens"] + usage["output_tokens"],
        },
        "tinyagent": details,
    }


def _answer_text(event: Mapping[str, Any]) -> str:
    for key in ("answer", "text", "content"):
        value = event.get(key)
        if isinstance(value, str):
            return value
    return ""


async def _stream_events(
    agent: Any, query: str, kwargs: dict[str, Any], timeout_s: float
) -> AsyncIterator[dict[str, Any]]:
    """The agent's run events as JSON dicts; a failure becomes one ``error`` event."""
    try:
        async with asyncio.timeout(timeout_s):
            async for event in agent.run_stream(query, **kwargs):
                data = event.to_dict() if hasattr(event, "to_dict") else jsonable(event)
                yield jsonable(data)
    except TimeoutError:
        yield {"type": "error", "message": f"the agent did not finish within {timeout_s:g} s"}
    except TinyAgentError as exc:
        yield {"type": "error", "message": f"{type(exc).__name__}: {exc}"}


class ServerThread:
    """Run the app with uvicorn in a background thread (tests, or a desktop app hosting the server in-process).

    Use as a context manager::

        with ServerThread(create_app(agent)) as server:
            httpx2.get(server.url + "/health")

    Args:
        app: the ASGI app.
        host: the interface; 127.0.0.1 by default.
        port: the port; 0 picks a free one.
    """

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0) -> None:
        import uvicorn

        self._server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off"))
        self._thread = threading.Thread(target=self._server.run, name="tinyagent-server", daemon=True)
        self.host = host
        self.port = port

    @property
    def url(self) -> str:
        """``http://host:port``."""
        return f"http://{self.host}:{self.port}"

    def start(self, timeout_s: float = 20.0) -> ServerThread:
        """Start serving and wait until the socket is bound.

        Raises:
            ConfigurationError: the server did not start (port in use, bad host).
        """
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise ConfigurationError(f"the server did not start on {self.host}:{self.port}")
            time.sleep(0.02)
        sockets = [s for srv in self._server.servers for s in srv.sockets]
        if sockets:
            self.port = int(sockets[0].getsockname()[1])
        return self

    def stop(self) -> None:
        """Stop serving and join the thread."""
        self._server.should_exit = True
        self._thread.join(timeout=10)

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def serve(
    agent: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    settings: ServerSettings | None = None,
    log_level: str = "info",
) -> None:
    """Serve ``agent`` until interrupted (blocking).

    Raises:
        MissingDependencyError: the ``server`` extra is not installed.
    """
    _require_server_deps()
    import uvicorn

    if host not in ("127.0.0.1", "localhost", "::1"):
        logger.warning("serving on %s: the agent's tools will be reachable from other machines", host)
    uvicorn.run(create_app(agent, settings), host=host, port=port, log_level=log_level)
