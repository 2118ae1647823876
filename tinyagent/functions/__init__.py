"""The built-in tool library: contacts, calendar, email, notes, reminders, files, messages, maps, meetings, time.

Every tool works on real files that other programs read (vCard, iCalendar, ``.eml``, markdown, PDF) inside one
user data folder, on Linux, macOS and Windows::

    from tinyagent.functions import FunctionsSettings, builtin_tools, init_demo

    init_demo("/tmp/demo")
    tools = builtin_tools(FunctionsSettings(data_dir="/tmp/demo"))

Safety: every file access goes through one confined path (:func:`confine`, then symlink-refusing opens from the
root's descriptor): ``..``, absolute paths outside the roots and symlinks that lead out raise
:class:`~tinyagent.errors.PathEscapeError`, and listings skip such links. Every tool declares its ``effects``
(read, write, destructive, outgoing); outgoing and destructive actions ask the app's confirmation hook where the
tool itself acts (:func:`terminal_confirm` for command-line apps). Files are written atomically after all input is
validated, under per-store locks that hold across threads and processes.
The extra ``tinyagent[functions]`` installs the dependencies (icalendar, pypdf, rapidfuzz, fpdf2, dateutil, tzlocal).
"""

from __future__ import annotations

from ._builtin import TOOL_NAMES, builtin_tools
from ._confirm import terminal_confirm
from ._demo import DemoInfo, init_demo
from ._errors import (
    AmbiguousContact,
    ContactFieldMissing,
    ContactNotFound,
    DeliveryError,
    InvalidArgument,
    InvalidDate,
    ItemNotFound,
    StoreError,
)
from ._examples import builtin_examples
from ._paths import atomic_write, confine
from ._retrieval import BUILTIN_CLASSIFIER, builtin_retriever
from ._settings import FunctionsSettings, MessageTransport, OutboxTransport, UrlOpener
from ._time import resolve_expression

__all__ = [
    "BUILTIN_CLASSIFIER",
    "TOOL_NAMES",
    "AmbiguousContact",
    "ContactFieldMissing",
    "ContactNotFound",
    "DeliveryError",
    "DemoInfo",
    "FunctionsSettings",
    "InvalidArgument",
    "InvalidDate",
    "ItemNotFound",
    "MessageTransport",
    "OutboxTransport",
    "StoreError",
    "UrlOpener",
    "atomic_write",
    "builtin_examples",
    "builtin_retriever",
    "builtin_tools",
    "confine",
    "init_demo",
    "resolve_expression",
    "terminal_confirm",
]
