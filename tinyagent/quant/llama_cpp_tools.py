"""llama.cpp's conversion scripts, fetched on first use from the llama-cpp-python source distribution.

``convert_lora_to_gguf.py`` and ``convert_hf_to_gguf.py`` (with their ``conversion`` package and ``gguf-py``) live
in llama.cpp, which llama-cpp-python vendors under ``vendor/llama.cpp`` in its sdist. They are not shipped with
tinyagent: :func:`ensure_scripts` downloads the sdist of the installed llama-cpp-python version with
``pip download`` (through the package index pip is configured for), extracts only those files into the cache and
reuses them afterwards. The PyPI ``gguf`` package is preferred over the vendored ``gguf-py`` when it has every name
the scripts use; otherwise the vendored copy is put first on ``sys.path`` (the scripts' own default).

Set ``TINYAGENT_LLAMA_CPP_DIR`` to a llama.cpp checkout to use its scripts instead (nothing is downloaded).
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigurationError, TrainingError
from ..finetune import file_lock

__all__ = ["LlamaCppScripts", "default_llama_cpp_version", "ensure_scripts", "run_script"]

log = logging.getLogger(__name__)

_DEFAULT_VERSION = "0.3.36"
_SCRIPTS = ("convert_hf_to_gguf.py", "convert_lora_to_gguf.py")
_KEEP_DIRS = ("conversion/", "gguf-py/gguf/")
_KEEP_FILES = (*_SCRIPTS, "LICENSE", "gguf-py/LICENSE", "gguf-py/pyproject.toml")
_GGUF_ATTR = re.compile(r"\bgguf\.([A-Za-z_]\w*)(?:\.([A-Za-z_]\w*))?")
_GGUF_FROM = re.compile(r"^\s*from gguf(?:\.(\w+))? import \(?([\w, \n]+)\)?", re.MULTILINE)
ENV_DIR = "TINYAGENT_LLAMA_CPP_DIR"


@dataclass(frozen=True)
class LlamaCppScripts:
    """Where llama.cpp's conversion scripts are, and how to run them.

    Attributes:
        root: the folder holding ``convert_*.py``, ``conversion/`` and ``gguf-py/``.
        version: the llama-cpp-python version they came from (or ``"local"``).
        use_pypi_gguf: run with the installed ``gguf`` package instead of the vendored ``gguf-py``.
    """

    root: Path
    version: str
    use_pypi_gguf: bool

    @property
    def convert_lora(self) -> Path:
        """``convert_lora_to_gguf.py``."""
        return self.root / "convert_lora_to_gguf.py"

    @property
    def convert_hf(self) -> Path:
        """``convert_hf_to_gguf.py``."""
        return self.root / "convert_hf_to_gguf.py"

    def env(self) -> dict[str, str]:
        """The environment the scripts run in."""
        env = dict(os.environ)
        if self.use_pypi_gguf:
            env["NO_LOCAL_GGUF"] = "1"
        else:
            env.pop("NO_LOCAL_GGUF", None)
        env.setdefault("PYTHONUNBUFFERED", "1")
        return env


def default_llama_cpp_version() -> str:
    """The installed llama-cpp-python version (its sdist holds scripts that match its llama.cpp), else a pin."""
    try:
        from importlib.metadata import PackageNotFoundError, version

        return version("llama-cpp-python")
    except PackageNotFoundError:
        return _DEFAULT_VERSION


def _default_cache() -> Path:
    from ..models._catalog import cache_dir

    return cache_dir() / "llama.cpp-scripts"


def ensure_scripts(
    cache: str | Path | None = None,
    *,
    version: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> LlamaCppScripts:
    """Fetch and extract llama.cpp's conversion scripts into ``cache`` on first use; reuse them afterwards.

    Args:
        cache: the folder to keep the scripts in (default: ``<tinyagent cache>/llama.cpp-scripts``).
        version: the llama-cpp-python version whose sdist to use (default: the installed one).
        progress: called with a short message before slow steps (download, extraction).

    Returns:
        Where the scripts are and whether the PyPI ``gguf`` package can run them.

    Raises:
        TrainingError: the sdist could not be downloaded or does not hold the scripts.
        ConfigurationError: ``TINYAGENT_LLAMA_CPP_DIR`` points to a folder without the scripts.
    """
    local = os.environ.get(ENV_DIR)
    if local:
        root = Path(local).expanduser()
        if not all((root / s).is_file() for s in _SCRIPTS):
            raise ConfigurationError(f"{ENV_DIR}={root} does not hold {', '.join(_SCRIPTS)}; point it to a llama.cpp "
                                     "checkout or unset it")
        return LlamaCppScripts(root=root, version="local", use_pypi_gguf=_pypi_gguf_compatible(root))
    ver = version or default_llama_cpp_version()
    base = Path(cache).expanduser() if cache is not None else _default_cache()
    root = base / ver
    marker = root / "tinyagent-scripts.json"
    with file_lock(base / f".{ver}.lock"):
        if not marker.is_file():
            _fetch(ver, base, root, progress)
        info = json.loads(marker.read_text())
        if "use_pypi_gguf" not in info:
            info["use_pypi_gguf"] = _pypi_gguf_compatible(root)
            marker.write_text(json.dumps(info))
    return LlamaCppScripts(root=root, version=ver, use_pypi_gguf=bool(info["use_pypi_gguf"]))


def _fetch(version: str, base: Path, root: Path, progress: Callable[[str], None] | None) -> None:
    base.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=base, prefix=".download-") as tmp:
        message = f"downloading the llama-cpp-python {version} source distribution for llama.cpp's converters"
        log.info(message)
        if progress is not None:
            progress(message)
        cmd = [sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps",
               f"llama-cpp-python=={version}", "-d", tmp]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise TrainingError(f"could not run pip to download llama-cpp-python=={version}: {exc}; set {ENV_DIR} "
                                "to a llama.cpp checkout instead") from exc
        archives = sorted(Path(tmp).glob("llama_cpp_python-*.tar.gz"))
        if done.returncode != 0 or not archives:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise TrainingError(
                f"pip could not download the llama-cpp-python=={version} source distribution ({' / '.join(tail)}); "
                f"check the package index is reachable, or set {ENV_DIR} to a llama.cpp checkout"
            )
        if progress is not None:
            progress("extracting convert_lora_to_gguf.py, convert_hf_to_gguf.py and gguf-py")
        staging = Path(tmp) / "scripts"
        extract_scripts(archives[0], staging)
        staging.joinpath("tinyagent-scripts.json").write_text(
            json.dumps({"version": version, "use_pypi_gguf": _pypi_gguf_compatible(staging)})
        )
        if root.exists():
            shutil.rmtree(root)
        os.replace(staging, root)


def extract_scripts(archive: str | Path, dest: str | Path) -> Path:
    """Extract llama.cpp's conversion scripts, ``conversion/`` and ``gguf-py/gguf`` from a llama-cpp-python sdist.

    Args:
        archive: the ``llama_cpp_python-X.tar.gz``.
        dest: the folder to extract into (created).

    Returns:
        ``dest``.

    Raises:
        TrainingError: the archive is unreadable or lacks the scripts.
    """
    out = Path(dest)
    out.mkdir(parents=True, exist_ok=True)
    found: set[str] = set()
    try:
        with tarfile.open(archive, "r:gz") as tar:
            for member in tar.getmembers():
                parts = member.name.split("/", 1)
                if len(parts) < 2 or not parts[1].startswith("vendor/llama.cpp/"):
                    continue
                rel = parts[1][len("vendor/llama.cpp/"):]
                wanted = rel in _KEEP_FILES or any(rel.startswith(d) for d in _KEEP_DIRS)
                if not wanted or not member.isfile():
                    continue
                source = tar.extractfile(member)
                if source is None:
                    continue
                target = out / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                with source, target.open("wb") as sink:
                    shutil.copyfileobj(source, sink)
                found.add(rel)
    except (OSError, tarfile.TarError) as exc:
        raise TrainingError(f"cannot read {archive}: {exc}; delete it and retry") from exc
    missing = [s for s in _SCRIPTS if s not in found]
    if missing or not any(f.startswith("conversion/") for f in found):
        raise TrainingError(f"{archive} does not hold llama.cpp's {missing or 'conversion package'}; "
                            "use a llama-cpp-python version that vendors llama.cpp (>= 0.3.30)")
    return out


def _gguf_names_used(root: Path) -> set[tuple[str, str | None]]:
    names: set[tuple[str, str | None]] = set()
    files = [root / s for s in _SCRIPTS] + sorted((root / "conversion").glob("*.py"))
    for file in files:
        if not file.is_file():
            continue
        text = file.read_text(encoding="utf-8", errors="replace")
        for first, second in _GGUF_ATTR.findall(text):
            names.add((first, second or None))
        for module, imported in _GGUF_FROM.findall(text):
            for name in imported.replace("\n", " ").split(","):
                name = name.strip().split(" as ")[0].strip()
                if name:
                    names.add((f"{module}:{name}" if module else name, None))
    return names


def _pypi_gguf_compatible(root: Path) -> bool:
    """Whether the installed ``gguf`` package has every name (and member) the scripts use."""
    try:
        gguf = importlib.import_module("gguf")
    except ImportError:
        return False
    for first, second in sorted(_gguf_names_used(root), key=str):
        if ":" in first:
            module, name = first.split(":", 1)
            try:
                owner: object = importlib.import_module(f"gguf.{module}")
            except ImportError:
                owner = None
            if owner is None or not hasattr(owner, name):
                log.info("the installed gguf package lacks gguf.%s.%s; using llama.cpp's gguf-py", module, name)
                return False
            continue
        obj = getattr(gguf, first, None)
        if obj is None or (second is not None and not hasattr(obj, second)):
            log.info("the installed gguf package lacks gguf.%s%s; using llama.cpp's gguf-py", first,
                     f".{second}" if second else "")
            return False
    return True


def run_script(
    scripts: LlamaCppScripts,
    script: Path,
    args: Sequence[str],
    *,
    threads: int | None = None,
    timeout: float = 3600.0,
    what: str = "conversion",
) -> str:
    """Run one of llama.cpp's Python scripts with this interpreter; return its combined output.

    Args:
        scripts: from :func:`ensure_scripts`.
        script: the script to run (e.g. ``scripts.convert_lora``).
        args: its arguments.
        threads: torch threads for the script.
        timeout: seconds before it is killed.
        what: names the step in error messages.

    Raises:
        TrainingError: the script failed or timed out; the message holds the end of its output.
    """
    env = scripts.env()
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    cmd = [sys.executable, str(script), *args]
    log.info("running %s", " ".join(cmd))
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, check=False,
                              cwd=str(scripts.root))
    except subprocess.TimeoutExpired as exc:
        raise TrainingError(f"{what} ({script.name}) ran past {timeout:.0f} s and was stopped") from exc
    except OSError as exc:
        raise TrainingError(f"could not start {script.name}: {exc}") from exc
    output = (done.stdout or "") + (done.stderr or "")
    if done.returncode != 0:
        tail = "\n".join(output.strip().splitlines()[-12:])
        raise TrainingError(f"{what} failed ({script.name} exited with {done.returncode}):\n{tail}")
    return output
