"""A place the request points back to ("... and get me directions there") passed as the one the plan found.

"Is there a pharmacy near Elm Street? Get me transit directions to it from home" was planned as a search near Elm
Street and a route to "Elm Street": the search's area copied where its result goes. Where the request points back
("there", "to it") and a later call passes, as a place, the very words a search for places near one was given,
while nothing takes that search's result, the call takes the result. Which tools find places near one comes from
their names and descriptions (:func:`~._clauses.near_search_tools`); nothing is keyed to a tool's name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .._plan import Call, Ref, find_refs
from .._text import folded
from .._tools import Tool
from ._clauses import near_search_tools

__all__ = ["to_the_found_place"]

_BACK = re.compile(r"\b(?:there|to\s+(?:it|them|that\s+(?:one|place))|from\s+(?:it|there))\b", re.IGNORECASE)


def to_the_found_place(calls: list[Call], args: dict[int, dict[str, Any]], tools: Mapping[str, Tool],
                       request: str) -> list[str]:
    """Pass an unused near-place search's result where a later call passes the search's area as a place, when the
    request points back to what was found (``args`` changed in place); the notes."""
    if not _BACK.search(request):
        return []
    searches = near_search_tools(tools)
    used = {r.step for a in args.values() for r in find_refs(a)}
    notes = []
    for step in calls:
        if step.name not in searches or step.id in used:
            continue
        areas = {folded(v): name for name, v in args[step.id].items() if isinstance(v, str) and v.strip()}
        for call in calls:
            if call.id <= step.id or call.name in searches:
                continue
            hit = next((name for name, v in args[call.id].items()
                        if isinstance(v, str) and folded(v) in areas), None)
            if hit is not None:
                args[call.id][hit] = Ref(step.id)
                used.add(step.id)
                notes.append(f"plan: step {call.id} goes to the place step {step.id} finds, not to the area it "
                             f"searched ({hit})")
                break
    return notes
