"""Today's date and relative dates resolved against it."""

from __future__ import annotations

from .._tools import Tool, ToolContext, tool
from ._binding import Binding
from ._time import format_when, parse_when

__all__ = ["tools"]


def get_today_tool(b: Binding) -> Tool:
    """``get_today``, bound to ``b``."""

    @tool(effects="read")
    def get_today(ctx: ToolContext) -> str:
        """Get today's date and weekday.

        Returns:
            today as "YYYY-MM-DD (Weekday)".
        """
        return f"{ctx.today.isoformat()} ({ctx.today:%A})"

    return get_today


def resolve_date_tool(b: Binding) -> Tool:
    """``resolve_date``, bound to ``b``."""

    @tool(effects="read")
    def resolve_date(ctx: ToolContext, expression: str) -> str:
        """Turn a relative date like "next Friday at 3pm" into an exact one.

        Args:
            expression: e.g. "tomorrow", "next Friday at 3pm", "in 2 days", "Monday noon".

        Returns:
            "YYYY-MM-DD", or "YYYY-MM-DDTHH:MM" when a time is given.
        """
        return format_when(*parse_when(expression, ctx.today))

    return resolve_date


def tools(b: Binding) -> list[Tool]:
    """The time tools, in their stable order."""
    return [get_today_tool(b), resolve_date_tool(b)]
