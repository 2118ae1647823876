"""The HTTP server, driven over real sockets: httpx2 and the openai SDK against uvicorn on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("starlette", reason="the server extra (starlette) is not installed")
pytest.importorskip("sse_starlette", reason="the server extra (sse-starlette) is not installed")
pytest.importorskip("uvicorn", reason="the server extra (uvicorn) is not installed")
httpx2 = pytest.importorskip("httpx2", reason="httpx2 is not installed")

from tinyagent import Agent  # noqa: E402
from tinyagent.apps._demo_tools import demo_tools  # noqa: E402
from tinyagent.apps._runtime import request_stage  # noqa: E402
from tinyagent.apps.server import ServerSettings, ServerThread, create_app  # noqa: E402
from tinyagent.models import ModelRequest, ScriptedModel  # noqa: E402

TOKEN = "s3cret-token"


def _script(request: ModelRequest) -> str:
    """Plans an address lookup for the name in the request; the joiner reads the observation back."""
    user = str(request.messages[-1]["content"])
    query = re.findall(r"^Request: (.*)$", user, flags=re.MULTILINE)[-1]
    if request_stage(request) == "join":
        found = re.search(r"-> ([\w.]+@example\.com)", user)
        return f"Answer: the address is {found.group(1)}." if found else "Answer: I could not find it."
    match = re.search(r"address of (\w+)", query)
    if match is None:
        return "1. join()\n<END_OF_PLAN>"
    return f'1. get_email_address(name="{match.group(1)}")\n2. join()\n<END_OF_PLAN>'


def _agent(delay_s: float = 0.0) -> Agent:
    return Agent(tools=demo_tools(), model=ScriptedModel(_script, delay_s=delay_s, name="scripted-planner"))


@pytest.fixture()
def server() -> Iterator[ServerThread]:
    app = create_app(_agent(), ServerSettings(token=TOKEN, max_queue=32))
    with ServerThread(app) as running:
        yield running


def _auth() -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKEN}"}


def test_health_needs_no_token_and_reports_model_and_tools(server: ServerThread) -> None:
    r = httpx2.get(server.url + "/health")
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "ok"
    assert body["model"] == "scripted-planner"
    assert "get_email_address" in body["tools"]


def test_run_returns_answer_plan_and_steps(server: ServerThread) -> None:
    r = httpx2.post(server.url + "/v1/agent/run", json={"query": "what is the address of kate"}, headers=_auth())
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["answer"] == "the address is kate@example.com."
    assert body["plans"] == [[{"id": 1, "name": "get_email_address", "args": {"name": "kate"}}]]
    assert body["steps"][0]["status"] == "ok"
    assert body["steps"][0]["result"] == "kate@example.com"


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"}])
def test_missing_or_wrong_token_is_401(server: ServerThread, headers: dict[str, str]) -> None:
    r = httpx2.post(server.url + "/v1/agent/run", json={"query": "address of sid"}, headers=headers)
    assert r.status_code == 401
    assert r.headers["www-authenticate"] == "Bearer"
    assert r.json()["error"]["type"] == "authentication_error"


def test_stream_sends_typed_events_then_done(server: ServerThread) -> None:
    events: list[tuple[str, Any]] = []
    with httpx2.stream("POST", server.url + "/v1/agent/stream", json={"query": "what is the address of sid"},
                       headers=_auth(), timeout=30) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        name = ""
        for line in r.iter_lines():
            if line.startswith("event:"):
                name = line.split(":", 1)[1].strip()
            elif line.startswith("data:"):
                events.append((name, json.loads(line.split(":", 1)[1])))
    kinds = [k for k, _ in events]
    assert kinds == ["step_planned", "tool_started", "tool_finished", "answer", "done"]
    assert events[0][1] == {"type": "step_planned", "attempt": 0, "id": 1, "name": "get_email_address",
                            "args": {"name": "sid"}}
    assert events[2][1]["result"] == "sid@example.com"
    assert events[3][1]["answer"] == "the address is sid@example.com."


def test_openai_sdk_chat_completion_plans_and_executes(server: ServerThread) -> None:
    openai = pytest.importorskip("openai", reason="the openai SDK is not installed")
    client = openai.OpenAI(base_url=server.url + "/v1", api_key=TOKEN, max_retries=0)
    reply = client.chat.completions.create(
        model="tinyagent",
        messages=[{"role": "system", "content": "be brief"},
                  {"role": "user", "content": "what is the address of lutfi"}],
    )
    assert reply.object == "chat.completion"
    assert reply.choices[0].message.content == "the address is lutfi@example.com."
    assert reply.choices[0].finish_reason == "stop"
    assert reply.usage is not None and reply.usage.total_tokens > 0
    extension = reply.model_extra["tinyagent"] if reply.model_extra else None
    assert extension is not None
    assert extension["plans"] == [[{"id": 1, "name": "get_email_address", "args": {"name": "lutfi"}}]]
    models = client.models.list()
    assert [m.id for m in models.data] == ["scripted-planner"]


def test_openai_sdk_streaming_chunks(server: ServerThread) -> None:
    openai = pytest.importorskip("openai", reason="the openai SDK is not installed")
    client = openai.OpenAI(base_url=server.url + "/v1", api_key=TOKEN, max_retries=0)
    stream = client.chat.completions.create(
        model="tinyagent", messages=[{"role": "user", "content": "what is the address of kate"}], stream=True
    )
    content = []
    finish = []
    progress = []
    for chunk in stream:
        assert chunk.object == "chat.completion.chunk"
        delta = chunk.choices[0].delta
        if delta.content:
            content.append(delta.content)
        if chunk.choices[0].finish_reason:
            finish.append(chunk.choices[0].finish_reason)
        if chunk.model_extra and "tinyagent" in chunk.model_extra:
            progress.append(chunk.model_extra["tinyagent"]["type"])
    assert "".join(content) == "the address is kate@example.com."
    assert finish == ["stop"]
    assert progress == ["step_planned", "tool_started", "tool_finished", "answer"]


def test_chat_history_reaches_the_planner(server: ServerThread) -> None:
    body = {"messages": [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
        {"role": "user", "content": [{"type": "text", "text": "what is the address of sid"}]},
    ]}
    r = httpx2.post(server.url + "/v1/chat/completions", json=body, headers=_auth())
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["message"]["content"] == "the address is sid@example.com."


async def test_twenty_concurrent_requests_all_answered(server: ServerThread) -> None:
    names = ["sid", "kate", "lutfi"] * 7
    async with httpx2.AsyncClient(base_url=server.url, headers=_auth(), timeout=60) as client:
        responses = await asyncio.gather(*[
            client.post("/v1/agent/run", json={"query": f"what is the address of {name}"}) for name in names[:20]
        ])
    assert [r.status_code for r in responses] == [200] * 20
    answers = [r.json()["answer"] for r in responses]
    assert answers == [f"the address is {name}@example.com." for name in names[:20]]
    assert httpx2.get(server.url + "/health").json()["queue"]["admitted"] == 0


async def test_full_queue_answers_503_at_once_and_recovers() -> None:
    app = create_app(_agent(delay_s=0.05), ServerSettings(max_concurrency=1, max_queue=2))
    with ServerThread(app) as running:
        async with httpx2.AsyncClient(base_url=running.url, timeout=60) as client:
            responses = await asyncio.gather(*[
                client.post("/v1/agent/run", json={"query": "what is the address of kate"}) for _ in range(10)
            ])
            codes = sorted(r.status_code for r in responses)
            assert codes.count(200) >= 3
            assert codes.count(503) >= 1
            assert set(codes) <= {200, 503}
            busy = next(r for r in responses if r.status_code == 503)
            assert busy.headers["retry-after"] == "1"
            assert busy.json()["error"]["type"] == "server_busy"
            after = await client.post("/v1/agent/run", json={"query": "what is the address of sid"})
            assert after.status_code == 200
            assert after.json()["answer"] == "the address is sid@example.com."


@pytest.mark.parametrize(
    ("path", "content", "message"),
    [
        ("/v1/agent/run", b"{not json", "not valid JSON"),
        ("/v1/agent/run", b"[1, 2]", "must be a JSON object"),
        ("/v1/agent/run", b'{"query": ""}', "'query' must be a non-empty string"),
        ("/v1/agent/run", b'{"query": "x", "today": "tomorrow"}', "--today must be a date"),
        ("/v1/agent/run", b'{"query": "x", "history": [{"role": "system", "content": 1}]}', "history[0]"),
        ("/v1/agent/stream", b"\xff\xfe", "not valid JSON"),
        ("/v1/chat/completions", b'{"messages": []}', "'messages' must be a non-empty list"),
        ("/v1/chat/completions", b'{"messages": [{"role": "assistant", "content": "x"}]}', "no non-empty user"),
        ("/v1/chat/completions", b'{"messages": [{"role": "wizard", "content": "x"}]}', "role 'wizard'"),
        ("/v1/chat/completions", b'{"messages": [{"role": "user", "content": "x"}], "stream": "yes"}', "'stream'"),
    ],
)
def test_malformed_bodies_get_400_with_a_json_error(server: ServerThread, path: str, content: bytes,
                                                    message: str) -> None:
    r = httpx2.post(server.url + path, content=content, headers={**_auth(), "Content-Type": "application/json"})
    assert r.status_code == 400
    error = r.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert message in error["message"]
    assert httpx2.get(server.url + "/health").status_code == 200


def test_oversized_body_is_413(server: ServerThread) -> None:
    r = httpx2.post(server.url + "/v1/agent/run", json={"query": "x" * 1_100_000}, headers=_auth())
    assert r.status_code == 413
    assert r.json()["error"]["type"] == "request_too_large"


def test_unknown_route_and_wrong_method_are_json(server: ServerThread) -> None:
    r = httpx2.get(server.url + "/nope")
    assert r.status_code == 404
    assert r.json()["error"]["type"] == "not_found"
    r = httpx2.get(server.url + "/v1/agent/run", headers=_auth())
    assert r.status_code == 405
    assert "error" in r.json()


def test_token_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TINYAGENT_SERVER_TOKEN", "from-env")
    with ServerThread(create_app(_agent())) as running:
        assert httpx2.post(running.url + "/v1/agent/run", json={"query": "hi"}).status_code == 401
        ok = httpx2.post(running.url + "/v1/agent/run", json={"query": "hi"},
                         headers={"Authorization": "Bearer from-env"})
        assert ok.status_code == 200
        assert ok.json()["plans"] == [[]]


def test_desktop_example_runs_in_process_and_through_the_server(tmp_path: Any) -> None:
    import os
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("openai", reason="the openai SDK is not installed")
    root = Path(__file__).resolve().parents[1]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"rules": [
        {"stage": "plan", "contains": ["address of sid"],
         "reply": '1. get_email_address(name="Sid")\n2. join()\n<END_OF_PLAN>'},
        {"stage": "join", "context": ["-> sid@example.com"], "reply": "Answer: Sid's address is sid@example.com."},
    ]}))
    proc = subprocess.run(
        [sys.executable, str(root / "examples" / "desktop_integration.py"), "--model", f"scripted:{script}",
         "--token", "t0k", "What is the address of Sid?"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(root)},
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "  [in-process] step 1 get_email_address -> ok: 'sid@example.com'" in lines
    assert "in-process answer: Sid's address is sid@example.com." in lines
    assert "  [sse] step_planned: get_email_address" in lines
    assert "  [sse] answer: Sid's address is sid@example.com." in lines
    assert "  [sse] done: " in lines
    assert "OpenAI SDK answer: Sid's address is sid@example.com." in lines
