"""tinyagent: an edge-deployable small-agent SDK.

Retrieve the few relevant tools, plan with a small local GGUF model under a grammar generated from the registry,
execute the plan as a streaming parallel DAG, route hard requests to a cloud model under a budget, and fine-tune
the small model on the user's own tools.

Heavy stacks (llama.cpp, onnxruntime, torch) are imported lazily, so ``import tinyagent`` stays light.
"""

from __future__ import annotations

from ._tools import ConfirmationRequest, ConfirmHook, Tool, ToolContext, ToolRegistry, tool
from .errors import TinyAgentError, UserError

__version__ = "0.1.0"

__all__ = [
    "ConfirmHook",
    "ConfirmationRequest",
    "TinyAgentError",
    "Tool",
    "ToolContext",
    "ToolRegistry",
    "UserError",
    "__version__",
    "tool",
]
