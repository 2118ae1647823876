"""One message per person, where the sender takes one recipient.

"Text Jun and Marisol that standup moves to 9:30" with a sender whose number parameter holds one number ("To text
several people, send one message per person") was planned as two lookups and one text, to the first: the second
lookup's result went nowhere. :func:`send_to_each` gives each such lookup its own copy of the message. What a
parameter holds (one identifier of a kind, not a list) comes from its schema and description, what a lookup finds
from its tool's description (:mod:`~._lookups`); nothing is keyed to a tool's name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._formats import identifier_kind
from .._plan import Call, Plan, Ref, find_refs
from .._tools import Tool
from ._channels import senders
from ._lookups import lookup_kinds

__all__ = ["send_to_each"]


def send_to_each(plan: Plan, tools: Mapping[str, Tool], request: str) -> tuple[Plan, list[str]]:
    """``plan`` with a copy of a message for each lookup whose result no step uses, where the message passes
    another lookup of the same kind in a parameter that holds one identifier (a string, not a list), and the
    unused lookup is of something the request names; with notes."""
    sending = senders(tools.values())
    by_id = {c.id: c for c in plan.calls}
    used = {r.step for c in plan.calls for r in find_refs(c.args)}
    unused = [c for c in plan.calls if c.id not in used and lookup_kinds(tools.get(c.name))
              and all(isinstance(v, str) and v.strip() and v.lower() in request.lower() for v in c.args.values())]
    added: list[Call] = []
    notes: list[str] = []
    for call in plan.calls:
        tool = tools.get(call.name)
        if tool is None or call.name not in sending or not unused:
            continue
        slot = _single_slot(call, tool, by_id, tools)
        if slot is None:
            continue
        name, kind = slot
        for lookup in [u for u in unused if kind in lookup_kinds(tools.get(u.name))]:
            unused.remove(lookup)
            copy = Call(len(plan.calls) + len(added) + 1, call.name, {**call.args, name: Ref(lookup.id)})
            added.append(copy)
            notes.append(f"plan: step {copy.id} sends step {call.id}'s message to step {lookup.id}'s result too "
                         f"({name} takes one)")
    if not added:
        return plan, []
    return Plan(calls=(*plan.calls, *added), answer=plan.answer), notes


def _single_slot(call: Call, tool: Tool, by_id: Mapping[int, Call],
                 tools: Mapping[str, Tool]) -> tuple[str, str] | None:
    """The message's parameter that holds one identifier and passes a lookup of that kind, with the kind."""
    props: Mapping[str, Any] = tool.parameters.get("properties") or {}
    for name, value in call.args.items():
        schema = props.get(name) or {}
        kind = identifier_kind(schema) if schema.get("type", "string") == "string" else None
        if kind and isinstance(value, Ref) and value.step in by_id \
                and kind in lookup_kinds(tools.get(by_id[value.step].name)):
            return name, kind
    return None
