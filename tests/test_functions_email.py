"""Email: real .eml files in the outbox, delivery to a real SMTP server on 127.0.0.1 (aiosmtpd), failures."""

from __future__ import annotations

import email
import email.policy
import socket
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from _helpers_functions import TODAY, deny

from tinyagent import ConfirmationRequest, Tool, ToolContext
from tinyagent.errors import ConfirmationDenied, PathEscapeError
from tinyagent.functions import (
    AmbiguousContact,
    ContactNotFound,
    DeliveryError,
    FunctionsSettings,
    InvalidArgument,
    ItemNotFound,
    builtin_tools,
)


class Recorder:
    """An aiosmtpd handler that keeps every envelope it receives."""

    def __init__(self) -> None:
        self.envelopes: list[Any] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802 - aiosmtpd's name
        self.envelopes.append(envelope)
        return "250 Message accepted for delivery"

    def messages(self) -> list[EmailMessage]:
        out = []
        for env in self.envelopes:
            msg = email.message_from_bytes(env.content, policy=email.policy.default)
            assert isinstance(msg, EmailMessage)
            out.append(msg)
        return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def smtp_server() -> Iterator[tuple[int, Recorder]]:
    from aiosmtpd.controller import Controller

    recorder = Recorder()
    port = free_port()
    controller = Controller(recorder, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield port, recorder
    finally:
        controller.stop()


def make_tools(data_dir: Path, **settings: Any) -> dict[str, Tool]:
    base: dict[str, Any] = {"data_dir": data_dir, "timezone": "UTC", "sender": "me@example.com",
                            "smtp_starttls": False}
    return {t.name: t for t in builtin_tools(FunctionsSettings(**(base | settings)))}


def allow(request: ConfirmationRequest) -> bool:
    allow.requests.append(request)  # type: ignore[attr-defined]
    return True


allow.requests = []  # type: ignore[attr-defined]


def ctx(hook: Any = allow) -> ToolContext:
    return ToolContext(today=TODAY, confirm_hook=hook)


def emls(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.eml")) if folder.is_dir() else []


def read(path: Path) -> EmailMessage:
    msg = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
    assert isinstance(msg, EmailMessage)
    return msg


async def test_without_smtp_the_email_is_queued_in_the_outbox(data_dir: Path) -> None:
    tools = make_tools(data_dir)
    result = await tools["send_email"].call(
        {"to": ["Sid"], "subject": "Standup notes", "body": "Notes below.", "attachments": ["files/Lunch menu.pdf"]},
        ctx(deny),  # nothing leaves the machine, so no confirmation is needed
    )
    assert result["status"].startswith("queued") and result["to"] == ["sid@example.com"]
    [path] = emls(data_dir / "mail" / "outbox")
    assert Path(result["path"]) == path
    msg = read(path)
    assert msg["To"] == "sid@example.com" and msg["From"] == "me@example.com" and msg["Subject"] == "Standup notes"
    assert msg["Message-ID"] and msg["Date"]
    body = msg.get_body(("plain",))
    assert body is not None and body.get_content().strip() == "Notes below."
    [attachment] = list(msg.iter_attachments())
    assert attachment.get_filename() == "Lunch menu.pdf" and attachment.get_content_type() == "application/pdf"
    assert attachment.get_content() == (data_dir / "files" / "Lunch menu.pdf").read_bytes()


async def test_send_by_smtp_delivers_message_and_attachment(data_dir: Path, smtp_server: tuple[int, Recorder]) -> None:
    port, recorder = smtp_server
    tools = make_tools(data_dir, smtp_host="127.0.0.1", smtp_port=port)
    allow.requests.clear()  # type: ignore[attr-defined]
    result = await tools["send_email"].call(
        {"to": ["sid@example.com"], "cc": ["Priya"], "subject": "Budget", "body": "See attached.",
         "attachments": [str(data_dir / "files" / "Q4 budget.csv")]},
        ctx(allow),
    )
    assert result["status"] == "sent"
    [request] = allow.requests  # type: ignore[attr-defined]
    assert request.tool == "send_email" and request.details["to"] == ["sid@example.com"]
    [envelope] = recorder.envelopes
    assert sorted(envelope.rcpt_tos) == ["priya@example.com", "sid@example.com"]
    assert envelope.mail_from == "me@example.com"
    [msg] = recorder.messages()
    assert msg["Subject"] == "Budget" and msg["Cc"] == "priya@example.com"
    [attachment] = list(msg.iter_attachments())
    assert attachment.get_filename() == "Q4 budget.csv"
    assert attachment.get_content().replace("\r\n", "\n") == (data_dir / "files" / "Q4 budget.csv").read_text()
    assert emls(data_dir / "mail" / "outbox") == []
    [sent] = emls(data_dir / "mail" / "sent")
    assert Path(result["path"]) == sent and read(sent)["Subject"] == "Budget"


async def test_smtp_down_keeps_the_message_in_the_outbox(data_dir: Path) -> None:
    tools = make_tools(data_dir, smtp_host="127.0.0.1", smtp_port=free_port(), smtp_timeout_s=2.0)
    with pytest.raises(DeliveryError, match="could not send by SMTP") as info:
        await tools["send_email"].call({"to": ["sid@example.com"], "subject": "Hi", "body": "x"}, ctx(allow))
    [queued] = emls(data_dir / "mail" / "outbox")
    assert info.value.outbox_path == queued and "stays in the outbox" in str(info.value)
    assert read(queued)["To"] == "sid@example.com"
    assert emls(data_dir / "mail" / "sent") == []


async def test_missing_smtp_password_env_is_a_clear_error(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TINYAGENT_TEST_PW", raising=False)
    tools = make_tools(data_dir, smtp_host="127.0.0.1", smtp_port=free_port(), smtp_user="me",
                       smtp_password_env="TINYAGENT_TEST_PW")
    with pytest.raises(DeliveryError, match="TINYAGENT_TEST_PW"):
        await tools["send_email"].call({"to": ["sid@example.com"], "subject": "Hi", "body": "x"}, ctx(allow))
    assert len(emls(data_dir / "mail" / "outbox")) == 1


async def test_refused_confirmation_sends_and_writes_nothing(data_dir: Path, smtp_server: tuple[int, Recorder]) -> None:
    port, recorder = smtp_server
    tools = make_tools(data_dir, smtp_host="127.0.0.1", smtp_port=port)
    with pytest.raises(ConfirmationDenied, match="did not confirm"):
        await tools["send_email"].call({"to": ["sid@example.com"], "subject": "Hi", "body": "x"}, ctx(deny))
    assert recorder.envelopes == []
    assert emls(data_dir / "mail" / "outbox") == [] and emls(data_dir / "mail" / "sent") == []


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        ({"to": ["Gandalf"], "subject": "s", "body": "b"}, ContactNotFound, "Gandalf"),
        ({"to": ["Alex"], "subject": "s", "body": "b"}, AmbiguousContact, "Alex Chen"),
        ({"to": ["not an@address"], "subject": "s", "body": "b"}, InvalidArgument, "not an email address"),
        ({"to": [], "subject": "s", "body": "b"}, InvalidArgument, "at least one recipient"),
        ({"to": ["sid@example.com"], "subject": "s", "body": "b", "attachments": ["nope.pdf"]}, ItemNotFound,
         "does not exist"),
        ({"to": ["sid@example.com"], "subject": "s", "body": "b", "attachments": ["../../etc/passwd"]},
         PathEscapeError, "outside"),
        ({"to": ["sid@example.com"], "subject": "s", "body": "b", "attachments": ["/etc/hostname"]},
         PathEscapeError, "outside"),
        ({"to": ["sid@example.com"], "subject": "s", "body": "b", "attachments": ["files"]}, InvalidArgument,
         "folder"),
    ],
)
async def test_bad_email_input_writes_nothing(
    data_dir: Path, smtp_server: tuple[int, Recorder], args: dict[str, Any], error: type[Exception], match: str
) -> None:
    port, recorder = smtp_server
    tools = make_tools(data_dir, smtp_host="127.0.0.1", smtp_port=port)
    with pytest.raises(error, match=match):
        await tools["send_email"].call(args, ctx(allow))
    assert recorder.envelopes == [] and emls(data_dir / "mail" / "outbox") == []


async def test_symlinked_attachment_escape_is_refused(data_dir: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("password")
    (data_dir / "files" / "innocent.txt").symlink_to(secret)
    tools = make_tools(data_dir)
    with pytest.raises(PathEscapeError):
        await tools["send_email"].call(
            {"to": ["sid@example.com"], "subject": "s", "body": "b", "attachments": ["files/innocent.txt"]}, ctx()
        )
    assert emls(data_dir / "mail" / "outbox") == []


async def test_reply_threads_and_quotes(data_dir: Path, smtp_server: tuple[int, Recorder]) -> None:
    port, recorder = smtp_server
    tools = make_tools(data_dir, smtp_host="127.0.0.1", smtp_port=port)
    result = await tools["reply_to_email"].call({"message": "budget", "body": "Will do by Thursday."}, ctx(allow))
    assert result["status"] == "sent"
    [msg] = recorder.messages()
    assert msg["Subject"] == "Re: Budget review"
    assert msg["To"] == "Sid Patel <sid@example.com>"
    assert msg["In-Reply-To"] == "<budget-review@example.com>"
    assert "<budget-review@example.com>" in msg["References"]
    body = msg.get_body(("plain",))
    assert body is not None
    text = body.get_content()
    assert text.startswith("Will do by Thursday.") and "> Hi, can you look at the Q4 budget" in text


async def test_forward_attaches_the_original(data_dir: Path, smtp_server: tuple[int, Recorder]) -> None:
    port, recorder = smtp_server
    tools = make_tools(data_dir, smtp_host="127.0.0.1", smtp_port=port)
    await tools["forward_email"].call({"message": "offsite", "to": ["Maria Garcia"], "body": "FYI"}, ctx(allow))
    [envelope] = recorder.envelopes
    assert envelope.rcpt_tos == ["maria.garcia@example.com"]
    [msg] = recorder.messages()
    assert msg["Subject"] == "Fwd: Offsite agenda"
    [attached] = list(msg.iter_attachments())
    assert attached.get_content_type() == "message/rfc822"
    inner = attached.get_content()
    assert inner["Subject"] == "Offsite agenda" and inner["Message-ID"] == "<offsite-agenda@example.com>"


async def test_reply_to_unknown_message(data_dir: Path) -> None:
    tools = make_tools(data_dir)
    with pytest.raises(ItemNotFound, match="no email matches 'quantum physics'.*Budget review"):
        await tools["reply_to_email"].call({"message": "quantum physics", "body": "x"}, ctx())
    assert emls(data_dir / "mail" / "outbox") == []
