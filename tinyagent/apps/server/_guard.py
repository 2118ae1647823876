"""What keeps web pages out: the ``Host`` check (DNS rebinding) and the ``Origin`` check (CSRF), with CORS for
the origins that are allowed.

A page on any site can make the browser send a "simple" request (``fetch(url, {mode: "no-cors"})``) to a
localhost port with no preflight, and after a DNS rebinding it can even read the answers. Browsers always send
``Origin`` on cross-origin POSTs and the page's own name in ``Host`` after a rebinding, so refusing foreign values of
both, before any routing, shuts both doors. Requests without ``Origin`` (curl, the openai SDK, desktop apps) pass.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from ._settings import LOOPBACK_HOSTS, _HTTPError, normalize_host, normalize_origin

logger = logging.getLogger("tinyagent.apps.server")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_PREFLIGHT_HEADERS = {
    "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
    "Access-Control-Allow-Headers": "Authorization, Content-Type",
    "Access-Control-Max-Age": "600",
}


def _shown(value: str) -> str:
    """A header value fit for a message or a log line (attacker-controlled: quoted and cut short)."""
    return repr(value[:80])


class RequestGuard:
    """ASGI middleware: refuse foreign ``Host`` and ``Origin`` headers (403), answer CORS preflights.

    Args:
        app: the wrapped ASGI app.
        allowed_hosts: extra ``Host`` names (localhost, 127.0.0.1 and [::1] are always allowed); ``"*"`` is any.
        allowed_origins: origins allowed to call cross-origin (none by default).
    """

    def __init__(self, app: ASGIApp, allowed_hosts: tuple[str, ...] = (), allowed_origins: tuple[str, ...] = ()):
        self.app = app
        self.any_host = "*" in allowed_hosts
        self.hosts = frozenset((*LOOPBACK_HOSTS, *allowed_hosts))
        self.origins = frozenset(allowed_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        origin = headers.get("origin")
        try:
            self.check(headers)
        except _HTTPError as exc:
            await _respond(send, exc.status, exc.body(), exc.headers)
            return
        if origin is None:
            await self.app(scope, receive, send)
            return
        cors = {"Access-Control-Allow-Origin": origin, "Vary": "Origin"}
        if scope.get("method") == "OPTIONS" and "access-control-request-method" in headers:
            await _respond(send, 204, None, {**cors, **_PREFLIGHT_HEADERS})
            return

        async def send_with_cors(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []),
                                      *((k.lower().encode(), v.encode("latin-1")) for k, v in cors.items())]
            await send(message)

        await self.app(scope, receive, send_with_cors)

    def check(self, headers: dict[str, str]) -> None:
        """Raise a 403 for a foreign ``Host``, a foreign ``Origin`` or a cross-site fetch without an allowed one.

        Raises:
            _HTTPError: 403, with a one-line message naming the header.
        """
        host = headers.get("host", "")
        if not self.any_host and normalize_host(host) not in self.hosts:
            logger.warning("refused a request for Host %s (DNS rebinding?)", _shown(host))
            raise _HTTPError(403, f"Host {_shown(host)} is not allowed; use localhost, 127.0.0.1 or [::1], or add "
                                 "it to the server's allowed hosts", "permission_error", code="host_not_allowed")
        origin = headers.get("origin")
        if origin is not None:
            if normalize_origin(origin) not in self.origins:
                logger.warning("refused a cross-origin request from %s", _shown(origin))
                raise _HTTPError(403, f"cross-origin requests from {_shown(origin)} are not allowed; add the origin "
                                     "to the server's allowed origins", "permission_error", code="origin_not_allowed")
            return
        # No Origin, yet the browser says another site started it (a navigation, an <img>, a form GET).
        if headers.get("sec-fetch-site", "").lower() in ("cross-site", "same-site"):
            logger.warning("refused a cross-site browser request without an Origin header")
            raise _HTTPError(403, "cross-site browser requests are not allowed", "permission_error",
                            code="origin_not_allowed")


async def _respond(send: Send, status: int, body: Any, headers: dict[str, str]) -> None:
    payload = b"" if body is None else json.dumps(body).encode()
    raw = [(k.lower().encode(), v.encode("latin-1")) for k, v in headers.items()]
    if body is not None:
        raw += [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": payload})
