"""A meeting's link comes from the tool that makes one.

"Schedule an online customer demo with Priya next Tuesday at 4pm" was planned as a calendar entry with
``venue="Online"``, where the parameter takes "Physical location or video-conference URL" and an offered tool
"Creates a video-conference room and returns its join URL". A value that names a kind of virtual place ("Online",
"Zoom", "video call") passed to a parameter described as taking a URL or link is no link: the offered tool that
returns a URL or link, takes one text argument and whose description shares the most words with the parameter's
("video-conference") is called first, with the call's title, and its result is passed instead. The words for a
virtual place are English words for meeting online, not any tool's name. A call that leaves such a parameter
out, for a request that asks to meet online ("Schedule an online onboarding session with Kim on Friday"), gets the
same, when the plan calls no link maker.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .._plan import Call, Plan, Ref, map_refs
from .._tools import Tool
from ._lookups import one_text_param

__all__ = ["link_producers"]

_LINK_PARAM = re.compile(r"\b(?:url|urls|link|links|uri)\b", re.IGNORECASE)
_WORD = re.compile(r"[a-z]{4,}")
# A request to meet online: "an online demo", "a video call", "on Zoom", "a virtual standup".
_ASKS_VIRTUAL = re.compile(r"\b(?:online|virtual|remote|zoom|webex|skype|google\s+meet|teams\s+(?:call|meeting)"
                           r"|video[- ]?(?:call|chat|conference|meeting))\b", re.IGNORECASE)
_LINK_WORDS = frozenset(["returns", "return", "link", "links", "with", "from", "that", "this", "each", "which"])
_RETURNS_LINK = re.compile(r"\b(?:returns?|hands?\s+back|gives?\s+back|responds?\s+with)\b[^.]*\b(?:url|link|uri)\b",
                           re.IGNORECASE)
_VIRTUAL = re.compile(
    r"^\s*(?:an?\s+|the\s+)?(?:online|virtual|remote|video|zoom|teams|google\s+meet|meet|webex|skype|web|webinar"
    r"|conference\s+call|video[- ]?(?:call|conference|chat|meeting|room|link))"
    r"(?:\s+(?:call|meeting|room|link|session))?\s*$", re.IGNORECASE)


def _title(call: Call, tool: Tool, skip: str) -> str | None:
    """The call's own name for what it makes: its first required text argument other than ``skip``."""
    for name in tool.required:
        value = call.args.get(name)
        if name != skip and isinstance(value, str) and value.strip() and not _VIRTUAL.match(value):
            return value.strip()
    return None


def _maker(makers: list[Tool], wanted: str) -> Tool | None:
    """The one link maker whose description shares the most words with what the parameter wants (its
    description and the value: "video-conference URL", "Online"); None on a tie or none shared."""
    words = set(_WORD.findall(wanted.lower())) - _LINK_WORDS
    scores = sorted(((len(words & set(_WORD.findall((m.description or "").lower()))), m.name) for m in makers),
                    reverse=True)
    if not scores or scores[0][0] == 0 or (len(scores) > 1 and scores[1][0] == scores[0][0]):
        return None
    return next(m for m in makers if m.name == scores[0][1])


def link_producers(plan: Plan, tools: Mapping[str, Tool], request: str) -> tuple[Plan, list[str]]:
    """``plan`` with a virtual place passed for a link replaced by the result of the one offered tool that makes
    links, called just before (module docstring); with notes."""
    makers = [t for t in tools.values() if one_text_param(t) and _RETURNS_LINK.search(t.description or "")]
    if not makers:
        return plan, []
    # a link parameter left out counts as passed "online" for a request to meet online, when no call makes a link
    fill_missing = bool(_ASKS_VIRTUAL.search(request)) and not {c.name for c in plan.calls} & {m.name for m in makers}
    out: list[Call] = []
    numbers: dict[int, int] = {}
    notes: list[str] = []
    for call in plan.calls:
        args: dict[str, Any] = dict(map_refs(call.args, lambda r: Ref(numbers.get(r.step, r.step))))
        tool = tools.get(call.name)
        props: Mapping[str, Any] = (tool.parameters.get("properties") or {}) if tool is not None else {}
        missing = {name: "online" for name, schema in props.items() if fill_missing and name not in call.args
                   and _LINK_PARAM.search(str((schema or {}).get("description", "")))}
        for name, value in {**call.args, **missing}.items():
            schema = props.get(name) or {}
            described = str(schema.get("description", ""))
            if (tool is None or not isinstance(value, str) or not _VIRTUAL.match(value)
                    or not _LINK_PARAM.search(described)):
                continue
            maker = _maker(makers, f"{described} {value}")
            if maker is None or maker.name == call.name:
                continue
            param = str(one_text_param(maker))
            topic = _title(call, tool, name) or value.strip()
            out.append(Call(len(out) + 1, maker.name, {param: topic}))
            args[name] = Ref(len(out))
            said = f"left {name} out for a request to meet online" if name in missing else \
                f"passed {name}={value!r}, a kind of place, not a link"
            notes.append(f"plan: step {call.id} {said}; added {maker.name}({param}={topic!r}) for it")
            break
        numbers[call.id] = len(out) + 1
        out.append(Call(len(out) + 1, call.name, args))
    out, made_up = _made_up_links(out, {m.name for m in makers}, request)
    notes += made_up
    if not notes:
        return plan, []
    return Plan(calls=tuple(out), answer=plan.answer), notes


_URL = re.compile(r"\s*(?:https?://|www\.)\S+\s*")


def _made_up_links(calls: list[Call], makers: set[str], request: str) -> tuple[list[Call], list[str]]:
    """A whole value that is a link the request does not write ("text Raj the link" planned with
    ``txt="https://example.com/video"``), passed after the plan's one call of a link maker: that call's result (its
    first, where the same call is written twice)."""
    made = [c.id for c in calls if c.name in makers]
    if len({(c.name, repr(sorted(c.args.items()))) for c in calls if c.name in makers}) != 1:
        return calls, []  # (none, or two different links; one call written twice is one link)
    out, notes = [], []
    for call in calls:
        args = dict(call.args)
        for name, value in call.args.items():
            if call.id > made[0] and isinstance(value, str) and _URL.fullmatch(value) and value.strip() not in request:
                args[name] = Ref(made[0])
                notes.append(f"plan: step {call.id} passed {name}={value!r}, a link the request does not give; "
                             f"passed step {made[0]}'s result instead")
        out.append(Call(call.id, call.name, args) if args != call.args else call)
    return out, notes
