"""Email: send, reply, forward (written to the outbox; sent by SMTP when a server is configured, after confirmation)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._tools import Tool, ToolContext, tool
from ._binding import Binding
from ._errors import InvalidArgument
from ._mail import build_forward, build_message, build_reply, find_message

__all__ = ["tools"]


def send_email_tool(b: Binding) -> Tool:
    """``send_email``, bound to ``b``."""
    s = b.s

    @tool(effects="outgoing")
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

    return send_email


def reply_to_email_tool(b: Binding) -> Tool:
    """``reply_to_email``, bound to ``b``."""
    s = b.s

    @tool(effects="outgoing")
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
        _, original = find_message([s.mail_dir / "inbox"], message, b.mail_fs)
        files = b.attachments(attachments)
        msg = build_reply(original, s.sender, body, files, s.tz)
        summary = {"to": [str(msg["To"])], "subject": str(msg["Subject"]), "attachments": [p.name for p in files]}
        return await b.deliver(ctx, msg, summary)

    return reply_to_email


def forward_email_tool(b: Binding) -> Tool:
    """``forward_email``, bound to ``b``."""
    s = b.s

    @tool(effects="outgoing")
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
        _, original = find_message([s.mail_dir / "inbox"], message, b.mail_fs)
        recipients = b.addresses(to, "forward_email")
        files = b.attachments(attachments)
        msg = build_forward(original, s.sender, recipients, body, files, s.tz)
        summary = {"to": recipients, "subject": str(msg["Subject"]), "attachments": [p.name for p in files]}
        return await b.deliver(ctx, msg, summary)

    return forward_email


def tools(b: Binding) -> list[Tool]:
    """The mail tools, in their stable order."""
    return [send_email_tool(b), reply_to_email_tool(b), forward_email_tool(b)]
