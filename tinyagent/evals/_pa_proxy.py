"""A development proxy for a personal-assistant registry the team did not write.

The built-in tools' eval set (``load_evalset("test")``) is translated, one to one, onto a DISGUISED registry: every
tool and parameter renamed and every description rewritten in another vendor's voice (an OpenAI-format JSON file,
``benchmarks/data/pa_proxy/tools.json`` in the repository), with date-times written ``YYYY-MM-DD HH:MM:SS``. The
requests and the gold plans keep their meaning, so the proxy measures what a user gets from a personal-assistant
registry whose names, descriptions and date format are not ours, and who supplies no worked examples.

* :data:`PA_PROXY_TOOL_NAMES` and :data:`PA_PROXY_PARAM_NAMES` are the name maps (built-in name -> disguised name).
* :func:`convert_case` renames a case's calls, arguments and key arguments, turns ``YYYY-MM-DDTHH:MM`` values into
  ``YYYY-MM-DD HH:MM:SS`` (``YYYY-MM-DD`` stays a date) and keeps ``$k`` references; :func:`pa_proxy_cases` converts
  the test split (``limit`` cases spread over the categories, deterministically).
* :func:`score_pa_plan` scores one plan with the project's :func:`~tinyagent.evals.dag_success` and
  :func:`~tinyagent.evals.strict_success` against the disguised registry (its schema defaults count for omitted
  arguments), and says whether every date argument is written in the format its description asks for
  (``date_format_ok``): strict success compares dates in a canonical form, a third party's checker may compare the
  strings.
* :func:`plan_pa_proxy` plans the cases with one agent (timed as the foreign benchmark times, see
  :func:`~tinyagent.evals.summarize`) and :func:`failure_kind` labels each failed row for a failure taxonomy.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._plan import Plan
from .._tools import ToolRegistry
from ..errors import ConfigurationError
from ._foreign import _evaluated, _timed_plan
from ._scoring import EvalCase, PlanLike, dag_success, load_evalset, normalize_value, strict_success

__all__ = [
    "PA_PROXY_DATE_PARAMS",
    "PA_PROXY_PARAM_NAMES",
    "PA_PROXY_TOOL_NAMES",
    "convert_calls",
    "convert_case",
    "date_format_ok",
    "failure_kind",
    "load_pa_registry",
    "pa_proxy_cases",
    "plan_pa_proxy",
    "score_pa_plan",
]

logger = logging.getLogger("tinyagent.evals.pa_proxy")

PA_PROXY_TOOL_NAMES: Mapping[str, str] = {
    "get_email_address": "contacts_lookup_email",
    "get_phone_number": "contacts_lookup_phone",
    "send_email": "mail_compose_and_send",
    "reply_to_email": "mail_reply",
    "forward_email": "mail_forward",
    "create_calendar_event": "calendar_add_event",
    "list_calendar_events": "calendar_get_agenda",
    "find_calendar_conflicts": "calendar_check_availability",
    "create_reminder": "reminders_add_task",
    "list_reminders": "reminders_get_open",
    "create_note": "notes_new",
    "open_note": "notes_read",
    "append_note": "notes_append_text",
    "search_notes": "notes_search",
    "delete_note": "notes_trash",
    "find_file": "files_locate",
    "read_file": "files_get_text",
    "summarize_file": "pdf_summarize",
    "send_message": "sms_send",
    "get_directions": "maps_route",
    "create_meeting_link": "video_create_room",
    "get_today": "clock_current_date",
    "resolve_date": "clock_parse_relative_date",
}
"""Built-in tool name -> disguised tool name (one to one)."""

_ATTACH = {"attachments": "attachment_paths"}
PA_PROXY_PARAM_NAMES: Mapping[str, Mapping[str, str]] = {
    "get_email_address": {"name": "person_name"},
    "get_phone_number": {"name": "person_name"},
    "send_email": {"to": "recipient_addresses", "subject": "subject_line", "body": "message_body",
                   "cc": "cc_addresses", **_ATTACH},
    "reply_to_email": {"message": "match_text", "body": "reply_body", **_ATTACH},
    "forward_email": {"message": "match_text", "to": "recipient_addresses", "body": "note", **_ATTACH},
    "create_calendar_event": {"title": "event_name", "start": "start_datetime", "duration_minutes": "length_minutes",
                              "invitees": "attendee_emails", "location": "venue"},
    "list_calendar_events": {"date": "day"},
    "find_calendar_conflicts": {"start": "proposed_start", "duration_minutes": "length_minutes"},
    "create_reminder": {"title": "task_name", "due": "due_datetime", "list_name": "reminder_list"},
    "list_reminders": {"list_name": "reminder_list"},
    "create_note": {"title": "note_title", "body": "content", "folder": "folder_name"},
    "open_note": {"title": "note_title"},
    "append_note": {"title": "note_title", "text": "content"},
    "search_notes": {"query": "keywords"},
    "delete_note": {"title": "note_title"},
    "find_file": {"query": "search_terms"},
    "read_file": {"path": "file_path"},
    "summarize_file": {"path": "file_path"},
    "send_message": {"recipients": "phone_numbers", "text": "message_text"},
    "get_directions": {"destination": "to_location", "origin": "from_location", "mode": "travel_mode"},
    "create_meeting_link": {"title": "meeting_topic"},
    "get_today": {},
    "resolve_date": {"expression": "phrase"},
}
"""Built-in tool name -> {built-in parameter -> disguised parameter} (one to one per tool)."""

PA_PROXY_DATE_PARAMS: Mapping[tuple[str, str], str] = {
    ("calendar_add_event", "start_datetime"): "datetime",
    ("calendar_get_agenda", "day"): "date",
    ("calendar_check_availability", "proposed_start"): "either",
    ("reminders_add_task", "due_datetime"): "either",
}
"""(disguised tool, parameter) -> what its description asks for: ``datetime`` (``YYYY-MM-DD HH:MM:SS``), ``date``
(``YYYY-MM-DD``) or ``either``."""

_ISO_MINUTE = re.compile(r"^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})$")
_FORMATS = {
    "datetime": re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$"),
    "date": re.compile(r"^\d{4}-\d{2}-\d{2}$"),
    "either": re.compile(r"^\d{4}-\d{2}-\d{2}( \d{2}:\d{2}:\d{2})?$"),
}
_LOOKUPS = frozenset(PA_PROXY_TOOL_NAMES[n] for n in ("get_email_address", "get_phone_number"))


# -- conversion ----------------------------------------------------------------------------------------------------
def _convert_value(value: Any) -> Any:
    if isinstance(value, str):
        match = _ISO_MINUTE.match(value)
        return f"{match.group(1)} {match.group(2)}:00" if match else value
    if isinstance(value, list):
        return [_convert_value(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _convert_value(v) for k, v in value.items()}
    return value


def _params(tool: str) -> Mapping[str, str]:
    try:
        return PA_PROXY_PARAM_NAMES[tool]
    except KeyError:
        raise ConfigurationError(f"tool {tool!r} has no disguised name; add it to PA_PROXY_TOOL_NAMES and "
                                 "PA_PROXY_PARAM_NAMES") from None


def convert_calls(calls: Iterable[Mapping[str, Any]]) -> tuple[dict[str, Any], ...]:
    """Gold calls over the built-in tools (JSON form) as calls over the disguised registry.

    Raises:
        ConfigurationError: a call names a tool or an argument the maps do not know.
    """
    out = []
    for call in calls:
        params = _params(str(call["name"]))
        unknown = [a for a in call.get("args", {}) if a not in params]
        if unknown:
            raise ConfigurationError(f"{call['name']} argument(s) {unknown} have no disguised name")
        args = {params[a]: _convert_value(v) for a, v in call.get("args", {}).items()}
        out.append({"id": call["id"], "name": PA_PROXY_TOOL_NAMES[str(call["name"])], "args": args})
    return tuple(out)


def convert_case(case: EvalCase) -> EvalCase:
    """One built-in eval case as a case over the disguised registry (same id, query, today and category).

    Raises:
        ConfigurationError: the case uses a tool or an argument the maps do not know.
    """
    names = {int(c["id"]): str(c["name"]) for c in case.calls}
    key_args = {k: tuple(_params(names[k])[a] for a in v) for k, v in case.key_args.items() if k in names}
    date_exprs = {k: {_params(names[k])[a]: e for a, e in v.items()} for k, v in case.date_exprs.items()
                  if k in names}
    return EvalCase(id=case.id, query=case.query, today=case.today, split=case.split,
                    calls=convert_calls(case.calls), key_args=key_args, answer=case.answer,
                    date_exprs=date_exprs, category=case.category)


def pa_proxy_cases(limit: int | None = None, *, split: str = "test",
                   cases: Sequence[EvalCase] | None = None) -> list[EvalCase]:
    """The eval set's ``split`` over the disguised registry.

    Args:
        limit: at most this many cases, taken round-robin over the categories (in the order they first appear,
            each category's cases in file order), so a small limit still covers many categories.
        split: the eval-set split (``"test"`` by default; never tune on it).
        cases: built-in cases to convert instead of loading the split.

    Raises:
        ConfigurationError: a negative limit, or a case the maps cannot convert.
    """
    if limit is not None and limit < 0:
        raise ConfigurationError(f"limit must be a positive number of cases, got {limit}")
    source = list(cases) if cases is not None else load_evalset(split)
    by_cat: dict[str, list[EvalCase]] = {}
    for case in source:
        by_cat.setdefault(case.category or "-", []).append(case)
    picked: list[EvalCase] = []
    depth = 0
    total = len(source) if limit is None else min(limit, len(source))
    while len(picked) < total:
        for group in by_cat.values():
            if depth < len(group) and len(picked) < total:
                picked.append(group[depth])
        depth += 1
    order = {c.id: i for i, c in enumerate(source)}
    return [convert_case(c) for c in sorted(picked, key=lambda c: order[c.id])]


def load_pa_registry(specs: str | Path | Sequence[Mapping[str, Any]]) -> ToolRegistry:
    """The disguised registry from its OpenAI-format JSON file (or the parsed list), via
    :meth:`tinyagent.ToolRegistry.from_openai`.

    Raises:
        ConfigurationError: the file is missing or not a JSON list.
    """
    if isinstance(specs, str | Path):
        try:
            data = json.loads(Path(specs).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigurationError(f"cannot read the proxy registry {specs}: {exc}") from exc
        if not isinstance(data, list):
            raise ConfigurationError(f"{specs}: expected a JSON list of OpenAI tool specs")
        specs = data
    return ToolRegistry.from_openai(specs)


# -- scoring -------------------------------------------------------------------------------------------------------
def _json_calls(plan: PlanLike | None) -> list[dict[str, Any]]:
    if plan is None:
        return []
    if isinstance(plan, Plan):
        return plan.to_json()
    return [c.to_json() if hasattr(c, "to_json") else dict(c) for c in plan]


def date_format_ok(calls: PlanLike | None) -> bool | None:
    """Whether every literal date argument is written as its description asks (see
    :data:`PA_PROXY_DATE_PARAMS`); None when the plan passes no date argument."""
    seen = False
    for call in _json_calls(calls):
        for arg, value in (call.get("args") or {}).items():
            kind = PA_PROXY_DATE_PARAMS.get((str(call.get("name")), str(arg)))
            if kind is None or not isinstance(value, str) or not value.strip() or value.startswith("$"):
                continue
            seen = True
            if not _FORMATS[kind].match(value):
                return False
    return True if seen else None


def score_pa_plan(pred: PlanLike | None, case: EvalCase, registry: ToolRegistry) -> dict[str, Any]:
    """``{"dag", "strict", "date_format_ok", "strict_exact"}`` of one plan against a converted case.

    ``strict_exact`` is strict success with every date argument also in its documented format.
    """
    dag = pred is not None and dag_success(pred, case.calls)
    strict = dag and pred is not None and strict_success(pred, case.calls, case.key_args, registry)
    fmt = date_format_ok(pred)
    return {"dag": dag, "strict": strict, "date_format_ok": fmt, "strict_exact": strict and fmt is not False}


def failure_kind(row: Mapping[str, Any], case: EvalCase) -> str | None:
    """One label for a failed row (None when strict): ``error``, ``no_tool`` (a call where none was needed, or
    none where one was), ``extra_lookup`` / ``missing_lookup`` (more / fewer contact lookups than gold),
    ``tool_confused`` (same number of calls, other tools), ``extra_step`` / ``missing_step``, ``wrong_deps`` (same
    tools, other wiring), ``date_wrong`` (right graph, a date key argument differs) or ``args_wrong``."""
    if row.get("strict"):
        return None
    if row.get("error"):
        return "error"
    pred = [c for c in row.get("calls") or [] if c.get("name") != "join"]
    gold = list(case.calls)
    if not pred or not gold:
        return "no_tool"
    lookups = sum(c["name"] in _LOOKUPS for c in pred) - sum(c["name"] in _LOOKUPS for c in gold)
    if lookups:
        return "extra_lookup" if lookups > 0 else "missing_lookup"
    if not row.get("dag"):
        if Counter(c["name"] for c in pred) == Counter(c["name"] for c in gold):
            return "wrong_deps"
        if len(pred) == len(gold):
            return "tool_confused"
        return "extra_step" if len(pred) > len(gold) else "missing_step"
    return "date_wrong" if _date_differs(pred, gold, case) else "args_wrong"


def _date_differs(pred: Sequence[Mapping[str, Any]], gold: Sequence[Mapping[str, Any]], case: EvalCase) -> bool:
    """Whether some gold date key argument has no equal value on a predicted call of the same tool."""
    for call in gold:
        for arg in case.key_args.get(int(call["id"]), ()):
            if (call["name"], arg) not in PA_PROXY_DATE_PARAMS or arg not in call["args"]:
                continue
            want = normalize_value(call["args"][arg])
            if not any(normalize_value((p.get("args") or {}).get(arg)) == want
                       for p in pred if p.get("name") == call["name"]):
                return True
    return False


# -- planning ------------------------------------------------------------------------------------------------------
def _diagnostics(result: Any) -> dict[str, Any]:
    """What the planner wrote and how the no-tool decision went, so an empty plan can be told apart."""
    check = getattr(result, "no_tool_check", None)
    p_join = getattr(result, "no_tool_prob", None)
    return {
        "text": str(getattr(result, "text", "") or "")[:600] if result is not None else None,
        "p_join": round(float(p_join), 4) if isinstance(p_join, int | float) else None,
        "no_tool_refused": bool(check.refused) if check is not None else None,
        "no_tool_p": round(float(check.probability), 4) if check is not None else None,
    }


async def plan_pa_proxy(cases: Sequence[EvalCase], agent: Any, registry: ToolRegistry, *,
                        model: Any = None) -> list[dict[str, Any]]:
    """Plan every converted case with ``agent`` (``Agent.plan`` only, nothing executes) and score it.

    Returns:
        Rows ``{"id", "category", "query", "today", "gold", "calls", "dag", "strict", "date_format_ok",
        "strict_exact", "no_tool", "failure", "elapsed_s", "prompt_tokens", "prompt_evaluated", "error", "text",
        "p_join", "no_tool_refused", "no_tool_p"}``; ``no_tool`` is None unless the gold plan has no call (then: the
        plan had none either); ``text`` is what the model wrote, ``p_join`` its probability of ``join`` as the first
        step, ``no_tool_refused`` / ``no_tool_p`` the no-tool decision (None when not made or not measured).
    """
    rows = []
    for case in cases:
        result, elapsed, tokens, error = await _timed_plan(agent, case.query, case.today, (), model)
        pred = result.plan if result is not None else None
        row: dict[str, Any] = {
            "id": case.id, "category": case.category, "query": case.query, "today": case.today.isoformat(),
            "gold": list(case.calls), "calls": pred.to_json() if pred is not None else [],
            **score_pa_plan(pred, case, registry),
            "no_tool": (pred is not None and not pred.calls) if not case.calls else None,
            "elapsed_s": round(elapsed, 3), "prompt_tokens": tokens, "prompt_evaluated": _evaluated(model),
            "error": error, **_diagnostics(result),
        }
        row["failure"] = failure_kind(row, case)
        rows.append(row)
        logger.info("%s: dag=%s strict=%s %.1fs", case.id, row["dag"], row["strict"], elapsed)
    return rows
