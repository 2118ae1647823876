"""CPU features, the features compiled into llama.cpp, and the load parameters that are safe on this pair.

llama-cpp-python builds llama.cpp from source with ``GGML_NATIVE``, so on a CPU that reports AMX (Intel Sapphire
Rapids and later Xeons, common cloud VMs) the build compiles ggml's AMX backend, and its matrix multiply
(``ggml_backend_amx_mul_mat``) segfaults on the first batch of 8 or more tokens. The AMX backend is one of ggml's
"extra buffer types": loading with ``llama_model_params.use_extra_bufts = False`` keeps the weights out of it, and
generation works. That also turns off the CPU weight repacking (another extra buffer type), which costs decode speed,
so it is applied only where the risk exists: an AMX CPU running a build with AMX compiled in (or a build whose
features cannot be read). A build without AMX (``GGML_AMX_*=OFF``) keeps repacking and is the fast fix; ``tinyagent
doctor`` says how to get it.

The decision is a pure function of (CPU flags, build features), so every path is unit-tested by passing flags in,
whatever CPU the tests run on. ``TINYAGENT_LLAMA_EXTRA_BUFTS=0|1`` forces it either way.
"""

from __future__ import annotations

import contextlib
import logging
import os
import platform
import re
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "AMX_SAFE_BUILD_FLAGS",
    "CpuFeatures",
    "LoadDecision",
    "cpu_features",
    "free_cores",
    "llama_build_features",
    "install_default_params_patch",
    "llama_load_params",
    "new_llama",
]

log = logging.getLogger(__name__)

AMX_SAFE_BUILD_FLAGS = (
    "-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=ON -DGGML_AVX512_VNNI=ON "
    "-DGGML_AVX512_BF16=ON -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
)
"""CMAKE_ARGS for a llama-cpp-python build without the AMX backend but with weight repacking (the fast fix)."""

_ENV_FORCE = "TINYAGENT_LLAMA_EXTRA_BUFTS"


@dataclass(frozen=True)
class CpuFeatures:
    """What the CPU reports: its architecture and its feature flags (lower case, as Linux spells them)."""

    arch: str
    flags: frozenset[str] = field(default_factory=frozenset)

    @property
    def amx(self) -> bool:
        """Intel AMX tiles (``amx_tile`` with ``amx_int8`` or ``amx_bf16``)."""
        return "amx_tile" in self.flags and bool({"amx_int8", "amx_bf16"} & self.flags)

    @property
    def avx2(self) -> bool:
        return "avx2" in self.flags

    @property
    def avx512(self) -> bool:
        return "avx512f" in self.flags

    @property
    def neon(self) -> bool:
        """ARM Advanced SIMD (``asimd`` on Linux; every 64-bit ARM CPU has it)."""
        return "asimd" in self.flags or "neon" in self.flags or self.arch in {"arm64", "aarch64"}


@dataclass(frozen=True)
class LoadDecision:
    """The extra ``Llama(...)`` load parameters for this CPU and build, and why.

    Attributes:
        params: model-parameter overrides (``{"use_extra_bufts": False}`` or empty).
        risky: the build would run code that crashes on this CPU without the override.
        reason: one line for logs and ``tinyagent doctor``.
        fix: what makes the override unnecessary (a rebuild), or "" when nothing is wrong.
    """

    params: Mapping[str, Any]
    risky: bool
    reason: str
    fix: str = ""


def cpu_features(cpuinfo: str | None = None, machine: str | None = None) -> CpuFeatures:
    """The CPU's features, from ``/proc/cpuinfo`` on Linux (``cpuinfo`` overrides it, for tests).

    Elsewhere (macOS, Windows) only the architecture is known; that is enough, since AMX is an x86 Linux/Windows
    server feature and 64-bit ARM always has NEON.
    """
    arch = (machine or platform.machine()).lower()
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            cpuinfo = ""
    flags: set[str] = set()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() in {"flags", "features"}:
            flags.update(value.split())
            break
    return CpuFeatures(arch=arch, flags=frozenset(f.lower() for f in flags))


def llama_build_features(system_info: str | None = None) -> frozenset[str] | None:
    """The CPU features compiled into the installed llama.cpp (``AVX2``, ``AMX_INT8`` …), or None.

    Read from ``llama_print_system_info()`` ("CPU : SSE3 = 1 | AVX2 = 1 | AMX_INT8 = 1 | …"). None when
    llama-cpp-python is not installed (or the text cannot be read).
    """
    if system_info is None:
        try:
            import llama_cpp
        except ImportError:
            return None
        try:
            system_info = llama_cpp.llama_print_system_info().decode("utf-8", "replace")
        except Exception:  # noqa: BLE001 - an old or odd build: unknown, treated as risky on AMX CPUs
            return None
    return frozenset(m.group(1).upper() for m in re.finditer(r"([A-Za-z0-9_]+)\s*=\s*1\b", system_info))


def llama_load_params(cpu: CpuFeatures, build: frozenset[str] | None, env: Mapping[str, str] | None = None
                      ) -> LoadDecision:
    """Decide the load parameters for ``cpu`` running a llama.cpp ``build`` (pure: flags in, parameters out).

    Args:
        cpu: the CPU's features (:func:`cpu_features`).
        build: the build's features (:func:`llama_build_features`); None means unknown.
        env: the environment (default ``os.environ``); ``TINYAGENT_LLAMA_EXTRA_BUFTS=0`` forces the safe path,
            ``=1`` forces the fast one.
    """
    forced = (os.environ if env is None else env).get(_ENV_FORCE, "").strip()
    if forced in {"0", "1"}:
        keep = forced == "1"
        return LoadDecision({} if keep else {"use_extra_bufts": False}, risky=False,
                            reason=f"{_ENV_FORCE}={forced}: extra buffer types {'on' if keep else 'off'} (forced)")
    if not cpu.amx:
        return LoadDecision({}, risky=False, reason="no AMX on this CPU: default load (weight repacking on)")
    if build is not None and not any(f.startswith("AMX") for f in build):
        return LoadDecision({}, risky=False, reason="AMX CPU, llama.cpp built without AMX: default load")
    what = "with AMX" if build is not None else "of unknown features"
    return LoadDecision(
        {"use_extra_bufts": False}, risky=True,
        reason=f"AMX CPU and a llama.cpp build {what}: its AMX matmul crashes, so extra buffer types are off "
               "(about 20% slower decoding)",
        fix=f'rebuild without AMX for full speed: CMAKE_ARGS="{AMX_SAFE_BUILD_FLAGS}" '
            "pip install --force-reinstall --no-cache-dir --no-deps llama-cpp-python==0.3.36",
    )


_decision: LoadDecision | None = None
_patch_lock = threading.Lock()


def _current_decision() -> LoadDecision:
    global _decision
    if _decision is None:
        _decision = llama_load_params(cpu_features(), llama_build_features())
        if _decision.params:
            log.warning("llama.cpp: %s", _decision.reason)
    return _decision


@contextlib.contextmanager
def _model_params(overrides: Mapping[str, Any]) -> Iterator[None]:
    """Apply ``overrides`` to the model parameters llama-cpp-python builds inside ``Llama(...)``.

    ``Llama`` takes no ``use_extra_bufts`` argument; it starts from ``llama_model_default_params()``, so that function
    is wrapped while one ``Llama`` is constructed (under a lock: the wrap is process-wide).
    """
    if not overrides:
        yield
        return
    import llama_cpp.llama_cpp as api

    with _patch_lock:
        original = api.llama_model_default_params
        api.llama_model_default_params = _with_overrides(original, overrides)
        try:
            yield
        finally:
            api.llama_model_default_params = original


def new_llama(*args: Any, **kwargs: Any) -> Any:
    """``llama_cpp.Llama(*args, **kwargs)`` with the load parameters that are safe on this CPU and build.

    Every ``Llama`` the project creates goes through here (planner, embedder, evaluation, benchmarks). It is built
    on the llama.cpp thread (``tinyagent.models._thread``), where its evaluations must run too.
    """
    import llama_cpp

    from ._thread import on_llama_thread

    def build() -> Any:
        with _model_params(_current_decision().params):
            return llama_cpp.Llama(*args, **kwargs)

    return on_llama_thread(build)


def install_default_params_patch() -> LoadDecision:
    """Apply the decision to every ``Llama`` this process creates (for ``llama_cpp.server``, which builds its own)."""
    decision = _current_decision()
    if decision.params:
        import llama_cpp.llama_cpp as api

        api.llama_model_default_params = _with_overrides(api.llama_model_default_params, decision.params)
    return decision


def _with_overrides(original: Any, overrides: Mapping[str, Any]) -> Any:
    def patched() -> Any:
        params = original()
        for key, value in overrides.items():
            setattr(params, key, value)
        return params

    return patched


_ENV_THREADS = "TINYAGENT_THREADS"


def free_cores(sample_s: float = 0.15, env: Mapping[str, str] | None = None) -> int:
    """Cores that are idle right now, among those this process may use (at least 1).

    llama.cpp's threads wait on each other, so one thread on a busy core slows a run 5-20x. The 1-minute load
    average lags by a minute and counts work that has already finished, so this samples each allowed CPU's busy
    time from ``/proc/stat`` over ``sample_s`` seconds instead: a CPU more than half busy is taken. Where
    ``/proc/stat`` does not exist (macOS, Windows) every allowed core counts. ``TINYAGENT_THREADS=N`` pins the answer.
    """
    pinned = (os.environ if env is None else env).get(_ENV_THREADS, "").strip()
    if pinned.isdigit() and int(pinned) > 0:
        return int(pinned)
    try:
        allowed = sorted(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1
    before = _cpu_times()
    if not before:
        return max(1, len(allowed))
    time.sleep(sample_s)
    return idle_cpus(before, _cpu_times(), allowed)


def idle_cpus(before: Mapping[int, tuple[int, int]], after: Mapping[int, tuple[int, int]], allowed: Sequence[int],
              busy_above: float = 0.5) -> int:
    """How many ``allowed`` CPUs were at most ``busy_above`` busy between two ``(busy, total)`` jiffy samples."""
    free = 0
    for cpu in allowed:
        if cpu not in before or cpu not in after:
            free += 1
            continue
        busy = after[cpu][0] - before[cpu][0]
        total = after[cpu][1] - before[cpu][1]
        if total <= 0 or busy / total <= busy_above:
            free += 1
    return max(1, free)


def _cpu_times() -> dict[int, tuple[int, int]]:
    """Per-CPU ``(busy, total)`` jiffies from ``/proc/stat`` (empty where it does not exist)."""
    try:
        lines = Path("/proc/stat").read_text().splitlines()
    except OSError:
        return {}
    times: dict[int, tuple[int, int]] = {}
    for line in lines:
        name, *fields = line.split()
        if not name.startswith("cpu") or name == "cpu" or not name[3:].isdigit():
            continue
        values = [int(v) for v in fields[:8]]
        idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
        times[int(name[3:])] = (sum(values) - idle, sum(values))
    return times
