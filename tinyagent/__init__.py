"""tinyagent: an edge-deployable small-agent SDK.

Retrieve the few relevant tools, plan with a small local GGUF model under a grammar generated from the registry,
execute the plan as a streaming parallel DAG, route hard requests to a cloud model under a budget, and fine-tune
the small model on the user's own tools.

Heavy stacks (llama.cpp, onnxruntime, torch) are imported lazily, so ``import tinyagent`` stays light.
"""

from __future__ import annotations

from ._events import (
    AnswerDelta,
    AnswerEvent,
    PlanResult,
    ReplanEvent,
    RunEvent,
    RunResult,
    StepPlanned,
    StepRecord,
    ToolFinished,
    ToolStarted,
)
from ._grammar import GrammarOptions
from ._plan import Call, Example, Plan, Ref
from ._tools import ConfirmationRequest, ConfirmHook, Effects, Tool, ToolContext, ToolRegistry, tool
from .errors import TinyAgentError, UserError
from .run import Agent, AgentSettings

__version__ = "0.1.0"

__all__ = [
    "Agent",
    "AgentSettings",
    "AnswerDelta",
    "AnswerEvent",
    "Call",
    "ConfirmHook",
    "ConfirmationRequest",
    "Effects",
    "Example",
    "GrammarOptions",
    "Plan",
    "PlanResult",
    "Ref",
    "ReplanEvent",
    "RunEvent",
    "RunResult",
    "StepPlanned",
    "StepRecord",
    "TinyAgentError",
    "Tool",
    "ToolContext",
    "ToolFinished",
    "ToolRegistry",
    "ToolStarted",
    "UserError",
    "__version__",
    "tool",
]
