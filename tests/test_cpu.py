"""CPU features -> llama.cpp load parameters (every path forced by passing flags in), free cores from per-CPU idle
time, and the AMX-safe load path on a real model."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tinyagent.models import CpuFeatures, cpu_features, free_cores, llama_build_features, llama_load_params
from tinyagent.models._cpu import idle_cpus

SAPPHIRE_RAPIDS = "processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma avx512f avx512_vnni amx_bf16 amx_tile amx_int8\n"
ZEN4 = "processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma avx512f avx512_bf16 avx512_vnni\n"
LAPTOP = "processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma f16c\n"
GRAVITON = "processor\t: 0\nBogoMIPS\t: 243.75\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 asimddp sve\n"
BUILD_AMX = "CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | AVX512 = 1 | AMX_INT8 = 1 | REPACK = 1 | OPENMP = 1 |"
BUILD_NO_AMX = "CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | AVX512 = 1 | AVX512_VNNI = 1 | REPACK = 1 |"


@pytest.mark.parametrize(
    ("cpuinfo", "machine", "amx", "avx2", "avx512", "neon"),
    [
        (SAPPHIRE_RAPIDS, "x86_64", True, True, True, False),
        (ZEN4, "x86_64", False, True, True, False),
        (LAPTOP, "x86_64", False, True, False, False),
        (GRAVITON, "aarch64", False, False, False, True),
        ("", "arm64", False, False, False, True),  # macOS: no /proc/cpuinfo
    ],
)
def test_cpu_features_from_cpuinfo(cpuinfo: str, machine: str, amx: bool, avx2: bool, avx512: bool,
                                   neon: bool) -> None:
    cpu = cpu_features(cpuinfo, machine)
    assert (cpu.amx, cpu.avx2, cpu.avx512, cpu.neon) == (amx, avx2, avx512, neon)


def test_build_features_are_parsed() -> None:
    assert llama_build_features(BUILD_AMX) >= {"AVX2", "AVX512", "AMX_INT8", "REPACK"}  # type: ignore[operator]
    assert "AMX_INT8" not in (llama_build_features(BUILD_NO_AMX) or set())


@pytest.mark.parametrize(
    ("cpuinfo", "build", "safe_path", "risky"),
    [
        (SAPPHIRE_RAPIDS, BUILD_AMX, True, True),  # the crash: AMX CPU, AMX compiled in
        (SAPPHIRE_RAPIDS, None, True, True),  # unknown build on an AMX CPU: be safe
        (SAPPHIRE_RAPIDS, BUILD_NO_AMX, False, False),  # the rebuilt wheel: full speed
        (ZEN4, BUILD_AMX, False, False),  # AMX code compiled but never used on this CPU
        (LAPTOP, BUILD_NO_AMX, False, False),
        (GRAVITON, None, False, False),
    ],
)
def test_load_decision(cpuinfo: str, build: str | None, safe_path: bool, risky: bool) -> None:
    decision = llama_load_params(cpu_features(cpuinfo, "x86_64"),
                                 llama_build_features(build) if build else None, env={})
    assert (decision.params == {"use_extra_bufts": False}) is safe_path
    assert decision.risky is risky
    assert bool(decision.fix) is risky
    if risky:
        assert "GGML_AMX_INT8=OFF" in decision.fix


def test_load_decision_can_be_forced_either_way() -> None:
    amx = CpuFeatures("x86_64", frozenset({"amx_tile", "amx_int8"}))
    plain = CpuFeatures("x86_64", frozenset({"avx2"}))
    assert llama_load_params(plain, None, env={"TINYAGENT_LLAMA_EXTRA_BUFTS": "0"}).params == {"use_extra_bufts": False}
    assert llama_load_params(amx, None, env={"TINYAGENT_LLAMA_EXTRA_BUFTS": "1"}).params == {}


def test_idle_cpus_counts_cpus_at_most_half_busy() -> None:
    before = {0: (100, 1000), 1: (100, 1000), 2: (0, 0)}
    after = {0: (190, 1100), 1: (110, 1100), 2: (50, 100)}  # cpu0 90% busy, cpu1 10%, cpu2 50%
    assert idle_cpus(before, after, [0, 1, 2]) == 2
    assert idle_cpus(before, after, [0]) == 1  # never below one
    assert idle_cpus(before, after, [1, 7]) == 2  # a CPU missing from /proc/stat counts as free


def test_free_cores_pinned_by_env() -> None:
    assert free_cores(env={"TINYAGENT_THREADS": "3"}) == 3


@pytest.mark.skipif(not os.path.exists("/proc/stat") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs Linux /proc/stat and two CPUs")
def test_free_cores_sees_a_busy_core_now_not_a_minute_later() -> None:
    """A synthetic busy core is seen at once (the 1-minute load average would lag and linger)."""
    allowed = sorted(os.sched_getaffinity(0))
    spin = subprocess.Popen([sys.executable, "-c",
                             f"import os\nos.sched_setaffinity(0, {{{allowed[0]}}})\nwhile True: pass"])
    try:
        time.sleep(0.3)
        busy = free_cores(sample_s=0.3, env={})
    finally:
        spin.kill()
        spin.wait()
    assert 1 <= busy <= len(allowed) - 1


@pytest.mark.slow
def test_default_model_generates_on_the_amx_safe_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default planner loads with extra buffer types off (the AMX-safe path, forced) and generates."""
    pytest.importorskip("llama_cpp")
    import llama_cpp.llama_cpp as api

    from tinyagent.errors import ModelIntegrityError
    from tinyagent.models import ModelCatalog, _cpu, new_llama

    try:
        path = ModelCatalog().path("qwen2.5-coder-1.5b")
    except ModelIntegrityError as exc:
        pytest.skip(f"default model not available: {exc}")
    monkeypatch.setenv("TINYAGENT_LLAMA_EXTRA_BUFTS", "0")
    monkeypatch.setattr(_cpu, "_decision", None)
    llm = new_llama(model_path=str(path), n_ctx=512, n_threads=2, verbose=False)
    assert llm.model_params.use_extra_bufts is False  # the parameters the model was loaded with
    assert api.llama_model_default_params().use_extra_bufts is True  # the wrap was undone
    out = llm.create_completion("def add(a, b):\n    return", max_tokens=8, temperature=0)
    text = out["choices"][0]["text"]  # type: ignore[index]
    assert "a" in text and "b" in text
    monkeypatch.setattr(_cpu, "_decision", None)
