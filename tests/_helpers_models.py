"""Shared pieces of the tests that run a real catalog model."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable


def real_model_available(name: str) -> bool:
    """Whether llama-cpp-python and the catalog model ``name`` are both installed (for ``pytest.mark.skipif``)."""
    try:
        import llama_cpp  # noqa: F401

        from tinyagent.models import ModelCatalog

        return bool(ModelCatalog().installed(name))
    except Exception:  # noqa: BLE001 - any missing piece means: skip
        return False


def kill_when(command: list[str], ready: Callable[[], bool], timeout: float, env: dict[str, str] | None = None) -> None:
    """Start ``command``, wait until ``ready()`` holds, then SIGKILL it (a crash, as far as the program can tell).

    Fails the test if the program ends (or ``timeout`` passes) before it is ready; never leaves it running.
    """
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and proc.poll() is None and not ready():
            time.sleep(0.05)
        err = b"" if proc.poll() is None else proc.stderr.read()[-2000:]  # type: ignore[union-attr]
        assert proc.poll() is None, f"the program ended before it could be killed: {err!r}"
        assert ready(), f"not ready to be killed after {timeout} s"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()
