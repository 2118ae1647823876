"""One thread for all of llama.cpp's work in a process.

The llama.cpp wheels are built with OpenMP, and libgomp keeps one team of worker threads per thread that starts a
parallel region. A second team (the model loaded on one thread and run on another, a new thread per request, an
embedder on the main thread and the planner on a worker) stays awake spinning after its region ends and takes a core
from the team that runs now. On two cores that costs 20-50% of decoding speed: measured with the 1.5B planner, a plan
decoded at 21.5 tokens/s on the thread that loaded the model and at 14-17 tokens/s on a fresh thread (and at 10 with
``OMP_WAIT_POLICY=ACTIVE``). So every model load and every evaluation in tinyagent runs on one long-lived thread,
through :func:`on_llama_thread` / :func:`submit_llama`.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

__all__ = ["on_llama_thread", "submit_llama"]

T = TypeVar("T")


class _LlamaThread:
    """A daemon thread that runs submitted calls in order."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = (
            queue.SimpleQueue())
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    @property
    def current(self) -> bool:
        """Whether the caller runs on this thread."""
        return self._thread is not None and threading.current_thread() is self._thread

    def submit(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        if self.current:  # a job that calls llama.cpp again: run it here, or it would wait for itself
            future.set_running_or_notify_cancel()
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller through the future
                future.set_exception(exc)
            return future
        self._ensure_started()
        self._jobs.put((future, fn, args, kwargs))
        return future

    def _ensure_started(self) -> None:
        with self._start_lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="tinyagent-llama", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            future, fn, args, kwargs = self._jobs.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller through the future
                future.set_exception(exc)
            del future, fn, args, kwargs

    def _after_fork(self) -> None:
        """In a forked child the thread does not exist: start afresh (queued jobs belong to the parent)."""
        self._jobs = queue.SimpleQueue()
        self._thread = None
        self._start_lock = threading.Lock()


_THREAD = _LlamaThread()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_THREAD._after_fork)


def submit_llama(fn: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
    """Run ``fn(*args, **kwargs)`` on the llama.cpp thread; a future of its result.

    Called from that thread itself, ``fn`` runs at once (the future is already done).
    """
    return _THREAD.submit(fn, *args, **kwargs)


def on_llama_thread(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` run on the llama.cpp thread; waits for it and returns its result (or raises)."""
    return _THREAD.submit(fn, *args, **kwargs).result()
