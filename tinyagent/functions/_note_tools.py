"""Markdown notes: create, open, append, search, delete (to the trash)."""

from __future__ import annotations

from typing import Any

from .._tools import Tool, ToolContext, tool
from ._binding import Binding
from ._errors import InvalidArgument

__all__ = ["tools"]


def create_note_tool(b: Binding) -> Tool:
    """``create_note``, bound to ``b``."""

    @tool(effects="write")
    async def create_note(ctx: ToolContext, title: str, body: str, folder: str = "") -> dict[str, Any]:
        """Create a markdown note (asks before overwriting one with the same title).

        Args:
            title: the note title.
            body: the note text.
            folder: an optional folder, e.g. "work".

        Returns:
            the note's title and path.
        """
        store = b.notes
        path = store.path_for(title, folder)
        if store.exists(path):
            await ctx.confirm(f"overwrite the note {title!r}", path=str(path))
        store.write(path, title, body)
        return {"title": title.strip(), "path": str(path)}

    return create_note


def open_note_tool(b: Binding) -> Tool:
    """``open_note``, bound to ``b``."""

    @tool(effects="read")
    def open_note(ctx: ToolContext, title: str) -> str:
        """Open a note and return its text.

        Args:
            title: the note title or words from it, e.g. "standup".

        Returns:
            the note's markdown text.
        """
        store = b.notes
        return store.read(store.require(title, ctx.today)).strip()

    return open_note


def append_note_tool(b: Binding) -> Tool:
    """``append_note``, bound to ``b``."""

    @tool(effects="write")
    def append_note(ctx: ToolContext, title: str, text: str) -> dict[str, Any]:
        """Add text to the end of a note (creates the note if none matches).

        Args:
            title: the note title.
            text: the text to add.

        Returns:
            the note's title and path.
        """
        if not text.strip():
            raise InvalidArgument("there is no text to append", tool="append_note")
        store = b.notes
        note = store.find(title, ctx.today)
        if note is None:
            path = store.path_for(title, "")
            store.write(path, title, text)
            return {"title": title.strip(), "path": str(path), "created": True}
        store.append(note, text)
        return {"title": note.title, "path": str(note.path)}

    return append_note


def search_notes_tool(b: Binding) -> Tool:
    """``search_notes``, bound to ``b``."""

    @tool(effects="read")
    def search_notes(query: str) -> dict[str, Any]:
        """Search notes for words.

        Args:
            query: words to look for in titles and text.

        Returns:
            matching notes with a snippet each.
        """
        return {"query": query, "matches": b.notes.search(query)}

    return search_notes


def delete_note_tool(b: Binding) -> Tool:
    """``delete_note``, bound to ``b``."""

    @tool(effects="destructive")
    async def delete_note(ctx: ToolContext, title: str) -> dict[str, Any]:
        """Delete a note (moves it to the trash; asks first).

        Args:
            title: the note title.

        Returns:
            the deleted note's title.
        """
        store = b.notes
        note = store.require(title, ctx.today)
        await ctx.confirm(f"delete the note {note.title!r}", path=str(note.path))
        target = store.delete(note)
        return {"deleted": note.title, "trash": str(target)}

    return delete_note


def tools(b: Binding) -> list[Tool]:
    """The note tools, in their stable order."""
    return [create_note_tool(b), open_note_tool(b), append_note_tool(b), search_notes_tool(b), delete_note_tool(b)]
