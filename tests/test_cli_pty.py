"""``tinyagent chat`` driven through a pseudo-terminal: the live view, a confirmation prompt, a follow-up turn.

The screen is read with pexpect; the model is the CLI's scripted-model hook (``--model scripted:FILE.json``).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pexpect = pytest.importorskip("pexpect", reason="pexpect is not installed")
pytest.importorskip("typer", reason="the cli extra (typer) is not installed")

ROOT = Path(__file__).resolve().parents[1]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")

SCRIPT = {
    "rules": [
        {"stage": "plan", "contains": ["email sid"],
         "reply": '1. get_email_address(name="Sid")\n2. send_email(to=[$1], subject="Lunch", '
                  'body="Lunch moved to noon")\n3. join()\n<END_OF_PLAN>'},
        # The follow-up says "him": only the conversation so far says who that is.
        {"stage": "plan", "contains": ["text him"], "context": ["user: email sid"],
         "reply": '1. get_phone_number(name="Sid")\n2. send_sms(to=[$1], message="Lunch moved to noon")\n'
                  "3. join()\n<END_OF_PLAN>"},
        {"stage": "plan", "contains": ["text him"], "reply": "1. join()\n<END_OF_PLAN>"},
        {"stage": "join", "context": ["-> sent to sid@example.com"], "reply": "Answer: Emailed Sid about lunch."},
        {"stage": "join", "context": ["-> texted +1-555-0101"], "reply": "Answer: Texted Sid at +1-555-0101."},
        {"stage": "join", "context": ["did not confirm"], "reply": "Answer: Not sent: you declined."},
    ],
    "default_join": "Answer: Who should I text?",
    "delay_s": 0.02,
}


class Screen:
    """Reads a child's terminal output with escape codes removed, so matches see the text a user sees."""

    def __init__(self, child: pexpect.spawn) -> None:
        self.child = child
        self.raw = ""
        self.pos = 0
        self.seen = ""

    @property
    def text(self) -> str:
        return ANSI.sub("", self.raw)

    def wait_for(self, pattern: str, timeout: float = 60) -> str:
        """Wait until ``pattern`` (a regex) appears after the last match; return the text up to and including it."""
        deadline = time.monotonic() + timeout
        regex = re.compile(pattern)
        while True:
            found = regex.search(self.text, self.pos)
            if found:
                self.seen = self.text[self.pos : found.end()]
                self.pos = found.end()
                return self.seen
            if time.monotonic() > deadline:
                raise AssertionError(f"{pattern!r} did not appear; the screen ends with:\n{self.text[-1500:]}")
            try:
                self.raw += self.child.read_nonblocking(4096, timeout=0.2)
            except pexpect.TIMEOUT:
                continue
            except pexpect.EOF:
                if not regex.search(self.text, self.pos):
                    raise AssertionError(f"the program ended before {pattern!r}:\n{self.text[-1500:]}") from None


@pytest.fixture()
def chat(tmp_path: Path) -> Iterator[tuple[pexpect.spawn, Screen]]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    env.pop("NO_COLOR", None)
    child = pexpect.spawn(
        sys.executable, ["-m", "tinyagent.apps.cli", "chat", "--model", f"scripted:{script}", "--tools", "demo",
                         "--today", "2026-12-01"],
        cwd=str(ROOT), env=env, encoding="utf-8", timeout=60, dimensions=(40, 120),
    )
    yield child, Screen(child)
    child.close(force=True)


def test_chat_confirms_streams_steps_and_keeps_context(chat: tuple[pexpect.spawn, Screen]) -> None:
    child, screen = chat
    screen.wait_for("tinyagent chat")
    screen.wait_for("you>")

    child.sendline("email sid that lunch moved to noon")
    before = screen.wait_for(r"Allow\? \[y/N\]")
    assert 'get_email_address(name="Sid")' in before  # the live view showed the steps before the prompt
    assert "send_email wants to send an email (to=['sid@example.com'], subject='Lunch')" in before
    child.sendline("y")
    screen.wait_for('Sent an email: "Lunch" to sid@example.com')  # the auto joiner: an action plan, all ok
    shown = screen.wait_for("you>")
    assert re.search(r"2 step\(s\) · 1 plan\(s\) · \d+ tokens", shown)
    assert "✓ ok" in screen.text

    child.sendline("now text him too")
    before = screen.wait_for(r"Allow\? \[y/N\]")
    assert "send_sms wants to send a text message (to=['+1-555-0101'])" in before
    child.sendline("y")
    screen.wait_for(r"to \+1-555-0101")
    screen.wait_for("you>")

    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_chat_declined_confirmation_and_reset(chat: tuple[pexpect.spawn, Screen]) -> None:
    child, screen = chat
    screen.wait_for("you>")
    child.sendline("email sid the report")
    screen.wait_for(r"Allow\? \[y/N\]")
    child.sendline("n")
    shown = screen.wait_for("Not sent: you declined.")
    assert "error" in shown
    screen.wait_for("you>")

    child.sendline("/reset")
    screen.wait_for("conversation forgotten")
    screen.wait_for("you>")
    child.sendline("text him too")  # without the history there is nobody to text
    screen.wait_for("Who should I text\\?")
    screen.wait_for("you>")
    time.sleep(0.5)  # let readline take the terminal before Ctrl-D, as a person typing would
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
