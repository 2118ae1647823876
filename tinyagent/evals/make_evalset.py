"""Generate ``evalset.jsonl``: requests over the built-in tools with gold plans (deterministic).

Run from the repository root::

    python -m tinyagent.evals.make_evalset

It writes ``tinyagent/functions/data/evalset.jsonl``, where :func:`tinyagent.evals.load_evalset` and the planner's
few-shot pool (``tinyagent.functions.builtin_examples``) read it.

Every case is written from templates by hand-chosen phrasings and slot values; nothing comes from a model.
Relative dates are resolved with ``tinyagent.functions`` conventions against each case's ``today`` and the
expression is kept in ``date_exprs`` so the checker can re-resolve it. The split is by a hash of the query
within each template category (60% train, 40% test), so every category is in both splits.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tinyagent.evals._evalcheck import iso_when
from tinyagent.functions import resolve_expression

OUT = Path(__file__).parent.parent / "functions" / "data" / "evalset.jsonl"
SEED = 2026

TODAYS = [dt.date(2026, 12, 1), dt.date(2026, 12, 4), dt.date(2027, 1, 11), dt.date(2027, 2, 24),
          dt.date(2027, 3, 18), dt.date(2026, 11, 29)]
PEOPLE = ["Sid", "Alex Chen", "Priya", "Maria Garcia", "Bob", "Liz", "José", "Zoë", "Tom", "Sydney", "Alex Kim",
          "Priya Sharma", "Robert Miller", "Jordan", "Emma", "Lucas", "Nina", "Omar", "Hannah", "Kenji"]
ADDRESSES = ["jane@corp.com", "ops@acme.io", "kenji.sato@example.jp", "billing@vendor.com", "team@acme.io",
             "nina.r@example.org", "hr@globex.com", "dev-list@example.net"]
PHONES = ["+1 415 555 0199", "555-0142", "+44 20 7946 0958", "+1 212 555 0175", "+49 30 1234567"]
CONTENT = [("the deploy is done", "Deploy done"), ("I'll be 10 minutes late", "Running late"),
           ("the budget draft is ready for review", "Budget draft"), ("lunch is on me today", "Lunch"),
           ("the client call moved to Thursday", "Client call moved"), ("thanks for the help yesterday", "Thanks"),
           ("the slides are ready", "Slides ready"), ("we need to reschedule the review", "Reschedule the review"),
           ("the offsite is confirmed", "Offsite confirmed"), ("the build is green again", "Build fixed")]
TEXTS = ["running late, start without me", "I'm outside", "call me when you can", "happy birthday!",
         "the meeting moved to 3pm", "can you pick up coffee?", "landed, see you soon", "don't forget the keys"]
TOPICS = ["roadmap review", "budget sync", "design review", "project kickoff", "hiring debrief", "coffee chat",
          "sprint planning", "customer demo", "team retro", "quarterly planning"]
DATETIMES = ["tomorrow at 10am", "tomorrow at 2pm", "next Friday at 3pm", "Monday at 9:30am", "Thursday at 11am",
             "today at 4pm", "Wednesday at noon", "in 2 days at 10am", "tomorrow morning", "Friday at 1:30pm",
             "next Tuesday at 4pm", "tomorrow at 9"]
DAYS = ["tomorrow", "today", "Friday", "next Monday", "in 3 days", "next week", "Thursday",
        "the day after tomorrow"]
TASKS = ["call the dentist", "pay the electricity bill", "renew my passport", "water the plants",
         "book flights to Berlin", "send the invoice", "pick up the dry cleaning", "submit the expense report"]
LIST_ITEMS = [("eggs", "Groceries"), ("oat milk", "Groceries"), ("batteries", "Shopping"), ("Dune", "Books to read"),
              ("fix the gate", "Home"), ("new running shoes", "Shopping"), ("coffee beans", "Groceries"),
              ("clean the gutters", "Home")]
NOTES = ["Shopping list", "Project Falcon ideas", "Gift ideas", "Meeting notes", "Reading list", "Travel plans"]
DOCS = ["lunch menu", "Q4 budget", "Project Falcon proposal", "trip itinerary"]
PLACES = [("Union Square", "the Ferry Building"), ("the office", "Central Station"), ("home", "the airport"),
          ("Hotel am Main", "the Frankfurt office"), ("the hotel", "the Louvre"), ("work", "Golden Gate Park")]
SINGLE_PLACES = ["the Eiffel Tower", "Cafe Roma", "Central Park", "the Frankfurt office", "Alexanderplatz"]
INBOX = [("Sid", "budget review"), ("Alex Chen", "offsite agenda"), ("Maria Garcia", "dinner on Friday")]
NO_TOOL = [
    ("What is the capital of France?", "Paris."), ("How many minutes are in 3 hours?", "180 minutes."),
    ("Thanks, that's all!", "You're welcome!"), ("What's 15% of 80?", "12."),
    ("Tell me a fun fact about octopuses.", "An octopus has three hearts."),
    ("Translate 'good morning' into Spanish.", "Buenos días."), ("Who wrote Pride and Prejudice?", "Jane Austen."),
    ("How many days are in a leap year?", "366."), ("Hi there!", "Hello! How can I help?"),
    ("What does RSVP stand for?", "Répondez s'il vous plaît: please reply."),
    ("Convert 5 kilometers to miles.", "About 3.1 miles."), ("Is a tomato a fruit?", "Yes, botanically."),
    ("What's the boiling point of water in Fahrenheit?", "212 °F at sea level."),
    ("What can you do?", "I can email, text, manage your calendar, reminders, notes and files, and make map links."),
    ("How many weeks are in a year?", "52 weeks."), ("What is 12 times 12?", "144."),
    ("Give me a synonym for 'happy'.", "Joyful."),
]
TYPOS = {"email": "emial", "tomorrow": "tomorow", "calendar": "calender", "Remind": "Remnd", "meeting": "meting",
         "Schedule": "Shedule", "Text": "Txt", "reminder": "remider"}


class Builder:
    def __init__(self) -> None:
        self.rng = random.Random(SEED)
        self.cases: list[dict[str, Any]] = []
        self.queries: set[str] = set()

    def today(self) -> dt.date:
        return self.rng.choice(TODAYS)

    def pick(self, seq: list[Any]) -> Any:
        return self.rng.choice(seq)

    def when(self, today: dt.date, phrases: list[str]) -> tuple[str, str]:
        """A phrase that does not name today's own weekday (ambiguous to people), and its resolved value."""
        for _ in range(50):
            phrase = self.pick(phrases)
            weekday = today.strftime("%A").lower()
            if weekday not in phrase.lower():
                break
        return phrase, iso_when(*resolve_expression(phrase, today))

    def add(self, query: str, today: dt.date, calls: list[tuple[str, dict[str, Any]]],
            key_args: dict[int, list[str]] | None = None, date_exprs: dict[int, dict[str, str]] | None = None,
            answer: str | None = None) -> bool:
        query = query[0].upper() + query[1:]
        if query in self.queries:
            return False
        self.queries.add(query)
        self.cases.append({
            "query": query, "today": today.isoformat(),
            "calls": [{"id": i, "name": n, "args": a} for i, (n, a) in enumerate(calls, 1)],
            "key_args": {str(k): v for k, v in (key_args or {}).items()}, "answer": answer,
            **({"date_exprs": {str(k): v for k, v in date_exprs.items()}} if date_exprs else {}),
        })
        return True

    def repeat(self, n: int, make: Callable[[], bool], category: str) -> None:
        made, tries = 0, 0
        while made < n and tries < n * 30:
            tries += 1
            if make():
                made += 1
                self.cases[-1]["category"] = category


def typo(text: str, rng: random.Random) -> str:
    words = [w for w in TYPOS if w in text]
    if not words:
        return text
    w = rng.choice(words)
    return text.replace(w, TYPOS[w], 1)


# -- templates: one function per category (its name is the category); each adds one case or returns False --
def lookup_email(b: Builder) -> bool:
    name = b.pick(PEOPLE)
    q = b.pick(["What's {n}'s email address?", "Can you give me {n}'s email?", "I need the email for {n}.",
                "email address of {n}?", "Look up {n}'s email."]).format(n=name)
    return b.add(q, b.today(), [("get_email_address", {"name": name})], {1: ["name"]})

def lookup_phone(b: Builder) -> bool:
    name = b.pick(PEOPLE)
    q = b.pick(["What's {n}'s phone number?", "Give me {n}'s number.", "How do I reach {n} by phone?",
                "Find the phone number for {n}."]).format(n=name)
    return b.add(q, b.today(), [("get_phone_number", {"name": name})], {1: ["name"]})

def email_person(b: Builder, with_typo: bool = False) -> bool:
    r = b.rng
    name = b.pick(PEOPLE)
    content, subject = b.pick(CONTENT)
    q = b.pick(["Email {n} that {c}", "Send {n} an email saying {c}", "Write an email to {n}: {c}",
                "Let {n} know by email that {c}"]).format(n=name, c=content)
    if with_typo:
        q = typo(q, r)
    return b.add(q, b.today(), [
        ("get_email_address", {"name": name}),
        ("send_email", {"to": ["$1"], "subject": subject, "body": content[0].upper() + content[1:] + "."}),
    ], {1: ["name"], 2: ["to"]})

def email_address(b: Builder) -> bool:
    r = b.rng
    addr = b.pick(ADDRESSES)
    content, subject = b.pick(CONTENT)
    if r.random() < 0.5:
        q = f"Send an email to {addr} with the subject '{subject}' saying {content}"
        keys = ["to", "subject"]
    else:
        q = b.pick(["Email {a} that {c}", "Write to {a}: {c}", "Shoot {a} an email: {c}"]).format(a=addr, c=content)
        keys = ["to"]
    return b.add(q, b.today(), [("send_email", {"to": [addr], "subject": subject, "body": content})], {1: keys})

def email_two(b: Builder) -> bool:
    r = b.rng
    a, c = r.sample(PEOPLE, 2)
    content, subject = b.pick(CONTENT)
    q = b.pick(["Email {a} and {b} that {c}", "Send an email to {a} and {b}: {c}"]).format(a=a, b=c, c=content)
    return b.add(q, b.today(), [
        ("get_email_address", {"name": a}), ("get_email_address", {"name": c}),
        ("send_email", {"to": ["$1", "$2"], "subject": subject, "body": content}),
    ], {1: ["name"], 2: ["name"], 3: ["to"]})

def email_cc(b: Builder) -> bool:
    r = b.rng
    a, c = r.sample(PEOPLE, 2)
    content, subject = b.pick(CONTENT)
    q = f"Email {a} that {content}, and cc {c}"
    return b.add(q, b.today(), [
        ("get_email_address", {"name": a}), ("get_email_address", {"name": c}),
        ("send_email", {"to": ["$1"], "cc": ["$2"], "subject": subject, "body": content}),
    ], {1: ["name"], 2: ["name"], 3: ["to", "cc"]})

def text_person(b: Builder, with_typo: bool = False) -> bool:
    r = b.rng
    name, text = b.pick(PEOPLE), b.pick(TEXTS)
    q = b.pick(["Text {n} that {t}", "Send {n} a text: {t}", "Message {n}: {t}", "Text {n} '{t}'"]).format(
        n=name, t=text)
    if with_typo:
        q = typo(q, r)
    return b.add(q, b.today(), [("get_phone_number", {"name": name}),
                                ("send_message", {"recipients": ["$1"], "text": text})],
                 {1: ["name"], 2: ["recipients"]})

def text_number(b: Builder) -> bool:
    phone, text = b.pick(PHONES), b.pick(TEXTS)
    q = b.pick(["Send a text to {p} saying {t}", "Text {p}: {t}", "Message {p} that {t}"]).format(p=phone, t=text)
    return b.add(q, b.today(), [("send_message", {"recipients": [phone], "text": text})], {1: ["recipients"]})

def text_two(b: Builder) -> bool:
    r = b.rng
    a, c = r.sample(PEOPLE, 2)
    text = b.pick(TEXTS)
    q = f"Text {a} and {c}: {text}"
    return b.add(q, b.today(), [("get_phone_number", {"name": a}), ("get_phone_number", {"name": c}),
                                ("send_message", {"recipients": ["$1", "$2"], "text": text})],
                 {1: ["name"], 2: ["name"], 3: ["recipients"]})

def meeting_with(b: Builder, with_typo: bool = False) -> bool:
    r = b.rng
    today, name, topic = b.today(), b.pick(PEOPLE), b.pick(TOPICS)
    phrase, start = b.when(today, DATETIMES)
    minutes = b.pick([30, 45, 60, 90])
    q = b.pick(["Schedule a {m}-minute {t} with {n} {w}", "Set up a {m} minute meeting with {n} {w} for the {t}",
                "Book {m} minutes with {n} {w} for a {t}"]).format(m=minutes, t=topic, n=name, w=phrase)
    if with_typo:
        q = typo(q, r)
    return b.add(q, today, [
        ("get_email_address", {"name": name}),
        ("create_calendar_event", {"title": topic.capitalize(), "start": start, "duration_minutes": minutes,
                                   "invitees": ["$1"]}),
    ], {1: ["name"], 2: ["start", "duration_minutes", "invitees"]}, {2: {"start": phrase}})

def event_alone(b: Builder) -> bool:
    r = b.rng
    today, topic = b.today(), b.pick(TOPICS + ["dentist appointment", "gym", "focus time", "haircut"])
    phrase, start = b.when(today, DATETIMES)
    if r.random() < 0.5:
        q = b.pick(["Put {t} on my calendar {w}", "Add {t} to my calendar {w}",
                    "Create an event '{t}' {w}"]).format(t=topic, w=phrase)
        args: dict[str, Any] = {"title": topic.capitalize(), "start": start}
    else:
        minutes = b.pick([15, 30, 45, 90, 120])
        q = b.pick(["Block {m} minutes {w} for {t}", "Add a {m} minute {t} to my calendar {w}"]).format(
            m=minutes, w=phrase, t=topic)
        args = {"title": topic.capitalize(), "start": start, "duration_minutes": minutes}
    return b.add(q, today, [("create_calendar_event", args)], {1: ["start", "duration_minutes"]},
                 {1: {"start": phrase}})

def event_address(b: Builder) -> bool:
    today, addr, topic = b.today(), b.pick(ADDRESSES), b.pick(TOPICS)
    phrase, start = b.when(today, DATETIMES)
    q = f"Invite {addr} to a {topic} {phrase}"
    return b.add(q, today, [("create_calendar_event", {"title": topic.capitalize(), "start": start,
                                                       "invitees": [addr]})],
                 {1: ["start", "invitees"]}, {1: {"start": phrase}})

def list_day(b: Builder) -> bool:
    today = b.today()
    phrase, day = b.when(today, DAYS + ["yesterday"])
    q = b.pick(["What's on my calendar {d}?", "Do I have any meetings {d}?", "Show my schedule for {d}",
                "What am I doing {d}?"]).format(d=phrase)
    return b.add(q, today, [("list_calendar_events", {"date": day})], {1: ["date"]}, {1: {"date": phrase}})

def conflicts(b: Builder) -> bool:
    today = b.today()
    phrase, start = b.when(today, DATETIMES)
    minutes = b.pick([30, 60, 90])
    q = b.pick(["Would a {m} minute meeting {w} clash with anything?", "Am I free {w} for {m} minutes?",
                "Check for conflicts with a {m}-minute call {w}"]).format(m=minutes, w=phrase)
    return b.add(q, today, [("find_calendar_conflicts", {"start": start, "duration_minutes": minutes})],
                 {1: ["start", "duration_minutes"]}, {1: {"start": phrase}})

def reminder(b: Builder, with_typo: bool = False) -> bool:
    r = b.rng
    today, task = b.today(), b.pick(TASKS)
    phrase, due = b.when(today, DAYS[:-1] + DATETIMES[:6])
    q = b.pick(["Remind me to {t} {d}", "Set a reminder to {t} {d}", "Add a reminder: {t} {d}"]).format(
        t=task, d=phrase)
    if with_typo:
        q = typo(q, r)
    return b.add(q, today, [("create_reminder", {"title": task[0].upper() + task[1:], "due": due})],
                 {1: ["due"]}, {1: {"due": phrase}})

def reminder_list(b: Builder) -> bool:
    item, name = b.pick(LIST_ITEMS)
    q = b.pick(["Add {i} to my {l} list", "Put {i} on the {l} list", "{i} goes on my {l} list"]).format(
        i=item, l=name)
    return b.add(q, b.today(), [("create_reminder", {"title": item, "list_name": name})], {1: ["list_name"]})

def list_reminders(b: Builder) -> bool:
    r = b.rng
    if r.random() < 0.3:
        q = b.pick(["What reminders do I have?", "Show all my reminders", "What's on my to-do list?"])
        return b.add(q, b.today(), [("list_reminders", {})], {})
    name = b.pick(sorted({n for _, n in LIST_ITEMS}))
    q = b.pick(["What's on my {l} list?", "Show me the {l} list", "Read me my {l} reminders"]).format(l=name)
    return b.add(q, b.today(), [("list_reminders", {"list_name": name})], {1: ["list_name"]})

def create_note(b: Builder) -> bool:
    title = b.pick(["Packing list", "Ideas for the offsite", "Book club", "Garden plan", "Call notes",
                    "Recipe: pancakes"])
    body = b.pick(["passport, charger, umbrella", "hiking, a cooking class, karaoke",
                   "read chapters 1-5 by Friday", "plant tomatoes in April", "flour, eggs, milk, butter"])
    q = b.pick(["Make a note called '{t}': {b}", "Create a note titled {t} with {b}",
                "New note '{t}' saying {b}"]).format(t=title, b=body)
    return b.add(q, b.today(), [("create_note", {"title": title, "body": body})], {1: ["title"]})

def append_note(b: Builder) -> bool:
    title = b.pick(NOTES)
    text = b.pick(["call the plumber", "ask about parking", "olive oil", "Dune by Frank Herbert",
                   "book the train to Lyon", "idea: dark mode"])
    q = b.pick(["Add '{x}' to my {t} note", "Append {x} to the {t} note", "Put {x} in my {t} note"]).format(
        x=text, t=title)
    return b.add(q, b.today(), [("append_note", {"title": title, "text": text})], {1: ["title"]})

def open_note(b: Builder) -> bool:
    title = b.pick(NOTES)
    q = b.pick(["Show me my {t} note", "Open the {t} note", "What's in my {t} note?"]).format(t=title)
    return b.add(q, b.today(), [("open_note", {"title": title})], {1: ["title"]})

def search_notes(b: Builder) -> bool:
    word = b.pick(["offsite", "webhook", "budget", "Zoë", "passport", "Falcon"])
    q = b.pick(["Which of my notes mention {w}?", "Search my notes for {w}", "Find notes about {w}"]).format(w=word)
    return b.add(q, b.today(), [("search_notes", {"query": word})], {1: ["query"]})

def delete_note(b: Builder) -> bool:
    title = b.pick(NOTES)
    q = b.pick(["Delete the {t} note", "Remove my note {t}", "Trash the note called {t}"]).format(t=title)
    return b.add(q, b.today(), [("delete_note", {"title": title})], {1: ["title"]})

def find_file(b: Builder) -> bool:
    doc = b.pick(DOCS)
    q = b.pick(["Where is the {d} file?", "Find the {d}", "Locate my {d} document"]).format(d=doc)
    return b.add(q, b.today(), [("find_file", {"query": doc})], {})

def summarize(b: Builder) -> bool:
    doc = b.pick(DOCS)
    q = b.pick(["Summarize the {d}", "Give me a summary of the {d} document",
                "What's the gist of the {d}?"]).format(d=doc)
    return b.add(q, b.today(), [("find_file", {"query": doc}), ("summarize_file", {"path": "$1"})],
                 {2: ["path"]})

def read_doc(b: Builder) -> bool:
    doc, question = b.pick([("lunch menu", "what's for lunch on Friday"), ("trip itinerary", "when my flight is"),
                            ("Q4 budget", "how much we spend on travel"),
                            ("Project Falcon proposal", "who owns the project")])
    q = f"Check the {doc} and tell me {question}"
    return b.add(q, b.today(), [("find_file", {"query": doc}), ("read_file", {"path": "$1"})], {2: ["path"]})

def send_file(b: Builder) -> bool:
    doc, name = b.pick(DOCS), b.pick(PEOPLE)
    q = b.pick(["Send the {d} to {n}", "Email {n} the {d} file", "Attach the {d} and email it to {n}"]).format(
        d=doc, n=name)
    return b.add(q, b.today(), [
        ("find_file", {"query": doc}), ("get_email_address", {"name": name}),
        ("send_email", {"to": ["$2"], "subject": doc.capitalize(), "body": f"Here is the {doc}.",
                        "attachments": ["$1"]}),
    ], {2: ["name"], 3: ["to", "attachments"]})

def email_note(b: Builder) -> bool:
    name, title = b.pick(PEOPLE), b.pick(NOTES)
    q = b.pick(["Email {n} my {t} note", "Send {n} the contents of my {t} note by email"]).format(n=name, t=title)
    return b.add(q, b.today(), [
        ("get_email_address", {"name": name}), ("open_note", {"title": title}),
        ("send_email", {"to": ["$1"], "subject": title, "body": "$2"}),
    ], {1: ["name"], 2: ["title"], 3: ["to", "body"]})

def standup_combo(b: Builder) -> bool:
    today, name = b.today(), b.pick(["Sid", "Alex Chen", "Priya", "Maria Garcia"])
    phrase, start = b.when(today, ["tomorrow at 10", "tomorrow at 10am", "Friday at 2pm", "tomorrow at 11am",
                                   "next Monday at 9am"])
    minutes = b.pick([15, 30, 45])
    q = (f"Email {name} the notes from today's standup and put a {minutes} minute follow-up on my calendar "
         f"for {phrase}")
    return b.add(q, today, [
        ("get_email_address", {"name": name}), ("open_note", {"title": "standup"}),
        ("send_email", {"to": ["$1"], "subject": "Standup notes", "body": "$2"}),
        ("create_calendar_event", {"title": "Follow-up", "start": start, "duration_minutes": minutes}),
    ], {1: ["name"], 3: ["to", "body"], 4: ["start", "duration_minutes"]}, {4: {"start": phrase}})

def directions(b: Builder) -> bool:
    r = b.rng
    if r.random() < 0.35:
        place = b.pick(SINGLE_PLACES)
        q = b.pick(["Show me {p} on a map", "Where is {p}?", "Open a map of {p}"]).format(p=place)
        return b.add(q, b.today(), [("get_directions", {"destination": place})], {1: ["destination", "origin"]})
    origin, dest = b.pick(PLACES)
    if r.random() < 0.4:
        q = f"Walking directions from {origin} to {dest}"
        args = {"destination": dest, "origin": origin, "mode": "walking"}
    else:
        q = b.pick(["How do I get from {o} to {d}?", "Directions from {o} to {d}, please",
                    "Route from {o} to {d}"]).format(o=origin, d=dest)
        args = {"destination": dest, "origin": origin}
    return b.add(q, b.today(), [("get_directions", args)], {1: ["destination", "origin", "mode"]})

def meeting_link(b: Builder) -> bool:
    topic = b.pick(TOPICS)
    q = b.pick(["Create a meeting link for the {t}", "I need a video call link for our {t}"]).format(t=topic)
    return b.add(q, b.today(), [("create_meeting_link", {"title": topic.capitalize()})], {})

def video_call(b: Builder) -> bool:
    today, name, topic = b.today(), b.pick(PEOPLE), b.pick(TOPICS)
    phrase, start = b.when(today, DATETIMES)
    q = b.pick(["Set up a video call with {n} {w} about the {t}", "Schedule an online {t} with {n} {w}"]).format(
        n=name, w=phrase, t=topic)
    return b.add(q, today, [
        ("create_meeting_link", {"title": topic.capitalize()}), ("get_email_address", {"name": name}),
        ("create_calendar_event", {"title": topic.capitalize(), "start": start, "invitees": ["$2"],
                                   "location": "$1"}),
    ], {2: ["name"], 3: ["start", "invitees", "location"]}, {3: {"start": phrase}})

def time_q(b: Builder) -> bool:
    r = b.rng
    if r.random() < 0.4:
        q = b.pick(["What's today's date?", "What day is it today?", "Which day of the week is it?",
                    "What is the date?"])
        return b.add(q, b.today(), [("get_today", {})], {})
    expr = b.pick(["next Friday", "in 3 weeks", "the day after tomorrow", "next Monday", "Thursday",
                   "the end of the month"])
    q = b.pick(["What date is {e}?", "Which date will it be {e}?"]).format(e=expr)
    return b.add(q, b.today(), [("resolve_date", {"expression": expr})], {})

def reply(b: Builder) -> bool:
    who, subject = b.pick(INBOX)
    text = b.pick(["sounds good", "I'll take a look today", "yes, count me in", "can we push it a week?"])
    q = b.pick(["Reply to {w}'s {s} email saying {t}", "Answer the {s} email: {t}"]).format(
        w=who, s=subject, t=text)
    return b.add(q, b.today(), [("reply_to_email", {"message": subject, "body": text})], {})

def forward(b: Builder) -> bool:
    r = b.rng
    _, subject = b.pick(INBOX)
    if r.random() < 0.35:
        addr = b.pick(ADDRESSES)
        q = f"Forward the {subject} email to {addr}"
        return b.add(q, b.today(), [("forward_email", {"message": subject, "to": [addr]})], {1: ["to"]})
    name = b.pick(PEOPLE)
    q = b.pick(["Forward the {s} email to {n}", "Send {n} the {s} email"]).format(s=subject, n=name)
    return b.add(q, b.today(), [("get_email_address", {"name": name}),
                                ("forward_email", {"message": subject, "to": ["$1"]})],
                 {1: ["name"], 2: ["to"]})

def fan_out(b: Builder) -> bool:
    r = b.rng
    today = b.today()
    kind = r.randrange(4)
    if kind == 0:
        name, text, task = b.pick(PEOPLE), b.pick(TEXTS), b.pick(TASKS)
        phrase, due = b.when(today, DAYS[:-1])
        q = f"Text {name} that {text} and remind me to {task} {phrase}"
        return b.add(q, today, [("get_phone_number", {"name": name}),
                                ("send_message", {"recipients": ["$1"], "text": text}),
                                ("create_reminder", {"title": task[0].upper() + task[1:], "due": due})],
                     {1: ["name"], 2: ["recipients"], 3: ["due"]}, {3: {"due": phrase}})
    if kind == 1:
        phrase, day = b.when(today, DAYS)
        item, name = b.pick(LIST_ITEMS)
        q = f"What's on my calendar {phrase}, and what's on my {name} list?"
        return b.add(q, today, [("list_calendar_events", {"date": day}), ("list_reminders", {"list_name": name})],
                     {1: ["date"], 2: ["list_name"]}, {1: {"date": phrase}})
    if kind == 2:
        a, c = r.sample(PEOPLE, 2)
        q = f"Get me the email addresses of {a} and {c}"
        return b.add(q, today, [("get_email_address", {"name": a}), ("get_email_address", {"name": c})],
                     {1: ["name"], 2: ["name"]})
    phrase, start = b.when(today, DATETIMES)
    topic, item = b.pick(TOPICS), b.pick(["call the plumber", "idea: dark mode", "ask about parking"])
    q = f"Add {topic} to my calendar {phrase} and add '{item}' to my Meeting notes note"
    return b.add(q, today, [("create_calendar_event", {"title": topic.capitalize(), "start": start}),
                            ("append_note", {"title": "Meeting notes", "text": item})],
                 {1: ["start"], 2: ["title"]}, {1: {"start": phrase}})

def no_tool(b: Builder) -> bool:
    q, answer = NO_TOOL[len([c for c in b.cases if not c["calls"]]) % len(NO_TOOL)]
    return b.add(q, b.today(), [], {}, answer=answer)

def typo_email(b: Builder) -> bool:
    return email_person(b, True)

def typo_meeting(b: Builder) -> bool:
    return meeting_with(b, True)

def typo_reminder(b: Builder) -> bool:
    return reminder(b, True)

def typo_text(b: Builder) -> bool:
    return text_person(b, True)


Template = Callable[[Builder], bool]


def build() -> list[dict[str, Any]]:
    """Every case, in a fixed order, with ids and the stratified split."""
    b = Builder()
    plan: list[tuple[int, Template]] = [
        (7, lookup_email), (6, lookup_phone), (12, email_person), (8, email_address), (6, email_two), (4, email_cc),
        (8, text_person), (6, text_number), (5, text_two), (10, meeting_with), (10, event_alone), (5, event_address),
        (8, list_day), (6, conflicts), (9, reminder), (6, reminder_list), (5, list_reminders), (5, create_note),
        (6, append_note), (4, open_note), (4, search_notes), (3, delete_note), (4, find_file), (5, summarize),
        (4, read_doc), (6, send_file), (5, email_note), (6, standup_combo), (7, directions), (3, meeting_link),
        (5, video_call), (6, time_q), (5, reply), (6, forward), (10, fan_out), (17, no_tool),
        (3, typo_email), (3, typo_meeting), (3, typo_reminder), (2, typo_text),
    ]
    for count, make in plan:
        b.repeat(count, functools.partial(make, b), make.__name__)
    for i, case in enumerate(b.cases, 1):
        case["id"] = f"fn-{i:04d}"
    # Stratified split: within each category, the 60% of cases with the smallest query hash are train.
    by_category: dict[str, list[dict[str, Any]]] = {}
    for case in b.cases:
        by_category.setdefault(case["category"], []).append(case)
    for group in by_category.values():
        group.sort(key=lambda c: hashlib.sha256(c["query"].encode("utf-8")).hexdigest())
        n_train = round(len(group) * 0.6)
        for j, case in enumerate(group):
            case["split"] = "train" if j < n_train else "test"
    order = ["id", "query", "today", "split", "category", "calls", "key_args", "answer", "date_exprs"]
    return [{k: c[k] for k in order if k in c} for c in b.cases]


def main() -> int:
    cases = build()
    OUT.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases), encoding="utf-8")
    train = sum(c["split"] == "train" for c in cases)
    sys.stderr.write(f"wrote {len(cases)} cases ({train} train, {len(cases) - train} test) to {OUT}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
