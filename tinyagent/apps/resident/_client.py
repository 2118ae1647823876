"""The resident worker's client: the ``tinyagent`` command's entry point (the standard library only)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["DEFAULT_KEEP_ALIVE_S", "FORWARDED_COMMANDS", "INSIDE_WORKER_ENV", "KEEP_ALIVE_ENV", "LineReader",
           "ResidentCommand", "forward", "keep_alive_seconds", "main", "parse_command", "request_status",
           "request_stop", "runtime_dir", "send_request", "socket_path", "spawn_worker", "wait_for_listener",
           "worker_key"]

KEEP_ALIVE_ENV = "TINYAGENT_KEEP_ALIVE"
DEFAULT_KEEP_ALIVE_S = 300.0
FORWARDED_COMMANDS = frozenset({"run", "plan", "warm"})
# Global options that take a value (the command is the first word that is neither an option nor such a value).
_VALUE_OPTIONS = frozenset({"--model", "-m", "--tools", "--data-dir", "--today", "--threads", "--max-replans"})
# Where caches, data and configuration live: a worker serves only clients that agree on all of it.
_KEY_ENV_PREFIXES = ("TINYAGENT_", "XDG_")
_KEY_ENV_NAMES = ("HOME", "PYTHONPATH", "VIRTUAL_ENV")
_MODEL_SPECS_NOT_KEPT = ("scripted:", "openai:", "http://", "https://")
_HEADER = struct.Struct("!I")
_MAX_HEADER = 1 << 20
INSIDE_WORKER_ENV = "TINYAGENT_RESIDENT_WORKER"


@dataclass(frozen=True)
class ResidentCommand:
    """What the client needs to know of an argument list: the command and the model spec it names, if any."""

    command: str | None
    model: str | None
    threads: str | None
    help: bool


def parse_command(argv: Sequence[str]) -> ResidentCommand:
    """Find the command word, ``--model`` and ``--threads`` in ``argv`` (global options before or after the
    command), without importing the CLI. ``--opt=value`` is understood; anything unusual only means the command
    is not forwarded."""
    command: str | None = None
    values: dict[str, str] = {}
    wants_help = False
    index = 0
    while index < len(argv):
        word = argv[index]
        if word in ("--help", "-h"):
            wants_help = True
        elif word == "--":
            break
        elif word.startswith("--") and "=" in word:
            name, _, value = word.partition("=")
            values[name] = value
        elif word in _VALUE_OPTIONS:
            if index + 1 < len(argv):
                values[word] = argv[index + 1]
            index += 1
        elif not word.startswith("-") and command is None:
            command = word
        index += 1
    model = values.get("--model", values.get("-m"))
    return ResidentCommand(command, model, values.get("--threads"), wants_help)


def keep_alive_seconds(env: Mapping[str, str] | None = None) -> float:
    """``TINYAGENT_KEEP_ALIVE`` in seconds: a number, or a number with ``s``, ``m`` or ``h``; 0 turns the worker
    off. Anything unreadable means 0 (the worker is an optimisation, never a reason to fail)."""
    raw = (os.environ if env is None else env).get(KEEP_ALIVE_ENV)
    if raw is None or not raw.strip():
        return DEFAULT_KEEP_ALIVE_S
    text = raw.strip().lower()
    scale = {"s": 1.0, "m": 60.0, "h": 3600.0}.get(text[-1:], 0.0)
    try:
        value = float(text[:-1]) * scale if scale else float(text)
    except ValueError:
        return 0.0
    return value if value > 0 else 0.0


def runtime_dir() -> Path | None:
    """The folder of this user's worker sockets, created 0700; None when it is not safe to use (another owner,
    looser permissions, a symlink) or the platform has no Unix sockets with descriptor passing."""
    if not hasattr(socket, "AF_UNIX") or not hasattr(socket, "send_fds") or not hasattr(os, "getuid"):
        return None
    base = os.environ.get("XDG_RUNTIME_DIR")
    folder = Path(base) / "tinyagent" if base and Path(base).is_dir() else \
        Path(tempfile.gettempdir()) / f"tinyagent-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        info = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        return None
    return folder


def _source_stamp() -> str:
    """Path, size and modification time of every tinyagent source file: edited code means another worker."""
    root = Path(__file__).resolve().parents[2]
    digest = hashlib.sha256()
    stack = [root]
    while stack:
        folder = stack.pop()
        with contextlib.suppress(OSError), os.scandir(folder) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                    stack.append(Path(entry.path))
                elif entry.name.endswith(".py"):
                    info = entry.stat()
                    digest.update(f"{entry.path}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def worker_key(env: Mapping[str, str] | None = None) -> str:
    """The hash that names a worker's socket (see the module docstring)."""
    env = os.environ if env is None else env
    relevant = sorted((k, v) for k, v in env.items() if k.startswith(_KEY_ENV_PREFIXES) or k in _KEY_ENV_NAMES)
    relevant = [(k, v) for k, v in relevant if k not in (KEEP_ALIVE_ENV, "XDG_SESSION_ID", "XDG_RUNTIME_DIR")]
    # The environment's prefix and the real interpreter, not sys.executable's spelling (python vs python3).
    text = json.dumps([sys.prefix, os.path.realpath(sys.executable), _source_stamp(), relevant])
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def socket_path(env: Mapping[str, str] | None = None) -> Path | None:
    """This configuration's worker socket, or None where workers are not available."""
    folder = runtime_dir()
    return None if folder is None else folder / f"{worker_key(env)}.sock"


# -- the wire: a length-prefixed JSON request (with the terminal's descriptors), then short text lines back ------


def send_request(sock: socket.socket, payload: Mapping[str, Any], fds: Sequence[int] = ()) -> None:
    data = json.dumps(payload).encode()
    frame = _HEADER.pack(len(data)) + data
    if fds:
        sent = socket.send_fds(sock, [frame], list(fds))
        sock.sendall(frame[sent:])
    else:
        sock.sendall(frame)


class LineReader:
    """Newline-terminated text lines from a socket (the worker's replies, the client's interrupts)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._buffer = b""

    def readline(self) -> str | None:
        """The next line without its newline, or None at the end of the stream."""
        while b"\n" not in self._buffer:
            try:
                chunk = self.sock.recv(4096)
            except (ConnectionError, OSError):
                return None
            if not chunk:
                return None
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode("utf-8", "replace")


def _connect(path: Path, timeout_s: float = 2.0) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout_s)
    try:
        sock.connect(str(path))
    except OSError:
        sock.close()
        return None
    sock.settimeout(None)
    return sock


@contextlib.contextmanager
def _terminal_fds() -> Iterator[list[int]]:
    """The client's stdin, stdout and stderr descriptors (``/dev/null`` for any that is closed)."""
    opened: list[int] = []
    fds: list[int] = []
    for number in (0, 1, 2):
        try:
            os.fstat(number)
            fds.append(number)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            opened.append(null)
            fds.append(null)
    try:
        yield fds
    finally:
        for fd in opened:
            os.close(fd)


def forward(argv: Sequence[str], path: Path) -> int | None:
    """Run ``tinyagent ARGV`` in the worker at ``path``; its exit status, or None when no worker took the request
    (none is listening, or it went away before starting): the caller then runs the command itself."""
    sock = _connect(path)
    if sock is None:
        return None
    with sock, _terminal_fds() as fds:
        payload = {"op": "run", "argv": list(argv), "cwd": os.getcwd(), "env": dict(os.environ),
                   "encoding": getattr(sys.stdout, "encoding", None) or "utf-8"}
        try:
            send_request(sock, payload, fds)
        except OSError:
            return None
        return _await_exit(sock)


def _await_exit(sock: socket.socket) -> int | None:
    reader = LineReader(sock)
    started = False
    interrupts = 0
    while True:
        try:
            line = reader.readline()
        except KeyboardInterrupt:
            interrupts += 1
            with contextlib.suppress(OSError):
                sock.sendall(b"INT\n")  # the worker stops the command, which exits 130 as it would here
            if interrupts > 1 or not started:  # a queued request is dropped before it starts
                sys.stderr.write("aborted\n")
                return 130
            continue
        if line is None:
            if not started:
                return None
            sys.stderr.write("error: the resident tinyagent worker stopped during the request; run it again "
                             f"(or set {KEEP_ALIVE_ENV}=0 to run each command in its own process)\n")
            return 1
        if line == "started":
            started = True
        elif line.startswith("exit "):
            try:
                return int(line[5:])
            except ValueError:
                return 1
        elif line == "busy" and not started and sys.stderr.isatty():
            sys.stderr.write("waiting for the resident tinyagent worker (loading, or another request)…\n")


def _ask(path: Path, op: str) -> str | None:
    """Send ``op`` (``status``, ``stop``) and return the worker's one-line reply; None when none answered."""
    sock = _connect(path)
    if sock is None:
        return None
    with sock:
        try:
            send_request(sock, {"op": op})
            return LineReader(sock).readline()
        except OSError:
            return None


def request_status(path: Path) -> dict[str, Any] | None:
    """The worker's status (``pid``, ``model``, ``served``, ``idle_s``, ``keep_alive_s``, ``busy``, ``queued``),
    or None when none is listening."""
    line = _ask(path, "status")
    if line is None or not line.startswith("status "):
        return None
    status: dict[str, Any] = json.loads(line[7:])
    return status


def request_stop(path: Path, timeout_s: float = 30.0) -> bool:
    """Ask the worker to exit once its current request is done; wait until it has. False when none was running."""
    if _ask(path, "stop") is None:
        return False
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and path.exists():
        time.sleep(0.05)
    return True


def spawn_worker(path: Path, model: str | None, threads: str | None, keep_alive_s: float) -> int:
    """Start a detached worker for ``path`` that loads ``model`` at once; its pid. It inherits this process's
    environment (which the socket's name is a hash of). Its log is ``<socket>.log``.

    One worker per user: any other worker in the folder (another configuration, older code) is asked to exit
    once its current request is done, so two resident models never hold memory (and the cores) at once.
    """
    for other in path.parent.glob("*.sock"):
        if other != path:
            request_stop(other, timeout_s=0.0)
    _forget_old_workers(path)
    command = [sys.executable, "-m", "tinyagent.apps.resident", "--socket", str(path), "--keep-alive",
               str(keep_alive_s)]
    if model:
        command += ["--model", model]
    if threads:
        command += ["--threads", threads]
    log_path = path.with_suffix(".log")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    log_fd = os.open(log_path, flags, 0o600)
    try:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log_fd, stderr=log_fd, cwd="/",
                                   start_new_session=True, close_fds=True)
    finally:
        os.close(log_fd)
    return process.pid


def _forget_old_workers(path: Path, age_s: float = 3600.0) -> None:
    """Remove the lock and log files of workers that ended over ``age_s`` ago (older code, other settings)."""
    now = time.time()
    for leftover in [*path.parent.glob("*.lock"), *path.parent.glob("*.log")]:
        if leftover.stem == path.stem or leftover.with_suffix(".sock").exists():
            continue
        with contextlib.suppress(OSError):
            if now - leftover.stat().st_mtime > age_s:
                leftover.unlink()


def _keeps_model(parsed: ResidentCommand) -> bool:
    """Whether a worker is worth leaving behind: a local model (a catalog name or a GGUF file)."""
    spec = (parsed.model or os.environ.get("TINYAGENT_MODEL") or "").strip()
    return not spec.startswith(_MODEL_SPECS_NOT_KEPT)


def wait_for_listener(path: Path, timeout_s: float) -> bool:
    """Whether a worker accepts connections at ``path`` within ``timeout_s`` (a socket file left by a killed
    worker does not count: nobody listens on it until the new worker replaces it)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if request_status(path) is not None:
            return True
        time.sleep(0.02)
    return False


def main(argv: Sequence[str] | None = None) -> None:
    """The ``tinyagent`` console script: ``run``/``plan``/``warm`` go to the resident worker, started first when
    none is listening and the command loads a local model (it binds its socket at once and loads the model while
    the command waits, so the model is loaded once, in the process that keeps it); anything else, or a worker that
    could not start, runs here."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    args = list(sys.argv[1:] if argv is None else argv)
    parsed = parse_command(args)
    keep_alive = keep_alive_seconds()
    path = None
    if (keep_alive > 0 and parsed.command in FORWARDED_COMMANDS and not parsed.help
            and not os.environ.get(INSIDE_WORKER_ENV)):
        path = socket_path()
    if path is not None:
        code = forward(args, path)
        if code is None and _keeps_model(parsed):
            with contextlib.suppress(OSError):
                spawn_worker(path, parsed.model, parsed.threads, keep_alive)
                if wait_for_listener(path, 15.0):
                    code = forward(args, path)
        if code is not None:
            raise SystemExit(code)
    from ..cli import run_cli

    raise SystemExit(run_cli(args))
