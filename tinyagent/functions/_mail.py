"""Email as real RFC 5322 ``.eml`` files: compose, reply, forward, keep in an outbox, send by SMTP.

Layout under ``mail_dir``: ``inbox/`` (messages to reply to or forward), ``outbox/`` (composed, not yet sent) and
``sent/`` (delivered). A message is written to the outbox before any delivery attempt, so a failed send loses nothing.
"""

from __future__ import annotations

import datetime as dt
import email.policy
import email.utils
import mimetypes
import os
import re
import smtplib
import ssl
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from email.message import EmailMessage
from email.parser import BytesParser
from pathlib import Path

from ..errors import MissingDependencyError, PathEscapeError
from ._errors import DeliveryError, InvalidArgument, ItemNotFound, StoreError
from ._paths import ConfinedFS, safe_filename

__all__ = [
    "Attachment",
    "build_forward",
    "build_message",
    "build_reply",
    "check_address",
    "find_message",
    "read_message",
    "send_smtp",
    "write_eml",
]

_ADDR = re.compile(r"^[^@\s<>(),;:\"]+@[^@\s<>(),;:\"]+\.[^@\s<>(),;:\"]+$|^[^@\s<>(),;:\"]+@localhost$")


def check_address(value: str) -> str:
    """Validate one address (``a@b.c`` or ``Name <a@b.c>``) and return it unchanged but trimmed.

    Raises:
        InvalidArgument: it is not an email address.
    """
    text = value.strip()
    _, addr = email.utils.parseaddr(text)
    if not addr or not _ADDR.match(addr):
        raise InvalidArgument(f"{value!r} is not an email address; look it up with get_email_address(name)")
    return text


@dataclass(frozen=True)
class Attachment:
    """A file to attach, already read through the confined file access (so the bytes are the checked file's)."""

    name: str
    data: bytes


def _attach(msg: EmailMessage, files: Sequence[Attachment]) -> None:
    for item in files:
        ctype, encoding = mimetypes.guess_type(item.name)
        if ctype is None or encoding is not None:
            ctype = "application/octet-stream"
        maintype, subtype = ctype.split("/", 1)
        msg.add_attachment(item.data, maintype=maintype, subtype=subtype, filename=item.name)


def _base(sender: str, to: Sequence[str], subject: str, cc: Sequence[str], tz: dt.tzinfo) -> EmailMessage:
    msg = EmailMessage(policy=email.policy.SMTP)
    msg["From"] = sender
    msg["To"] = ", ".join(to)
    if cc:
        msg["Cc"] = ", ".join(cc)
    msg["Subject"] = subject
    msg["Date"] = email.utils.format_datetime(dt.datetime.now(tz))
    domain = sender.rsplit("@", 1)[-1].strip(">") or "localhost"
    msg["Message-ID"] = f"<{uuid.uuid4().hex}@{domain}>"
    return msg


def build_message(
    sender: str,
    to: Sequence[str],
    subject: str,
    body: str,
    cc: Sequence[str] = (),
    attachments: Sequence[Attachment] = (),
    tz: dt.tzinfo = dt.UTC,
) -> EmailMessage:
    """A new message with a plain-text body and the given (already validated) attachment files."""
    msg = _base(sender, to, subject, cc, tz)
    msg.set_content(body)
    _attach(msg, attachments)
    return msg


def build_reply(
    original: EmailMessage, sender: str, body: str, attachments: Sequence[Attachment] = (), tz: dt.tzinfo = dt.UTC,
) -> EmailMessage:
    """A reply to ``original``: to its Reply-To (or From), ``Re:`` subject, threading headers, the original quoted."""
    to = str(original.get("Reply-To") or original.get("From") or "")
    if not to:
        raise InvalidArgument("the message has no From or Reply-To header, so there is nobody to reply to")
    subject = str(original.get("Subject", ""))
    if not subject.lower().startswith("re:"):
        subject = f"Re: {subject}".strip()
    msg = _base(sender, [to], subject, (), tz)
    parent = str(original.get("Message-ID", "")).strip()
    if parent:
        msg["In-Reply-To"] = parent
        refs = str(original.get("References", "")).split()
        msg["References"] = " ".join([*refs, parent])
    quoted = "\n".join(f"> {line}" for line in message_text(original).splitlines())
    who = str(original.get("From", "")) or "you"
    when = str(original.get("Date", ""))
    msg.set_content(f"{body}\n\nOn {when}, {who} wrote:\n{quoted}\n")
    _attach(msg, attachments)
    return msg


def build_forward(
    original: EmailMessage,
    sender: str,
    to: Sequence[str],
    body: str = "",
    attachments: Sequence[Attachment] = (),
    tz: dt.tzinfo = dt.UTC,
) -> EmailMessage:
    """``original`` forwarded to ``to``: ``Fwd:`` subject, a note, and the original attached whole (message/rfc822)."""
    subject = str(original.get("Subject", ""))
    if not subject.lower().startswith(("fwd:", "fw:")):
        subject = f"Fwd: {subject}".strip()
    msg = _base(sender, to, subject, (), tz)
    msg.set_content(body or "Forwarded message attached.")
    msg.add_attachment(original)
    _attach(msg, attachments)
    return msg


def message_text(msg: EmailMessage) -> str:
    """The plain-text body of ``msg`` (the HTML part, tags stripped, when there is no plain one)."""
    part = msg.get_body(preferencelist=("plain", "html"))
    if part is None:
        return ""
    text = part.get_content() if isinstance(part, EmailMessage) else str(part.get_payload())
    if part.get_content_type() == "text/html":
        text = re.sub(r"<[^>]+>", " ", text)
    return str(text).strip()


def read_message(path: Path, fs: ConfinedFS) -> EmailMessage:
    """Parse an ``.eml`` file inside ``fs``'s roots.

    Raises:
        PathEscapeError: the file is a link that points outside the mail folder.
        StoreError: the file cannot be read.
    """
    try:
        parsed = BytesParser(policy=email.policy.default).parsebytes(fs.read_bytes(path))
    except (OSError, ItemNotFound) as exc:
        raise StoreError(f"cannot read {path}: {exc}") from exc
    if not isinstance(parsed, EmailMessage):  # pragma: no cover - the default policy always builds EmailMessage
        raise StoreError(f"{path} is not an email message")
    return parsed


def write_eml(folder: Path, msg: EmailMessage, fs: ConfinedFS) -> Path:
    """Write ``msg`` atomically as ``folder/<timestamp>-<subject>.eml`` (CRLF line endings) and return the path."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S")
    try:
        stem = safe_filename(str(msg.get("Subject", "")), "subject")[:60]
    except InvalidArgument:
        stem = "message"
    path = folder / f"{stamp}-{uuid.uuid4().hex[:6]}-{stem}.eml"
    return fs.write(path, msg.as_bytes(policy=email.policy.SMTP))


def find_message(folders: Sequence[Path], query: str, fs: ConfinedFS) -> tuple[Path, EmailMessage]:
    """The newest ``.eml`` in ``folders`` whose subject, sender or body best matches ``query``.

    Links that point outside ``fs``'s roots are skipped, never read.

    Raises:
        ItemNotFound: nothing matches (the newest subjects are listed).
    """
    try:
        from rapidfuzz import fuzz
    except ImportError as exc:
        raise MissingDependencyError("rapidfuzz", "functions") from exc
    q = query.strip().casefold()
    candidates: list[tuple[float, float, Path, EmailMessage]] = []
    subjects: list[str] = []
    for folder in folders:
        for path in fs.files(folder, ".eml"):
            try:
                msg = read_message(path, fs)
            except PathEscapeError:  # swapped for a link since the listing
                continue
            subject = str(msg.get("Subject", ""))
            sender = str(msg.get("From", ""))
            subjects.append(subject)
            score = max(
                float(fuzz.token_set_ratio(q, subject.casefold())),
                float(fuzz.token_set_ratio(q, f"{sender} {subject}".casefold())),
                float(fuzz.partial_ratio(q, subject.casefold())) - 5.0,
            )
            if q and q in message_text(msg).casefold():
                score = max(score, 75.0)
            try:
                when = email.utils.parsedate_to_datetime(str(msg.get("Date"))).timestamp()
            except (TypeError, ValueError):
                when = fs.mtime(path)
            candidates.append((score, when, path, msg))
    good = [c for c in candidates if c[0] >= 70.0]
    if not good:
        listed = "; ".join(s for s in subjects[:8] if s) or "no messages"
        raise ItemNotFound(f"no email matches {query!r}; the mailbox has: {listed}")
    good.sort(key=lambda c: (-round(c[0] / 10), -c[1]))
    return good[0][2], good[0][3]


def send_smtp(
    msg: EmailMessage,
    host: str,
    port: int,
    *,
    user: str | None,
    password_env: str,
    starttls: bool,
    timeout_s: float,
    outbox_path: Path,
) -> None:
    """Deliver ``msg`` by SMTP (blocking).

    Raises:
        DeliveryError: connection refused or timed out, TLS or login failed, or recipients refused;
            the message stays at ``outbox_path``.
    """
    password = None
    if user:
        password = os.environ.get(password_env)
        if password is None:
            raise DeliveryError(
                f"SMTP user {user!r} is set but the environment variable {password_env} holding the password is not; "
                f"set it and retry (the message stays in the outbox at {outbox_path})",
                outbox_path=outbox_path,
            )
    try:
        with smtplib.SMTP(host, port, timeout=timeout_s) as smtp:
            if starttls:
                smtp.starttls(context=ssl.create_default_context())
            if user and password is not None:
                smtp.login(user, password)
            refused = smtp.send_message(msg)
    except (smtplib.SMTPException, OSError) as exc:
        raise DeliveryError(
            f"could not send by SMTP via {host}:{port}: {type(exc).__name__}: {exc}; the message stays in the outbox "
            f"at {outbox_path}; check the server settings and retry",
            outbox_path=outbox_path,
        ) from exc
    if refused:
        raise DeliveryError(
            f"the SMTP server refused some recipients: {sorted(refused)}; the message was delivered to the others "
            f"and stays in the outbox at {outbox_path}",
            outbox_path=outbox_path,
        )
