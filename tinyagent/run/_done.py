"""What the request says is already done is not done again.

"I have secured my car by locking all doors and applying the parking brake. Would it be possible to start the
engine ...?" was planned as a lock of the doors, a release of the parking brake and the engine's start: the
first sentence tells what the user did, the second asks. A clause in which the speaker reports a finished act
("I have secured ...", "I've already booked ...", "I locked ...") asks for nothing. A call goes when every word of
its tool's name that the request says is said only inside such clauses, at least half of those words are said,
and another call stays.
Verbs of wanting or planning ("I wanted to ...", "I planned to ...", "I noticed ...") report no finished act.
Nothing is keyed to a tool's name: the words come from the offered tools' names.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from .._plan import Plan, find_refs
from .._tools import Tool
from ._clauses import name_words
from ._repair import without_steps

__all__ = ["done_spans", "drop_done"]

_NOT_DONE = ("wanted", "needed", "hoped", "planned", "tried", "forgot", "decided", "meant", "asked", "liked", "loved",
             "noticed", "wondered", "used", "started", "expected", "intended", "failed", "attempted", "requested")
_PARTICIPLE = r"(?:[a-z]*[^\We]ed|made|sent|done|set|put|got|gotten|taken|brought|written|bought|paid|shut|left|given)"
_REPORT = re.compile(
    rf"\bI(?:'ve|\s+have|\s+had)?\s+(?:already\s+|just\s+|now\s+)?(?!(?:{'|'.join(_NOT_DONE)})\b)"
    rf"{_PARTICIPLE}\b", re.IGNORECASE)
# A reported act runs to the end of its sentence, or to a clause that asks ("..., so please ...", "but can you").
_SENTENCE_END = re.compile(r"[.!?;]|\b(?:but|so|now|please|can|could|would|will|I'd|I\s+(?:want|need|would))\b",
                           re.IGNORECASE)
_WORD = re.compile(r"[a-z]+")


def done_spans(request: str) -> list[tuple[int, int]]:
    """The spans of ``request`` in which the speaker reports an act already done."""
    spans = []
    for match in _REPORT.finditer(request):
        end = _SENTENCE_END.search(request, match.end())
        spans.append((match.start(), end.start() if end else len(request)))
    return spans


def _said_where(word: str, request: str) -> list[int]:
    """Where the request says ``word`` (a word that starts with it, or it with the word: "lock" and "locking")."""
    return [m.start() for m in _WORD.finditer(request.lower()) if len(word) >= 4 and (
        m.group().startswith(word[:5]) or (word.startswith(m.group()) and len(m.group()) >= 4))]


def drop_done(plan: Plan, tools: Mapping[str, Tool], request: str) -> tuple[Plan, list[str]]:
    """``plan`` without the calls that only do what the request reports done (:func:`done_spans`), with notes."""
    spans = done_spans(request)
    if not spans or len(plan.calls) < 2:
        return plan, []
    inside = lambda at: any(start <= at < end for start, end in spans)  # noqa: E731 - one line reads best
    done = set()
    for call in plan.calls:
        if call.name not in tools:
            continue
        words = {w for w in name_words(call.name) if len(w) >= 3}
        said = {w: _said_where(w, request) for w in words}
        places = [at for spots in said.values() for at in spots]
        if places and 2 * sum(bool(spots) for spots in said.values()) >= len(words) and all(map(inside, places)):
            done.add(call.id)
    done -= {r.step for c in plan.calls if c.id not in done for r in find_refs(c.args)}
    if not done or len(done) == len(plan.calls):
        return plan, []
    return Plan(calls=without_steps(plan.calls, done), answer=plan.answer), [
        f"plan: left out step {', '.join(map(str, sorted(done)))} (the request says it is done already)"]
