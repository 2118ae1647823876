"""Calendar events: create (with invitees), list a day, find conflicts."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from .._tools import Tool, ToolContext, tool
from ._binding import MAX_MINUTES, Binding
from ._errors import InvalidArgument
from ._time import format_when, parse_date, parse_datetime, parse_when

__all__ = ["tools"]


def create_calendar_event_tool(b: Binding) -> Tool:
    """``create_calendar_event``, bound to ``b``."""

    @tool(effects="outgoing")
    def create_calendar_event(
        ctx: ToolContext,
        title: str,
        start: str,
        duration_minutes: int = 60,
        invitees: Sequence[str] = (),
        location: str = "",
    ) -> dict[str, Any]:
        """Put an event on the calendar.

        Args:
            title: the event title.
            start: start time as "YYYY-MM-DDTHH:MM".
            duration_minutes: length in minutes.
            invitees: email addresses to invite.
            location: a place or a meeting link.

        Returns:
            the event and any events it overlaps.
        """
        if not title.strip():
            raise InvalidArgument("the event needs a title", tool="create_calendar_event")
        begin = parse_datetime(start, ctx.today, "start")
        if not 1 <= duration_minutes <= MAX_MINUTES:
            raise InvalidArgument(
                f"duration_minutes must be between 1 and {MAX_MINUTES}, got {duration_minutes}",
                tool="create_calendar_event",
            )
        guests = b.addresses(invitees, "create_calendar_event", "invitee")
        store = b.calendar
        end = begin + dt.timedelta(minutes=duration_minutes)
        clashes = store.events_between(begin, end)
        event = store.add_event(title.strip(), begin, duration_minutes, guests, location.strip())
        out: dict[str, Any] = {"created": event.to_dict()}
        if clashes:
            out["conflicts"] = [e.to_dict() for e in clashes]
        return out

    return create_calendar_event


def list_calendar_events_tool(b: Binding) -> Tool:
    """``list_calendar_events``, bound to ``b``."""

    @tool(effects="read")
    def list_calendar_events(ctx: ToolContext, date: str) -> dict[str, Any]:
        """List the events on one day.

        Args:
            date: the day as "YYYY-MM-DD".

        Returns:
            the day's events, in order.
        """
        day = parse_date(date, ctx.today)
        return {"date": day.isoformat(), "events": [e.to_dict() for e in b.calendar.events_on(day)]}

    return list_calendar_events


def find_calendar_conflicts_tool(b: Binding) -> Tool:
    """``find_calendar_conflicts``, bound to ``b``."""

    @tool(effects="read")
    def find_calendar_conflicts(ctx: ToolContext, start: str, duration_minutes: int = 60) -> dict[str, Any]:
        """Find events that clash with a proposed time, or overlapping events on a day.

        Args:
            start: the proposed start "YYYY-MM-DDTHH:MM", or a day "YYYY-MM-DD" to check the whole day.
            duration_minutes: the proposed length in minutes.

        Returns:
            the conflicting events (empty when the time is free).
        """
        day, time_of_day = parse_when(start, ctx.today)
        store = b.calendar
        if time_of_day is None:
            events = store.events_on(day)
            pairs = [
                [a.to_dict(), c.to_dict()]
                for i, a in enumerate(events)
                for c in events[i + 1 :]
                if not a.all_day and not c.all_day and c.start < a.end
            ]
            return {"date": day.isoformat(), "overlapping": pairs}
        if not 1 <= duration_minutes <= MAX_MINUTES:
            raise InvalidArgument(f"duration_minutes must be between 1 and {MAX_MINUTES}, got {duration_minutes}")
        begin = dt.datetime.combine(day, time_of_day)
        clashes = store.events_between(begin, begin + dt.timedelta(minutes=duration_minutes))
        return {"start": format_when(day, time_of_day), "conflicts": [e.to_dict() for e in clashes]}

    return find_calendar_conflicts


def tools(b: Binding) -> list[Tool]:
    """The calendar tools, in their stable order."""
    return [create_calendar_event_tool(b), list_calendar_events_tool(b), find_calendar_conflicts_tool(b)]
