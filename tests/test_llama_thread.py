"""All of llama.cpp's work runs on one thread (tinyagent.models._thread): why and how is in that module."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from tinyagent.errors import ModelError
from tinyagent.models import ModelRequest, on_llama_thread, submit_llama


def test_runs_on_one_other_thread_in_order() -> None:
    seen: list[tuple[int, int]] = []
    futures = [submit_llama(lambda i=i: seen.append((i, threading.get_ident()))) for i in range(20)]
    for f in futures:
        f.result(timeout=10)
    assert [i for i, _ in seen] == list(range(20))
    assert len({ident for _, ident in seen}) == 1
    assert seen[0][1] != threading.get_ident()
    assert on_llama_thread(threading.get_ident) == seen[0][1]


def test_errors_reach_the_caller() -> None:
    def boom() -> None:
        raise ModelError("llama.cpp failed")

    with pytest.raises(ModelError, match="llama.cpp failed"):
        on_llama_thread(boom)
    assert on_llama_thread(lambda: 7) == 7  # the thread survives


def test_a_job_that_calls_again_runs_inline_instead_of_waiting_for_itself() -> None:
    def outer() -> tuple[int, int]:
        return threading.get_ident(), on_llama_thread(threading.get_ident)

    a, b = on_llama_thread(outer)
    assert a == b


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_gets_its_own_thread() -> None:
    on_llama_thread(lambda: None)  # the parent's thread exists
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit code
        try:
            os._exit(0 if on_llama_thread(lambda: 41) + 1 == 42 else 1)
        finally:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


@pytest.mark.slow
def test_model_load_and_every_evaluation_share_one_thread(smollm2_path: Path, monkeypatch: Any) -> None:
    """Loading, the own decoder, llama-cpp-python's loop and requests from other threads: one OpenMP master."""
    import llama_cpp.llama_cpp as api

    from tinyagent.models import LlamaCppModel

    threads: set[int] = set()
    decode = api.llama_decode

    def spy(ctx: Any, batch: Any) -> int:
        threads.add(threading.get_ident())
        return int(decode(ctx, batch))

    monkeypatch.setattr(api, "llama_decode", spy)
    model = LlamaCppModel(path=smollm2_path, n_threads=2, prefix_cache_dir=None)
    messages = [{"role": "user", "content": "Say hello."}]

    async def complete() -> str:
        return (await model.complete(ModelRequest(messages=messages, max_tokens=4))).text

    asyncio.run(complete())
    model.decoder = "llama"
    asyncio.run(complete())
    worker = threading.Thread(target=lambda: asyncio.run(complete()))
    worker.start()
    worker.join(60)
    assert len(threads) == 1
    assert threads == {on_llama_thread(threading.get_ident)}
    asyncio.run(model.aclose())


@pytest.mark.slow
def test_planner_reads_the_weights_instead_of_mapping_them(smollm2_path: Path) -> None:
    """Mapped, the file's pages stay resident beside llama.cpp's repacked copy (RSS +600 MB for the 1.5B)."""
    import llama_cpp

    from tinyagent.models import LlamaCppModel

    model = LlamaCppModel(path=smollm2_path, n_threads=2, prefix_cache_dir=None)
    assert model.llama.model_params.load_mode == llama_cpp.LLAMA_LOAD_MODE_NONE
    shared = LlamaCppModel(path=smollm2_path, n_threads=2, prefix_cache_dir=None, use_mmap=True)
    assert shared.llama.model_params.load_mode == llama_cpp.LLAMA_LOAD_MODE_MMAP
    for m in (model, shared):
        asyncio.run(m.aclose())
