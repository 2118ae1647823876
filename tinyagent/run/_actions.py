"""An action the request names that the plan leaves out.

"Text Robert Miller that don't forget the keys and remind me to submit the expense report in 3 days" planned as a
lookup and a text, with the reminder folded into the text; "Reply to Alex Chen's offsite agenda email saying ..."
planned as a forward. Each clause of a request opens with its action ("Text ...", "... and remind me ...",
"Reply ..."), and a registry's tool names often hold that verb (``reminders_add_task``, ``mail_reply``). Where a
clause's opening verb matches a word of some offered tools' names (and of not too many), and the plan calls none of
them, the plan is planned again once, told which tools the request names, with a grammar that calls one of them.
Verbs too general to name anything ("check", "make", "find", ...) and the channel verbs ("text", "email": see
:mod:`tinyagent.run._channels`) are left out. Nothing here knows any tool: the words
are the request's and the names the registry's.

Only plans with calls are checked: an empty plan is the no-tool decision's to make ("Calculate the compound
interest" offered only ``calculate_triangle_area``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from .._plan import Call
from .._tools import Tool

__all__ = ["unnamed_action"]

# The verb that opens a clause: the request's start, after a clause break, or after "and"/"then"/"also"/"please".
_CLAUSE_VERB = re.compile(r"(?:^|[,;:.!?]\s*|\b(?:and|then|also|please)\s+)([A-Za-z]{4,})\b")
_NAME_WORD = re.compile(r"[a-z]{4,}")
_GENERIC = frozenset({"check", "make", "create", "find", "show", "give", "take", "tell", "look", "need", "want",
                      "have", "help", "open", "keep", "bring", "start", "stop", "turn", "please", "what", "when",
                      "where", "which", "could", "would", "should", "there", "this", "that"})
_CHANNEL = re.compile(r"texts?|sms|e-?mails?|mails?|messages?|send|sends", re.IGNORECASE)
_MAX_NAMED = 3  # a verb in more tool names than this says little about which one is meant
_MIN_TOOLS = 6  # with a handful of tools, most share the request's words


def _stem(word: str) -> str:
    word = word.lower()
    for suffix in ("ing", "ers", "er", "es", "ed", "s"):
        if len(word) - len(suffix) >= 4 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def _named_tools(verb: str, tools: Iterable[Tool]) -> list[str]:
    """The tools whose name holds ``verb`` (inflected) and whose description speaks of it too ("remind" names
    ``reminders_add_task``, "Adds a to-do item to one of the user's reminder lists"; "open" does not name
    ``reminders_get_open``, "Returns the user's incomplete to-do items")."""
    stem, prefix = _stem(verb), verb.lower()[:5]
    return sorted(t.name for t in tools
                  if any(_stem(w) == stem for w in _NAME_WORD.findall(t.name.lower()))
                  and any(w.startswith(prefix) for w in re.findall(r"[a-z]+", (t.description or "").lower())))


def unnamed_action(request: str, calls: Iterable[Call], tools: Mapping[str, Tool]
                   ) -> tuple[str, frozenset[str]] | None:
    """The note for planning again, and the tools named, when a clause of the request opens with a verb that names
    offered tools (by their names' words) and the plan calls none of them; None otherwise (or for an empty
    plan)."""
    called = {c.name for c in calls}
    if not called or len(tools) < _MIN_TOOLS:
        return None
    for match in _CLAUSE_VERB.finditer(request.strip()):
        if _CHANNEL.fullmatch(match.group(1)) or match.group(1).lower() in _GENERIC:
            continue  # texts and e-mails: the channel checks' (tinyagent.run._channels)
        named = _named_tools(match.group(1), tools.values())
        if named and len(named) <= _MAX_NAMED and not called & set(named):
            which = named[0] if len(named) == 1 else f"one of {', '.join(named)}"
            return (f"the request says {match.group(1)!r}, but no step calls {which}; do every part of the "
                    "request"), frozenset(named)
    return None
