"""The resident worker's process: a Unix socket, a queue of requests, and the CLI run on each client's terminal.

See :mod:`tinyagent.apps.resident` for what it is for and why it is safe. The accept thread answers ``status`` and
``stop`` at once and queues ``run`` requests (replying ``queued``, and ``busy`` while the model loads or another
request runs); the main thread runs them one at a time: ``started``, the command on the client's descriptors
(dup'ed onto 0, 1 and 2), then ``exit N``. A watcher thread turns the client's ``INT`` line, or its going away,
into a KeyboardInterrupt in the command (which prints ``aborted`` and exits 130), and the worker ends after such
a request.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import logging
import os
import queue
import signal
import socket
import struct
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from ._client import _HEADER, _MAX_HEADER, INSIDE_WORKER_ENV, LineReader

log = logging.getLogger("tinyagent.apps.resident")


@dataclass
class _Request:
    conn: socket.socket
    payload: dict[str, Any]
    fds: list[int] = field(default_factory=list)


@dataclass
class _State:
    keep_alive_s: float
    model: str | None
    threads: int | None
    requests: queue.Queue[_Request | None] = field(default_factory=queue.Queue)
    busy: bool = True  # loading the model
    served: int = 0
    last_active: float = field(default_factory=time.monotonic)
    stopping: bool = False

    def status(self) -> dict[str, Any]:
        return {"pid": os.getpid(), "model": self.model, "threads": self.threads, "served": self.served,
                "busy": self.busy, "queued": self.requests.qsize(), "keep_alive_s": self.keep_alive_s,
                "idle_s": round(time.monotonic() - self.last_active, 1)}


def _peer_is_us(conn: socket.socket) -> bool:
    """On Linux, the connecting process's uid must be ours (the socket folder's 0700 already keeps others out)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return True
    creds = conn.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return bool(uid == os.getuid())


def _read_request(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    data, fds, _flags, _addr = socket.recv_fds(conn, 65536, 3)
    try:
        if len(data) < _HEADER.size:
            raise ValueError("short header")
        (length,) = _HEADER.unpack(data[:_HEADER.size])
        if length > _MAX_HEADER:
            raise ValueError(f"a {length}-byte request")
        body = data[_HEADER.size:]
        while len(body) < length:
            chunk = conn.recv(length - len(body))
            if not chunk:
                raise ValueError("the request ended early")
            body += chunk
        payload = json.loads(body[:length])
        if not isinstance(payload, dict):
            raise ValueError("the request is not an object")
    except (ValueError, OSError):
        for fd in fds:
            os.close(fd)
        raise
    return payload, list(fds)


def _accept_loop(server: socket.socket, state: _State) -> None:
    while True:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        try:
            if not _peer_is_us(conn):
                conn.close()
                continue
            conn.settimeout(5.0)
            payload, fds = _read_request(conn)
            conn.settimeout(None)
        except (ValueError, OSError) as exc:
            log.warning("refused a request: %s", exc)
            conn.close()
            continue
        op = payload.get("op")
        with contextlib.suppress(OSError):
            if op == "status":
                conn.sendall(f"status {json.dumps(state.status())}\n".encode())
                conn.close()
            elif op == "stop":
                state.stopping = True
                state.requests.put(None)
                conn.sendall(b"ok\n")
                conn.close()
            elif op == "run" and len(fds) == 3 and isinstance(payload.get("argv"), list):
                conn.sendall(b"queued\n" + (b"busy\n" if state.busy or state.requests.qsize() else b""))
                state.requests.put(_Request(conn, payload, fds))
                continue
            else:
                conn.close()
        for fd in fds:
            os.close(fd)


class _Watch(threading.Thread):
    """Turns the client's ``INT`` line, or its going away, into a KeyboardInterrupt in the running command."""

    def __init__(self, conn: socket.socket) -> None:
        super().__init__(daemon=True, name="tinyagent-resident-watch")
        self.conn = conn
        self.lock = threading.Lock()
        self.finished = False
        self.fired = False

    def run(self) -> None:
        reader = LineReader(self.conn)
        while True:
            line = reader.readline()
            with self.lock:
                if self.finished:
                    return
                if line is None or line == "INT":
                    self.fired = True
                    # A real SIGINT to the main thread (not interrupt_main, which waits for the next bytecode):
                    # it wakes the event loop's wait, and asyncio's own handler cancels the command.
                    signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
                if line is None:
                    return

    def finish(self) -> None:
        with self.lock:
            self.finished = True


@contextlib.contextmanager
def _client_terminal(fds: Sequence[int], encoding: str) -> Iterator[None]:
    """The client's stdin, stdout and stderr as this process's descriptors 0-2 and ``sys.std*`` for the command."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    saved_fds = [os.dup(number) for number in (0, 1, 2)]
    saved_streams = (sys.stdin, sys.stdout, sys.stderr)
    opened: list[TextIO] = []
    try:
        for number, fd in enumerate(fds):
            os.dup2(fd, number)
        sys.stdin = open(0, encoding=encoding, errors="replace", closefd=False)  # noqa: SIM115
        sys.stdout = open(1, "w", encoding=encoding, errors="replace", closefd=False,  # noqa: SIM115
                          buffering=1 if os.isatty(1) else -1)
        sys.stderr = open(2, "w", encoding=encoding, errors="backslashreplace", closefd=False,  # noqa: SIM115
                          buffering=1)
        opened += [sys.stdin, sys.stdout, sys.stderr]
        yield
    finally:
        for stream in opened:
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
            with contextlib.suppress(OSError, ValueError):
                stream.close()
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        for number, fd in enumerate(saved_fds):
            os.dup2(fd, number)
            os.close(fd)
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)


def _forget_user_modules(before: set[str]) -> None:
    installed = tuple({str(Path(p).resolve()) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)})
    own = str(Path(__file__).resolve().parents[2])
    for name in set(sys.modules) - before:
        origin = getattr(sys.modules.get(name), "__file__", None)
        if origin and not str(Path(origin).resolve()).startswith((*installed, own)):
            sys.modules.pop(name, None)


@contextlib.contextmanager
def _client_process(payload: dict[str, Any]) -> Iterator[None]:
    """The client's environment and working directory for the command; the root logger's handlers put back, and
    the modules the command imported from outside this Python environment (a tools file's own helpers, a
    project's package) forgotten, so that the next command imports them as they are then."""
    saved_env = dict(os.environ)
    saved_modules = set(sys.modules)
    saved_cwd = os.getcwd()
    root = logging.getLogger()
    saved_handlers, saved_level = list(root.handlers), root.level
    env = payload.get("env")
    if isinstance(env, dict):
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in env.items()})
    os.environ[INSIDE_WORKER_ENV] = "1"
    try:
        cwd = payload.get("cwd")
        if isinstance(cwd, str):
            os.chdir(cwd)
        yield
    finally:
        _forget_user_modules(saved_modules)
        root.handlers[:] = saved_handlers
        root.setLevel(saved_level)
        os.environ.clear()
        os.environ.update(saved_env)
        with contextlib.suppress(OSError):
            os.chdir(saved_cwd)


def _gone(conn: socket.socket) -> bool:
    """Whether the client hung up or sent its interrupt before its request started."""
    conn.setblocking(False)
    try:
        waiting = conn.recv(64, socket.MSG_PEEK)
    except BlockingIOError:
        return False
    except OSError:
        return True
    finally:
        conn.setblocking(True)
    return not waiting or b"INT" in waiting


def _serve(request: _Request, run_cli: Any) -> bool:
    """Run one request; whether the worker must end after it (interrupted, or failed unexpectedly)."""
    conn, payload = request.conn, request.payload
    try:
        if _gone(conn):  # interrupted, or closed, while it waited in the queue: not run at all
            raise ConnectionAbortedError
        conn.sendall(b"started\n")
    except OSError:
        for fd in request.fds:
            os.close(fd)
        conn.close()
        return False
    watch = _Watch(conn)
    watch.start()
    broken = False
    code = 1
    argv = [str(a) for a in payload["argv"]]
    encoding = str(payload.get("encoding") or "utf-8")
    try:
        try:
            with _client_process(payload), _client_terminal(request.fds, encoding):
                code = run_cli(argv)
        finally:
            watch.finish()
    except KeyboardInterrupt:
        code, broken = 130, True
    except BaseException:  # the command's own failures are exit codes; anything else ends this worker
        log.exception("the request %s failed", argv)
        broken = True
    broken = broken or watch.fired
    with contextlib.suppress(OSError):
        conn.sendall(f"exit {code}\n".encode())
    conn.close()
    return broken


def _terminate(state: _State) -> None:
    """SIGTERM: a running command stops as on Ctrl-C (its client sees exit 130) and the worker ends after it;
    an idle worker ends at once. Either way the socket is removed on the way out."""
    state.stopping = True
    if state.busy:
        raise KeyboardInterrupt
    raise SystemExit(0)


def serve(socket_file: Path, keep_alive_s: float, model: str | None, threads: int | None) -> int:
    """Bind ``socket_file``, load ``model``, and run queued requests until ``keep_alive_s`` idle seconds pass (or
    a stop, or a broken request). 0 when another worker holds the socket already."""
    lock_flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    lock_fd = os.open(socket_file.with_suffix(".lock"), lock_flags, 0o600)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        log.info("another worker serves %s", socket_file)
        return 0
    with contextlib.suppress(FileNotFoundError):
        socket_file.unlink()  # a dead worker's socket: the lock says nobody serves it
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)
    try:
        server.bind(str(socket_file))
    finally:
        os.umask(old_umask)
    server.listen(16)
    state = _State(keep_alive_s, model, threads)
    signal.signal(signal.SIGTERM, lambda *_: _terminate(state))
    threading.Thread(target=_accept_loop, args=(server, state), daemon=True, name="tinyagent-resident").start()
    os.environ[INSIDE_WORKER_ENV] = "1"
    try:
        from .. import _runtime
        from ..cli import run_cli

        _runtime.keep_models_loaded()
        state.model = model = model or _runtime.default_model_name()
        _runtime.load_model_spec(model, threads=threads)
        log.info("worker %d ready on %s (model %s)", os.getpid(), socket_file, model)
        state.busy = False
        while not state.stopping:
            remaining = keep_alive_s - (time.monotonic() - state.last_active)
            try:
                request = state.requests.get(timeout=remaining) if remaining > 0 else None
            except queue.Empty:
                request = None
            if request is None:
                break
            state.busy = True
            broken = _serve(request, run_cli)
            state.busy = False
            state.served += 1
            state.last_active = time.monotonic()
            if broken:
                log.info("ending after an interrupted or failed request")
                break
    except (SystemExit, KeyboardInterrupt):  # SIGTERM while idle or loading
        log.info("terminated")
    except Exception:
        log.exception("the worker failed")
    finally:
        with contextlib.suppress(OSError):
            socket_file.unlink()  # ours: no other worker binds it while this one holds the lock
        server.close()
    return 0


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m tinyagent.apps.resident --socket PATH [--keep-alive S] [--model SPEC] [--threads N]``."""
    parser = argparse.ArgumentParser(prog="python -m tinyagent.apps.resident",
                                     description="A resident tinyagent worker (started by the tinyagent command).")
    parser.add_argument("--socket", required=True, type=Path)
    parser.add_argument("--keep-alive", type=float, default=300.0)
    parser.add_argument("--model")
    parser.add_argument("--threads", type=int)
    args = parser.parse_args(argv)
    # The log keeps its own descriptor: 0-2 are the client's terminal while a request runs.
    handler = logging.StreamHandler(os.fdopen(os.dup(2), "w", buffering=1))
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
    code = serve(args.socket, args.keep_alive, args.model, args.threads)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)  # not a normal exit: llama.cpp's threads may still hold the model
