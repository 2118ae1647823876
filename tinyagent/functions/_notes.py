"""Markdown notes: one ``.md`` file per note, in folders, titled by their first ``# heading`` (or file name)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import MissingDependencyError, PathEscapeError
from ._errors import InvalidArgument, ItemNotFound
from ._paths import ConfinedFS, safe_filename

__all__ = ["Note", "NotesStore"]

_GENERIC = {"note", "notes", "my", "the", "from", "about", "on", "for", "a", "an", "of", "called", "titled", "named"}
_MATCH = 72.0


@dataclass(frozen=True)
class Note:
    """A note file and its title."""

    title: str
    path: Path
    folder: str


class NotesStore:
    """The notes under one folder; every file access goes through :class:`ConfinedFS`.

    Args:
        root: the notes folder.
        trash: where deleted notes are moved.
        roots: the folders a note file (or a link to one) may lie in; default the notes folder and the trash.
    """

    def __init__(self, root: Path, trash: Path, roots: Sequence[Path] = ()) -> None:
        self.root = Path(root)
        self.trash = Path(trash)
        self.fs = ConfinedFS(roots or [self.root, self.trash])

    def notes(self) -> list[Note]:
        """Every note, sorted by folder and title (links that point outside the notes folder are skipped)."""
        out: list[Note] = []
        try:
            top = self.fs.resolve(self.root)
        except PathEscapeError:  # the notes folder itself is a link out of the data folder
            return out
        for path in self.fs.files(top, ".md", recursive=True):
            rel = path.relative_to(top)
            out.append(Note(self._title_of(path), path, rel.parent.as_posix().strip(".")))
        return out

    def read(self, note: Note) -> str:
        """The note's markdown text.

        Raises:
            PathEscapeError: the note file became a link that points outside the notes folder.
        """
        return self.fs.read_text(note.path)

    def find(self, title: str, today: dt.date) -> Note | None:
        """The note ``title`` names (fuzzy; ``today``/``yesterday`` match dates in titles), or None.

        Raises:
            InvalidArgument: several notes match about equally well.
        """
        try:
            from rapidfuzz import fuzz
        except ImportError as exc:
            raise MissingDependencyError("rapidfuzz", "functions") from exc
        query = _normalize_query(title, today)
        if not query:
            raise InvalidArgument(f"{title!r} is not a note title; give the note's title")
        scored = []
        for note in self.notes():
            name = _normalize(note.title)
            stem = _normalize(note.path.stem)
            if query in (name, stem):
                score = 100.0
            else:
                score = max(float(fuzz.token_set_ratio(query, name)), float(fuzz.token_set_ratio(query, stem)),
                            float(fuzz.ratio(query, name)))
            scored.append((score, note))
        scored.sort(key=lambda p: -p[0])
        if not scored or scored[0][0] < _MATCH:
            return None
        tied = [n for s, n in scored if s >= scored[0][0] - 3.0 and s >= _MATCH]
        if len(tied) > 1 and scored[0][0] < 100.0:
            raise InvalidArgument(
                f"{title!r} matches several notes: {', '.join(n.title for n in tied)}; give the exact title"
            )
        return scored[0][1]

    def require(self, title: str, today: dt.date) -> Note:
        """Like :meth:`find`, but a missing note is an error.

        Raises:
            ItemNotFound: no note matches (the note titles are listed).
        """
        note = self.find(title, today)
        if note is None:
            titles = ", ".join(n.title for n in self.notes()[:12]) or "there are no notes yet"
            raise ItemNotFound(f"no note matches {title!r}; notes: {titles}")
        return note

    def path_for(self, title: str, folder: str) -> Path:
        """Where a new note titled ``title`` in ``folder`` goes (``..`` and links out of the roots are refused)."""
        stem = safe_filename(title)
        raw_parts = [p for p in re.split(r"[/\\]+", folder) if p.strip()] if folder else []
        if any(p.strip() in ("..", ".") for p in raw_parts) or Path(folder).is_absolute():
            raise PathEscapeError(f"the folder {folder!r} leaves the notes folder; use a plain folder name like 'work'")
        parts = [safe_filename(p, "folder") for p in raw_parts]
        return self.fs.resolve(self.root.joinpath(*parts, f"{stem}.md"))

    def exists(self, path: Path) -> bool:
        """Whether a note file is at ``path``."""
        return self.fs.exists(path)

    def write(self, path: Path, title: str, body: str) -> None:
        """Write a note atomically: ``# title``, a blank line, the body."""
        text = body.strip()
        if text.startswith("# "):
            text = text.split("\n", 1)[1].lstrip("\n") if "\n" in text else ""
        with self.fs.lock(self.root):
            self.fs.write(path, f"# {title.strip()}\n\n{text}\n")

    def append(self, note: Note, text: str) -> None:
        """Append ``text`` as a new paragraph (atomically)."""
        with self.fs.lock(self.root):
            current = self.fs.read_text(note.path)
            self.fs.write(note.path, current.rstrip("\n") + "\n\n" + text.strip() + "\n")

    def search(self, query: str, limit: int = 10) -> list[dict[str, str]]:
        """Notes whose title or text contains every word of ``query``, with a snippet around the first hit."""
        words = [w for w in re.findall(r"\w+", query.casefold()) if w not in _GENERIC] or re.findall(
            r"\w+", query.casefold()
        )
        if not words:
            raise InvalidArgument("the search query is empty; give a word to search for")
        hits: list[dict[str, str]] = []
        for note in self.notes():
            try:
                text = self.fs.read_text(note.path)
            except (PathEscapeError, ItemNotFound):  # swapped for a link or removed since the listing
                continue
            haystack = f"{note.title}\n{text}".casefold()
            if all(w in haystack for w in words):
                pos = haystack.find(words[0])
                start = max(0, pos - 60)
                snippet = " ".join(f"{note.title}\n{text}"[start : pos + 100].split())
                hits.append({"title": note.title, "folder": note.folder, "snippet": snippet})
            if len(hits) >= limit:
                break
        return hits

    def delete(self, note: Note) -> Path:
        """Move ``note`` into the trash folder (never lost outright) and return where it went."""
        with self.fs.lock(self.root):
            self.fs.mkdir(self.trash)
            target = self.trash / note.path.name
            n = 1
            while self.fs.exists(target):
                target = self.trash / f"{note.path.stem} ({n}){note.path.suffix}"
                n += 1
            return self.fs.rename(note.path, target)

    def _title_of(self, path: Path) -> str:
        try:
            first = self.fs.read_text(path, limit=4096).split("\n", 1)[0].strip()
        except (OSError, PathEscapeError, ItemNotFound):
            return path.stem
        return first[2:].strip() if first.startswith("# ") else path.stem


def _normalize(text: str) -> str:
    return " ".join(re.findall(r"[\w-]+", text.casefold().replace("'s", "")))


def _normalize_query(title: str, today: dt.date) -> str:
    text = title.casefold().replace("'s", "").replace("’s", "")
    text = re.sub(r"\btoday\b", today.isoformat(), text)
    text = re.sub(r"\byesterday\b", (today - dt.timedelta(days=1)).isoformat(), text)
    words = [w for w in re.findall(r"[\w-]+", text) if w not in _GENERIC]
    return " ".join(words)
