"""Confinement of every store (symlinks, ``..``, absolute paths, races) and the effects every built-in declares.

The regression tests for issue 17 finding 2 (symlinks in ``notes/`` and ``mail/inbox/`` escaped the data folder)
plant a link to a sentinel file outside the data folder and require that its content never reaches a tool's
output, the outbox or a model request. The property test does the same for every store at once.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from _helpers_functions import TODAY, allow, deny
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinyagent import Tool, ToolContext
from tinyagent.errors import PathEscapeError, TinyAgentError
from tinyagent.functions import FunctionsSettings, ItemNotFound, atomic_write, builtin_tools, init_demo
from tinyagent.functions import _paths as paths_module
from tinyagent.functions._paths import ConfinedFS
from tinyagent.models import ScriptedModel

TOKEN = f"SENTINEL-{uuid.uuid4().hex}"
"""Content that exists only outside the data folder: it must never show up in what a tool returns or writes."""

needs_dir_fd = pytest.mark.skipif(not paths_module._AT, reason="descriptor-relative opens need O_NOFOLLOW + dir_fd")


def echo_model() -> ScriptedModel:
    """A model that answers with the request's text, so anything a tool sends it shows up in the tool's result."""
    return ScriptedModel(lambda request: " ".join(str(m.get("content", "")) for m in request.messages))


def make_outside(parent: Path) -> Path:
    """Sentinel files of every store's format, in a folder beside the data folder (and a sub-folder)."""
    eml = EmailMessage()
    eml["From"] = f"{TOKEN} <x@example.com>"
    eml["To"] = "me@example.com"
    eml["Subject"] = f"secret {TOKEN}"
    eml["Date"] = "Mon, 30 Nov 2026 08:00:00 +0000"
    eml.set_content(f"secret body {TOKEN}")
    files: dict[str, bytes | str] = {
        "secret.txt": f"secret {TOKEN}\n",
        "secret.md": f"# secret {TOKEN}\n\nsecret body {TOKEN}\n",
        "secret.eml": eml.as_bytes(),
        "secret.vcf": f"BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Sentinel Person\r\nN:Person;Sentinel;;;\r\n"
                      f"EMAIL:{TOKEN}@example.com\r\nTEL:+1 555 9999\r\nNOTE:{TOKEN}\r\nEND:VCARD\r\n",
        "secret.ics": "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//x//EN\r\nBEGIN:VEVENT\r\nUID:s@x\r\n"
                      f"DTSTAMP:20261130T080000Z\r\nDTSTART:20261201T100000Z\r\nDTEND:20261201T110000Z\r\n"
                      f"SUMMARY:secret {TOKEN}\r\nEND:VEVENT\r\nBEGIN:VTODO\r\nUID:t@x\r\nDTSTAMP:20261130T080000Z\r\n"
                      f"SUMMARY:secret {TOKEN}\r\nSTATUS:NEEDS-ACTION\r\nEND:VTODO\r\nEND:VCALENDAR\r\n",
    }
    outside = parent / "outside"
    for folder in (outside, outside / "dir"):
        folder.mkdir(parents=True)
        for name, data in files.items():
            (folder / name).write_bytes(data.encode() if isinstance(data, str) else data)
    return outside


def snapshot(parent: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``parent`` except the data folder: content and modification time."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(parent):
        if Path(dirpath) == parent:
            dirnames[:] = [d for d in dirnames if d != "data"]
        for name in filenames:
            path = Path(dirpath) / name
            out[str(path.relative_to(parent))] = (path.read_bytes(), path.stat().st_mtime_ns)
    return out


def files_with_token(root: Path) -> list[Path]:
    """Regular files (links are not followed) under ``root`` that contain the sentinel."""
    hits = []
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            path = Path(dirpath) / name
            if not path.is_symlink() and TOKEN.encode() in path.read_bytes():
                hits.append(path)
    return hits


def plant(data: Path, outside: Path, link: str, target: str) -> None:
    """Make ``data/link`` a symlink to ``outside/target`` (replacing whatever is there).

    A plant below a folder that an earlier plant made a link is skipped: it would land outside.
    """
    path = data / link
    if any((data / parent).is_symlink() for parent in Path(link).parents):
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)
    path.symlink_to(outside / target)


def toolset(data: Path) -> dict[str, Tool]:
    return {t.name: t for t in builtin_tools(FunctionsSettings(data_dir=data, timezone="UTC"))}


async def call(tools: dict[str, Tool], tool_name: str, /, hook: Any = allow, **args: Any) -> Any:
    return await tools[tool_name].call(args, ToolContext(today=TODAY, confirm_hook=hook, model=echo_model()))


@pytest.fixture
def world(tmp_path: Path, demo_template: Path) -> Iterator[tuple[Path, Path]]:
    """A demo data folder and a sentinel folder beside it; on exit the sentinels must be untouched."""
    shutil.copytree(demo_template, tmp_path / "data")
    outside = make_outside(tmp_path)
    before = snapshot(tmp_path)
    yield tmp_path / "data", outside
    assert snapshot(tmp_path) == before
    assert files_with_token(tmp_path / "data") == []


# -- finding 2: links in notes/ and mail/inbox/ ---------------------------------------------------------------------
async def test_a_note_linked_outside_is_neither_opened_nor_searched(world: tuple[Path, Path]) -> None:
    data, outside = world
    plant(data, outside, "notes/evil.md", "secret.md")
    tools = toolset(data)
    with pytest.raises(ItemNotFound) as caught:
        await call(tools, "open_note", title="evil")
    assert TOKEN not in str(caught.value)
    found = await call(tools, "search_notes", query="secret body")
    assert found["matches"] == []
    assert "evil" not in [n["title"] for n in (await call(tools, "search_notes", query="the"))["matches"]]


async def test_a_linked_inbox_message_is_not_forwarded(world: tuple[Path, Path]) -> None:
    data, outside = world
    plant(data, outside, "mail/inbox/evil.eml", "secret.eml")
    tools = toolset(data)
    with pytest.raises(ItemNotFound):
        await call(tools, "forward_email", message="secret", to=["a@example.com"])
    with pytest.raises(ItemNotFound):
        await call(tools, "reply_to_email", message="secret", body="ok")
    sent = await call(tools, "forward_email", message="budget review", to=["a@example.com"])
    assert TOKEN not in Path(sent["path"]).read_text()


async def test_linked_folders_in_notes_and_files_are_not_entered(world: tuple[Path, Path]) -> None:
    data, outside = world
    plant(data, outside, "notes/linked", "dir")
    plant(data, outside, "files/linked", "dir")
    tools = toolset(data)
    assert (await call(tools, "search_notes", query="secret"))["matches"] == []
    with pytest.raises(ItemNotFound):
        await call(tools, "find_file", query="secret")
    with pytest.raises(PathEscapeError):
        await call(tools, "read_file", path="files/linked/secret.txt")
    with pytest.raises(PathEscapeError):
        await call(tools, "create_note", title="x", body="y", folder="linked")


async def test_writes_never_go_through_a_link(world: tuple[Path, Path]) -> None:
    data, outside = world
    plant(data, outside, "notes/personal/Shopping list.md", "secret.md")
    plant(data, outside, "notes/personal/Ghost.md", "ghost.md")  # dangling: writing through would create it
    plant(data, outside, "calendar/calendar.ics", "secret.ics")
    plant(data, outside, ".notes.lock", "secret.txt")
    tools = toolset(data)
    with pytest.raises(PathEscapeError):
        await call(tools, "create_note", title="Ghost", body="x", folder="personal")
    with pytest.raises(PathEscapeError):
        await call(tools, "create_calendar_event", title="x", start="2026-12-02T10:00")
    with pytest.raises(PathEscapeError):
        await call(tools, "append_note", title="Gift ideas", text="x")  # the lock file is a planted link
    assert not (outside / "ghost.md").exists()


async def test_a_link_that_stays_inside_still_works(world: tuple[Path, Path]) -> None:
    data, _ = world
    (data / "notes" / "alias.md").symlink_to(data / "notes" / "personal" / "Gift ideas.md")
    (data / "files" / "budget-link.csv").symlink_to(data / "files" / "Q4 budget.csv")
    tools = toolset(data)
    assert "Contractors" in await call(tools, "read_file", path="files/budget-link.csv")
    assert "pottery class" in await call(tools, "open_note", title="alias")


@pytest.mark.parametrize("path", ["../outside/secret.txt", "files/../../outside/secret.txt", "OUTSIDE/secret.txt",
                                  "files/./../files/Q4 budget.csv"])
async def test_dotdot_and_absolute_paths_are_refused(world: tuple[Path, Path], path: str) -> None:
    data, outside = world
    tools = toolset(data)
    path = path.replace("OUTSIDE", str(outside))
    for name, args in (("read_file", {"path": path}), ("summarize_file", {"path": path}),
                       ("send_email", {"to": ["a@example.com"], "subject": "s", "body": "b", "attachments": [path]})):
        with pytest.raises(PathEscapeError):
            await call(tools, name, **args)


# -- races: a link swapped in after the check ------------------------------------------------------------------------
@needs_dir_fd
@pytest.mark.parametrize("swap", ["file", "folder"])
def test_a_link_planted_after_the_check_is_not_followed(tmp_path: Path, swap: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    root, outside = tmp_path / "root", make_outside(tmp_path)
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.txt").write_text("inside")
    fs = ConfinedFS([root])
    real_resolve = ConfinedFS.resolve

    def resolve_then_swap(self: ConfinedFS, path: Any, must_exist: bool = False) -> Path:
        resolved = real_resolve(self, path, must_exist)
        if swap == "file":
            (root / "sub" / "a.txt").unlink()
            (root / "sub" / "a.txt").symlink_to(outside / "secret.txt")
        else:
            shutil.rmtree(root / "sub")
            (root / "sub").symlink_to(outside / "dir")
            (outside / "dir" / "a.txt").write_text(TOKEN)
        return resolved

    monkeypatch.setattr(ConfinedFS, "resolve", resolve_then_swap)
    with pytest.raises(PathEscapeError, match="symlink"):
        fs.read_text("sub/a.txt")


@needs_dir_fd
def test_a_write_after_the_folder_was_swapped_stays_inside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, outside = tmp_path / "root", make_outside(tmp_path)
    (root / "sub").mkdir(parents=True)
    before = snapshot(tmp_path)
    fs = ConfinedFS([root])
    real_resolve = ConfinedFS.resolve

    def resolve_then_swap(self: ConfinedFS, path: Any, must_exist: bool = False) -> Path:
        resolved = real_resolve(self, path, must_exist)
        if (root / "sub").is_dir() and not (root / "sub").is_symlink():
            (root / "sub").rmdir()
            (root / "sub").symlink_to(outside / "dir")
        return resolved

    monkeypatch.setattr(ConfinedFS, "resolve", resolve_then_swap)
    with pytest.raises(PathEscapeError):
        fs.write("sub/new.txt", "x")
    assert {k: v for k, v in snapshot(tmp_path).items() if not k.startswith("root")} == {
        k: v for k, v in before.items() if not k.startswith("root")
    }


def test_atomic_write_replaces_a_link_inside_and_refuses_one_pointing_out(tmp_path: Path) -> None:
    outside = make_outside(tmp_path)
    folder = tmp_path / "store"
    folder.mkdir()
    (folder / "out.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(PathEscapeError):
        atomic_write(folder / "out.txt", "x")
    assert TOKEN in (outside / "secret.txt").read_text()


def test_listing_skips_links_out_and_does_not_descend_linked_folders(tmp_path: Path) -> None:
    outside = make_outside(tmp_path)
    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    (root / "a" / "ok.md").write_text("x")
    (root / "alias.md").symlink_to(root / "a" / "ok.md")
    (root / "out.md").symlink_to(outside / "secret.md")
    (root / "outdir").symlink_to(outside / "dir")
    (root / "loop").symlink_to(root)
    (root / ".hidden.md").write_text("x")
    listed = ConfinedFS([root]).files(root, ".md", recursive=True)
    assert [p.relative_to(root.resolve()).as_posix() for p in listed] == ["alias.md", "a/ok.md"]


def test_fifo_is_not_read(tmp_path: Path) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    os.mkfifo(tmp_path / "pipe.txt")
    with pytest.raises(ItemNotFound, match="not a regular file"):
        ConfinedFS([tmp_path]).read_text("pipe.txt")


# -- property: links, '..' and absolute paths in every store ----------------------------------------------------------
PLANTS = [
    ("notes/evil.md", "secret.md"), ("notes/personal/Shopping list.md", "secret.md"), ("notes/linked", "dir"),
    ("notes/personal/Ghost.md", "ghost.md"), ("contacts/evil.vcf", "secret.vcf"), ("contacts/Sid Patel.vcf",
    "secret.vcf"), ("contacts/linked", "dir"), ("calendar/calendar.ics", "secret.ics"), ("mail/inbox/evil.eml",
    "secret.eml"), ("mail/inbox/linked", "dir"), ("mail/outbox", "dir"), ("mail/sent", "dir"),
    ("files/evil.txt", "secret.txt"), ("files/Q4 budget.csv", "secret.txt"), ("files/linked", "dir"),
    ("files/ghost.txt", "ghost.txt"), ("trash", "dir"), ("messages/outbox", "dir"), (".notes.lock", "secret.txt"),
    ("calendar/.calendar.ics.lock", "secret.txt"), ("notes/work", "dir"), ("notes", "dir"), ("contacts", "dir"),
    ("calendar", "dir"), ("mail", "dir"), ("mail/inbox", "dir"), ("files", "dir"), ("messages", "dir"),
    ("calendar", "missing"), ("trash", "missing"),
]
PATHS = ["evil.txt", "files/evil.txt", "files/linked/secret.txt", "../outside/secret.txt", "OUTSIDE/secret.txt",
         "files/../../outside/secret.txt", "notes/evil.md", "calendar/calendar.ics", "mail/inbox/evil.eml",
         "files/ghost.txt", "contacts/evil.vcf", "files/Q4 budget.csv", "~/.ssh/id_rsa", "OUTSIDE/dir/secret.md"]
NOTE_TITLES = ["evil", "secret", "Shopping list", "Ghost", "linked secret", "../outside/secret", "Standup"]
FOLDERS = ["", "personal", "linked", "../outside", "OUTSIDE", "work", ".."]
MAIL_TO = ["a@example.com"]
CALLS = st.one_of(
    st.builds(lambda t: ("open_note", {"title": t}), st.sampled_from(NOTE_TITLES)),
    st.builds(lambda q: ("search_notes", {"query": q}), st.sampled_from(["secret", "secret body", "the"])),
    st.builds(lambda t: ("append_note", {"title": t, "text": "more"}), st.sampled_from(NOTE_TITLES)),
    st.builds(lambda t, f: ("create_note", {"title": t, "body": "x", "folder": f}), st.sampled_from(NOTE_TITLES),
              st.sampled_from(FOLDERS)),
    st.builds(lambda t: ("delete_note", {"title": t}), st.sampled_from(NOTE_TITLES)),
    st.builds(lambda p: ("read_file", {"path": p}), st.sampled_from(PATHS)),
    st.builds(lambda p: ("summarize_file", {"path": p}), st.sampled_from(PATHS)),
    st.builds(lambda q: ("find_file", {"query": q}), st.sampled_from(["secret", "evil", "ghost", "budget"])),
    st.builds(lambda p: ("send_email", {"to": MAIL_TO, "subject": "s", "body": "b", "attachments": [p]}),
              st.sampled_from(PATHS)),
    st.builds(lambda n: ("send_email", {"to": [n], "subject": "s", "body": "b"}),
              st.sampled_from(["Sentinel Person", "Sid Patel"])),
    st.builds(lambda m: ("forward_email", {"message": m, "to": MAIL_TO}), st.sampled_from(["secret", "budget"])),
    st.builds(lambda m: ("reply_to_email", {"message": m, "body": "ok"}), st.sampled_from(["secret", "dinner"])),
    st.builds(lambda n: ("get_email_address", {"name": n}), st.sampled_from(["Sentinel Person", "Sid Patel"])),
    st.builds(lambda n: ("get_phone_number", {"name": n}), st.sampled_from(["Sentinel Person", "Sid Patel"])),
    st.just(("list_calendar_events", {"date": "2026-12-01"})),
    st.just(("find_calendar_conflicts", {"start": "2026-12-01"})),
    st.just(("create_calendar_event", {"title": "x", "start": "2026-12-02T10:00"})),
    st.just(("create_reminder", {"title": "x"})),
    st.just(("list_reminders", {})),
    st.builds(lambda r: ("send_message", {"recipients": [r], "text": "hi"}),
              st.sampled_from(["+1 555 0101", "Sentinel Person"])),
    st.just(("init_demo", {})),
)


def _outcome(tools: dict[str, Tool], data: Path, name: str, args: dict[str, Any]) -> str:
    try:
        if name == "init_demo":
            return repr(init_demo(data, today=TODAY, timezone="UTC"))
        return repr(asyncio.run(call(tools, name, **args)))
    except TinyAgentError as exc:
        return f"{type(exc).__name__}: {exc}"


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plants=st.lists(st.sampled_from(PLANTS), min_size=1, max_size=8, unique_by=lambda p: p[0]),
       calls=st.lists(CALLS, min_size=4, max_size=16))
def test_nothing_outside_the_roots_is_read_or_written(
    demo_template: Path, plants: list[tuple[str, str]], calls: list[tuple[str, dict[str, Any]]]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        parent = Path(tmp)
        data = parent / "data"
        shutil.copytree(demo_template, data)
        outside = make_outside(parent)
        for link, target in plants:
            plant(data, outside, link, target)
        before = snapshot(parent)
        tools = toolset(data)
        for name, raw in calls:
            args = {k: _swap_outside(v, outside) for k, v in raw.items()}
            outcome = _outcome(tools, data, name, args)
            assert TOKEN not in outcome, f"{name}({args}) leaked the sentinel: {outcome[:300]}"
        assert snapshot(parent) == before, "a file outside the data folder was created or changed"
        assert files_with_token(data) == [], "sentinel content was copied into the data folder"


def _swap_outside(value: Any, outside: Path) -> Any:
    if isinstance(value, str):
        return value.replace("OUTSIDE", str(outside))
    if isinstance(value, list):
        return [_swap_outside(v, outside) for v in value]
    return value


# -- effects --------------------------------------------------------------------------------------------------------
EFFECTS = {
    "get_email_address": "read", "get_phone_number": "read", "send_email": "outgoing", "reply_to_email": "outgoing",
    "forward_email": "outgoing", "create_calendar_event": "outgoing", "list_calendar_events": "read",
    "find_calendar_conflicts": "read", "create_reminder": "write", "list_reminders": "read", "create_note": "write",
    "open_note": "read", "append_note": "write", "search_notes": "read", "delete_note": "destructive",
    "find_file": "read", "read_file": "read", "summarize_file": "read", "send_message": "outgoing",
    "get_directions": "read", "create_meeting_link": "read", "get_today": "read", "resolve_date": "read",
}


def test_every_builtin_declares_its_effects(tmp_path: Path) -> None:
    tools = toolset(tmp_path)
    assert {name: t.effects for name, t in tools.items()} == EFFECTS
    assert tools["delete_note"].destructive and tools["send_email"].outgoing and tools["send_message"].outgoing
    assert tools["open_note"].read_only and not tools["create_note"].read_only


async def test_outbox_writes_keep_their_in_call_confirmation_policy(data_dir: Path) -> None:
    tools = toolset(data_dir)
    queued = await call(tools, "send_email", hook=deny, to=["sid@example.com"], subject="s", body="b")
    assert queued["status"].startswith("queued in outbox")  # no SMTP: the tool itself does not ask
    sent = await call(tools, "send_message", hook=deny, recipients=["+1 555 0101"], text="hi")
    assert sent["status"] == "queued in outbox"


async def test_the_echo_model_would_show_a_leak(data_dir: Path) -> None:
    summary = await call(toolset(data_dir), "summarize_file", path="files/Trip itinerary.txt")
    assert "Frankfurt" in summary  # what summarize_file sends the model comes back, so a sentinel would too
