"""The built-in tools: one module per domain, assembled here in a stable order.

Effects (``Tool.effects``; MCP export turns them into ``readOnlyHint`` / ``destructiveHint`` / ``openWorldHint``):

* ``"outgoing"`` (sends something to someone): ``send_email``, ``reply_to_email``, ``forward_email``,
  ``send_message``, and ``create_calendar_event`` (its invitees are written as ATTENDEEs, which a syncing calendar
  server invites);
* ``"destructive"``: ``delete_note``;
* ``"write"`` (adds or changes local data): ``create_note``, ``append_note``, ``create_reminder``;
* ``"read"``: every lookup, list, search, open, read and link-making tool.

Confirmation inside the call (the app's hook is asked before the action, and a refusal changes nothing):

* ``send_email``, ``reply_to_email``, ``forward_email``: when an SMTP server is configured (the mail leaves the
  machine). Without one, the message is only written to the outbox; the tool itself does not ask, but it is
  declared ``"outgoing"``, so the run loop can ask when a recipient came from tool output.
* ``send_message``: when the transport is outgoing (``MessageTransport.outgoing``); the default outbox is not.
* ``create_note`` over an existing note (overwrite) and ``delete_note``: always.
"""

from __future__ import annotations

from .._tools import Tool
from . import (
    _calendar_tools,
    _contact_tools,
    _file_tools,
    _link_tools,
    _mail_tools,
    _message_tools,
    _note_tools,
    _reminder_tools,
    _time_tools,
)
from ._binding import Binding
from ._settings import FunctionsSettings

__all__ = ["TOOL_NAMES", "builtin_tools"]

TOOL_NAMES = (
    "get_email_address", "get_phone_number", "send_email", "reply_to_email", "forward_email",
    "create_calendar_event", "list_calendar_events", "find_calendar_conflicts", "create_reminder", "list_reminders",
    "create_note", "open_note", "append_note", "search_notes", "delete_note", "find_file", "read_file",
    "summarize_file", "send_message", "get_directions", "create_meeting_link", "get_today", "resolve_date",
)
_DOMAINS = (
    _contact_tools, _mail_tools, _calendar_tools, _reminder_tools, _note_tools, _file_tools, _message_tools,
    _link_tools, _time_tools,
)


def builtin_tools(settings: FunctionsSettings | None = None) -> list[Tool]:
    """The built-in tools (contacts, calendar, email, notes, reminders, files, messages, maps, meetings, time).

    Args:
        settings: where the data lives and how to send; defaults to ``FunctionsSettings()``.

    Returns:
        The tools, in a stable order (see ``TOOL_NAMES``), ready for ``ToolRegistry`` or ``Agent(tools=...)``.
    """
    binding = Binding(settings if settings is not None else FunctionsSettings())
    by_name = {t.name: t for domain in _DOMAINS for t in domain.tools(binding)}
    return [by_name[name] for name in TOOL_NAMES]
