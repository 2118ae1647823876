"""A seeded demo data set, so a new user sees real results at once (``tinyagent demo init``)."""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, field
from email.message import EmailMessage
from pathlib import Path

from ..errors import MissingDependencyError
from ._calendar import CalendarStore
from ._contacts import Contact, to_vcard
from ._paths import ConfinedFS, safe_filename
from ._settings import FunctionsSettings

__all__ = ["DemoInfo", "init_demo"]

log = logging.getLogger("tinyagent.functions")

DEMO_CONTACTS = (
    Contact("Sid Patel", "Sid", "Patel", [], ["sid@example.com"], ["+1 555 0101"], "Acme", "demo-sid-patel"),
    Contact("Alex Chen", "Alex", "Chen", [], ["alex.chen@example.com"], ["+1 555 0102"], "Acme", "demo-alex-chen"),
    Contact("Alex Kim", "Alex", "Kim", [], ["alex.kim@example.org"], ["+1 555 0103"], "Globex", "demo-alex-kim"),
    Contact("Priya Sharma", "Priya", "Sharma", [], ["priya@example.com"], ["+1 555 0104"], "Acme", "demo-priya"),
    Contact("José Álvarez", "José", "Álvarez", ["Pepe"], ["jose.alvarez@example.com"], ["+34 600 000 105"], "",
            "demo-jose"),
    Contact("Zoë Müller", "Zoë", "Müller", [], ["zoe.mueller@example.de"], ["+49 30 0000106"], "", "demo-zoe"),
    Contact("Robert Miller", "Robert", "Miller", ["Bob"], ["bob.miller@example.com"], ["+1 555 0107"], "",
            "demo-robert-miller"),
    Contact("Elizabeth Taylor", "Elizabeth", "Taylor", ["Liz"], ["liz@example.com"], ["+1 555 0108"], "",
            "demo-elizabeth"),
    Contact("Maria Garcia", "Maria", "Garcia", [], ["maria.garcia@example.com"], ["+1 555 0109"], "",
            "demo-maria-garcia"),
    Contact("Maria Gonzalez", "Maria", "Gonzalez", [], ["maria.gonzalez@example.com"], ["+1 555 0110"], "",
            "demo-maria-gonzalez"),
    Contact("Sydney Brooks", "Sydney", "Brooks", [], ["sydney@example.com"], ["+1 555 0111"], "", "demo-sydney"),
    Contact("Tom Nguyen", "Tom", "Nguyen", [], [], ["+1 555 0112"], "", "demo-tom"),
)

LUNCH_MENU = {
    "Monday": "Tomato soup, grilled cheese, green salad",
    "Tuesday": "Chicken curry with rice, mango lassi",
    "Wednesday": "Vegetable lasagna, garlic bread",
    "Thursday": "Fish tacos, black beans, lime slaw",
    "Friday": "Margherita pizza, fruit salad",
}


@dataclass(frozen=True)
class DemoInfo:
    """What :func:`init_demo` seeded.

    Attributes:
        data_dir: the data folder.
        today: the date the demo was built around.
        contacts: contact names.
        events: event titles.
        notes: note titles.
        files: document paths.
        created: how many files were newly written (0 when everything already existed).
    """

    data_dir: Path
    today: dt.date
    contacts: tuple[str, ...] = ()
    events: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    files: tuple[Path, ...] = ()
    created: int = 0
    reminders: tuple[str, ...] = field(default_factory=tuple)


def init_demo(data_dir: str | Path, today: dt.date | None = None, timezone: str | None = None) -> DemoInfo:
    """Seed ``data_dir`` with demo contacts, calendar events, reminders, notes, inbox mail and files (a real PDF).

    Idempotent: items that already exist (by file name or calendar UID) are left alone, so running it twice changes
    nothing, and user edits survive.

    Args:
        data_dir: the data folder to fill (created if missing).
        today: the day the events and the standup note are placed around; defaults to the local date.
        timezone: the IANA zone for event times; None means the machine's local zone.

    Returns:
        What was seeded.

    Raises:
        MissingDependencyError: icalendar or fpdf2 is not installed (``pip install 'tinyagent[functions]'``).
    """
    day = today or dt.date.today()
    settings = FunctionsSettings(data_dir=Path(data_dir), timezone=timezone)
    seed = _Seeder(settings)
    for c in DEMO_CONTACTS:
        seed.put(settings.contacts_dir / f"{safe_filename(c.full_name)}.vcf", to_vcard(c))
    events = _seed_calendar(seed, day)
    notes = _seed_notes(seed, day)
    files = _seed_files(seed, day)
    _seed_inbox(seed, day)
    log.info("demo data in %s: %d new files", settings.data_dir, seed.created)
    return DemoInfo(
        data_dir=settings.data_dir,
        today=day,
        contacts=tuple(c.full_name for c in DEMO_CONTACTS),
        events=events,
        notes=notes,
        files=files,
        created=seed.created,
        reminders=("Buy milk", "Call the dentist"),
    )


class _Seeder:
    """Writes demo files through the data folder's confined access, skipping those that already exist."""

    def __init__(self, settings: FunctionsSettings) -> None:
        self.settings = settings
        self.fs = ConfinedFS([settings.data_dir])
        self.created = 0

    def put(self, path: Path, data: bytes | str) -> None:
        if not self.fs.exists(path):
            self.fs.write(path, data)
            self.created += 1


def _seed_calendar(seed: _Seeder, day: dt.date) -> tuple[str, ...]:
    settings = seed.settings
    store = CalendarStore(settings.calendar_path, settings.tz, organizer="me@example.com",
                          roots=(settings.data_dir,))
    tomorrow, in_two = day + dt.timedelta(days=1), day + dt.timedelta(days=2)
    existed = seed.fs.exists(settings.calendar_path)
    events = (
        ("Daily standup", dt.datetime.combine(day, dt.time(9, 30)), 15, ["sid@example.com", "alex.chen@example.com"],
         "Team room", "demo-standup"),
        ("Lunch with Priya", dt.datetime.combine(day, dt.time(12, 30)), 60, ["priya@example.com"], "Cafe Roma",
         "demo-lunch"),
        ("Design review", dt.datetime.combine(tomorrow, dt.time(14, 0)), 60, ["alex.kim@example.org"], "Room 4",
         "demo-design-review"),
        ("1:1 with Maria", dt.datetime.combine(in_two, dt.time(16, 0)), 30, ["maria.garcia@example.com"], "",
         "demo-one-on-one"),
    )
    for title, start, minutes, guests, where, uid in events:
        store.add_event(title, start, minutes, guests, where, uid=f"{uid}@tinyagent")
    store.add_todo("Buy milk", tomorrow, "Groceries", uid="demo-milk@tinyagent")
    store.add_todo("Call the dentist", None, "Reminders", uid="demo-dentist@tinyagent")
    if not existed:
        seed.created += 1
    return tuple(e[0] for e in events)


def _seed_notes(seed: _Seeder, day: dt.date) -> tuple[str, ...]:
    notes = {
        Path("work") / f"Standup {day.isoformat()}.md": (
            f"# Standup {day.isoformat()}\n\n"
            "- Sid: finished the payments API; starts on the webhook retries today.\n"
            "- Alex: fixing the flaky login test; needs a review from Sid.\n"
            "- Priya: the Q4 budget draft is ready for comments.\n"
            "- Blockers: staging database is slow; ops is on it.\n"
            "- Action: schedule a 30 minute follow-up on the webhook design.\n"
        ),
        Path("work") / "Project Falcon ideas.md": (
            "# Project Falcon ideas\n\n- Offline mode for the mobile app\n- Faster search with an index\n"
        ),
        Path("personal") / "Shopping list.md": "# Shopping list\n\n- eggs\n- coffee\n",
        Path("personal") / "Gift ideas.md": "# Gift ideas\n\n- Zoë: a pottery class\n- Bob: a chess set\n",
    }
    for rel, text in notes.items():
        seed.put(seed.settings.notes_dir / rel, text)
    return tuple(p.stem for p in notes)


def _seed_files(seed: _Seeder, day: dt.date) -> tuple[Path, ...]:
    files_dir = seed.settings.data_dir / "files"
    docs: dict[str, bytes | str] = {
        "Q4 budget.csv": "item,amount\nCloud hosting,12000\nContractors,30000\nTravel,4500\nTraining,3000\n",
        "Project Falcon proposal.md": (
            "# Project Falcon proposal\n\nGoal: an offline-first mobile app for field teams.\n\n"
            "Timeline: design in January, beta in March, launch in May.\nBudget: 120k.\nOwner: Priya Sharma.\n"
        ),
        "Trip itinerary.txt": (
            "Flight LH 454 to Frankfurt, Dec 14, 18:05.\nHotel: Hotel am Main, 2 nights.\n"
            "Meeting at the Frankfurt office on Dec 15 at 10:00.\n"
        ),
    }
    for name, data in docs.items():
        seed.put(files_dir / name, data)
    menu = files_dir / "Lunch menu.pdf"
    if not seed.fs.exists(menu):
        seed.put(menu, _lunch_menu_pdf(day))
    return tuple(sorted((files_dir / n for n in [*docs, menu.name]), key=str))


def _seed_inbox(seed: _Seeder, day: dt.date) -> None:
    inbox = seed.settings.mail_dir / "inbox"
    for key, sender, subject, body, days_ago in (
        ("budget-review", "Sid Patel <sid@example.com>", "Budget review",
         "Hi, can you look at the Q4 budget before Friday? Thanks, Sid", 1),
        ("offsite-agenda", "Alex Chen <alex.chen@example.com>", "Offsite agenda",
         "Here is the plan for the offsite: strategy in the morning, hiking in the afternoon.", 2),
        ("dinner-friday", "Maria Garcia <maria.garcia@example.com>", "Dinner on Friday?",
         "Are you free for dinner on Friday at 7?", 0),
    ):
        seed.put(inbox / f"{key}.eml", _inbox_message(sender, subject, body, day - dt.timedelta(days=days_ago), key))
    seed.fs.mkdir(seed.settings.mail_dir / "outbox")


def _inbox_message(sender: str, subject: str, body: str, day: dt.date, key: str) -> bytes:
    import email.policy

    msg = EmailMessage(policy=email.policy.SMTP)
    msg["From"] = sender
    msg["To"] = "me@example.com"
    msg["Subject"] = subject
    msg["Date"] = email.utils.format_datetime(dt.datetime.combine(day, dt.time(8, 15), tzinfo=dt.UTC))
    msg["Message-ID"] = f"<{key}@example.com>"
    msg.set_content(body)
    return msg.as_bytes()


def _lunch_menu_pdf(day: dt.date) -> bytes:
    try:
        from fpdf import FPDF
    except ImportError as exc:
        raise MissingDependencyError("fpdf2", "functions") from exc
    monday = day - dt.timedelta(days=day.weekday())
    pdf = FPDF()
    pdf.set_creation_date(dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
    pdf.set_title("Lunch menu")
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 18)
    pdf.cell(0, 12, f"Cafeteria lunch menu, week of {monday.isoformat()}", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", size=12)
    for weekday, dish in LUNCH_MENU.items():
        pdf.cell(0, 9, f"{weekday}: {dish}", new_x="LMARGIN", new_y="NEXT")
    pdf.cell(0, 9, "Vegetarian options every day. Lunch is served 11:30 to 14:00.", new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())
