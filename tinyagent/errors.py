"""Every exception tinyagent raises, in one tree.

Exceptions from dependencies (llama.cpp, openai, pydantic, onnxruntime, torch …) are wrapped in one of these,
so callers only ever need to catch ``TinyAgentError``::

    TinyAgentError
    ├── UserError                     misuse of the API: fix the calling code
    │   ├── ToolDefinitionError       a function or schema cannot become a tool
    │   ├── MissingDependencyError    an optional extra is not installed (the message names the pip install)
    │   ├── ConfigurationError        an invalid setting, unknown catalog name, bad path
    │   │   └── BfclDataError         the BFCL data could not be found, downloaded or read
    │   ├── RetrieverNotFittedError   a tool retriever was asked before ``fit``
    │   └── ReservationError          a budget reservation was committed or released twice, or is foreign
    ├── SchemaValidationError         also a ValueError: a value does not match its JSON schema (``path`` says where)
    ├── PlanError                     the plan itself is wrong
    │   ├── PlanParseError            the planner's text is not a plan
    │   └── PlanValidationError       unknown tool, bad argument, forward reference, cycle
    ├── ToolError
    │   ├── ToolExecutionError        a tool raised; ``__cause__`` holds the original exception
    │   ├── ToolTimeout               a tool ran past its timeout
    │   ├── ToolNotExecutable         the tool was given only as a schema
    │   ├── ConfirmationDenied        the app's confirmation hook refused a side effect
    │   ├── PathEscapeError           a path left the configured data roots
    │   ├── MCPError                  an MCP server could not be started, listed or called
    │   ├── ContactNotFound           built-in tools: no contact matches the name (the closest are listed)
    │   ├── AmbiguousContact          built-in tools: several contacts match equally well
    │   ├── ContactFieldMissing       built-in tools: the contact has no email address / phone number
    │   ├── InvalidArgument           built-in tools, also a ValueError: a bad date, address, duration …
    │   │   └── InvalidDate           a date or time expression that cannot be resolved
    │   ├── ItemNotFound              built-in tools: no file, note or email message matches
    │   ├── StoreError                built-in tools: a data file cannot be read; nothing was changed
    │   └── DeliveryError             built-in tools: sending failed; the message stays in the outbox
    ├── ModelError                    a model failed to load or to answer
    │   ├── ModelIntegrityError       a model file is missing, corrupt or tampered with (sha256 mismatch)
    │   ├── EndpointError             an OpenAI-compatible endpoint failed (down, 429, 5xx, bad body)
    │   │   ├── EndpointUnreachable   it could not be reached at all: treat the cloud as offline
    │   │   ├── MalformedReply        it answered, but not with a chat completion
    │   │   └── EndpointStatusError   it answered with an HTTP error status (``retry_after``)
    │   └── ModelRequestsBlocked      a real model was called while ``tinyagent.models.ALLOW_MODEL_REQUESTS`` is False
    ├── BudgetExceeded                a call would overshoot the task or session budget
    ├── TrainingError                 synthesis, fine-tuning or export failed
    └── VoiceError                    audio capture, speech to text or text to speech failed

Internal control-flow exceptions (a corrupt prefix-cache file in the llama.cpp KV store, the server's HTTP error
answer) are private to their modules and never escape; they too must subclass :class:`TinyAgentError`.

Every message says what was wrong and what to do about it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "AmbiguousContact",
    "BfclDataError",
    "BudgetExceeded",
    "ConfigurationError",
    "ConfirmationDenied",
    "ContactFieldMissing",
    "ContactNotFound",
    "DeliveryError",
    "EndpointError",
    "EndpointStatusError",
    "EndpointUnreachable",
    "InvalidArgument",
    "InvalidDate",
    "ItemNotFound",
    "MCPError",
    "MalformedReply",
    "MissingDependencyError",
    "ModelError",
    "ModelIntegrityError",
    "ModelRequestsBlocked",
    "PathEscapeError",
    "PlanError",
    "PlanParseError",
    "PlanValidationError",
    "ReservationError",
    "RetrieverNotFittedError",
    "SchemaValidationError",
    "StoreError",
    "TinyAgentError",
    "ToolDefinitionError",
    "ToolError",
    "ToolExecutionError",
    "ToolNotExecutable",
    "ToolTimeout",
    "TrainingError",
    "UserError",
    "VoiceError",
]


class TinyAgentError(Exception):
    """Base class of every error tinyagent raises."""


class UserError(TinyAgentError):
    """The API was misused; the calling code must change."""


class ToolDefinitionError(UserError):
    """A function or a schema cannot be turned into a tool."""


class MissingDependencyError(UserError):
    """An optional extra is not installed."""

    def __init__(self, package: str, extra: str) -> None:
        self.package = package
        self.extra = extra
        super().__init__(f"{package} is not installed; run: pip install 'tinyagent[{extra}]'")


class ConfigurationError(UserError):
    """A setting, a catalog name or a path is invalid."""


class BfclDataError(ConfigurationError):
    """The BFCL data could not be found, downloaded or read."""


class RetrieverNotFittedError(UserError):
    """``retrieve`` or ``widen`` was called before ``fit``."""


class ReservationError(UserError):
    """A reservation was committed or released twice, or does not belong to this ledger."""


class SchemaValidationError(TinyAgentError, ValueError):
    """A value does not match its schema; ``path`` says where.

    Also a :class:`ValueError`, so validators built on it compose with pydantic's and the standard library's.
    """

    def __init__(self, message: str, path: str) -> None:
        self.path = path
        super().__init__(f"{path or 'value'}: {message}")


class PlanError(TinyAgentError):
    """The plan is wrong."""


class PlanParseError(PlanError):
    """The planner produced text that is not a plan.

    Attributes:
        text: the offending text.
        line: the 1-based line number of the offending line, when known.
    """

    def __init__(self, message: str, text: str = "", line: int | None = None) -> None:
        self.text = text
        self.line = line
        where = f" (line {line})" if line is not None else ""
        super().__init__(f"{message}{where}")


class PlanValidationError(PlanError):
    """A plan names an unknown tool, passes a bad argument, or references a step it may not."""

    def __init__(self, message: str, step: int | None = None) -> None:
        self.step = step
        where = f"step {step}: " if step is not None else ""
        super().__init__(f"{where}{message}")


class ToolError(TinyAgentError):
    """A tool call failed."""

    def __init__(self, message: str, tool: str = "") -> None:
        self.tool = tool
        super().__init__(message)


class ToolExecutionError(ToolError):
    """A tool raised an exception; ``__cause__`` holds it."""


class ToolTimeout(ToolError):
    """A tool ran past its timeout and was cancelled."""


class ToolNotExecutable(ToolError):
    """The tool was defined only by its schema, so it can be planned but not executed."""


class ConfirmationDenied(ToolError):
    """The app's confirmation hook refused an outgoing or destructive action."""


class PathEscapeError(ToolError):
    """A path resolved outside the configured data roots (traversal or symlink)."""


class MCPError(ToolError):
    """An MCP server could not be started, listed or called (the message says which and why)."""


# -- the built-in tools' errors (tinyagent.functions) --------------------------------------------------------------
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


class ModelError(TinyAgentError):
    """A model failed to load or to answer."""


class ModelIntegrityError(ModelError):
    """A model file is missing, corrupt or does not match its pinned sha256."""


class EndpointError(ModelError):
    """An OpenAI-compatible endpoint failed.

    Attributes:
        status: the HTTP status, or None when the endpoint could not be reached or the body was malformed.
        retryable: whether a retry may succeed (429, 5xx, connection errors).
    """

    def __init__(self, message: str, status: int | None = None, retryable: bool = False) -> None:
        self.status = status
        self.retryable = retryable
        super().__init__(message)


class EndpointUnreachable(EndpointError):
    """The endpoint could not be reached at all (connection refused, DNS, network down): treat it as offline."""


class MalformedReply(EndpointError):
    """The endpoint answered, but not with a chat completion (bad JSON, wrong shape, an empty stream)."""


class EndpointStatusError(EndpointError):
    """The endpoint answered with an HTTP error status.

    Attributes:
        retry_after: seconds the server asked to wait (``Retry-After``), or None.
    """

    def __init__(self, message: str, status: int, retryable: bool, retry_after: float | None = None) -> None:
        super().__init__(message, status=status, retryable=retryable)
        self.retry_after = retry_after


class ModelRequestsBlocked(ModelError):
    """A real model was asked for a completion while real model requests are disabled (unit tests)."""


class BudgetExceeded(TinyAgentError):
    """A call would overshoot the task or session budget, so it was not made."""

    def __init__(self, message: str, needed: float = 0.0, remaining: float = 0.0) -> None:
        self.needed = needed
        self.remaining = remaining
        super().__init__(message)


class TrainingError(TinyAgentError):
    """Synthesis, fine-tuning or export failed."""


class VoiceError(TinyAgentError):
    """Audio could not be read, recognised, synthesised or played (the message says which and why)."""
