"""Reminders (to-dos) in reminder lists, stored as VTODOs beside the events."""

from __future__ import annotations

import datetime as dt
from typing import Any

from .._tools import Tool, ToolContext, tool
from ._binding import Binding
from ._errors import InvalidArgument
from ._time import parse_when

__all__ = ["tools"]


def create_reminder_tool(b: Binding) -> Tool:
    """``create_reminder``, bound to ``b``."""

    @tool(effects="write")
    def create_reminder(
        ctx: ToolContext, title: str, due: str = "", list_name: str = "Reminders"
    ) -> dict[str, Any]:
        """Add a reminder (to-do) to a list.

        Args:
            title: what to do.
            due: due date "YYYY-MM-DD" or "YYYY-MM-DDTHH:MM"; empty for none.
            list_name: the reminder list, e.g. "Groceries".

        Returns:
            the reminder.
        """
        if not title.strip():
            raise InvalidArgument("the reminder needs a title", tool="create_reminder")
        if not list_name.strip():
            raise InvalidArgument("list_name is empty; use 'Reminders' for the default list")
        when: dt.date | dt.datetime | None = None
        if due.strip():
            day, time_of_day = parse_when(due, ctx.today)
            when = day if time_of_day is None else dt.datetime.combine(day, time_of_day)
        return b.calendar.add_todo(title.strip(), when, list_name.strip()).to_dict()

    return create_reminder


def list_reminders_tool(b: Binding) -> Tool:
    """``list_reminders``, bound to ``b``."""

    @tool(effects="read")
    def list_reminders(list_name: str = "") -> dict[str, Any]:
        """List open reminders, optionally of one list.

        Args:
            list_name: the list, e.g. "Groceries"; empty for all lists.

        Returns:
            the reminders, soonest due first.
        """
        store = b.calendar
        todos = store.todos(list_name.strip() or None)
        if list_name.strip() and not todos and list_name.strip().casefold() not in (
            n.casefold() for n in store.list_names()
        ):
            raise InvalidArgument(
                f"there is no reminder list {list_name!r}; lists: {', '.join(store.list_names()) or 'none yet'}",
                tool="list_reminders",
            )
        return {"list": list_name.strip() or "all", "reminders": [t.to_dict() for t in todos]}

    return list_reminders


def tools(b: Binding) -> list[Tool]:
    """The reminder tools, in their stable order."""
    return [create_reminder_tool(b), list_reminders_tool(b)]
