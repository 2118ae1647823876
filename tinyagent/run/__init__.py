"""The run loop: retrieve → plan → execute → join, with replans, as explicit stages over one :class:`RunState`.

* :mod:`._retrieve`: which tools and examples the planner sees (the :class:`ToolRetriever` and
  :class:`ExampleSelector` protocols; :mod:`tinyagent.retrieval` implements them);
* :mod:`._plan`: the planner request (prompt, grammar cache, join floors), budgeted model calls, stream parsing;
* :mod:`._execute`: runs the calls as they stream in (or verifies a buffered plan with the router first);
* :mod:`._join`: the answer, or a request to replan;
* :mod:`._loop`: the transitions between them, with one :func:`replan`;
* :mod:`._agent`: :class:`Agent`, which holds configuration only.
"""

from __future__ import annotations

from ._agent import Agent
from ._retrieve import ExampleSelector, Offer, RetrievalResult, ToolRetriever
from ._settings import AgentSettings
from ._state import RunSetup, RunState

__all__ = [
    "Agent",
    "AgentSettings",
    "ExampleSelector",
    "Offer",
    "RetrievalResult",
    "RunSetup",
    "RunState",
    "ToolRetriever",
]
