"""A tiny in-memory tool set for demos and tests, used while the built-in tool library is not installed.

Nothing leaves the process: "sent" emails and messages are kept in :data:`OUTBOX`.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from .. import ToolContext, ToolRegistry, tool

__all__ = ["CONTACTS", "OUTBOX", "demo_tools"]

CONTACTS: dict[str, dict[str, str]] = {
    "sid": {"email": "sid@example.com", "phone": "+1-555-0101"},
    "lutfi": {"email": "lutfi@example.com", "phone": "+1-555-0102"},
    "kate": {"email": "kate@example.com", "phone": "+1-555-0103"},
}
OUTBOX: list[dict[str, Any]] = []
_CALENDAR: list[dict[str, str]] = [
    {"title": "Standup", "date": "+1", "time": "09:30"},
    {"title": "Lunch with Kate", "date": "+1", "time": "12:00"},
    {"title": "Dentist", "date": "+3", "time": "16:00"},
]


@tool(effects="read")
def get_email_address(name: str) -> str:
    """Look up a contact's email address.

    Args:
        name: the contact's name, e.g. "Sid".
    """
    entry = CONTACTS.get(name.strip().lower())
    if entry is None:
        raise LookupError(f"no contact named {name!r}; known: {sorted(CONTACTS)}")
    return entry["email"]


@tool(effects="read")
def get_phone_number(name: str) -> str:
    """Look up a contact's phone number.

    Args:
        name: the contact's name.
    """
    entry = CONTACTS.get(name.strip().lower())
    if entry is None:
        raise LookupError(f"no contact named {name!r}; known: {sorted(CONTACTS)}")
    return entry["phone"]


@tool(effects="outgoing")
async def send_email(to: list[str], subject: str, body: str, ctx: ToolContext) -> str:
    """Send an email.

    Args:
        to: recipient email addresses.
        subject: the subject line.
        body: the message text.
    """
    await ctx.confirm("send an email", to=to, subject=subject)
    OUTBOX.append({"kind": "email", "to": list(to), "subject": subject, "body": body})
    return f"sent to {', '.join(to)}"


@tool(effects="outgoing")
async def send_sms(to: list[str], message: str, ctx: ToolContext) -> str:
    """Send a text message.

    Args:
        to: recipient phone numbers.
        message: the text.
    """
    await ctx.confirm("send a text message", to=to)
    OUTBOX.append({"kind": "sms", "to": list(to), "message": message})
    return f"texted {', '.join(to)}"


@tool(effects="read")
def get_calendar_events(date: str, ctx: ToolContext) -> list[dict[str, str]]:
    """List the calendar events on a day.

    Args:
        date: the day, YYYY-MM-DD.
    """
    day = dt.date.fromisoformat(date)
    events = []
    for e in _CALENDAR:
        when = ctx.today + dt.timedelta(days=int(e["date"]))
        if when == day:
            events.append({"title": e["title"], "start": f"{when.isoformat()}T{e['time']}"})
    return events


def demo_tools() -> ToolRegistry:
    """The demo tool set: contacts, email, text messages and a calendar, all in memory."""
    return ToolRegistry([get_email_address, get_phone_number, send_email, send_sms, get_calendar_events])
