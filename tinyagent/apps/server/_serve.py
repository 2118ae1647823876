"""Running the app: :class:`ServerThread` (in-process, tests) and :func:`serve` (blocking, the CLI)."""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...errors import ConfigurationError
from ._app import create_app, require_server_deps
from ._settings import LOOPBACK_HOSTS, ServerSettings, normalize_host

logger = logging.getLogger("tinyagent.apps.server")


class ServerThread:
    """Run the app with uvicorn in a background thread (tests, or a desktop app hosting the server in-process).

    Use as a context manager::

        with ServerThread(create_app(agent, ServerSettings(token=token))) as server:
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


def _bound_host(host: str) -> tuple[str, ...]:
    """The bind address as an allowed ``Host`` when it is one specific, non-loopback name (a LAN address)."""
    name = normalize_host(host)
    if name in ("", "0.0.0.0", "[::]", *LOOPBACK_HOSTS):
        return ()
    return (name,)


def serve(
    agent: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    settings: ServerSettings | None = None,
    log_level: str = "info",
    no_auth: bool = False,
    token_file: str | Path | None = None,
    allowed_hosts: Sequence[str] = (),
    allowed_origins: Sequence[str] = (),
) -> None:
    """Serve ``agent`` until interrupted (blocking).

    The keyword arguments after ``log_level`` add to ``settings`` (the CLI's ``--no-auth``, ``--token-file``,
    ``--allow-host``, ``--allow-origin``). Where the token lives is logged; the token never is.

    Args:
        agent: the agent to serve.
        host: the interface to bind; a specific address other than loopback is also allowed as ``Host``.
        port: the port.
        settings: token, limits, allowed hosts and origins.
        log_level: uvicorn's log level.
        no_auth: serve without a token (the Host and Origin checks stay on).
        token_file: where the generated token is kept (default: the user's config dir).
        allowed_hosts: more ``Host`` names to accept (besides localhost, 127.0.0.1 and [::1]).
        allowed_origins: browser origins allowed to call the server.

    Raises:
        MissingDependencyError: the ``server`` extra is not installed.
        ConfigurationError: contradictory settings, or the token file cannot be used.
    """
    require_server_deps()
    import uvicorn

    base = settings or ServerSettings()
    settings = dataclasses.replace(
        base,
        no_auth=base.no_auth or no_auth,
        token_file=Path(token_file) if token_file is not None else base.token_file,
        allowed_hosts=(*base.allowed_hosts, *allowed_hosts, *_bound_host(host)),
        allowed_origins=(*base.allowed_origins, *allowed_origins),
    )
    if normalize_host(host) not in LOOPBACK_HOSTS:
        logger.warning("serving on %s: the agent's tools will be reachable from other machines", host)
        if settings.no_auth:
            logger.warning("serving on %s without a token: anyone who can reach the port can run the agent", host)
    uvicorn.run(create_app(agent, settings), host=host, port=port, log_level=log_level)
