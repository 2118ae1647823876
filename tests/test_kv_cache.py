"""The llama.cpp prompt-prefix KV cache on disk (``LlamaCppModel(prefix_cache_dir=...)``), on SmolLM2-135M."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from tinyagent._prompts import _PLANNER_RULES
from tinyagent.models import LlamaCppModel, ModelRequest
from tinyagent.models.llama._kv_cache import _PrefixStore, _Snapshot

_TOOLS = "\n".join(
    f"- tool_{i}(name: str, count: int = optional, when: str = optional): does thing number {i} with the {w} store."
    for i, w in enumerate(["contacts", "calendar", "mail", "notes", "files", "reminders"][:4])
)
BASE = f"{_PLANNER_RULES}\n\nTools:\n{_TOOLS}\n\nExamples:\n"
SYSTEM_A = BASE + "Request: ask tool_1 for alpha\nPlan:\n1. tool_1(name=\"alpha\")\n2. join()<END_OF_PLAN>\n"
SYSTEM_B = BASE + "Request: ask tool_2 for beta\nPlan:\n1. tool_2(name=\"beta\", count=2)\n2. join()<END_OF_PLAN>\n"
QUERY = "Today is 2025-01-06 (Monday).\nRequest: run tool_3 for Sid"


def _model(path: Path, cache: Path | None) -> LlamaCppModel:
    return LlamaCppModel(path=path, n_threads=2, prefix_cache_dir=cache, prefix_cache_min_tokens=64)


async def _ask(model: LlamaCppModel, system: str, query: str = QUERY) -> tuple[str, float]:
    messages = [{"role": "system", "content": system}, {"role": "user", "content": query}]
    completion = await model.complete(ModelRequest(messages=messages, max_tokens=24))
    return completion.text, completion.ttft_s


def _files(root: Path) -> list[Path]:
    return sorted(root.glob("*.kv")) if root.exists() else []


@pytest.fixture(scope="module")
def uncached(smollm2_path: Path) -> dict[str, str]:
    """Greedy answers without any cache, each from a fresh model."""
    import asyncio

    out = {}
    for key, system in (("A", SYSTEM_A), ("B", SYSTEM_B)):
        out[key] = asyncio.run(_ask(_model(smollm2_path, None), system))[0]
    return out


@pytest.mark.slow
async def test_fresh_model_loads_saved_prefix_and_answers_the_same(
    tmp_path: Path, smollm2_path: Path, uncached: dict[str, str]
) -> None:
    root = tmp_path / "kv"
    cold = _model(smollm2_path, root)
    text, cold_ttft = await _ask(cold, SYSTEM_A)
    assert text == uncached["A"] and text
    assert cold.last_prefix_loaded == 0
    prompt_len = cold.prompt_tokens([{"role": "system", "content": SYSTEM_A}, {"role": "user", "content": QUERY}])
    assert cold.last_prompt_tokens_evaluated is not None and cold.last_prompt_tokens_evaluated >= prompt_len
    (saved,) = _files(root)
    saved_tokens = int(saved.name.split("-")[0])
    assert 450 < saved_tokens < prompt_len  # the system message, not the request

    warm = _model(smollm2_path, root)  # a fresh llama.cpp context, as in a new process
    text, warm_ttft = await _ask(warm, SYSTEM_A)
    assert text == uncached["A"]
    assert warm.last_prefix_loaded == saved_tokens
    assert warm.last_prompt_tokens_evaluated is not None
    assert warm.last_prompt_tokens_evaluated < cold.last_prompt_tokens_evaluated - 400
    assert warm_ttft < cold_ttft
    assert _files(root) == [saved]  # nothing new to save

    # Another system message that shares the rules and tools: the saved file is cut to the shared part, and that
    # part (the static prefix) gets its own file.
    other = _model(smollm2_path, root)
    text, _ = await _ask(other, SYSTEM_B)
    assert text == uncached["B"]
    assert 400 < other.last_prefix_loaded < saved_tokens
    shared = [f for f in _files(root) if f != saved]
    assert len(shared) == 1 and int(shared[0].name.split("-")[0]) == other.last_prefix_loaded


@pytest.mark.slow
async def test_damaged_files_are_deleted_and_ignored(
    tmp_path: Path, smollm2_path: Path, uncached: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "kv"
    await _ask(_model(smollm2_path, root), SYSTEM_A)
    (saved,) = _files(root)
    full = saved.stat().st_size

    async def answers_without_the_file(warning: str) -> None:
        caplog.clear()
        model = _model(smollm2_path, root)
        with caplog.at_level(logging.WARNING, logger="tinyagent.models.llama"):
            text, _ = await _ask(model, SYSTEM_A)
        assert text == uncached["A"]
        assert model.last_prefix_loaded == 0
        assert warning in caplog.text

    data = bytearray(saved.read_bytes())
    data[len(data) // 2] ^= 0xFF  # a flipped byte in the KV state
    saved.write_bytes(bytes(data))
    await answers_without_the_file("checksum mismatch")
    assert saved.stat().st_size == full  # deleted, then saved again by this run

    with saved.open("r+b") as f:
        f.truncate(full // 2)
    await answers_without_the_file("ignoring and deleting")


@pytest.mark.slow
async def test_disabled_cache_writes_nothing(
    tmp_path: Path, smollm2_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TINYAGENT_CACHE", str(tmp_path / "cache"))
    assert LlamaCppModel(path=smollm2_path, n_threads=2).prefix_cache_dir == tmp_path / "cache" / "kv"
    model = _model(smollm2_path, None)
    assert model.prefix_cache_dir is None
    await _ask(model, SYSTEM_A)
    monkeypatch.setenv("TINYAGENT_KV_CACHE", "0")
    model = _model(smollm2_path, tmp_path / "kv")
    assert model.prefix_cache_dir is None
    await _ask(model, SYSTEM_B)
    assert not (tmp_path / "kv").exists()
    assert not (tmp_path / "cache" / "kv").exists()


def _snapshot(first: int, n: int, size: int) -> _Snapshot:
    import numpy as np

    return _Snapshot(np.arange(first, first + n, dtype=np.intc), memoryview(bytes(range(256)) * (size // 256)))


def test_size_cap_evicts_least_recently_used(tmp_path: Path) -> None:
    store = _PrefixStore(tmp_path, b"m" * 32, max_bytes=3 * 4096)  # two files of 52 + 1200 + 4096 bytes fit
    for first in (0, 1000):
        store.write(_snapshot(first, 300, 4096))
    a, b = store.path(_snapshot(0, 300, 0).tokens), store.path(_snapshot(1000, 300, 0).tokens)
    assert a.is_file() and b.is_file()
    os.utime(b, (1, 1))  # b is now the least recently used
    store.touch(a)
    store.write(_snapshot(2000, 300, 4096))
    c = store.path(_snapshot(2000, 300, 0).tokens)
    assert sorted(_files(tmp_path)) == sorted([a, c])
    store.write(_snapshot(3000, 300, 1 << 20))  # larger than the whole cap: not written, nothing evicted
    assert sorted(_files(tmp_path)) == sorted([a, c])


def test_lookup_picks_the_longest_shared_prefix_and_skips_other_models(tmp_path: Path) -> None:
    import numpy as np

    store = _PrefixStore(tmp_path, b"m" * 32, max_bytes=1 << 30)
    store.write(_snapshot(0, 100, 256))
    store.write(_snapshot(0, 300, 256))
    _PrefixStore(tmp_path, b"x" * 32, max_bytes=1 << 30).write(_snapshot(0, 400, 256))  # another model
    prompt = np.concatenate([np.arange(0, 250, dtype=np.intc), np.full(50, -1, np.intc)])
    match = store.best_match(prompt, 64, above=0)
    assert match is not None
    path, saved, common = match
    assert (len(saved), common) == (300, 250)
    assert store.best_match(prompt, 64, above=250) is None
    data, offset, size = store.read(path, saved)
    assert bytes(data[offset : offset + size]) == bytes(range(256))


@pytest.mark.slow
async def test_save_prefix_makes_a_new_process_load_the_static_start(
    tmp_path: Path, smollm2_path: Path, uncached: dict[str, str]
) -> None:
    """``tinyagent warm``'s model half: the shared start of two system messages, saved ahead, is what the first
    request of a fresh context loads; the answers do not change."""
    root = tmp_path / "kv"
    warmer = _model(smollm2_path, root)
    saved = await warmer.save_prefix([{"role": "system", "content": BASE}])
    assert saved > 400 and [int(f.name.split("-")[0]) for f in _files(root)] == [saved]
    assert await warmer.save_prefix([{"role": "system", "content": BASE}]) == 0  # saved already
    assert await _model(smollm2_path, None).save_prefix([{"role": "system", "content": BASE}]) == 0  # no cache

    for key, system in (("A", SYSTEM_A), ("B", SYSTEM_B)):
        fresh = _model(smollm2_path, root)
        text, _ = await _ask(fresh, system)
        assert text == uncached[key]
        assert saved - 2 <= fresh.last_prefix_loaded <= saved  # (the cut may tokenize its last piece apart)

    # A system message that goes on well past the saved start is saved too: the same request loads it whole.
    longer = SYSTEM_A + "".join(f"Request: ask tool_{i % 4} for item {i}\nPlan:\n1. tool_{i % 4}(name=\"item {i}\")\n"
                                "2. join()<END_OF_PLAN>\n" for i in range(24))
    first = _model(smollm2_path, root)
    expected, _ = await _ask(first, longer)
    assert saved - 2 <= first.last_prefix_loaded <= saved
    again = _model(smollm2_path, root)
    assert (await _ask(again, longer))[0] == expected
    assert again.last_prefix_loaded > saved + 64

    # A request's own examples after the warm start (far less than half of the message) are saved as well: the
    # same request in a later process loads its whole system message instead of evaluating them again.
    examples = SYSTEM_B + "".join(f"Request: ask tool_{i % 4} for {i}\nPlan:\n1. tool_{i % 4}(name=\"{i}\")\n"
                                  "2. join()<END_OF_PLAN>\n" for i in range(5))
    one = _model(smollm2_path, root)
    expected, _ = await _ask(one, examples)
    loaded = one.last_prefix_loaded
    assert loaded >= saved - 2
    tail = one.prompt_tokens([{"role": "system", "content": examples}]) - loaded
    assert 64 <= tail < loaded // 2
    two = _model(smollm2_path, root)
    assert (await _ask(two, examples))[0] == expected
    assert two.last_prefix_loaded >= loaded + 64
