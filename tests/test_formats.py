"""Value shapes read from parameter descriptions (tinyagent._formats) and their place in the plan grammar."""

from __future__ import annotations

import json
import re

import pytest

from tinyagent import ToolRegistry
from tinyagent._formats import string_shapes
from tinyagent._grammar import GrammarOptions, plan_grammar


def _shapes(description: str, **schema: str) -> list[str]:
    return string_shapes({"type": "string", "description": description, **schema})


def _matches(shapes: list[str], value: str) -> bool:
    """Whether ``value`` fits one of the GBNF shapes (literals, character classes, quantifiers and groups of
    alternatives, which read the same as a Python regex once literals are escaped)."""
    token = re.compile(r'"(?:[^"\\]|\\.)*"|\[(?:[^\]\\]|\\.)*\]|\{\d+(?:,\d+)?\}|[+?*()|]|\s+')
    for shape in shapes:
        parts = [re.escape(json.loads(t)) if t.startswith('"') else t
                 for t in token.findall(shape) if not t.isspace()]
        assert "".join(token.findall(shape)).replace(" ", "") == shape.replace(" ", ""), shape
        if re.fullmatch("".join(parts), value):
            return True
    return False


@pytest.mark.parametrize(("description", "good", "bad"), [
    ("The city, in the format of 'City, State (abbr)', such as 'San Francisco, CA'.", "Tel Aviv, Israel", "Tel Aviv"),
    ("The date of the event, formatted as 'MM/DD/YYYY'.", "03/15/2027", "2027-03-15"),
    ("Start, in the format 'YYYY-MM-DD HH:mm:ss'.", "2026-12-02 12:00:00", "2026-12-02T12:00"),
    ("The date for the reservation in ISO format (YYYY-MM-DD).", "2026-12-02", "tomorrow"),
    ("The time of the reservation in 24-hour format (e.g., '18:30' for 6:30 PM).", "09:05", "9am"),
    ("Recipient email addresses.", "sid@example.com", "Sid"),
    ("The date range, formatted as 'YYYY-MM-DD to YYYY-MM-DD'.", "2023-10-01 to 2023-10-07", "2023-10-01"),
    ('Due "YYYY-MM-DD" or "YYYY-MM-DDTHH:MM".', "2027-01-02T09:30", "2027-01-02 09:30"),
    ("Phone numbers to text.", "+1 415 555 0199", "Sid"),
    ("Start time, 12-hour clock hh:mm AM/PM (e.g. 02:30 PM).", "04:15 PM", "16:15"),
    ("When to fire, MM/DD/YYYY hh:mm AM/PM.", "09/22/2027 04:15 PM", "09/22/2027 04:15"),
    ("Time as 'hh:mm am/pm'.", "09:05 am", "09:05 AM"),
])
def test_a_stated_shape_is_kept_and_a_value_outside_it_is_not(description: str, good: str, bad: str) -> None:
    shapes = _shapes(description)
    assert shapes
    assert _matches(shapes, good)
    assert not _matches(shapes, bad)


@pytest.mark.parametrize("description", [
    "The system command to execute, for example 'dir && echo done'.",
    "The IATA airport code or name of the city, such as 'JFK'.",
    "The name or email address of the recipient.",
    "The drink's special instructions, such as 'extra hot'.",
    "",
])
def test_no_shape_where_the_description_states_none(description: str) -> None:
    assert _shapes(description) == []


def test_sentinels_and_empty_values_stay_allowed_beside_the_shape() -> None:
    shapes = _shapes("Start 'YYYY-MM-DD HH:mm:ss', or 'null' for immediate availability; empty for none.")
    assert '"null"' in shapes
    assert '""' in shapes


def test_the_schema_default_stays_allowed() -> None:
    shapes = string_shapes({"type": "string", "description": "formatted as 'YYYY-MM-DD'", "default": "null"})
    assert _matches(shapes, "null") and _matches(shapes, "2027-01-31") and not _matches(shapes, "soon")


def test_schema_format_wins_without_a_description() -> None:
    assert _matches(string_shapes({"type": "string", "format": "date"}), "2027-01-31")
    assert _matches(string_shapes({"type": "string", "format": "email"}), "a.b@c.org")
    assert not _matches(string_shapes({"type": "string", "format": "email"}), "Alex")


def _tools() -> ToolRegistry:
    return ToolRegistry.from_openai([{"type": "function", "function": {
        "name": "book", "description": "Book a table.",
        "parameters": {"type": "object", "required": ["city", "guests"], "properties": {
            "city": {"type": "string", "description": "in the format of 'City, State'"},
            "guests": {"type": "array", "items": {"type": "string"}, "description": "the guests' email addresses"},
            "note": {"type": "string", "description": "anything else"}}}}}])


def test_the_plan_grammar_holds_values_to_the_shape_and_keeps_references() -> None:
    grammar = plan_grammar(_tools())
    city = next(line for line in grammar.splitlines() if line.startswith("book-2-city ::="))
    assert '", "' in city and city.startswith("book-2-city ::= ref-2 |")
    item = next(line for line in grammar.splitlines() if line.startswith("book-1-guests-item ::="))
    assert '"@"' in item
    note = next(line for line in grammar.splitlines() if line.startswith("book-1-note ::="))
    assert note == "book-1-note ::= string-300"


def test_value_shapes_can_be_turned_off() -> None:
    grammar = plan_grammar(_tools(), options=GrammarOptions(value_shapes=False))
    assert '"@"' not in grammar
    assert "book-1-city ::= string-300" in grammar


def test_the_grounding_note_shows_first_the_form_a_parameter_takes() -> None:
    import datetime as dt

    from tinyagent._prompts import grounding_for

    def registry(description: str) -> ToolRegistry:
        return ToolRegistry.from_openai([{"type": "function", "function": {
            "name": "remind", "description": "A reminder.", "parameters": {"type": "object", "properties": {
                "due": {"type": "string", "description": description}}}}}])

    today = dt.date(2026, 12, 1)
    iso_ok = grounding_for("call the dentist next week", today, registry('"YYYY-MM-DD" or "YYYY-MM-DDTHH:MM"').values())
    assert '"next week" = 2026-12-07 =' in iso_ok or iso_ok.endswith('"next week" = 2026-12-07')
    other = grounding_for("lunch tomorrow at noon", today, registry("when, as YYYY-MM-DD HH:MM:SS").values())
    assert other.splitlines()[-1] == '- "tomorrow at noon" = 2026-12-02 12:00:00 = 2026-12-02T12:00'


def test_written_identifiers_keep_the_request_s_spelling_and_skip_dates() -> None:
    from tinyagent._formats import written_identifiers

    assert written_identifiers("Text +1 (415) 555 2671 and mail bob@x.io") == {
        "email": ["bob@x.io"], "phone": ["+1 (415) 555 2671"]}
    assert written_identifiers("call 5550142 at 10:30 on 2026-12-03")["phone"] == ["5550142"]
    assert written_identifiers("Buy 3 items for 25 dollars") == {"email": [], "phone": []}


def test_recipients_of_no_stated_kind_take_the_kind_the_tool_names() -> None:
    from tinyagent import Tool
    from tinyagent._formats import identifier_kind

    addresses = {"type": "array", "items": {"type": "string"}, "description": "Addresses for the To line."}
    mail = Tool.from_openai({"name": "mail.send", "description": "Sends a message. Recipients must be real e-mail "
                             "addresses.", "parameters": {"type": "object", "properties": {
                                 "to": addresses, "attach": {"type": "array", "items": {"type": "string"},
                                                             "description": "Paths of files to attach."},
                                 "who": {"type": "string", "description": "Names of the recipients."}}}})
    props = mail.parameters["properties"]
    assert identifier_kind(props["to"]) == "email"
    assert identifier_kind(props["attach"]) is None and identifier_kind(props["who"]) is None  # paths; names
    sms = Tool.from_openai({"name": "sendText", "description": "Send an SMS.", "parameters": {
        "type": "object", "properties": {"to": {"type": "string", "description": "Recipient."}}}})
    assert identifier_kind(sms.parameters["properties"]["to"]) == "phone"
    # a tool that speaks of both kinds (or neither) says nothing about which one a generic field holds
    both = Tool.from_openai({"name": "notify", "description": "Sends an e-mail or an SMS.", "parameters": {
        "type": "object", "properties": {"to": addresses}}})
    assert identifier_kind(both.parameters["properties"]["to"]) is None
    # the parameter's name says it in camelCase ("recipientAddresses"), its description only "who"
    who = {**addresses, "description": "Who the message goes to."}
    dispatch = Tool.from_openai({"name": "DispatchEmail", "description": "Composes and sends an e-mail.",
                                 "parameters": {"type": "object", "properties": {"recipientAddresses": who}}})
    assert identifier_kind(dispatch.parameters["properties"]["recipientAddresses"]) == "email"


@pytest.mark.parametrize(("description", "kind"), [
    ("Address Book: search the user's contacts by name and return the best match's e-mail address.", "email"),
    ("Address Book: returns the mobile number of a contact.", "phone"),
    ("Retrieves a person's e-mail address and phone number.", None),  # both: says nothing about which
    ("Creates a mobile app alert config.", None),
])
def test_the_kind_a_lookups_description_speaks_of(description: str, kind: str | None) -> None:
    from tinyagent._formats import described_kind

    assert described_kind(description) == kind
