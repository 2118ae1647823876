"""The HTTP server, driven over real sockets: httpx2 and the openai SDK against uvicorn on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason="the server extra (starlette) is not installed")
pytest.importorskip("sse_starlette", reason="the server extra (sse-starlette) is not installed")
pytest.importorskip("uvicorn", reason="the server extra (uvicorn) is not installed")
httpx2 = pytest.importorskip("httpx2", reason="httpx2 is not installed")

from tinyagent import Agent  # noqa: E402
from tinyagent.apps._demo_tools import demo_tools  # noqa: E402
from tinyagent.apps._runtime import request_stage  # noqa: E402
from tinyagent.apps.server import ServerSettings, ServerThread, create_app, resolve_auth  # noqa: E402
from tinyagent.errors import ConfigurationError  # noqa: E402
from tinyagent.models import ModelRequest, ScriptedModel  # noqa: E402

TOKEN = "s3cret-token"


@pytest.fixture(autouse=True)
def _private_token_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own token file: nothing is written to the real config dir, no token leaks in from it."""
    path = tmp_path / "config" / "server-token"
    monkeypatch.setenv("TINYAGENT_SERVER_TOKEN_FILE", str(path))
    monkeypatch.delenv("TINYAGENT_SERVER_TOKEN", raising=False)
    return path


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
    return Agent(tools=demo_tools(), model=ScriptedModel(_script, delay_s=delay_s, name="scripted-planner"),
                 joiner="llm")


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
    assert "answer_delta" in kinds  # the answer's text streams before the final answer event
    assert [k for k in kinds if k != "answer_delta"] == ["step_planned", "tool_started", "tool_finished", "answer",
                                                         "done"]
    assert events[0][1] == {"type": "step_planned", "attempt": 0, "id": 1, "name": "get_email_address",
                            "args": {"name": "sid"}}
    assert events[2][1]["result"] == "sid@example.com"
    answer = next(data for kind, data in events if kind == "answer")
    assert answer["answer"] == "the address is sid@example.com."
    assert "".join(data["text"] for kind, data in events if kind == "answer_delta") == answer["answer"]


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
    assert [p for p in progress if p != "answer_delta"] == ["step_planned", "tool_started", "tool_finished", "answer"]


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
    app = create_app(_agent(delay_s=0.05), ServerSettings(token=TOKEN, max_concurrency=1, max_queue=2))
    with ServerThread(app) as running:
        async with httpx2.AsyncClient(base_url=running.url, headers=_auth(), timeout=60) as client:
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
    # joiner="auto": the lookup's single value is the answer, written by the template (no joiner call)
    assert any(li.startswith("in-process answer: ") and li.endswith(": sid@example.com.") for li in lines), lines
    assert "  [sse] step_planned: get_email_address" in lines
    assert any(li.startswith("  [sse] answer: ") and li.endswith(": sid@example.com.") for li in lines), lines
    assert "  [sse] done: " in lines
    assert any(li.startswith("OpenAI SDK answer: ") and li.endswith(": sid@example.com.") for li in lines), lines


# -- secure by default (issue 17: findings 1 and 6; issue 16: deep JSON) ------------------------------------------


def _model_and_agent(script: Any = _script) -> tuple[ScriptedModel, Agent]:
    model = ScriptedModel(script, name="scripted-planner")
    return model, Agent(tools=demo_tools(), model=model, joiner="llm")


@pytest.fixture()
def open_server() -> Iterator[tuple[ScriptedModel, ServerThread]]:
    """A server with the token turned off (the attacks below must fail on the other checks alone)."""
    model, agent = _model_and_agent()
    settings = ServerSettings(no_auth=True, allowed_origins=["http://localhost:3000"], allowed_hosts=["agent.lan"])
    with ServerThread(create_app(agent, settings)) as running:
        yield model, running


def test_csrf_simple_request_from_a_foreign_origin_is_refused_and_runs_nothing(
    open_server: tuple[ScriptedModel, ServerThread],
) -> None:
    model, server = open_server
    # What fetch(url, {mode: "no-cors", method: "POST", body}) sends from a page on another site: no preflight.
    r = httpx2.post(server.url + "/v1/agent/run", content=b'{"query": "what is the address of sid"}',
                    headers={"Origin": "http://evil.example", "Content-Type": "text/plain;charset=UTF-8"})
    assert r.status_code == 403
    assert r.json()["error"]["code"] == "origin_not_allowed"
    assert "'http://evil.example'" in r.json()["error"]["message"]
    assert "access-control-allow-origin" not in r.headers
    assert model.requests == []
    # Even with JSON's own content type, and on the OpenAI endpoint.
    r = httpx2.post(server.url + "/v1/chat/completions", json={"messages": [{"role": "user", "content": "hi"}]},
                    headers={"Origin": "null"})
    assert r.status_code == 403
    assert model.requests == []


def test_cors_preflight_only_for_allowed_origins(open_server: tuple[ScriptedModel, ServerThread]) -> None:
    model, server = open_server
    preflight = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"}
    r = httpx2.options(server.url + "/v1/agent/run", headers={**preflight, "Origin": "http://evil.example"})
    assert r.status_code == 403
    assert "access-control-allow-origin" not in r.headers
    r = httpx2.options(server.url + "/v1/agent/run", headers={**preflight, "Origin": "http://localhost:3000"})
    assert r.status_code == 204
    assert r.headers["access-control-allow-origin"] == "http://localhost:3000"
    assert "Content-Type" in r.headers["access-control-allow-headers"]
    r = httpx2.post(server.url + "/v1/agent/run", json={"query": "what is the address of kate"},
                    headers={"Origin": "http://localhost:3000"})
    assert r.status_code == 200
    assert r.headers["access-control-allow-origin"] == "http://localhost:3000"
    assert r.json()["answer"] == "the address is kate@example.com."


def test_cross_site_browser_request_without_origin_is_refused(
    open_server: tuple[ScriptedModel, ServerThread],
) -> None:
    _, server = open_server
    r = httpx2.get(server.url + "/v1/models", headers={"Sec-Fetch-Site": "cross-site"})
    assert r.status_code == 403
    assert httpx2.get(server.url + "/v1/models", headers={"Sec-Fetch-Site": "none"}).status_code == 200


@pytest.mark.parametrize("host", ["evil.example:8765", "evil.example", "127.0.0.1.evil.example", "localhost.evil:1",
                                  "[::2]:8765", ""])
def test_dns_rebinding_foreign_host_is_refused(open_server: tuple[ScriptedModel, ServerThread], host: str) -> None:
    model, server = open_server
    for method, path in (("GET", "/health"), ("GET", "/v1/models"), ("POST", "/v1/agent/run")):
        r = httpx2.request(method, server.url + path, json={"query": "what is the address of sid"},
                           headers={"Host": host})
        assert r.status_code == 403, (path, r.text)
        assert r.json()["error"]["code"] == "host_not_allowed"
    assert model.requests == []


@pytest.mark.parametrize("host", ["localhost:8765", "127.0.0.1", "[::1]:8765", "LOCALHOST", "agent.lan:8765"])
def test_local_and_configured_hosts_are_accepted(open_server: tuple[ScriptedModel, ServerThread], host: str) -> None:
    _, server = open_server
    r = httpx2.post(server.url + "/v1/agent/run", json={"query": "what is the address of sid"}, headers={"Host": host})
    assert r.status_code == 200, r.text
    assert r.json()["answer"] == "the address is sid@example.com."


def test_token_is_required_by_default_and_generated_into_a_private_file(_private_token_file: Path) -> None:
    model, agent = _model_and_agent()
    assert not _private_token_file.exists()
    with ServerThread(create_app(agent)) as running:
        assert httpx2.post(running.url + "/v1/agent/run", json={"query": "hi"}).status_code == 401
        assert httpx2.get(running.url + "/v1/models").status_code == 401
        assert httpx2.get(running.url + "/health").status_code == 200
        assert model.requests == []
        token = _private_token_file.read_text().strip()
        assert len(token) >= 32
        ok = httpx2.get(running.url + "/v1/models", headers={"Authorization": f"Bearer {token}"})
        assert ok.status_code == 200
    assert stat.S_IMODE(_private_token_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(_private_token_file.parent.stat().st_mode) == 0o700
    # The second start reuses the same token.
    again = resolve_auth(ServerSettings())
    assert (again.token, again.source, again.path) == (token, "file", _private_token_file)
    assert token not in repr(again) and token not in again.describe()
    assert str(_private_token_file) in again.describe()


def test_token_file_default_location_is_the_user_config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import platformdirs

    monkeypatch.delenv("TINYAGENT_SERVER_TOKEN_FILE")
    monkeypatch.setattr(platformdirs, "user_config_dir", lambda app: str(tmp_path / "cfg" / app))
    auth = resolve_auth(ServerSettings())
    assert auth.path == tmp_path / "cfg" / "tinyagent" / "server-token"
    assert auth.path.read_text().strip() == auth.token
    explicit = resolve_auth(ServerSettings(token_file=tmp_path / "other"))
    assert explicit.path == tmp_path / "other" and explicit.token != auth.token


def test_token_file_readable_by_others_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("leaked-token\n")
    os.chmod(path, 0o644)
    with pytest.raises(ConfigurationError, match="readable by other users") as info:
        resolve_auth(ServerSettings(token_file=path))
    assert "leaked-token" not in str(info.value)
    os.chmod(path, 0o600)
    assert resolve_auth(ServerSettings(token_file=path)).token == "leaked-token"


def test_no_auth_and_token_contradict() -> None:
    with pytest.raises(ConfigurationError, match="contradict"):
        ServerSettings(token="x", no_auth=True)


def _serve_captured(monkeypatch: pytest.MonkeyPatch, agent: Agent, **kwargs: Any) -> dict[str, Any]:
    """Call :func:`serve` (what the CLI calls) with uvicorn.run replaced; return what it was given."""
    import uvicorn

    from tinyagent.apps.server import serve

    captured: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: captured.update(app=app, **kw))
    serve(agent, **kwargs)
    return captured


def test_serve_requires_the_token_and_logs_where_it_lives_never_the_token(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, _private_token_file: Path
) -> None:
    caplog.set_level(logging.INFO, logger="tinyagent")
    _, agent = _model_and_agent()
    captured = _serve_captured(monkeypatch, agent, port=9999)
    assert (captured["host"], captured["port"]) == ("127.0.0.1", 9999)
    token = _private_token_file.read_text().strip()
    assert str(_private_token_file) in caplog.text
    assert token not in caplog.text
    with ServerThread(captured["app"]) as running:
        assert httpx2.post(running.url + "/v1/agent/run", json={"query": "hi"}).status_code == 401
        ok = httpx2.post(running.url + "/v1/agent/run", json={"query": "what is the address of sid"},
                         headers={"Authorization": f"Bearer {token}"})
        assert ok.status_code == 200


def test_serve_no_auth_opt_out_keeps_the_host_and_origin_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    model, agent = _model_and_agent()
    captured = _serve_captured(monkeypatch, agent, no_auth=True, allowed_origins=["tauri://localhost"])
    with ServerThread(captured["app"]) as running:
        r = httpx2.post(running.url + "/v1/agent/run", json={"query": "what is the address of sid"})
        assert r.status_code == 200
        assert r.json()["answer"] == "the address is sid@example.com."
        r = httpx2.post(running.url + "/v1/agent/run", json={"query": "x"}, headers={"Origin": "tauri://localhost"})
        assert r.status_code == 200
        assert httpx2.post(running.url + "/v1/agent/run", json={"query": "x"},
                           headers={"Origin": "http://evil.example"}).status_code == 403
        assert httpx2.post(running.url + "/v1/agent/run", json={"query": "x"},
                           headers={"Host": "evil.example"}).status_code == 403
    assert len(model.requests) == 4  # two runs, each a plan and a join


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x", "application/jsonp"])
def test_json_bodies_need_the_json_content_type(server: ServerThread, content_type: str | None) -> None:
    headers = _auth() if content_type is None else {**_auth(), "Content-Type": content_type}
    for path in ("/v1/agent/run", "/v1/agent/stream", "/v1/chat/completions"):
        r = httpx2.post(server.url + path, content=b'{"query": "what is the address of sid"}', headers=headers)
        assert r.status_code == 415, path
        assert "application/json" in r.json()["error"]["message"]
    ok = httpx2.post(server.url + "/v1/agent/run", content=b'{"query": "what is the address of sid"}',
                     headers={**_auth(), "Content-Type": "application/json; charset=utf-8"})
    assert ok.status_code == 200


def test_deeply_nested_json_is_a_one_line_400_without_a_traceback(
    server: ServerThread, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    for body in (b"[" * 100_000, b'{"query": "x", "history": ' + b"[" * 100 + b"]" * 100 + b"}"):
        r = httpx2.post(server.url + "/v1/agent/run", content=body,
                        headers={**_auth(), "Content-Type": "application/json"})
        assert r.status_code == 400
        message = r.json()["error"]["message"]
        assert message == "the body nests deeper than 64 levels"
    assert not [rec for rec in caplog.records if rec.exc_info or rec.levelno >= logging.ERROR]
    assert "RecursionError" not in caplog.text and "Traceback" not in caplog.text
    assert httpx2.get(server.url + "/health").status_code == 200


def _failing_script(request: ModelRequest) -> str:
    return "" if request_stage(request) == "join" else "this is not a plan"


@pytest.fixture()
def failing_server() -> Iterator[ServerThread]:
    _, agent = _model_and_agent(_failing_script)
    with ServerThread(create_app(agent, ServerSettings(token=TOKEN))) as running:
        yield running


def test_failed_run_is_an_openai_error_not_a_made_up_answer(failing_server: ServerThread) -> None:
    r = httpx2.post(failing_server.url + "/v1/chat/completions",
                    json={"model": "tinyagent", "messages": [{"role": "user", "content": "do the thing"}]},
                    headers=_auth())
    assert r.status_code == 422
    body = r.json()
    assert "choices" not in body
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert body["error"]["type"] == "agent_error" and body["error"]["code"] == "run_failed"
    assert "the plan was invalid" in body["error"]["message"]
    assert "\n" not in body["error"]["message"]
    assert "could not make a plan" not in r.text.lower()
    assert body["tinyagent"]["status"] == "failed" and body["tinyagent"]["answer"] is None
    assert r.headers["x-should-retry"] == "false"


def test_failed_run_through_the_openai_sdk_raises(failing_server: ServerThread) -> None:
    openai = pytest.importorskip("openai", reason="the openai SDK is not installed")
    client = openai.OpenAI(base_url=failing_server.url + "/v1", api_key=TOKEN)  # default retries: must not retry
    with pytest.raises(openai.UnprocessableEntityError) as info:
        client.chat.completions.create(model="tinyagent", messages=[{"role": "user", "content": "do the thing"}])
    assert info.value.code == "run_failed"
    stream = client.chat.completions.create(model="tinyagent", stream=True,
                                            messages=[{"role": "user", "content": "do the thing"}])
    finishes, content = [], []
    with pytest.raises(openai.APIError, match="the plan was invalid"):
        for chunk in stream:
            finishes += [c.finish_reason for c in chunk.choices if c.finish_reason]
            content += [c.delta.content for c in chunk.choices if c.delta.content]
    assert finishes == [] and content == []


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]}, "tools"),
        ({"tool_choice": "auto"}, "tool_choice"),
        ({"n": 2}, "n"),
        ({"n": True}, "n"),
        ({"logprobs": True, "top_logprobs": 2}, "logprobs, top_logprobs"),
        ({"temperature": 0.2, "response_format": {"type": "json_object"}}, "response_format, temperature"),
        ({"functions": [{"name": "f"}], "whatever": 1}, "functions, whatever"),
    ],
)
def test_unsupported_fields_are_a_400_naming_them(server: ServerThread, extra: dict[str, Any], named: str) -> None:
    body = {"model": "tinyagent", "messages": [{"role": "user", "content": "what is the address of sid"}], **extra}
    r = httpx2.post(server.url + "/v1/chat/completions", json=body, headers=_auth())
    assert r.status_code == 400
    error = r.json()["error"]
    assert error["code"] == "unsupported_field"
    assert f"unsupported field(s): {named};" in error["message"]


def test_fields_at_their_off_value_are_accepted(server: ServerThread) -> None:
    body = {"model": "tinyagent", "messages": [{"role": "user", "content": "what is the address of sid"}],
            "n": 1, "logprobs": False, "tools": [], "tool_choice": "none", "temperature": None, "user": "u1"}
    r = httpx2.post(server.url + "/v1/chat/completions", json=body, headers=_auth())
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["message"]["content"] == "the address is sid@example.com."


def test_tool_messages_are_refused(server: ServerThread) -> None:
    body = {"messages": [{"role": "user", "content": "x"}, {"role": "tool", "content": "42", "tool_call_id": "a"}]}
    r = httpx2.post(server.url + "/v1/chat/completions", json=body, headers=_auth())
    assert r.status_code == 400
    assert "role 'tool' is not supported" in r.json()["error"]["message"]


@pytest.mark.parametrize("model", [5, 1.5, True, ["m"], ""])
def test_model_must_be_a_string(server: ServerThread, model: Any) -> None:
    body = {"model": model, "messages": [{"role": "user", "content": "what is the address of sid"}]}
    r = httpx2.post(server.url + "/v1/chat/completions", json=body, headers=_auth())
    assert r.status_code == 400
    assert r.json()["error"]["param"] == "model"
    assert "'model' must be a non-empty string" in r.json()["error"]["message"]


def test_model_is_echoed_back_exactly(server: ServerThread) -> None:
    body = {"model": "My-Model v2 ", "messages": [{"role": "user", "content": "what is the address of sid"}]}
    r = httpx2.post(server.url + "/v1/chat/completions", json=body, headers=_auth())
    assert r.status_code == 200
    assert r.json()["model"] == "My-Model v2 "
    del body["model"]
    assert httpx2.post(server.url + "/v1/chat/completions", json=body, headers=_auth()).json()["model"] == \
        "scripted-planner"


def test_streaming_usage_when_asked(server: ServerThread) -> None:
    openai = pytest.importorskip("openai", reason="the openai SDK is not installed")
    client = openai.OpenAI(base_url=server.url + "/v1", api_key=TOKEN, max_retries=0)
    stream = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "address of sid"}],
                                            stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0
    assert {c.model for c in chunks} == {"m"}


def test_agent_exception_is_a_500_the_sdk_does_not_retry() -> None:
    openai = pytest.importorskip("openai", reason="the openai SDK is not installed")
    from tinyagent.errors import ModelError

    class Broken:
        calls = 0

        async def run(self, query: str, **kwargs: Any) -> Any:
            Broken.calls += 1
            raise ModelError("the model file is gone")

    with ServerThread(create_app(Broken(), ServerSettings(token=TOKEN))) as running:
        client = openai.OpenAI(base_url=running.url + "/v1", api_key=TOKEN, max_retries=2)
        with pytest.raises(openai.InternalServerError, match="the model file is gone") as info:
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert info.value.response.headers["x-should-retry"] == "false"
    assert Broken.calls == 1  # steps may have run: a retry could send the same email twice
