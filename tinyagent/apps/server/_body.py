"""Reading a request body: JSON only (``Content-Type: application/json``), bounded in size and in depth."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ._settings import _HTTPError

if TYPE_CHECKING:
    from starlette.requests import Request


def _too_large(limit: int) -> _HTTPError:
    return _HTTPError(413, f"the body is over {limit} bytes", "request_too_large")


def check_json_content_type(value: str | None) -> None:
    """Accept ``application/json`` (any parameters, such as a charset), or raise a 415.

    A browser can send ``text/plain``, ``application/x-www-form-urlencoded`` or ``multipart/form-data`` from any page
    without a CORS preflight; requiring JSON's own type means a page must ask first, and the Origin check says no.

    Raises:
        _HTTPError: 415 for any other type, or none.
    """
    media = (value or "").split(";", 1)[0].strip().lower()
    if media != "application/json":
        shown = repr(media[:60]) if media else "none"
        raise _HTTPError(415, f"send the body as Content-Type: application/json (got {shown})",
                        "invalid_request_error")


def json_depth_over(value: Any, limit: int) -> bool:
    """Whether ``value`` nests lists and objects deeper than ``limit`` (iterative: no recursion to exhaust)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def parse_json_object(body: bytes, max_depth: int) -> dict[str, Any]:
    """Parse a request body that must be a JSON object.

    Raises:
        _HTTPError: 400 with a one-line message for invalid JSON, nesting deeper than ``max_depth`` or a non-object.
    """
    try:
        data = json.loads(body)
    except RecursionError as exc:
        # The C scanner gives up past the interpreter's recursion limit: an attack or a bug, never a real request.
        raise _HTTPError(400, f"the body nests deeper than {max_depth} levels") from exc
    except ValueError as exc:
        raise _HTTPError(400, f"the body is not valid JSON: {exc}") from exc
    if json_depth_over(data, max_depth):
        raise _HTTPError(400, f"the body nests deeper than {max_depth} levels")
    if not isinstance(data, dict):
        raise _HTTPError(400, f"the body must be a JSON object, got {type(data).__name__}")
    return data


async def read_json(request: Request, max_bytes: int, max_depth: int) -> dict[str, Any]:
    """The request's JSON object body.

    Raises:
        _HTTPError: 415 (not JSON's content type), 413 (over ``max_bytes``), 400 (malformed, too deep, not an object).
    """
    check_json_content_type(request.headers.get("content-type"))
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > max_bytes:
        raise _too_large(max_bytes)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > max_bytes:
            raise _too_large(max_bytes)
    return parse_json_object(bytes(body), max_depth)
