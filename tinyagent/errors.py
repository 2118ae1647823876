"""Every exception tinyagent raises, in one tree.

Exceptions from dependencies (llama.cpp, openai, pydantic, onnxruntime, torch …) are wrapped in one of these,
so callers only ever need to catch ``TinyAgentError``::

    TinyAgentError
    ├── UserError                     misuse of the API: fix the calling code
    │   ├── ToolDefinitionError       a function or schema cannot become a tool
    │   ├── MissingDependencyError    an optional extra is not installed (the message names the pip install)
    │   └── ConfigurationError        an invalid setting, unknown catalog name, bad path
    ├── PlanError                     the plan itself is wrong
    │   ├── PlanParseError            the planner's text is not a plan
    │   └── PlanValidationError       unknown tool, bad argument, forward reference, cycle
    ├── ToolError
    │   ├── ToolExecutionError        a tool raised; ``__cause__`` holds the original exception
    │   ├── ToolTimeout               a tool ran past its timeout
    │   ├── ToolNotExecutable         the tool was given only as a schema
    │   ├── ConfirmationDenied        the app's confirmation hook refused a side effect
    │   └── PathEscapeError           a path left the configured data roots
    ├── ModelError                    a model failed to load or to answer
    │   ├── ModelIntegrityError       a model file is missing, corrupt or tampered with (sha256 mismatch)
    │   ├── EndpointError             an OpenAI-compatible endpoint failed (down, 429, 5xx, bad body)
    │   └── ModelRequestsBlocked      a real model was called while ``tinyagent.models.ALLOW_MODEL_REQUESTS`` is False
    ├── BudgetExceeded                a call would overshoot the task or session budget
    └── TrainingError                 synthesis, fine-tuning or export failed

Every message says what was wrong and what to do about it.
"""

from __future__ import annotations

__all__ = [
    "BudgetExceeded",
    "ConfigurationError",
    "ConfirmationDenied",
    "EndpointError",
    "MissingDependencyError",
    "ModelError",
    "ModelIntegrityError",
    "ModelRequestsBlocked",
    "PathEscapeError",
    "PlanError",
    "PlanParseError",
    "PlanValidationError",
    "TinyAgentError",
    "ToolDefinitionError",
    "ToolError",
    "ToolExecutionError",
    "ToolNotExecutable",
    "ToolTimeout",
    "TrainingError",
    "UserError",
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
