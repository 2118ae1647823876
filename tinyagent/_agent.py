"""Old home of the agent; it lives in :mod:`tinyagent.run` now. Kept so existing imports keep working."""

from __future__ import annotations

from .models import Usage
from .run import Agent, AgentSettings, ToolRetriever

__all__ = ["Agent", "AgentSettings", "ToolRetriever", "Usage"]
