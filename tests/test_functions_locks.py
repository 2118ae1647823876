"""Cross-process safety of the stores: several processes writing one data folder through the public tools lose
nothing (issue 17 finding 5: the store lock was a thread lock, so two processes lost each other's writes)."""

from __future__ import annotations

import asyncio
import datetime as dt
import multiprocessing
import re
import threading
import time
from pathlib import Path

import pytest

from tinyagent import ToolContext
from tinyagent.errors import PathEscapeError
from tinyagent.functions import FunctionsSettings, StoreError, builtin_tools
from tinyagent.functions._paths import store_lock

TODAY = dt.date(2026, 12, 1)
PROCESSES = 4
APPENDS = 250
EVENTS = 25


def _append_worker(data_dir: str, worker: int, count: int, start: object) -> None:
    """Append ``count`` numbered lines to one shared note through ``append_note``."""
    tools = {t.name: t for t in builtin_tools(FunctionsSettings(data_dir=Path(data_dir), timezone="UTC"))}
    context = ToolContext(today=TODAY)

    async def run() -> None:
        for i in range(count):
            await tools["append_note"].call({"title": "Shared log", "text": f"w{worker}-{i}"}, context)

    start.wait()  # type: ignore[attr-defined]
    asyncio.run(run())


def _event_worker(data_dir: str, worker: int, count: int, start: object) -> None:
    """Create ``count`` events through ``create_calendar_event``."""
    tools = {t.name: t for t in builtin_tools(FunctionsSettings(data_dir=Path(data_dir), timezone="UTC"))}
    context = ToolContext(today=TODAY)

    async def run() -> None:
        for i in range(count):
            args = {"title": f"w{worker}-{i}", "start": f"2026-12-{2 + i % 20:02d}T{8 + worker:02d}:00"}
            await tools["create_calendar_event"].call(args, context)

    start.wait()  # type: ignore[attr-defined]
    asyncio.run(run())


def _run_workers(target: object, data_dir: Path, count: int) -> float:
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    procs = [ctx.Process(target=target, args=(str(data_dir), w, count, start)) for w in range(PROCESSES)]
    for p in procs:
        p.start()
    began = time.perf_counter()
    start.set()
    for p in procs:
        p.join(timeout=120)
    elapsed = time.perf_counter() - began
    assert [p.exitcode for p in procs] == [0] * PROCESSES
    return elapsed


def test_four_processes_appending_to_one_note_lose_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "notes").mkdir(parents=True)
    (data / "notes" / "Shared log.md").write_text("# Shared log\n\nstart\n")
    _run_workers(_append_worker, data, APPENDS)
    lines = re.findall(r"^w\d+-\d+$", (data / "notes" / "Shared log.md").read_text(), flags=re.M)
    expected = {f"w{w}-{i}" for w in range(PROCESSES) for i in range(APPENDS)}
    assert len(lines) == len(expected) == PROCESSES * APPENDS
    assert set(lines) == expected
    for w in range(PROCESSES):  # each process's lines stay in its own order
        assert [line for line in lines if line.startswith(f"w{w}-")] == [f"w{w}-{i}" for i in range(APPENDS)]
    assert sorted(p.name for p in (data / "notes").iterdir()) == ["Shared log.md"]  # no temp files left


def test_four_processes_creating_events_lose_none(tmp_path: Path) -> None:
    icalendar = pytest.importorskip("icalendar")
    data = tmp_path / "data"
    _run_workers(_event_worker, data, EVENTS)
    cal = icalendar.Calendar.from_ical((data / "calendar" / "calendar.ics").read_bytes())
    titles = sorted(str(e.get("summary")) for e in cal.walk("VEVENT"))
    assert titles == sorted(f"w{w}-{i}" for w in range(PROCESSES) for i in range(EVENTS))


def test_the_store_lock_excludes_threads_and_is_reentrant(tmp_path: Path) -> None:
    store = tmp_path / "store.txt"
    inside: list[int] = []
    overlaps: list[int] = []

    def work(n: int) -> None:
        for _ in range(50):
            with store_lock(store), store_lock(store):  # re-entrant in one thread
                inside.append(n)
                if len(inside) > 1:
                    overlaps.append(n)
                inside.remove(n)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlaps == []


def test_a_store_held_by_another_process_times_out_with_a_typed_error(tmp_path: Path) -> None:
    filelock = pytest.importorskip("filelock")
    store = tmp_path / "calendar.ics"
    other = filelock.FileLock(tmp_path / ".calendar.ics.lock", thread_local=False)
    held = threading.Event()
    release = threading.Event()

    def hold() -> None:  # a separate lock object in another thread behaves like another process's handle
        with other:
            held.set()
            release.wait(5)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(5)
    try:
        with pytest.raises(StoreError, match="busy"), store_lock(store, timeout_s=0.2):
            pass
    finally:
        release.set()
        holder.join()


def test_a_planted_lock_file_link_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / ".notes.lock").symlink_to(target)
    with pytest.raises(PathEscapeError, match="symlink"), store_lock(tmp_path / "data" / "notes"):
        pass
    assert target.read_text() == "keep me"
