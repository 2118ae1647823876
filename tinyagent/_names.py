"""The names the planner reads: a tool's name as the model sees it, and back.

A small planner picks a tool by its name first and its description second. Given an MCP-style registry
(``wx__forecast``, ``geo__route``, ``pim__people-resolve``), Qwen2.5-Coder-1.5B routed "What's the weather in Lisbon
on Saturday?" to ``geo__route``; the same tools named ``weather__forecast`` were planned right. A server's short
code is noise to it. So the planner reads each tool under a shown name:

* a namespace before ``__`` (an MCP server's prefix) that the tool's description never speaks of (``wx``, ``pim``,
  ``calc``, ``geo``) is left out, unless what is left is another tool's too (``sms__send`` beside ``mail__send``
  keeps its prefix: both would be ``send``);
* a kept namespace is joined by one underscore, and hyphens, which no identifier has, become underscores
  (``mail__inbox-search`` → ``mail_inbox_search``);
* a product prefix that every offered tool's name starts with (``juno_find_contact``, ``juno_set_reminder``) and
  that no description speaks of is left out too, unless it is a verb (``get_``, ``set_``). Asked "remnd me tonight
  at 8 to put the bins out" over such a registry, the 1.5B planner wrote ``set_reminder(...)`` unconstrained; the
  grammar, which had only ``juno_set_reminder``, turned its first letter into ``join()``, an empty plan.

:func:`shown_names` gives the map, :func:`show` writes it into a text (the prompt, the examples, a replan's note),
the plan parser reads either name back as the registry's, and :func:`unshow_plan` gives a plan's text the
registry's names for the user. Everything else (grammar aside) keeps the registry's
names: the events, the executor, the repairs and the user.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping

from ._tools import Tool

__all__ = ["show", "shown_names", "unshow_plan"]

_NAMESPACE = re.compile(r"([A-Za-z][A-Za-z0-9]*)__(?=[A-Za-z])(.+)")
_WORD = re.compile(r"[a-z]+")


def shown_names(tools: Iterable[Tool]) -> dict[str, str]:
    """Each tool's shown name, for the tools whose shown name is not their own (see the module docstring); the
    shown names are unique and none is another tool's own name."""
    tools = list(tools)
    key = tuple((t.name, t.description, t.returns) for t in tools)
    if (known := _CACHE.get(key)) is None:
        if len(_CACHE) >= 64:
            _CACHE.clear()
        known = _CACHE[key] = _shown_names(tools)
    return dict(known)


_CACHE: dict[tuple[tuple[str, str, str], ...], dict[str, str]] = {}  # (the same registry, asked for every value)


def _shown_names(tools: list[Tool]) -> dict[str, str]:
    rests = Counter(_rest(t.name) for t in tools)
    prefix = _product_prefix(tools)
    shown = {}
    for tool in tools:
        m = _NAMESPACE.fullmatch(tool.name)
        if m is None:
            name = (tool.name[len(prefix):] if prefix else tool.name).replace("-", "_")
        elif rests[_rest(tool.name)] == 1 and not _spoken(m.group(1), tool):
            name = m.group(2).replace("-", "_")
        else:
            name = f"{m.group(1)}_{m.group(2)}".replace("-", "_")
        if name != tool.name:
            shown[tool.name] = name
    own = {t.name for t in tools}
    counts = Counter(shown.values())
    return {real: name for real, name in shown.items() if counts[name] == 1 and name not in own}


def show(text: str, names: Mapping[str, str]) -> str:
    """``text`` with each tool name of ``names`` written as its shown name (whole names only)."""
    if not names or not text:
        return text
    pattern = re.compile(r"(?<![\w.-])(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
                         + r")(?![\w-])")
    return pattern.sub(lambda m: names[m.group(1)], text)


def unshow_plan(text: str, names: Mapping[str, str]) -> str:
    """A plan's text with each call written under its shown name given the registry's name again (call heads only:
    ``1. forecast(place="the route")`` → ``1. wx__forecast(place="the route")``)."""
    real = {shown: name for name, shown in names.items()}
    if not real:
        return text
    return re.sub(r"(?m)^(\s*\d+\.\s*)([\w.-]+)(?=\()", lambda m: m.group(1) + real.get(m.group(2), m.group(2)), text)


_PREFIX = re.compile(r"([A-Za-z][A-Za-z0-9]*_)(?=[A-Za-z])")
_VERBS = frozenset(re.findall(r"\w+", """
    get set list create update delete remove find search send add make fetch read write run check calculate compute
    book buy play open close start stop show post put patch query lookup look do is has can convert count reply
    append summarize summarise translate schedule cancel reserve order share upload download save load edit move copy
    rename forward compose draft invite notify remind call text message email mark archive print scan record
    track pay transfer request resolve retrieve generate analyze analyse plan locate navigate
    """))


def _product_prefix(tools: list[Tool]) -> str:
    """The prefix (``juno_``) every tool's name starts with, when there are two or more tools, the rest of most
    names starts with a verb (``find_contact``: the prefix is no part of what the tool does), the prefix is no verb
    and no description speaks of it (tool names aside); else ``""``."""
    if len(tools) < 2 or any(_NAMESPACE.fullmatch(t.name) or "." in t.name for t in tools):
        return ""
    heads = {m.group(1) if (m := _PREFIX.match(t.name)) else "" for t in tools}
    if len(heads) != 1 or not (head := heads.pop()) or head[:-1].lower() in _VERBS:
        return ""
    if 2 * sum(t.name[len(head):].split("_")[0].lower() in _VERBS for t in tools) < len(tools):
        return ""
    names = re.compile(r"(?<![\w.-])(?:" + "|".join(re.escape(t.name) for t in tools) + r")(?![\w-])")
    if any(_spoken(head[:-1], t, names) for t in tools):
        return ""
    return head


def _rest(name: str) -> str:
    """The name past its namespace (``forecast`` of ``wx__forecast``), hyphens as underscores."""
    m = _NAMESPACE.fullmatch(name)
    return (m.group(2) if m else name).replace("-", "_").lower()


def _spoken(namespace: str, tool: Tool, names: re.Pattern[str] | None = None) -> bool:
    """Whether the tool's description (past the tool ``names`` it writes) speaks of its namespace: a word that is
    it, or starts or ends with it (``cal`` and "calendar", ``mail`` and "email"), or that it starts with (``docs``
    and "doc")."""
    ns = namespace.lower()
    text = f"{tool.description} {tool.returns}"
    words = set(_WORD.findall((names.sub(" ", text) if names else text).lower()))
    return any(w == ns or len(ns) >= 3 and (w.startswith(ns) or w.endswith(ns))
               or len(w) >= 3 and ns.startswith(w) for w in words)
