"""An HTTP server for desktop apps: the agent behind a streaming endpoint and an OpenAI-compatible chat endpoint.

Endpoints (all JSON; localhost by default)::

    GET  /health                  liveness, model and tool names (no token needed)
    GET  /v1/models               the one model, OpenAI style
    POST /v1/agent/run            {"query", "today"?, "history"?} -> the run result (answer, plans, steps, usage)
    POST /v1/agent/stream         same body -> server-sent events, one per typed run event, then "done"
    POST /v1/chat/completions     OpenAI chat completions (``stream`` too); the agent plans and executes with its
                                  registered tools; the reply carries a ``tinyagent`` field with plans and steps

Secure by default (see SECURITY.md):

* a bearer token guards every endpoint but ``/health``: the given one, ``TINYAGENT_SERVER_TOKEN``, or one generated
  on first start into ``server-token`` in the user's config dir (mode 0600; ``TINYAGENT_SERVER_TOKEN_FILE``
  moves it); ``no_auth=True`` turns it off explicitly;
* ``Host`` must be localhost, 127.0.0.1 or [::1] (any port) or an allowed host, else 403 (DNS rebinding);
* a request with an ``Origin`` that is not allowed gets 403 (CSRF); CORS preflights succeed only for allowed ones;
* bodies must be ``Content-Type: application/json`` (415), at most ``max_body_bytes`` (413) and
  ``max_json_depth`` deep (400);
* the OpenAI endpoint refuses fields it cannot honour (``tools``, ``n`` > 1, ``logprobs``, sampling settings …)
  with a 400 naming them, and answers a failed run with an OpenAI-style error (422, ``code: "run_failed"``),
  never with a made-up answer.

Requests are admitted up to ``max_concurrency`` running plus ``max_queue`` waiting; beyond that the server answers
503 at once rather than hanging. Every error is ``{"error": {"message", "type", "param", "code"}}``.

Needs the ``server`` extra (starlette, uvicorn, sse-starlette), imported lazily.
"""

from __future__ import annotations

from ._app import create_app
from ._auth import ServerAuth, default_token_path, load_or_create_token, resolve_auth
from ._serve import ServerThread, serve
from ._settings import TOKEN_ENV, TOKEN_FILE_ENV, ServerSettings

__all__ = [
    "TOKEN_ENV",
    "TOKEN_FILE_ENV",
    "ServerAuth",
    "ServerSettings",
    "ServerThread",
    "create_app",
    "default_token_path",
    "load_or_create_token",
    "resolve_auth",
    "serve",
]
