"""Finding files by name or content under the configured roots, and reading text out of them (PDF included)."""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from pathlib import Path

from ..errors import MissingDependencyError, PathEscapeError
from ._errors import InvalidArgument, ItemNotFound, StoreError
from ._paths import ConfinedFS

__all__ = ["find_file", "read_document"]

TEXT_SUFFIXES = {
    ".txt", ".md", ".markdown", ".csv", ".tsv", ".json", ".yaml", ".yml", ".toml", ".ini", ".log", ".rst", ".html",
    ".htm", ".xml", ".eml", ".ics", ".vcf", ".py", ".js", ".ts", ".sh",
}
_MAX_FILES = 20000
_CONTENT_BYTES = 1_000_000
_MAX_PDF_BYTES = 200_000_000
_STOP = {"the", "a", "an", "my", "file", "document", "doc", "of", "for", "about", "with", "from", "called", "named"}


def _walk(roots: Sequence[Path], fs: ConfinedFS) -> list[Path]:
    """Every file under ``roots``: hidden names, linked folders and links out of ``fs``'s roots are skipped."""
    files: list[Path] = []
    for root in roots:
        for path in fs.files(root, recursive=True):
            try:
                files.append(fs.resolve(path))
            except PathEscapeError:
                continue
            if len(files) >= _MAX_FILES:
                return files
    return files


def find_file(query: str, roots: Sequence[Path], allowed: Sequence[Path]) -> Path:
    """The file under ``roots`` whose name best matches ``query``, else the first whose text contains all its words.

    Symlinks that point outside ``allowed`` are skipped.

    Raises:
        InvalidArgument: the query is empty.
        ItemNotFound: nothing matches.
    """
    try:
        from rapidfuzz import fuzz
    except ImportError as exc:
        raise MissingDependencyError("rapidfuzz", "functions") from exc
    words = [w for w in re.findall(r"\w+", query.casefold()) if w not in _STOP]
    if not words:
        raise InvalidArgument("the file query is empty; give words from the file's name or text")
    q = " ".join(words)
    files = _walk(roots, ConfinedFS(allowed))
    best: tuple[float, Path] | None = None
    for path in files:
        stem = " ".join(re.findall(r"\w+", path.stem.casefold().replace("_", " ")))
        full = " ".join(re.findall(r"\w+", path.name.casefold().replace("_", " ")))
        score = max(float(fuzz.token_set_ratio(q, stem)), float(fuzz.token_set_ratio(q, full)) - 1.0)
        if q in (stem, full):
            score = 101.0
        if best is None or score > best[0]:
            best = (score, path)
    if best is not None and best[0] >= 75.0:
        return best[1]
    for path in files:
        try:
            text = read_document(path, 200_000, roots=allowed).casefold()
        except (InvalidArgument, StoreError, MissingDependencyError, ItemNotFound, PathEscapeError):
            continue
        if all(w in text for w in words):
            return path
    names = ", ".join(p.name for p in files[:10]) or "the folders are empty"
    raise ItemNotFound(f"no file matches {query!r} by name or content; files: {names}")


def read_document(path: str | Path, max_chars: int, roots: Sequence[Path]) -> str:
    """The text of a text, markdown or PDF file inside ``roots``, cut to ``max_chars``.

    Raises:
        PathEscapeError: the path leaves the roots.
        ItemNotFound: it does not exist or is a folder.
        InvalidArgument: it is a binary file that is not a PDF.
        StoreError: the PDF cannot be read.
    """
    fs = ConfinedFS(roots)
    resolved = fs.resolve(path, must_exist=True)
    if resolved.is_dir():
        raise ItemNotFound(f"{path!s} is a folder, not a file; use find_file to pick a file")
    suffix = resolved.suffix.lower()
    if suffix == ".pdf":
        text = _pdf_text(resolved.name, fs.read_bytes(resolved, _MAX_PDF_BYTES), max_chars)
    else:
        head = fs.read_bytes(resolved, _CONTENT_BYTES)
        if suffix not in TEXT_SUFFIXES and b"\x00" in head[:4096]:
            raise InvalidArgument(f"{resolved.name} is a binary file; only text, markdown and PDF files can be read")
        text = head.decode("utf-8", errors="replace")
    text = text.strip()
    if len(text) > max_chars:
        text = text[:max_chars].rstrip() + "\n[... truncated]"
    return text


def _pdf_text(name: str, data: bytes, max_chars: int) -> str:
    try:
        import pypdf
        from pypdf.errors import PyPdfError
    except ImportError as exc:
        raise MissingDependencyError("pypdf", "functions") from exc
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise StoreError(f"{name} is an encrypted PDF; decrypt it first")
        parts: list[str] = []
        total = 0
        for page in reader.pages:
            chunk = page.extract_text() or ""
            parts.append(chunk)
            total += len(chunk)
            if total > max_chars:
                break
    except (PyPdfError, ValueError, OSError) as exc:
        raise StoreError(f"cannot read the PDF {name}: {exc}") from exc
    return "\n".join(parts)
