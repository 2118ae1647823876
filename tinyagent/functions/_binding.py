"""What every built-in tool shares: the settings, the stores, contact lookups, attachments and mail delivery.

Each domain module (``_contact_tools``, ``_mail_tools`` …) builds its tools from one :class:`Binding`, so a tool is
a small typed function that reads as its own unit, and all file access goes through the stores' confined views.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from email.message import EmailMessage
from typing import Any

from .._tools import ToolContext
from ._calendar import CalendarStore
from ._contacts import ContactBook
from ._errors import ContactFieldMissing, InvalidArgument
from ._mail import Attachment, check_address, send_smtp, write_eml
from ._notes import NotesStore
from ._paths import ConfinedFS
from ._settings import FunctionsSettings

__all__ = ["MAX_MINUTES", "Binding"]

log = logging.getLogger("tinyagent.functions")

MAX_MINUTES = 7 * 24 * 60
"""The longest event or free-time check a tool accepts (one week)."""


class Binding:
    """The built-in tools' view of one :class:`FunctionsSettings`.

    Args:
        settings: where the data lives and how to send.
    """

    def __init__(self, settings: FunctionsSettings) -> None:
        self.s = settings

    # -- stores (built per call, so edits by other programs and new settings are seen) ----------------------------
    @property
    def book(self) -> ContactBook:
        """The address book."""
        return ContactBook(self.s.contacts_dir, roots=[self.s.data_dir])

    @property
    def calendar(self) -> CalendarStore:
        """The calendar and reminders."""
        return CalendarStore(self.s.calendar_path, self.s.tz, organizer=self.s.sender, roots=(self.s.data_dir,))

    @property
    def notes(self) -> NotesStore:
        """The markdown notes."""
        return NotesStore(self.s.notes_dir, self.s.trash_dir, roots=[self.s.data_dir])

    @property
    def mail_fs(self) -> ConfinedFS:
        """File access confined to the data folder, for the mail folders (inbox, outbox, sent)."""
        return ConfinedFS([self.s.data_dir])

    @property
    def files_fs(self) -> ConfinedFS:
        """File access confined to the data folder and the extra roots (documents, attachments)."""
        return ConfinedFS(self.s.allowed_roots)

    # -- contacts ------------------------------------------------------------------------------------------------
    def email_of(self, name: str, tool_name: str) -> str:
        """The first email address of the contact ``name`` names."""
        contact = self.book.find(name, tool=tool_name)
        if not contact.emails:
            raise ContactFieldMissing(contact.full_name, "email address", tool=tool_name)
        return contact.emails[0]

    def phone_of(self, name: str, tool_name: str) -> str:
        """The first phone number of the contact ``name`` names."""
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

    # -- files ---------------------------------------------------------------------------------------------------
    def attachments(self, values: Sequence[str]) -> list[Attachment]:
        """Read each attachment through the confined file access (links out of the roots are refused)."""
        fs = self.files_fs
        out = []
        for value in values:
            path = fs.resolve(value, must_exist=True)
            if path.is_dir():
                raise InvalidArgument(f"attachment {value!r} is a folder; attach files")
            out.append(Attachment(path.name, fs.read_bytes(path)))
        return out

    def open_url(self, url: str) -> None:
        """Hand ``url`` to the configured opener (a failure is logged, never raised)."""
        if self.s.url_opener is None:
            return
        try:
            self.s.url_opener(url)
        except Exception as exc:  # noqa: BLE001 - an opener failure must not lose the URL the tool made
            log.warning("the URL opener failed for %s: %s", url, exc)

    # -- mail ----------------------------------------------------------------------------------------------------
    async def deliver(self, ctx: ToolContext, msg: EmailMessage, summary: dict[str, Any]) -> dict[str, Any]:
        """Confirm (if sending), write to the outbox, send by SMTP, move to sent/; return ``summary`` + status."""
        fs = self.mail_fs
        outbox, sent = self.s.mail_dir / "outbox", self.s.mail_dir / "sent"
        if self.s.smtp_host:
            await ctx.confirm(
                f"send the email {summary.get('subject', '')!r} to {', '.join(summary.get('to', []))}", **summary
            )
        path = await asyncio.to_thread(write_eml, outbox, msg, fs)
        if not self.s.smtp_host:
            return {**summary, "status": "queued in outbox (no SMTP server configured)", "path": str(path)}
        await asyncio.to_thread(
            send_smtp, msg, self.s.smtp_host, self.s.smtp_port, user=self.s.smtp_user,
            password_env=self.s.smtp_password_env, starttls=self.s.smtp_starttls, timeout_s=self.s.smtp_timeout_s,
            outbox_path=path,
        )
        final = fs.rename(path, sent / path.name)
        return {**summary, "status": "sent", "path": str(final)}
