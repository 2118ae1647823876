"""The server's settings and the one error type its handlers raise (answered as an OpenAI-style JSON error)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import ConfigurationError, TinyAgentError

TOKEN_ENV = "TINYAGENT_SERVER_TOKEN"
TOKEN_FILE_ENV = "TINYAGENT_SERVER_TOKEN_FILE"

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")


def normalize_host(value: str) -> str:
    """A host name as it appears in a ``Host`` header without its port: lower case, IPv6 in brackets."""
    name = value.strip().lower()
    if name.startswith("["):
        end = name.find("]")
        return name[: end + 1] if end > 0 else name
    if name.count(":") > 1:  # a bare IPv6 address from a configuration list
        return f"[{name}]"
    host, sep, port = name.rpartition(":")
    return host if sep and port.isdigit() else name


def normalize_origin(value: str) -> str:
    """An origin as browsers send it: ``scheme://host[:port]``, lower case, no trailing slash."""
    return value.strip().lower().rstrip("/")


@dataclass(frozen=True)
class ServerSettings:
    """How the server admits requests.

    Attributes:
        token: the bearer token every request (but ``/health``) must carry. None (the default) means: the
            ``TINYAGENT_SERVER_TOKEN`` environment variable if set, else the token stored in ``token_file``
            (generated on first start).
        no_auth: turn the token check off (explicit opt-out; the Host and Origin checks stay on).
        token_file: where the generated token is kept (mode 0600); default ``TINYAGENT_SERVER_TOKEN_FILE`` or
            ``server-token`` in the user's config dir (``platformdirs.user_config_dir("tinyagent")``).
        allowed_hosts: ``Host`` names accepted besides localhost, 127.0.0.1 and [::1] (any port); ``"*"`` accepts
            any host and turns the DNS-rebinding protection off.
        allowed_origins: browser origins (``http://localhost:3000``, ``tauri://localhost``) allowed to call the
            server cross-origin; a request with any other ``Origin`` is refused (403).
        max_concurrency: agent runs at the same time (the agent serialises model calls itself).
        max_queue: requests allowed to wait for a free run slot; one more gets 503.
        max_body_bytes: the largest request body accepted (413 beyond).
        max_json_depth: how deeply a JSON body may nest (400 beyond).
        request_timeout_s: seconds a run may take before the request gets 504.
        model_name: the model name reported to OpenAI clients (default: the agent model's name).
    """

    token: str | None = field(default=None, repr=False)
    no_auth: bool = False
    token_file: Path | None = None
    allowed_hosts: Sequence[str] = ()
    allowed_origins: Sequence[str] = ()
    max_concurrency: int = 1
    max_queue: int = 32
    max_body_bytes: int = 1_000_000
    max_json_depth: int = 64
    request_timeout_s: float = 300.0
    model_name: str | None = None

    def __post_init__(self) -> None:
        if self.max_concurrency < 1 or self.max_queue < 0 or self.max_body_bytes < 1 or self.max_json_depth < 1:
            raise ConfigurationError(
                "max_concurrency must be >= 1, max_queue >= 0, max_body_bytes >= 1 and max_json_depth >= 1")
        if self.token is not None and not self.token.strip():
            raise ConfigurationError("the server token is empty; pass a non-empty token, or no_auth=True")
        if self.no_auth and self.token is not None:
            raise ConfigurationError("a token and no_auth=True contradict each other; pass one of them")
        if self.token_file is not None:
            object.__setattr__(self, "token_file", Path(self.token_file))
        if isinstance(self.allowed_hosts, str) or isinstance(self.allowed_origins, str):
            raise ConfigurationError("allowed_hosts and allowed_origins are lists of names, not one string")
        object.__setattr__(self, "allowed_hosts", tuple(normalize_host(h) for h in self.allowed_hosts if h.strip()))
        origins = tuple(normalize_origin(o) for o in self.allowed_origins if o.strip())
        bad = [o for o in origins if "://" not in o or o == "null" or "*" in o]
        if bad:
            raise ConfigurationError(
                f"allowed origins must look like scheme://host[:port] (no wildcards), got {', '.join(bad)}")
        object.__setattr__(self, "allowed_origins", origins)


_CODES = {
    400: "invalid_request", 401: "invalid_token", 403: "forbidden", 404: "not_found", 405: "method_not_allowed",
    413: "request_too_large", 415: "unsupported_media_type", 422: "run_failed", 500: "internal_error",
    503: "server_busy", 504: "timeout",
}


class _HTTPError(TinyAgentError):
    """An error answered with an OpenAI-style JSON body: ``{"error": {"message", "type", "param", "code"}}``.

    Never leaves the server: the handlers turn it into the response.
    """

    def __init__(
        self,
        status: int,
        message: str,
        kind: str = "invalid_request_error",
        *,
        code: str | None = None,
        param: str | None = None,
        headers: Mapping[str, str] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        self.status = status
        self.message = message
        self.kind = kind
        self.code = code or _CODES.get(status, "error")
        self.param = param
        self.headers = dict(headers or {})
        self.extra = dict(extra or {})
        super().__init__(message)

    def body(self) -> dict[str, Any]:
        """The JSON body of the response."""
        error = {"message": self.message, "type": self.kind, "param": self.param, "code": self.code}
        return {"error": error, **self.extra}
