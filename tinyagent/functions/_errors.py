"""Errors raised by the built-in tools (defined in :mod:`tinyagent.errors`, re-exported here).

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

from ..errors import (
    AmbiguousContact,
    ContactFieldMissing,
    ContactNotFound,
    DeliveryError,
    InvalidArgument,
    InvalidDate,
    ItemNotFound,
    StoreError,
)

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
