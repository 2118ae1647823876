"""The one file-access path of the built-in tools: confinement, symlink-safe opens, atomic writes, store locks.

Every read, write, listing and rename in :mod:`tinyagent.functions` goes through :class:`ConfinedFS` (or the
functions below it), and every path it touches first passes :func:`confine`:

* the path is resolved (following symlinks) and must lie inside one of the roots; ``..`` components are refused
  outright, and so are absolute paths outside the roots;
* the file is then opened relative to a descriptor of its root, one component at a time with ``O_NOFOLLOW``, so a
  symlink planted after the check (a race) makes the open fail instead of following it out;
* writes go to a temporary file created with ``O_EXCL | O_NOFOLLOW`` in the target's folder (reached through
  descriptors, as above) and then replace the target with ``os.replace``: atomic (other programs see the old file
  or the new one, never half of one), and a symlink swapped in at the target's name after the check is itself
  replaced, never written through;
* listings skip hidden entries and symlinks that point outside the roots, and never descend into linked folders;
* :func:`store_lock` is a per-store lock that holds across threads and processes (``filelock``).

On platforms without ``O_NOFOLLOW`` or ``dir_fd`` (Windows) the resolve-and-check still runs before every access;
only the protection against a symlink swapped in between check and open is lost there.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import threading
import unicodedata
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import MissingDependencyError, PathEscapeError
from ._errors import InvalidArgument, ItemNotFound, StoreError

if TYPE_CHECKING:
    import filelock

__all__ = ["ConfinedFS", "atomic_write", "confine", "safe_filename", "store_lock"]

_UNSAFE = re.compile(r'[\x00-\x1f<>:"/\\|?*]+')
_NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY: int = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK: int = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC: int = getattr(os, "O_CLOEXEC", 0)
_BINARY: int = getattr(os, "O_BINARY", 0)
# Descriptor-relative opens (the race-proof path) need all of these (os.replace takes dir_fd as os.rename does);
# Windows has none of them.
_AT = bool(_NOFOLLOW and _DIRECTORY) and {os.open, os.mkdir, os.rename, os.unlink} <= os.supports_dir_fd
_MAX_FILES = 20000
LOCK_TIMEOUT_S = 30.0
"""Seconds a tool waits for another thread or process to release a store before it fails with StoreError."""


def confine(path: str | os.PathLike[str], roots: Sequence[Path], *, must_exist: bool = False) -> Path:
    """Resolve ``path`` (following symlinks) and require it to lie inside one of ``roots``.

    A relative path is taken relative to the first root under which it exists, else relative to the first root.
    ``~`` is expanded, so ``~/.ssh/id_rsa`` is checked like any other absolute path.

    Args:
        path: the path a tool was given.
        roots: the directories the tools may touch.
        must_exist: also require the path to exist.

    Returns:
        The resolved, absolute path.

    Raises:
        PathEscapeError: the path has a ``..`` component, resolves outside every root (an absolute path elsewhere,
            or a symlink that points out), is empty, or contains a NUL byte.
        ItemNotFound: ``must_exist`` is set and nothing is there.
    """
    text = os.fspath(path)
    if not text.strip() or "\x00" in text:
        raise PathEscapeError(f"{text!r} is not a usable path; give a file name or a path inside the data folder")
    if not roots:
        raise PathEscapeError("no data roots are configured, so no path is allowed; set FunctionsSettings.data_dir")
    if ".." in re.split(r"[/\\]", text):
        raise PathEscapeError(f"{text!r} uses '..', which can lead outside the allowed folders; "
                              "give a path inside them without '..'")
    resolved_roots = _resolved(roots)
    candidate = Path(text).expanduser()
    if not candidate.is_absolute():
        options = [root / candidate for root in resolved_roots]
        candidate = next((o for o in options if os.path.lexists(o)), options[0])
    try:
        resolved = candidate.resolve()
    except (OSError, RuntimeError) as exc:  # symlink loops, permission problems
        raise PathEscapeError(f"cannot resolve {text!r}: {exc}") from exc
    if _anchor(resolved, resolved_roots) is None:
        allowed = ", ".join(str(r) for r in resolved_roots)
        raise PathEscapeError(
            f"{text!r} resolves to {resolved}, which is outside the allowed folders ({allowed}); "
            "use a file inside them"
        )
    if must_exist and not resolved.exists():
        raise ItemNotFound(f"{text!r} does not exist; use find_file to look it up by name")
    return resolved


def _resolved(roots: Sequence[Path]) -> list[Path]:
    return [Path(r).expanduser().resolve() for r in roots]


def _anchor(resolved: Path, roots: Sequence[Path]) -> tuple[Path, tuple[str, ...]] | None:
    """The innermost root holding ``resolved`` and the components below it, or None when none holds it."""
    best: tuple[Path, tuple[str, ...]] | None = None
    for root in roots:
        if resolved == root or resolved.is_relative_to(root):
            parts = resolved.relative_to(root).parts
            if best is None or len(parts) < len(best[1]):
                best = (root, parts)
    return best


# -- descriptor-relative primitives (no symlink is followed below a root) ----------------------------------------
def _escape(path: Path, exc: OSError) -> PathEscapeError:
    return PathEscapeError(f"{path} is (or passes through) a symlink that appeared after it was checked; "
                           f"refusing to follow it ({exc.strerror})")


def _open_dir_at(name: str, dir_fd: int, full: Path, create: bool) -> int:
    flags = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
    try:
        try:
            return os.open(name, flags, dir_fd=dir_fd)
        except FileNotFoundError:
            if not create:
                raise
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o700, dir_fd=dir_fd)
            return os.open(name, flags, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        try:
            is_link = stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
        except OSError:
            is_link = False
        if is_link:
            raise _escape(full, exc) from exc
        raise ItemNotFound(f"{full} is not a folder; give a path to a file inside a folder") from exc


def _parent_fd(resolved: Path, roots: Sequence[Path], create: bool) -> tuple[int, str]:
    """A descriptor of ``resolved``'s folder, walked down from its root without following links, and its name."""
    anchored = _anchor(resolved, _resolved(roots))
    if anchored is None or not anchored[1]:
        raise PathEscapeError(f"{resolved} is not a file inside the allowed folders")
    root, parts = anchored
    if create:
        root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        for i, part in enumerate(parts[:-1]):
            nfd = _open_dir_at(part, fd, root.joinpath(*parts[: i + 1]), create)
            os.close(fd)
            fd = nfd
    except BaseException:
        os.close(fd)
        raise
    return fd, parts[-1]


def _open_file(resolved: Path, roots: Sequence[Path], flags: int, mode: int = 0o600) -> int:
    if not _AT:
        return os.open(resolved, flags | _NOFOLLOW | _BINARY | _CLOEXEC, mode)
    dfd, name = _parent_fd(resolved, roots, create=bool(flags & os.O_CREAT))
    try:
        return os.open(name, flags | _NOFOLLOW | _CLOEXEC, mode, dir_fd=dfd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _escape(resolved, exc) from exc
        raise
    finally:
        os.close(dfd)


def _read_fd(fd: int, path: Path, limit: int | None) -> bytes:
    with os.fdopen(fd, "rb", closefd=True) as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise ItemNotFound(f"{path} is not a regular file; use find_file to pick a file")
        return fh.read() if limit is None else fh.read(limit)


def _write_at(resolved: Path, roots: Sequence[Path], payload: bytes) -> None:
    dfd, name = _parent_fd(resolved, roots, create=True)
    tmp = f".{name}.{uuid.uuid4().hex[:12]}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600, dir_fd=dfd)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(payload)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
            raise
    finally:
        os.close(dfd)


def _write_plain(path: Path, payload: bytes) -> None:
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write(path: Path, data: bytes | str, roots: Sequence[Path] | None = None) -> None:
    """Write ``data`` to ``path`` all at once: a temporary file in the same folder, fsync, then ``os.replace``.

    A crash or an exception leaves either the old file or the new one, never half of it. A symlink at ``path``
    that leads outside ``roots`` is refused; one that stays inside is resolved, and its target is replaced.

    Args:
        path: the file to write.
        data: the content (``str`` is written as UTF-8).
        roots: confine ``path`` to these folders first (default: its own folder).

    Raises:
        PathEscapeError: ``path`` leaves ``roots``.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    target = Path(path)
    if roots is None:
        target.parent.mkdir(parents=True, exist_ok=True)
        roots = [target.parent.resolve()]
        target = roots[0] / target.name
    resolved = confine(target, roots)
    if _AT:
        _write_at(resolved, roots, payload)
    else:
        _write_plain(resolved, payload)


# -- locks ---------------------------------------------------------------------------------------------------------
_thread_locks: dict[Path, threading.RLock] = {}
_file_locks: dict[Path, filelock.FileLock] = {}
_locks_guard = threading.Lock()


@contextlib.contextmanager
def store_lock(path: Path, timeout_s: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """Hold the lock of one store (a file like ``calendar.ics`` or a folder like ``notes``) for a read-modify-write.

    The lock file is ``.<name>.lock`` beside the store. It excludes other threads of this process (a re-entrant
    thread lock) and other processes (``filelock``, which opens the lock file with ``O_NOFOLLOW``), so parallel
    plan steps and a second ``tinyagent`` process on the same data folder never lose each other's writes.

    Raises:
        StoreError: another process held the store for longer than ``timeout_s``.
        MissingDependencyError: ``filelock`` is not installed.
    """
    try:
        import filelock
    except ImportError as exc:
        raise MissingDependencyError("filelock", "functions") from exc
    store = Path(path).absolute()
    lock_path = store.parent / f".{store.name}.lock"
    with _locks_guard:
        thread_lock = _thread_locks.setdefault(lock_path, threading.RLock())
        file_lock = _file_locks.get(lock_path)
        if file_lock is None:
            lock_path.parent.mkdir(parents=True, exist_ok=True)
            file_lock = _file_locks[lock_path] = filelock.FileLock(lock_path, poll_interval=0.002)
    if lock_path.is_symlink():  # planted: refuse rather than hand the lock a link to open
        raise PathEscapeError(f"the lock file {lock_path} is a symlink; remove it and retry")
    with thread_lock:
        try:
            file_lock.acquire(timeout=timeout_s)
        except filelock.Timeout as exc:
            raise StoreError(f"{store} is busy: another process held its lock for {timeout_s:g} s; retry") from exc
        try:
            yield
        finally:
            file_lock.release()


# -- the confined view used by every store ------------------------------------------------------------------------
@dataclass(frozen=True)
class ConfinedFS:
    """File operations confined to ``roots``: every path passes :func:`confine`, every open refuses symlinks.

    Args:
        roots: the folders this store may touch (resolved once; the first is the default for relative paths).
    """

    roots: tuple[Path, ...]

    def __init__(self, roots: Sequence[Path | str]) -> None:
        object.__setattr__(self, "roots", tuple(_resolved([Path(r) for r in roots])))

    def resolve(self, path: str | os.PathLike[str], must_exist: bool = False) -> Path:
        """:func:`confine` ``path`` to this view's roots."""
        return confine(path, self.roots, must_exist=must_exist)

    def exists(self, path: str | os.PathLike[str]) -> bool:
        """Whether something (a file, a folder or a link) is at ``path``.

        Raises:
            PathEscapeError: ``path`` (or a link at it) leads outside the roots.
        """
        return os.path.lexists(self.resolve(path))

    def read_bytes(self, path: str | os.PathLike[str], limit: int | None = None) -> bytes:
        """The bytes of a regular file (at most ``limit``).

        Raises:
            PathEscapeError: the path or a link on it leaves the roots.
            ItemNotFound: nothing is there, or it is a folder or a device.
        """
        resolved = self.resolve(path)
        try:
            fd = _open_file(resolved, self.roots, os.O_RDONLY | _NONBLOCK)
        except FileNotFoundError as exc:
            raise ItemNotFound(f"{path!s} does not exist; use find_file to look it up by name") from exc
        except IsADirectoryError as exc:
            raise ItemNotFound(f"{path!s} is a folder, not a file; use find_file to pick a file") from exc
        return _read_fd(fd, resolved, limit)

    def read_text(self, path: str | os.PathLike[str], limit: int | None = None) -> str:
        """:meth:`read_bytes` decoded as UTF-8 (bad bytes replaced)."""
        return self.read_bytes(path, limit).decode("utf-8", errors="replace")

    def write(self, path: str | os.PathLike[str], data: bytes | str) -> Path:
        """Write ``data`` atomically (see :func:`atomic_write`) and return the resolved path."""
        resolved = self.resolve(path)
        atomic_write(resolved, data, self.roots)
        return resolved

    def mkdir(self, path: str | os.PathLike[str]) -> Path:
        """Create a folder (and its parents) inside the roots without following links; return it."""
        resolved = self.resolve(path)
        if not _AT or resolved in self.roots:
            resolved.mkdir(parents=True, exist_ok=True)
            return resolved
        dfd, name = _parent_fd(resolved, self.roots, create=True)
        try:
            os.close(_open_dir_at(name, dfd, resolved, create=True))
        finally:
            os.close(dfd)
        return resolved

    def rename(self, source: str | os.PathLike[str], target: str | os.PathLike[str]) -> Path:
        """Move ``source`` to ``target`` (both inside the roots; the target's folder is created); return it."""
        src, dst = self.resolve(source), self.resolve(target)
        if not _AT:
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.replace(src, dst)
            return dst
        sfd, sname = _parent_fd(src, self.roots, create=False)
        try:
            dfd, dname = _parent_fd(dst, self.roots, create=True)
            try:
                os.replace(sname, dname, src_dir_fd=sfd, dst_dir_fd=dfd)
            finally:
                os.close(dfd)
        finally:
            os.close(sfd)
        return dst

    def lock(self, store: str | os.PathLike[str]) -> contextlib.AbstractContextManager[None]:
        """:func:`store_lock` for ``store``, whose lock file must lie inside the roots (so it is never made outside).

        Raises:
            PathEscapeError: the store's folder is (or passes through) a link out of the roots.
        """
        folder = self.mkdir(Path(store).parent)
        return store_lock(folder / Path(store).name)

    def mtime(self, path: str | os.PathLike[str]) -> float:
        """The modification time of ``path`` (of a link itself, never of what it points to)."""
        return os.stat(self.resolve(path), follow_symlinks=False).st_mtime

    def files(self, folder: str | os.PathLike[str], suffix: str = "", recursive: bool = False) -> list[Path]:
        """The files in ``folder`` (sorted), skipping hidden names and links that point outside the roots.

        Linked folders are never descended into. A link to a file inside the roots is listed under its own name.

        Args:
            folder: the folder to list.
            suffix: keep only names ending in it (case-insensitive), e.g. ``".md"``.
            recursive: also list sub-folders.
        """
        try:
            top = self.resolve(folder)
        except PathEscapeError:
            return []
        if not top.is_dir():
            return []
        found: list[Path] = []
        for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and recursive)
            for name in sorted(filenames):
                if name.startswith(".") or not name.lower().endswith(suffix.lower()):
                    continue
                path = Path(dirpath) / name
                if self._listable(path):
                    found.append(path)
                if len(found) >= _MAX_FILES:
                    return found
        return found

    def _listable(self, path: Path) -> bool:
        try:
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                return self.resolve(path).is_file()
        except (PathEscapeError, OSError):
            return False
        return stat.S_ISREG(info.st_mode)


def safe_filename(title: str, what: str = "title") -> str:
    """A file-name stem for ``title`` that is valid on Linux, macOS and Windows.

    Raises:
        InvalidArgument: nothing usable is left (an empty title, or only dots and separators).
    """
    name = unicodedata.normalize("NFC", title)
    name = _UNSAFE.sub(" ", name)
    name = re.sub(r"\s+", " ", name).strip().strip(".").strip()
    if not name:
        raise InvalidArgument(f"the {what} {title!r} is empty or has no usable characters; give a short {what}")
    return name[:120]
