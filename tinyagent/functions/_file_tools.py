"""Documents: find by name or content, read, summarize with the agent's model."""

from __future__ import annotations

from pathlib import Path

from .._tools import Tool, ToolContext, tool
from ..errors import ToolError
from ..models import ModelRequest
from ._binding import Binding
from ._files import find_file as _find_file
from ._files import read_document

__all__ = ["tools"]


def find_file_tool(b: Binding) -> Tool:
    """``find_file``, bound to ``b``."""
    s = b.s

    @tool(effects="read")
    def find_file(query: str) -> str:
        """Find a file by name or content and return its path.

        Args:
            query: words from the file name or its text, e.g. "lunch menu".

        Returns:
            the file path.
        """
        return str(_find_file(query, s.file_roots, s.allowed_roots))

    return find_file


def read_file_tool(b: Binding) -> Tool:
    """``read_file``, bound to ``b``."""
    s = b.s

    @tool(effects="read")
    def read_file(path: str) -> str:
        """Read the text of a file (text, markdown or PDF).

        Args:
            path: the file path (from find_file).

        Returns:
            the file's text.
        """
        return read_document(path, s.read_max_chars, s.allowed_roots)

    return read_file


def summarize_file_tool(b: Binding) -> Tool:
    """``summarize_file``, bound to ``b``."""
    s = b.s

    @tool(timeout=300.0, effects="read")
    async def summarize_file(ctx: ToolContext, path: str) -> str:
        """Summarize a document (text, markdown or PDF) in a few sentences.

        Args:
            path: the file path (from find_file).

        Returns:
            the summary.
        """
        import asyncio

        text = await asyncio.to_thread(read_document, path, s.summary_input_chars, s.allowed_roots)
        if ctx.model is None:
            raise ToolError("summarize_file needs the agent's model, but the run has none", tool="summarize_file")
        if not text.strip():
            return "The document has no text to summarize."
        name = Path(path).name
        request = ModelRequest(
            messages=[
                {"role": "system", "content": "You summarize documents in at most three short sentences."},
                {"role": "user", "content": f"Document: {name}\n\n{text}\n\nSummarize this document."},
            ],
            max_tokens=160,
            temperature=0.0,
        )
        completion = await ctx.model.complete(request)
        summary = str(completion.text).strip()
        if not summary:
            raise ToolError("the model returned an empty summary; try again or read_file", tool="summarize_file")
        return summary

    return summarize_file


def tools(b: Binding) -> list[Tool]:
    """The file tools, in their stable order."""
    return [find_file_tool(b), read_file_tool(b), summarize_file_tool(b)]
