"""Errors raised by the built-in tools.

They all derive from :class:`tinyagent.errors.ToolError`, so the executor passes them through unchanged and the
joiner (or the app) sees a message that says what was wrong and what to do::

    ToolError
    ├── ContactNotFound       no contact matches the name (the closest names are listed)
    ├── AmbiguousContact      several contacts match equally well (all candidates are listed)
    ├── ContactFieldMissing   the contact exists but has no email address / phone number
    ├── InvalidArgument       also a ValueError: a bad date, address, duration, mode, title …
    │   └── InvalidDate       a date or time expression that cannot be resolved
    ├── ItemNotFound          no file, note or email message matches
    ├── StoreError            a data file (ICS, vCard, .eml, PDF) cannot be read; nothing was changed
    └── DeliveryError         the SMTP server or the message transport failed; the message stays in the outbox
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..errors import ToolError

__all__ = [
    "AmbiguousContact",
    "ContactFieldMissing",
    "ContactNotFound",
    "DeliveryError",
    "InvalidArgument",
    "InvalidDate",
    "ItemNotFound",
    "StoreError",
]


class ContactNotFound(ToolError):
    """No contact matches the name.

    Attributes:
        query: the name that was looked up.
        suggestions: the closest contact names, best first (may be empty).
    """

    def __init__(self, query: str, suggestions: Sequence[str] = (), tool: str = "") -> None:
        self.query = query
        self.suggestions = list(suggestions)
        hint = (
            f"; the closest contacts are: {', '.join(self.suggestions)}"
            if self.suggestions
            else "; add the contact to the address book or give the address or number directly"
        )
        super().__init__(f"no contact matches {query!r}{hint}", tool=tool)


class AmbiguousContact(ToolError):
    """Several contacts match the name equally well.

    Attributes:
        query: the name that was looked up.
        candidates: the full names of every matching contact.
    """

    def __init__(self, query: str, candidates: Sequence[str], tool: str = "") -> None:
        self.query = query
        self.candidates = list(candidates)
        super().__init__(
            f"{query!r} matches {len(self.candidates)} contacts: {', '.join(self.candidates)}; "
            "say which one with the full name",
            tool=tool,
        )


class ContactFieldMissing(ToolError):
    """The contact exists but has no value for the requested field (email address or phone number)."""

    def __init__(self, name: str, field: str, tool: str = "") -> None:
        self.name = name
        self.field = field
        super().__init__(f"{name} has no {field} in the address book; add one or give it directly", tool=tool)


class InvalidArgument(ToolError, ValueError):
    """An argument has a bad value (date, address, duration, mode, title …)."""


class InvalidDate(InvalidArgument):
    """A date or time expression could not be resolved."""


class ItemNotFound(ToolError):
    """No file, note or email message matches the request."""


class StoreError(ToolError):
    """A data file cannot be read or parsed; nothing was changed."""


class DeliveryError(ToolError):
    """Sending failed (SMTP server down, refused, bad credentials, or a transport error).

    Attributes:
        outbox_path: where the unsent message was kept, so nothing is lost; None when nothing was written.
    """

    def __init__(self, message: str, outbox_path: Path | None = None, tool: str = "") -> None:
        self.outbox_path = outbox_path
        super().__init__(message, tool=tool)
