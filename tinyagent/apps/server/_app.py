"""The ASGI app: admission, the token check and the endpoints, behind the Host/Origin guard."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from ...errors import ConfigurationError, MissingDependencyError, TinyAgentError, UserError
from .._runtime import jsonable, parse_today, result_to_dict
from ._auth import ServerAuth, resolve_auth
from ._body import read_json
from ._guard import RequestGuard
from ._openai import chat_completion, completion_chunks, parse_chat_request
from ._settings import ServerSettings, _HTTPError

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

logger = logging.getLogger("tinyagent.apps.server")

Handler = Callable[["Request"], Awaitable["Response"]]


class _Admission:
    """Counts admitted requests; at most ``max_concurrency`` run, ``max_queue`` wait, the rest are refused."""

    def __init__(self, max_concurrency: int, max_queue: int) -> None:
        self.limit = max_concurrency + max_queue
        self.admitted = 0
        self.running = asyncio.Semaphore(max_concurrency)

    def admit(self) -> _Slot:
        if self.admitted >= self.limit:
            raise _HTTPError(503, "the server is busy (queue full); retry shortly", "server_busy",
                            headers={"Retry-After": "1"})
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


def require_server_deps() -> None:
    """Raise :class:`MissingDependencyError` unless the ``server`` extra is installed."""
    for module, package in (("starlette", "starlette"), ("sse_starlette", "sse-starlette"), ("uvicorn", "uvicorn")):
        try:
            __import__(module)
        except ImportError as exc:
            raise MissingDependencyError(package, "server") from exc


def error_response(exc: _HTTPError) -> Response:
    """The JSON response for an :class:`_HTTPError`."""
    from starlette.responses import JSONResponse

    return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)


def _check_history(history: Any) -> list[dict[str, str]]:
    if not isinstance(history, list):
        raise _HTTPError(400, "'history' must be a list of {role, content} messages", param="history")
    out = []
    for i, message in enumerate(history):
        if (
            not isinstance(message, dict)
            or message.get("role") not in ("user", "assistant")
            or not isinstance(message.get("content"), str)
        ):
            raise _HTTPError(400, f"history[{i}] must be {{'role': 'user'|'assistant', 'content': str}}",
                            param="history")
        out.append({"role": message["role"], "content": message["content"]})
    return out


def _agent_kwargs(data: Mapping[str, Any]) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    today = data.get("today")
    if today is not None:
        if not isinstance(today, str):
            raise _HTTPError(400, "'today' must be a date string like 2026-12-01", param="today")
        try:
            kwargs["today"] = parse_today(today)
        except ConfigurationError as exc:
            raise _HTTPError(400, str(exc), param="today") from exc
    history = data.get("history")
    if history is not None:
        kwargs["history"] = _check_history(history)
    return kwargs


def _query_of(data: Mapping[str, Any]) -> str:
    query = data.get("query")
    if not isinstance(query, str) or not query.strip():
        raise _HTTPError(400, "'query' must be a non-empty string", param="query")
    return query


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


class _Endpoints:
    """The request handlers of one app (one agent, one admission queue, one token)."""

    def __init__(self, agent: Any, settings: ServerSettings, auth: ServerAuth) -> None:
        self.agent = agent
        self.settings = settings
        self.auth = auth
        self.admission = _Admission(settings.max_concurrency, settings.max_queue)
        model = getattr(agent, "model", None)
        self.model_name = settings.model_name or str(getattr(model, "name", "tinyagent"))

    async def _guarded(self, request: Request, handler: Handler) -> Response:
        try:
            self.auth.check(request.headers.get("authorization", ""))
            return await handler(request)
        except _HTTPError as exc:
            return error_response(exc)

    async def _body(self, request: Request) -> dict[str, Any]:
        return await read_json(request, self.settings.max_body_bytes, self.settings.max_json_depth)

    async def _run(self, query: str, kwargs: dict[str, Any]) -> Any:
        timeout_s = self.settings.request_timeout_s
        try:
            async with asyncio.timeout(timeout_s):
                return await self.agent.run(query, **kwargs)
        except TimeoutError as exc:
            raise _HTTPError(504, f"the agent did not finish within {timeout_s:g} s", "timeout",
                            headers={"x-should-retry": "false"}) from exc
        except UserError as exc:
            raise _HTTPError(400, str(exc)) from exc
        except TinyAgentError as exc:
            logger.warning("agent run failed: %s", exc)
            # Steps may already have run (an email sent): a client must not retry on its own.
            raise _HTTPError(500, f"{type(exc).__name__}: {exc}", "agent_error", code="agent_error",
                            headers={"x-should-retry": "false"}) from exc

    async def health(self, request: Request) -> Response:
        from starlette.responses import JSONResponse

        tools = list(getattr(self.agent, "registry", None) or getattr(self.agent, "tools", None) or [])
        return JSONResponse({
            "status": "ok",
            "model": self.model_name,
            "tools": [str(t) for t in tools],
            "queue": {"admitted": self.admission.admitted, "limit": self.admission.limit},
        })

    async def models(self, request: Request) -> Response:
        from starlette.responses import JSONResponse

        async def handler(request: Request) -> Response:
            return JSONResponse({"object": "list", "data": [
                {"id": self.model_name, "object": "model", "created": 0, "owned_by": "tinyagent"}]})
        return await self._guarded(request, handler)

    async def agent_run(self, request: Request) -> Response:
        from starlette.responses import JSONResponse

        async def handler(request: Request) -> Response:
            data = await self._body(request)
            query, kwargs = _query_of(data), _agent_kwargs(data)
            async with self.admission.admit().run():
                result = await self._run(query, kwargs)
            return JSONResponse(result_to_dict(result))
        return await self._guarded(request, handler)

    async def agent_stream(self, request: Request) -> Response:
        from sse_starlette import EventSourceResponse

        async def handler(request: Request) -> Response:
            data = await self._body(request)
            query, kwargs = _query_of(data), _agent_kwargs(data)
            slot = self.admission.admit()

            async def events() -> AsyncIterator[dict[str, str]]:
                try:
                    async with slot.run():
                        async for event in _stream_events(self.agent, query, kwargs, self.settings.request_timeout_s):
                            yield {"event": str(event.get("type", "event")), "data": json.dumps(event)}
                    yield {"event": "done", "data": json.dumps({"type": "done"})}
                finally:
                    slot.release()

            return EventSourceResponse(events(), background=_release_task(slot))
        return await self._guarded(request, handler)

    async def chat_completions(self, request: Request) -> Response:
        from sse_starlette import EventSourceResponse
        from starlette.responses import JSONResponse

        async def handler(request: Request) -> Response:
            chat = parse_chat_request(await self._body(request), self.model_name)
            kwargs = {"history": chat.history} if chat.history else {}
            completion_id, created = f"chatcmpl-{uuid.uuid4().hex[:24]}", int(time.time())
            slot = self.admission.admit()
            if not chat.stream:
                async with slot.run():
                    result = await self._run(chat.query, kwargs)
                return JSONResponse(chat_completion(result, completion_id, created, chat.model))

            async def chunks() -> AsyncIterator[dict[str, str]]:
                try:
                    async with slot.run():
                        events = _stream_events(self.agent, chat.query, kwargs, self.settings.request_timeout_s)
                        async for message in completion_chunks(events, chat, completion_id, created):
                            yield message
                finally:
                    slot.release()

            return EventSourceResponse(chunks(), background=_release_task(slot))
        return await self._guarded(request, handler)


def _release_task(slot: _Slot) -> Any:
    from starlette.background import BackgroundTask

    return BackgroundTask(slot.release)


async def _not_found(request: Request, exc: Exception) -> Response:
    from starlette.exceptions import HTTPException

    status = exc.status_code if isinstance(exc, HTTPException) else 404
    message = f"no route {request.method} {request.url.path}" if status == 404 else str(exc)
    return error_response(_HTTPError(status, message, "not_found" if status == 404 else "invalid_request_error"))


async def _server_error(request: Request, exc: Exception) -> Response:
    logger.exception("unhandled server error")
    return error_response(_HTTPError(500, f"internal error: {type(exc).__name__}", "server_error"))


def create_app(agent: Any, settings: ServerSettings | None = None) -> Starlette:
    """Build the ASGI app around ``agent``.

    Every request must name a local ``Host`` (or an allowed one) and carry no foreign ``Origin``; every endpoint
    but ``/health`` needs the bearer token (see :class:`ServerSettings` for where it comes from).

    Args:
        agent: a :class:`tinyagent.Agent` (anything with ``run`` and ``run_stream`` coroutines).
        settings: token, allowed hosts and origins, admission and limits.

    Returns:
        A Starlette app; serve it with :func:`serve`, :class:`ServerThread` or any ASGI server.

    Raises:
        MissingDependencyError: the ``server`` extra is not installed.
        ConfigurationError: the token file cannot be used.
    """
    require_server_deps()
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.routing import Route

    settings = settings or ServerSettings()
    auth = resolve_auth(settings)
    if auth.token is None:
        logger.warning("authentication is off (no_auth): any local process or user can run the agent")
    else:
        logger.info("%s", auth.describe())
    endpoints = _Endpoints(agent, settings, auth)
    routes = [
        Route("/health", endpoints.health, methods=["GET"]),
        Route("/v1/models", endpoints.models, methods=["GET"]),
        Route("/v1/agent/run", endpoints.agent_run, methods=["POST"]),
        Route("/v1/agent/stream", endpoints.agent_stream, methods=["POST"]),
        Route("/v1/chat/completions", endpoints.chat_completions, methods=["POST"]),
    ]
    guard = Middleware(RequestGuard, allowed_hosts=tuple(settings.allowed_hosts),
                       allowed_origins=tuple(settings.allowed_origins))
    app = Starlette(routes=routes, middleware=[guard],
                    exception_handlers={404: _not_found, 405: _not_found, 500: _server_error})
    app.state.auth = auth
    return app
