"""An iCalendar (RFC 5545) store: events (VEVENT) and reminders (VTODO) in one ``.ics`` file.

Times are written with a ``TZID`` and the matching ``VTIMEZONE``, so other calendar programs read them right.
Simple recurring events (``RRULE``) written by other programs are expanded when listing a day.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import MissingDependencyError
from ._errors import StoreError
from ._paths import ConfinedFS

__all__ = ["CalendarStore", "EventInfo", "TodoInfo"]

PRODID = "-//tinyagent//functions//EN"


def _ical() -> Any:
    try:
        import icalendar
    except ImportError as exc:
        raise MissingDependencyError("icalendar", "functions") from exc
    return icalendar


@dataclass(frozen=True)
class EventInfo:
    """A calendar event as tools report it (times in the store's timezone)."""

    uid: str
    title: str
    start: dt.datetime
    end: dt.datetime
    all_day: bool = False
    location: str = ""
    invitees: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A small JSON-able summary: title, start, end (``YYYY-MM-DDTHH:MM`` or a date), location, invitees."""
        def fmt(value: dt.datetime) -> str:
            return value.date().isoformat() if self.all_day else value.strftime("%Y-%m-%dT%H:%M")

        out: dict[str, Any] = {"title": self.title, "start": fmt(self.start), "end": fmt(self.end)}
        if self.location:
            out["location"] = self.location
        if self.invitees:
            out["invitees"] = list(self.invitees)
        return out


@dataclass(frozen=True)
class TodoInfo:
    """A reminder as tools report it."""

    uid: str
    title: str
    due: str = ""
    list_name: str = ""
    completed: bool = False
    notes: str = ""

    def to_dict(self) -> dict[str, Any]:
        """A small JSON-able summary."""
        out: dict[str, Any] = {"title": self.title, "list": self.list_name}
        if self.due:
            out["due"] = self.due
        if self.completed:
            out["completed"] = True
        return out


@dataclass
class CalendarStore:
    """One ``.ics`` file holding events and reminders.

    Args:
        path: the file (created with its folder on first write).
        tz: the zone naive times are interpreted in and results are reported in.
        organizer: the ORGANIZER address written on new events (empty: none).
        roots: the folders the file (or a link at its name) may lie in; default the file's own folder.
    """

    path: Path
    tz: dt.tzinfo
    organizer: str = ""
    roots: tuple[Path, ...] = ()

    @property
    def fs(self) -> ConfinedFS:
        """File access confined to ``roots``."""
        return ConfinedFS(self.roots or [Path(self.path).parent])

    # -- file ------------------------------------------------------------------------------------------------
    def load(self) -> Any:
        """The parsed calendar (a new, empty one if the file does not exist).

        Raises:
            StoreError: the file is not valid iCalendar.
        """
        ical = _ical()
        fs = self.fs
        if not fs.exists(self.path):
            cal = ical.Calendar()
            cal.add("prodid", PRODID)
            cal.add("version", "2.0")
            return cal
        try:
            return ical.Calendar.from_ical(fs.read_bytes(self.path))
        except (ValueError, IndexError, KeyError) as exc:
            raise StoreError(
                f"{self.path} is not a valid iCalendar file ({exc}); repair it or move it away to start a new one"
            ) from exc

    def _save(self, cal: Any) -> None:
        cal.add_missing_timezones()
        self.fs.write(self.path, cal.to_ical())

    # -- events ------------------------------------------------------------------------------------------------
    def add_event(
        self,
        title: str,
        start: dt.datetime,
        minutes: int,
        invitees: Sequence[str] = (),
        location: str = "",
        description: str = "",
        uid: str | None = None,
    ) -> EventInfo:
        """Add an event starting at the naive local ``start`` and lasting ``minutes``; return it."""
        ical = _ical()
        begin = self._aware(start)
        end = begin + dt.timedelta(minutes=minutes)
        event = ical.Event()
        event_uid = uid or f"{uuid.uuid4()}@tinyagent"
        event.add("uid", event_uid)
        event.add("dtstamp", dt.datetime.now(dt.UTC))
        event.add("dtstart", begin)
        event.add("dtend", end)
        event.add("summary", title)
        if location:
            event.add("location", location)
        if description:
            event.add("description", description)
        if self.organizer:
            event.add("organizer", ical.vCalAddress(f"mailto:{self.organizer}"))
        for address in invitees:
            attendee = ical.vCalAddress(f"mailto:{address}")
            attendee.params["ROLE"] = ical.vText("REQ-PARTICIPANT")
            attendee.params["PARTSTAT"] = ical.vText("NEEDS-ACTION")
            attendee.params["RSVP"] = ical.vText("TRUE")
            event.add("attendee", attendee, encode=0)
        with self.fs.lock(self.path):
            cal = self.load()
            if uid is not None and any(str(c.get("uid")) == uid for c in cal.walk("VEVENT")):
                return next(e for e in self._events(cal) if e.uid == uid)
            cal.add_component(event)
            self._save(cal)
        return EventInfo(event_uid, title, begin.astimezone(self.tz), end.astimezone(self.tz), False, location,
                         tuple(invitees))

    def events_between(self, start: dt.datetime, end: dt.datetime) -> list[EventInfo]:
        """Events overlapping ``[start, end)`` (naive times are local), recurring ones expanded, sorted by start."""
        lo, hi = self._aware(start), self._aware(end)
        found = []
        for event in self._events(self.load(), lo, hi):
            if event.start < hi and event.end > lo:
                found.append(event)
        return sorted(found, key=lambda e: (e.start, e.title))

    def events_on(self, day: dt.date) -> list[EventInfo]:
        """Events overlapping the local day ``day``."""
        start = dt.datetime.combine(day, dt.time())
        return self.events_between(start, start + dt.timedelta(days=1))

    def _events(self, cal: Any, lo: dt.datetime | None = None, hi: dt.datetime | None = None) -> list[EventInfo]:
        out: list[EventInfo] = []
        for comp in cal.walk("VEVENT"):
            try:
                out.extend(self._expand(comp, lo, hi))
            except (KeyError, ValueError, TypeError) as exc:
                raise StoreError(f"{self.path}: event {comp.get('uid')!s} is malformed ({exc}); repair it") from exc
        return out

    def _expand(self, comp: Any, lo: dt.datetime | None, hi: dt.datetime | None) -> list[EventInfo]:
        raw_start = comp.decoded("dtstart")
        all_day = not isinstance(raw_start, dt.datetime)
        start = self._as_local(raw_start)
        if comp.get("dtend") is not None:
            end = self._as_local(comp.decoded("dtend"))
        elif comp.get("duration") is not None:
            end = start + comp.decoded("duration")
        else:
            end = start + (dt.timedelta(days=1) if all_day else dt.timedelta(0))
        length = end - start
        attendees = comp.get("attendee") or []
        if not isinstance(attendees, list):
            attendees = [attendees]
        invitees = tuple(str(a).removeprefix("mailto:").removeprefix("MAILTO:") for a in attendees)
        base = dict(uid=str(comp.get("uid", "")), title=str(comp.get("summary", "")), all_day=all_day,
                    location=str(comp.get("location", "")), invitees=invitees)
        starts = [start]
        if comp.get("rrule") is not None and lo is not None and hi is not None:
            from dateutil.rrule import rrulestr

            rule = rrulestr(comp["rrule"].to_ical().decode(), dtstart=start)
            starts = list(rule.between(lo - length, hi, inc=True))
        return [EventInfo(start=s, end=s + length, **base) for s in starts]  # type: ignore[arg-type]

    def _aware(self, value: dt.datetime) -> dt.datetime:
        return value.replace(tzinfo=self.tz) if value.tzinfo is None else value

    def _as_local(self, value: dt.date | dt.datetime) -> dt.datetime:
        if not isinstance(value, dt.datetime):
            return dt.datetime.combine(value, dt.time(), tzinfo=self.tz)
        return self._aware(value).astimezone(self.tz)

    # -- reminders ---------------------------------------------------------------------------------------------
    def add_todo(self, title: str, due: dt.date | dt.datetime | None, list_name: str, notes: str = "",
                 uid: str | None = None) -> TodoInfo:
        """Add a reminder (VTODO) to ``list_name`` (stored as its CATEGORIES); return it."""
        ical = _ical()
        todo = ical.Todo()
        todo_uid = uid or f"{uuid.uuid4()}@tinyagent"
        todo.add("uid", todo_uid)
        todo.add("dtstamp", dt.datetime.now(dt.UTC))
        todo.add("summary", title)
        todo.add("status", "NEEDS-ACTION")
        todo.add("categories", [list_name])
        if notes:
            todo.add("description", notes)
        due_text = ""
        if isinstance(due, dt.datetime):
            todo.add("due", self._aware(due))
            due_text = due.strftime("%Y-%m-%dT%H:%M")
        elif due is not None:
            todo.add("due", due)
            due_text = due.isoformat()
        with self.fs.lock(self.path):
            cal = self.load()
            if uid is not None and any(str(c.get("uid")) == uid for c in cal.walk("VTODO")):
                return next(t for t in self.todos(include_completed=True) if t.uid == uid)
            cal.add_component(todo)
            self._save(cal)
        return TodoInfo(todo_uid, title, due_text, list_name, False, notes)

    def todos(self, list_name: str | None = None, include_completed: bool = False) -> list[TodoInfo]:
        """Reminders, optionally of one list (case-insensitive), soonest due first (undated last)."""
        out: list[TodoInfo] = []
        for comp in self.load().walk("VTODO"):
            cats = comp.get("categories")
            names: list[str] = []
            for cat in cats if isinstance(cats, list) else [cats] if cats is not None else []:
                names.extend(str(c) for c in cat.cats)
            list_of = names[0] if names else "Reminders"
            completed = str(comp.get("status", "")).upper() == "COMPLETED" or comp.get("completed") is not None
            if completed and not include_completed:
                continue
            if list_name and list_name.casefold() not in (n.casefold() for n in names or ["Reminders"]):
                continue
            due_text = ""
            if comp.get("due") is not None:
                due = comp.decoded("due")
                due_text = (
                    self._as_local(due).strftime("%Y-%m-%dT%H:%M") if isinstance(due, dt.datetime) else due.isoformat()
                )
            out.append(TodoInfo(str(comp.get("uid", "")), str(comp.get("summary", "")), due_text, list_of, completed,
                                str(comp.get("description", ""))))
        return sorted(out, key=lambda t: (t.due == "", t.due, t.title))

    def list_names(self) -> list[str]:
        """The names of every reminder list in the store."""
        return sorted({t.list_name for t in self.todos(include_completed=True)}, key=str.casefold)
