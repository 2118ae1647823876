"""Messages, maps, meetings, the terminal confirmation hook, the demo data set, the tool list, and the
acceptance request run end to end through the Agent (scripted planner, real tools, real files)."""

from __future__ import annotations

import datetime as dt
import email
import email.policy
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import icalendar
import pytest
from _helpers_functions import TODAY, allow, deny

import tinyagent.functions as functions
from tinyagent import ConfirmationRequest, Tool, ToolContext, ToolRegistry
from tinyagent.errors import ConfirmationDenied
from tinyagent.functions import (
    TOOL_NAMES,
    ContactFieldMissing,
    DeliveryError,
    FunctionsSettings,
    InvalidArgument,
    builtin_tools,
    init_demo,
    terminal_confirm,
)


def tools_for(data_dir: Path, **settings: Any) -> dict[str, Tool]:
    return {t.name: t for t in builtin_tools(FunctionsSettings(data_dir=data_dir, timezone="UTC", **settings))}


async def call(tools: dict[str, Tool], tool_name: str, /, hook: Any = deny, **args: Any) -> Any:
    return await tools[tool_name].call(args, ToolContext(today=TODAY, confirm_hook=hook))


# -- tool list ---------------------------------------------------------------------------------------------------
def test_public_api() -> None:
    assert sorted(functions.__all__) == sorted(set(functions.__all__))
    for name in functions.__all__:
        assert hasattr(functions, name), name


def test_tool_list_is_small_planner_friendly(tmp_path: Path) -> None:
    tools = builtin_tools(FunctionsSettings(data_dir=tmp_path))
    assert tuple(t.name for t in tools) == TOOL_NAMES
    assert 16 <= len(tools) <= 24
    registry = ToolRegistry(tools)  # names are unique
    for t in registry.values():
        assert t.description and len(t.description) < 120, t.name
        assert len(t.required) <= 3, t.name
        for name, schema in t.parameters["properties"].items():
            assert schema.get("description"), f"{t.name}.{name} has no description"
            assert schema.get("type") in ("string", "integer", "array"), f"{t.name}.{name}"
            if schema.get("type") == "array":
                assert schema["items"].get("type") == "string"
        assert "ctx" not in t.parameters["properties"]


# -- messages ------------------------------------------------------------------------------------------------
async def test_send_message_default_outbox(data_dir: Path) -> None:
    tools = tools_for(data_dir)
    result = await call(tools, "send_message", recipients=["Sid", "+1 415 555 0199"], text="running late")
    assert result["to"] == ["+1 555 0101", "+1 415 555 0199"] and result["status"] == "queued in outbox"
    [path] = list((data_dir / "messages" / "outbox").glob("*.json"))
    record = json.loads(path.read_text())
    assert record["to"] == ["+1 555 0101", "+1 415 555 0199"] and record["text"] == "running late"


class FakeGateway:
    """An outgoing transport (like an SMS gateway)."""

    outgoing = True

    def __init__(self, fail: bool = False) -> None:
        self.sent: list[tuple[list[str], str]] = []
        self.fail = fail

    def send(self, recipients: Sequence[str], text: str) -> str:
        if self.fail:
            raise ConnectionError("gateway unreachable")
        self.sent.append((list(recipients), text))
        return f"msg-{len(self.sent)}"


async def test_outgoing_transport_confirms_first(data_dir: Path) -> None:
    gateway = FakeGateway()
    tools = tools_for(data_dir, message_transport=gateway)
    with pytest.raises(ConfirmationDenied):
        await call(tools, "send_message", hook=deny, recipients=["555-0142"], text="hi")
    assert gateway.sent == []
    result = await call(tools, "send_message", hook=allow, recipients=["555-0142"], text="hi")
    assert result == {"to": ["555-0142"], "status": "sent", "id": "msg-1"}
    assert gateway.sent == [(["555-0142"], "hi")]


async def test_message_errors(data_dir: Path) -> None:
    tools = tools_for(data_dir, message_transport=FakeGateway(fail=True))
    with pytest.raises(DeliveryError, match="gateway unreachable"):
        await call(tools, "send_message", hook=allow, recipients=["555-0142"], text="hi")
    with pytest.raises(InvalidArgument, match="empty"):
        await call(tools, "send_message", hook=allow, recipients=["555-0142"], text="  ")
    with pytest.raises(InvalidArgument, match="at least one"):
        await call(tools, "send_message", hook=allow, recipients=[], text="x")


async def test_contact_without_phone(data_dir: Path) -> None:
    contacts = data_dir / "contacts"
    (contacts / "Nophone.vcf").write_text("BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Nora Phoneless\r\n"
                                         "EMAIL:nora@example.com\r\nEND:VCARD\r\n")
    tools = tools_for(data_dir)
    with pytest.raises(ContactFieldMissing, match="no phone number"):
        await call(tools, "send_message", recipients=["Nora"], text="x")


# -- maps and meetings -------------------------------------------------------------------------------------------
async def test_directions_and_location_urls_go_through_the_opener(data_dir: Path) -> None:
    opened: list[str] = []
    tools = tools_for(data_dir, url_opener=opened.append)
    url = await call(tools, "get_directions", destination="Ferry Building", origin="Union Square", mode="walking")
    assert url == ("https://www.openstreetmap.org/directions?engine=fossgis_osrm_foot&from=Union+Square"
                   "&to=Ferry+Building")
    place = await call(tools, "get_directions", destination="Café Roma, Berlin")
    assert place == "https://www.openstreetmap.org/search?query=Caf%C3%A9+Roma%2C+Berlin"
    assert opened == [url, place]
    with pytest.raises(InvalidArgument, match="unknown travel mode 'teleport'"):
        await call(tools, "get_directions", destination="x", origin="y", mode="teleport")


async def test_custom_map_provider_and_meeting_template(data_dir: Path) -> None:
    tools = tools_for(
        data_dir,
        map_directions_url="https://maps.example/dir?o={origin}&d={destination}&m={mode}",
        map_modes={"driving": "car"},
        meeting_url_template="https://meet.example/{slug}",
    )
    assert await call(tools, "get_directions", destination="B", origin="A") == "https://maps.example/dir?o=A&d=B&m=car"
    assert await call(tools, "create_meeting_link", title="Design Sync #2") == "https://meet.example/design-sync-2"


async def test_meeting_link_default_and_opener_failure_is_harmless(data_dir: Path) -> None:
    def broken(url: str) -> None:
        raise RuntimeError("no browser")

    tools = tools_for(data_dir, url_opener=broken)
    url = await call(tools, "create_meeting_link", title="Budget sync")
    assert url.startswith("https://meet.jit.si/budget-sync-") and len(url.rsplit("-", 1)[1]) == 8


# -- confirmation hook -------------------------------------------------------------------------------------------
class FakeStdin(io.StringIO):
    def __init__(self, text: str, tty: bool) -> None:
        super().__init__(text)
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize(("typed", "tty", "expected"), [("y\n", True, True), ("yes\n", True, True),
                                                        ("n\n", True, False), ("\n", True, False),
                                                        ("", True, False), ("y\n", False, False)])
def test_terminal_confirm(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], typed: str, tty: bool,
                          expected: bool) -> None:
    monkeypatch.setattr("sys.stdin", FakeStdin(typed, tty))
    request = ConfirmationRequest(tool="send_email", action="send the email 'Hi' to sid@example.com",
                                  details={"to": ["sid@example.com"], "body": "secret body"})
    assert terminal_confirm(request) is expected
    out = capsys.readouterr().out
    if tty:
        assert "send_email wants to send the email 'Hi'" in out and "secret body" not in out
    else:
        assert out == ""


# -- demo ------------------------------------------------------------------------------------------------------
def test_init_demo_is_idempotent_and_real(tmp_path: Path) -> None:
    first = init_demo(tmp_path, today=TODAY, timezone="UTC")
    snapshot = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    second = init_demo(tmp_path, today=TODAY, timezone="UTC")
    assert first.created > 20 and second.created == 0
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == snapshot
    assert "Sid Patel" in first.contacts and sum(n.startswith("Alex ") for n in first.contacts) == 2
    assert f"Standup {TODAY.isoformat()}" in first.notes
    cal = icalendar.Calendar.from_ical((tmp_path / "calendar" / "calendar.ics").read_bytes())
    assert sorted(str(e["summary"]) for e in cal.walk("VEVENT")) == sorted(first.events)
    assert len(list(cal.walk("VTODO"))) == 2
    import pypdf

    pdf = tmp_path / "files" / "Lunch menu.pdf"
    assert pdf in first.files
    assert "Margherita pizza" in pypdf.PdfReader(pdf).pages[0].extract_text()
    for eml in (tmp_path / "mail" / "inbox").glob("*.eml"):
        assert email.message_from_bytes(eml.read_bytes(), policy=email.policy.default)["From"]


def test_init_demo_keeps_user_edits(tmp_path: Path) -> None:
    init_demo(tmp_path, today=TODAY)
    note = tmp_path / "notes" / "personal" / "Shopping list.md"
    note.write_text("# Shopping list\n\n- my own item\n")
    init_demo(tmp_path, today=TODAY)
    assert note.read_text() == "# Shopping list\n\n- my own item\n"


# -- the acceptance request, end to end ----------------------------------------------------------------------------
ACCEPTANCE = ("Email Sid the notes from today's standup and put a 30 minute follow-up on my calendar for "
              "tomorrow at 10")
ACCEPTANCE_PLAN = """1. get_email_address(name="Sid")
2. open_note(title="today's standup")
3. send_email(to=[$1], subject="Notes from today's standup", body=$2)
4. create_calendar_event(title="Follow-up", start="2026-12-02T10:00", duration_minutes=30)
5. join()
<END_OF_PLAN>"""


async def test_acceptance_request_through_the_agent(data_dir: Path) -> None:
    from tinyagent import Agent
    from tinyagent.models import ScriptedModel

    settings = FunctionsSettings(data_dir=data_dir, timezone="UTC")
    model = ScriptedModel([ACCEPTANCE_PLAN, "I emailed Sid the standup notes and added the follow-up."])
    agent = Agent(tools=builtin_tools(settings), model=model, confirm=deny)
    result = await agent.run(ACCEPTANCE, today=TODAY)
    assert result.answer
    [eml] = list((data_dir / "mail" / "outbox").glob("*.eml"))
    msg = email.message_from_bytes(eml.read_bytes(), policy=email.policy.default)
    assert msg["To"] == "sid@example.com" and msg["Subject"] == "Notes from today's standup"
    body = msg.get_body(("plain",))
    assert body is not None and "webhook retries" in body.get_content()
    cal = icalendar.Calendar.from_ical(settings.calendar_path.read_bytes())
    [event] = [e for e in cal.walk("VEVENT") if str(e["summary"]) == "Follow-up"]
    start = event.decoded("dtstart")
    assert (start.year, start.month, start.day, start.hour, start.minute) == (2026, 12, 2, 10, 0)
    assert event.decoded("dtend") - start == dt.timedelta(minutes=30)
