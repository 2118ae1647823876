"""The built-in tools, bound to one :class:`FunctionsSettings` by closures.

Confirmation policy (the app's hook is asked before the action, and a refusal changes nothing):

* ``send_email``, ``reply_to_email``, ``forward_email``: when an SMTP server is configured (the mail leaves the
  machine). Without one, the message is only written to the outbox, which needs no confirmation.
* ``send_message``: when the transport is outgoing (``MessageTransport.outgoing``); the default outbox is not.
* ``create_note`` over an existing note (overwrite) and ``delete_note``: always.
* Everything else only reads, or creates new items, and is not confirmed.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import urllib.parse
import uuid
from collections.abc import Sequence
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from .._tools import Tool, ToolContext, tool
from ..errors import ToolError
from ..models._base import ModelRequest
from ._calendar import CalendarStore
from ._contacts import ContactBook
from ._errors import ContactFieldMissing, InvalidArgument
from ._files import find_file as _find_file
from ._files import read_document
from ._mail import build_forward, build_message, build_reply, check_address, find_message, send_smtp, write_eml
from ._notes import NotesStore
from ._paths import confine
from ._settings import FunctionsSettings
from ._time import format_when, parse_date, parse_datetime, parse_when

__all__ = ["TOOL_NAMES", "builtin_tools"]

log = logging.getLogger("tinyagent.functions")

TOOL_NAMES = (
    "get_email_address", "get_phone_number", "send_email", "reply_to_email", "forward_email",
    "create_calendar_event", "list_calendar_events", "find_calendar_conflicts", "create_reminder", "list_reminders",
    "create_note", "open_note", "append_note", "search_notes", "delete_note", "find_file", "read_file",
    "summarize_file", "send_message", "get_directions", "create_meeting_link", "get_today", "resolve_date",
)
_PHONE = re.compile(r"^\+?[\d\s().\-/]{5,}$")
_MAX_MINUTES = 7 * 24 * 60


def builtin_tools(settings: FunctionsSettings | None = None) -> list[Tool]:
    """The built-in tools (contacts, calendar, email, notes, reminders, files, messages, maps, meetings, time).

    Args:
        settings: where the data lives and how to send; defaults to ``FunctionsSettings()``.

    Returns:
        The tools, in a stable order (see ``TOOL_NAMES``), ready for ``ToolRegistry`` or ``Agent(tools=...)``.
    """
    s = settings if settings is not None else FunctionsSettings()
    return _Builder(s).tools()


class _Builder:
    def __init__(self, settings: FunctionsSettings) -> None:
        self.s = settings

    # -- shared helpers ----------------------------------------------------------------------------------------
    @property
    def book(self) -> ContactBook:
        return ContactBook(self.s.contacts_dir)

    @property
    def calendar(self) -> CalendarStore:
        return CalendarStore(self.s.calendar_path, self.s.tz, organizer=self.s.sender)

    @property
    def notes(self) -> NotesStore:
        return NotesStore(self.s.notes_dir, self.s.trash_dir)

    def email_of(self, name: str, tool_name: str) -> str:
        contact = self.book.find(name, tool=tool_name)
        if not contact.emails:
            raise ContactFieldMissing(contact.full_name, "email address", tool=tool_name)
        return contact.emails[0]

    def phone_of(self, name: str, tool_name: str) -> str:
        contact = self.book.find(name, tool=tool_name)
        if not contact.phones:
            raise ContactFieldMissing(contact.full_name, "phone number", tool=tool_name)
        return contact.phones[0]

    def addresses(self, values: Sequence[str], tool_name: str, what: str = "recipient") -> list[str]:
        """Addresses as given; a value without ``@`` is looked up as a contact name (forgiving planners)."""
        out = []
        for value in values:
            if not isinstance(value, str) or not value.strip():
                raise InvalidArgument(f"an empty {what} was given; give an email address", tool=tool_name)
            out.append(check_address(value) if "@" in value else self.email_of(value, tool_name))
        return out

    def attachments(self, values: Sequence[str]) -> list[Path]:
        paths = []
        for value in values:
            path = confine(value, self.s.allowed_roots, must_exist=True)
            if not path.is_file():
                raise InvalidArgument(f"attachment {value!r} is a folder; attach files")
            paths.append(path)
        return paths

    def open_url(self, url: str) -> None:
        if self.s.url_opener is None:
            return
        try:
            self.s.url_opener(url)
        except Exception as exc:  # noqa: BLE001 - an opener failure must not lose the URL the tool made
            log.warning("the URL opener failed for %s: %s", url, exc)

    async def deliver(self, ctx: ToolContext, msg: EmailMessage, summary: dict[str, Any]) -> dict[str, Any]:
        """Confirm (if sending), write to the outbox, send by SMTP, move to sent/; return ``summary`` + status."""
        import asyncio

        outbox, sent = self.s.mail_dir / "outbox", self.s.mail_dir / "sent"
        if self.s.smtp_host:
            await ctx.confirm(
                f"send the email {summary.get('subject', '')!r} to {', '.join(summary.get('to', []))}", **summary
            )
        path = await asyncio.to_thread(write_eml, outbox, msg)
        if not self.s.smtp_host:
            return {**summary, "status": "queued in outbox (no SMTP server configured)", "path": str(path)}
        await asyncio.to_thread(
            send_smtp, msg, self.s.smtp_host, self.s.smtp_port, user=self.s.smtp_user,
            password_env=self.s.smtp_password_env, starttls=self.s.smtp_starttls, timeout_s=self.s.smtp_timeout_s,
            outbox_path=path,
        )
        sent.mkdir(parents=True, exist_ok=True)
        final = sent / path.name
        path.replace(final)
        return {**summary, "status": "sent", "path": str(final)}

    # -- the tools -------------------------------------------------------------------------------------------
    def tools(self) -> list[Tool]:  # noqa: C901 - one closure per tool reads best in one place
        b = self
        s = self.s

        @tool
        def get_email_address(name: str) -> str:
            """Look up a contact's email address by name.

            Args:
                name: the person's name as the user said it, e.g. "Sid" or "Alex Chen".

            Returns:
                the email address.
            """
            return b.email_of(name, "get_email_address")

        @tool
        def get_phone_number(name: str) -> str:
            """Look up a contact's phone number by name.

            Args:
                name: the person's name as the user said it.

            Returns:
                the phone number.
            """
            return b.phone_of(name, "get_phone_number")

        @tool
        async def send_email(
            ctx: ToolContext,
            to: Sequence[str],
            subject: str,
            body: str,
            cc: Sequence[str] = (),
            attachments: Sequence[str] = (),
        ) -> dict[str, Any]:
            """Send a new email.

            Args:
                to: recipient email addresses.
                subject: the subject line.
                body: the message text.
                cc: addresses to copy.
                attachments: file paths to attach (from find_file).

            Returns:
                the status ("sent" or "queued in outbox") and the .eml path.
            """
            if not to:
                raise InvalidArgument("send_email needs at least one recipient in 'to'", tool="send_email")
            recipients = b.addresses(to, "send_email")
            copies = b.addresses(cc, "send_email", "cc address")
            files = b.attachments(attachments)
            msg = build_message(s.sender, recipients, subject.strip(), body, copies, files, s.tz)
            summary = {"to": recipients, "subject": subject.strip(), "attachments": [p.name for p in files]}
            return await b.deliver(ctx, msg, summary)

        @tool
        async def reply_to_email(
            ctx: ToolContext, message: str, body: str, attachments: Sequence[str] = ()
        ) -> dict[str, Any]:
            """Reply to an email in the inbox.

            Args:
                message: words from the email's subject or sender, e.g. "budget review".
                body: the reply text.
                attachments: file paths to attach.

            Returns:
                the status and the .eml path.
            """
            _, original = find_message([s.mail_dir / "inbox"], message)
            files = b.attachments(attachments)
            msg = build_reply(original, s.sender, body, files, s.tz)
            summary = {"to": [str(msg["To"])], "subject": str(msg["Subject"]), "attachments": [p.name for p in files]}
            return await b.deliver(ctx, msg, summary)

        @tool
        async def forward_email(
            ctx: ToolContext, message: str, to: Sequence[str], body: str = "", attachments: Sequence[str] = ()
        ) -> dict[str, Any]:
            """Forward an email from the inbox to other people.

            Args:
                message: words from the email's subject or sender.
                to: recipient email addresses.
                body: a note above the forwarded email.
                attachments: extra file paths to attach.

            Returns:
                the status and the .eml path.
            """
            if not to:
                raise InvalidArgument("forward_email needs at least one recipient in 'to'", tool="forward_email")
            _, original = find_message([s.mail_dir / "inbox"], message)
            recipients = b.addresses(to, "forward_email")
            files = b.attachments(attachments)
            msg = build_forward(original, s.sender, recipients, body, files, s.tz)
            summary = {"to": recipients, "subject": str(msg["Subject"]), "attachments": [p.name for p in files]}
            return await b.deliver(ctx, msg, summary)

        @tool
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
            if not 1 <= duration_minutes <= _MAX_MINUTES:
                raise InvalidArgument(
                    f"duration_minutes must be between 1 and {_MAX_MINUTES}, got {duration_minutes}",
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

        @tool
        def list_calendar_events(ctx: ToolContext, date: str) -> dict[str, Any]:
            """List the events on one day.

            Args:
                date: the day as "YYYY-MM-DD".

            Returns:
                the day's events, in order.
            """
            day = parse_date(date, ctx.today)
            return {"date": day.isoformat(), "events": [e.to_dict() for e in b.calendar.events_on(day)]}

        @tool
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
            if not 1 <= duration_minutes <= _MAX_MINUTES:
                raise InvalidArgument(f"duration_minutes must be between 1 and {_MAX_MINUTES}, got {duration_minutes}")
            begin = dt.datetime.combine(day, time_of_day)
            clashes = store.events_between(begin, begin + dt.timedelta(minutes=duration_minutes))
            return {"start": format_when(day, time_of_day), "conflicts": [e.to_dict() for e in clashes]}

        @tool
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

        @tool
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

        @tool
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
            if path.exists():
                await ctx.confirm(f"overwrite the note {title!r}", path=str(path))
            store.write(path, title, body)
            return {"title": title.strip(), "path": str(path)}

        @tool
        def open_note(ctx: ToolContext, title: str) -> str:
            """Open a note and return its text.

            Args:
                title: the note title or words from it, e.g. "standup".

            Returns:
                the note's markdown text.
            """
            note = b.notes.require(title, ctx.today)
            return note.path.read_text(encoding="utf-8", errors="replace").strip()

        @tool
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

        @tool
        def search_notes(query: str) -> dict[str, Any]:
            """Search notes for words.

            Args:
                query: words to look for in titles and text.

            Returns:
                matching notes with a snippet each.
            """
            return {"query": query, "matches": b.notes.search(query)}

        @tool
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

        @tool
        def find_file(query: str) -> str:
            """Find a file by name or content and return its path.

            Args:
                query: words from the file name or its text, e.g. "lunch menu".

            Returns:
                the file path.
            """
            return str(_find_file(query, s.file_roots, s.allowed_roots))

        @tool
        def read_file(path: str) -> str:
            """Read the text of a file (text, markdown or PDF).

            Args:
                path: the file path (from find_file).

            Returns:
                the file's text.
            """
            return read_document(path, s.read_max_chars, s.allowed_roots)

        @tool(timeout=300.0)
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

        @tool
        async def send_message(ctx: ToolContext, recipients: Sequence[str], text: str) -> dict[str, Any]:
            """Send a text message.

            Args:
                recipients: phone numbers.
                text: the message.

            Returns:
                where the message was delivered.
            """
            import asyncio

            if not recipients:
                raise InvalidArgument("send_message needs at least one recipient", tool="send_message")
            if not text.strip():
                raise InvalidArgument("the message text is empty", tool="send_message")
            numbers = [
                r.strip() if _PHONE.match(r.strip()) or "@" in r else b.phone_of(r, "send_message") for r in recipients
            ]
            transport = s.transport()
            if transport.outgoing:
                await ctx.confirm(f"send a message to {', '.join(numbers)}", recipients=numbers, text=text)
            from ._errors import DeliveryError

            try:
                where = await asyncio.to_thread(transport.send, numbers, text)
            except Exception as exc:  # noqa: BLE001 - any transport failure is a delivery error
                raise DeliveryError(f"the message transport failed: {type(exc).__name__}: {exc}",
                                    tool="send_message") from exc
            return {"to": numbers, "status": "sent" if transport.outgoing else "queued in outbox", "id": where}

        @tool
        def get_directions(destination: str, origin: str = "", mode: str = "driving") -> str:
            """Make a map link with directions to a place, or showing the place when no origin is given.

            Args:
                destination: where to go, e.g. "Ferry Building, San Francisco".
                origin: where to start; empty to just show the destination.
                mode: "driving", "walking" or "cycling".

            Returns:
                the map URL.
            """
            if not destination.strip():
                raise InvalidArgument("the destination is empty; name a place", tool="get_directions")
            quote = urllib.parse.quote_plus
            if not origin.strip():
                url = s.map_search_url.format(query=quote(destination.strip()))
            else:
                provider_mode = s.map_modes.get(mode.strip().lower())
                if provider_mode is None:
                    raise InvalidArgument(
                        f"unknown travel mode {mode!r}; use one of {sorted(s.map_modes)}", tool="get_directions"
                    )
                url = s.map_directions_url.format(
                    origin=quote(origin.strip()), destination=quote(destination.strip()), mode=quote(provider_mode)
                )
            b.open_url(url)
            return url

        @tool
        def create_meeting_link(title: str) -> str:
            """Create a video meeting link.

            Args:
                title: the meeting's name.

            Returns:
                the meeting URL.
            """
            slug = re.sub(r"[^a-z0-9]+", "-", title.casefold()).strip("-")[:40] or "meeting"
            url = s.meeting_url_template.format(slug=slug, id=uuid.uuid4().hex[:8])
            b.open_url(url)
            return url

        @tool
        def get_today(ctx: ToolContext) -> str:
            """Get today's date and weekday.

            Returns:
                today as "YYYY-MM-DD (Weekday)".
            """
            return f"{ctx.today.isoformat()} ({ctx.today:%A})"

        @tool
        def resolve_date(ctx: ToolContext, expression: str) -> str:
            """Turn a relative date like "next Friday at 3pm" into an exact one.

            Args:
                expression: e.g. "tomorrow", "next Friday at 3pm", "in 2 days", "Monday noon".

            Returns:
                "YYYY-MM-DD", or "YYYY-MM-DDTHH:MM" when a time is given.
            """
            return format_when(*parse_when(expression, ctx.today))

        tools = [
            get_email_address, get_phone_number, send_email, reply_to_email, forward_email, create_calendar_event,
            list_calendar_events, find_calendar_conflicts, create_reminder, list_reminders, create_note, open_note,
            append_note, search_notes, delete_note, find_file, read_file, summarize_file, send_message,
            get_directions, create_meeting_link, get_today, resolve_date,
        ]
        return tools
