"""The OpenAI chat-completions edge: what a request may ask for, and honest replies (a failed run is an error).

The endpoint runs the agent (its own planner, decoding settings and registered tools) on the last user message.
Fields that would ask for something else (client-side ``tools``, ``n`` > 1, ``logprobs``, sampling settings …)
are refused with a 400 naming them, rather than silently ignored; a field sent as ``null`` or at the value that
means "off" (``n: 1``, ``logprobs: false``, ``tools: []``, ``tool_choice: "none"`` …) is accepted.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

from .._runtime import result_to_dict
from ._settings import _HTTPError

# Fields that do not change what is computed.
_HARMLESS = frozenset({"model", "messages", "stream", "stream_options", "user", "metadata", "safety_identifier",
                       "prompt_cache_key"})
# Fields accepted only at the value that turns them off (OpenAI's default, or an empty request for the feature).
_OFF_VALUES: dict[str, tuple[Any, ...]] = {
    "n": (1,),
    "logprobs": (False,),
    "tools": ([],),
    "functions": ([],),
    "tool_choice": ("none",),
    "function_call": ("none",),
    "parallel_tool_calls": (True, False),
    "response_format": ({"type": "text"},),
    "modalities": (["text"],),
    "store": (False,),
    "presence_penalty": (0,),
    "frequency_penalty": (0,),
}
_ROLES = ("system", "developer", "user", "assistant")


@dataclass(frozen=True)
class ChatRequest:
    """What the agent is asked: the query, the earlier turns, and how to reply."""

    query: str
    history: list[dict[str, str]]
    model: str
    stream: bool
    include_usage: bool


def unsupported_fields(data: Mapping[str, Any]) -> list[str]:
    """The request's fields this endpoint cannot honour (sorted); null values count as absent."""
    bad = []
    for key, value in data.items():
        if value is None or key in _HARMLESS:
            continue
        allowed = _OFF_VALUES.get(key)
        if allowed is None or not any(_same(value, a) for a in allowed):
            bad.append(key)
    return sorted(bad)


def _same(value: Any, allowed: Any) -> bool:
    """JSON equality that keeps booleans apart from numbers (``n: true`` is not ``n: 1``)."""
    if isinstance(value, bool) or isinstance(allowed, bool):
        return value is allowed
    return bool(value == allowed)


def parse_chat_request(data: Mapping[str, Any], default_model: str) -> ChatRequest:
    """Check a chat-completions body and turn it into a :class:`ChatRequest`.

    Raises:
        _HTTPError: 400 naming the unsupported fields, or saying which field is malformed.
    """
    bad = unsupported_fields(data)
    if bad:
        raise _HTTPError(400, f"unsupported field(s): {', '.join(bad)}; this endpoint runs the tinyagent planner with "
                             "its own tools and settings (send model, messages, stream, stream_options, user)",
                        param=bad[0], code="unsupported_field")
    model = data.get("model")
    if model is None:
        model = default_model
    elif not isinstance(model, str) or not model.strip():
        raise _HTTPError(400, f"'model' must be a non-empty string, got {type(model).__name__}", param="model")
    stream = data.get("stream")
    if stream is None:
        stream = False
    if not isinstance(stream, bool):
        raise _HTTPError(400, "'stream' must be true or false", param="stream")
    query, history = _chat_query(data)
    return ChatRequest(query, history, model, stream, _include_usage(data.get("stream_options")))


def _include_usage(options: Any) -> bool:
    if options is None:
        return False
    if not isinstance(options, dict) or set(options) - {"include_usage"}:
        raise _HTTPError(400, "'stream_options' may only hold include_usage", param="stream_options")
    value = options.get("include_usage", False)
    if not isinstance(value, bool):
        raise _HTTPError(400, "'stream_options.include_usage' must be true or false", param="stream_options")
    return value


def _content_text(content: Any, index: int) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                raise _HTTPError(400, f"messages[{index}].content: only text parts are supported", param="messages")
            parts.append(part["text"])
        return "".join(parts)
    if content is None:
        return ""
    raise _HTTPError(400, f"messages[{index}].content must be a string or a list of text parts", param="messages")


def _chat_query(data: Mapping[str, Any]) -> tuple[str, list[dict[str, str]]]:
    """The last user message is the query; earlier user/assistant turns are the history."""
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _HTTPError(400, "'messages' must be a non-empty list", param="messages")
    turns: list[dict[str, str]] = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise _HTTPError(400, f"messages[{i}] must be an object with a 'role'", param="messages")
        role = message["role"]
        if role not in _ROLES:
            raise _HTTPError(400, f"messages[{i}].role {role!r} is not supported (only {', '.join(_ROLES)}: the "
                                 "agent runs its own tools)", param="messages")
        if message.get("tool_calls") or message.get("function_call"):
            raise _HTTPError(400, f"messages[{i}] carries tool calls; the agent runs its own tools", param="messages")
        if role in ("user", "assistant"):
            turns.append({"role": role, "content": _content_text(message.get("content"), i)})
    last_user = max((i for i, t in enumerate(turns) if t["role"] == "user"), default=None)
    if last_user is None or not turns[last_user]["content"].strip():
        raise _HTTPError(400, "the conversation has no non-empty user message to answer", param="messages")
    return turns[last_user]["content"], turns[:last_user]


def run_failure(details: Mapping[str, Any]) -> _HTTPError | None:
    """The error to answer for a run that failed (``status == "failed"``: no plan could be made), else None."""
    if details.get("status") != "failed":
        return None
    notes = list(dict.fromkeys(str(n) for n in details.get("notes") or []))  # replans repeat a reason
    reason = "; ".join(notes) or "no plan could be made"
    message = " ".join(f"the agent could not complete the request: {reason}".split())
    if len(message) > 500:
        message = message[:497] + "..."
    return _HTTPError(422, message, "agent_error", code="run_failed", headers={"x-should-retry": "false"},
                     extra={"tinyagent": {**details, "answer": None}})  # the fallback text is no answer


def _usage(details: Mapping[str, Any]) -> dict[str, int]:
    usage = details.get("usage") or {}
    prompt, completion = int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def chat_completion(result: Any, completion_id: str, created: int, model: str) -> dict[str, Any]:
    """The ``chat.completion`` body for a run result.

    Raises:
        _HTTPError: 422 (OpenAI error shape, with the run's details) when the run failed.
    """
    details = result_to_dict(result)
    failure = run_failure(details)
    if failure is not None:
        raise failure
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": details.get("answer") or ""},
            "finish_reason": "stop",
            "logprobs": None,
        }],
        "usage": _usage(details),
        "tinyagent": details,
    }


def answer_text(event: Mapping[str, Any]) -> str:
    """The answer carried by an ``answer`` event."""
    for key in ("answer", "text", "content"):
        value = event.get(key)
        if isinstance(value, str):
            return value
    return ""


async def completion_chunks(
    events: AsyncIterator[dict[str, Any]], request: ChatRequest, completion_id: str, created: int
) -> AsyncIterator[dict[str, str]]:
    """The run's events as ``chat.completion.chunk`` SSE messages; a failure ends the stream with an error object.

    OpenAI clients raise on a ``data`` message holding ``error``, so a failed run never looks like an answer.
    """
    def chunk(delta: dict[str, Any], finish: str | None = None, extra: Any = None) -> dict[str, str]:
        body: dict[str, Any] = {
            "id": completion_id, "object": "chat.completion.chunk", "created": created, "model": request.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
        }
        if extra is not None:
            body["tinyagent"] = extra
        return {"data": json.dumps(body)}

    def error(message: str, code: str, extra: Any = None) -> dict[str, str]:
        body: dict[str, Any] = {"error": {"message": message, "type": "agent_error", "param": None, "code": code}}
        if extra is not None:
            body["tinyagent"] = extra
        return {"data": json.dumps(body)}

    yield chunk({"role": "assistant", "content": ""})
    details: Mapping[str, Any] = {}
    async for event in events:
        if event.get("type") == "error":
            yield error(str(event.get("message", "")), "agent_error")
            yield {"data": "[DONE]"}
            return
        if event.get("type") == "answer":
            details = event.get("result") or {}
            failure = run_failure(details)
            if failure is not None:
                yield error(failure.message, failure.code, event)
                yield {"data": "[DONE]"}
                return
            yield chunk({"content": answer_text(event)}, extra=event)
        else:
            yield chunk({}, extra=event)
    yield chunk({}, finish="stop")
    if request.include_usage:
        yield {"data": json.dumps({"id": completion_id, "object": "chat.completion.chunk", "created": created,
                                   "model": request.model, "choices": [], "usage": _usage(details)})}
    yield {"data": "[DONE]"}
