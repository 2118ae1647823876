"""Date resolution and the time tools."""

from __future__ import annotations

import datetime as dt

import pytest

from tinyagent import ToolContext
from tinyagent.errors import ToolError
from tinyagent.functions import FunctionsSettings, InvalidDate, builtin_tools, resolve_expression
from tinyagent.functions._time import format_when

TUESDAY = dt.date(2026, 12, 1)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("tomorrow", "2026-12-02"),
        ("tomorrow at 10", "2026-12-02T10:00"),
        ("tomorrow at 10am", "2026-12-02T10:00"),
        ("next Friday at 3pm", "2026-12-04T15:00"),
        ("Friday", "2026-12-04"),
        ("this Friday", "2026-12-04"),
        ("Tuesday", "2026-12-08"),
        ("this Tuesday", "2026-12-01"),
        ("Friday next week", "2026-12-11"),
        ("last Friday", "2026-11-27"),
        ("in 2 days", "2026-12-03"),
        ("in a week", "2026-12-08"),
        ("2 weeks from now", "2026-12-15"),
        ("in 3 months", "2027-03-01"),
        ("Monday", "2026-12-07"),
        ("Monday noon", "2026-12-07T12:00"),
        ("noon", "2026-12-01T12:00"),
        ("midnight", "2026-12-01T00:00"),
        ("tonight", "2026-12-01T20:00"),
        ("wednesday morning", "2026-12-02T09:00"),
        ("day after tomorrow at 9am", "2026-12-03T09:00"),
        ("3:30 pm", "2026-12-01T15:30"),
        ("at 3", "2026-12-01T15:00"),
        ("next week", "2026-12-07"),
        ("next month", "2027-01-01"),
        ("end of the week", "2026-12-04"),
        ("yesterday", "2026-11-30"),
        ("December 24 at 6pm", "2026-12-24T18:00"),
        ("5 Jan", "2027-01-05"),
        ("2026-12-05T15:00", "2026-12-05T15:00"),
        ("2026-12-05 15:00:00", "2026-12-05T15:00"),
        ("2026-12-05", "2026-12-05"),
        ("Today's", "2026-12-01"),
    ],
)
def test_resolve_expression(expression: str, expected: str) -> None:
    assert format_when(*resolve_expression(expression, TUESDAY)) == expected


def test_month_and_year_roll_forward() -> None:
    late = dt.date(2026, 12, 20)
    assert format_when(*resolve_expression("Dec 5", late)) == "2027-12-05"
    assert format_when(*resolve_expression("the 1st", late)) == "2027-01-01"


@pytest.mark.parametrize("bad", ["", "   ", "blah", "2026-02-30", "25pm", "tomorrow at 27:00", "next blursday"])
def test_bad_dates_raise_clear_errors(bad: str) -> None:
    with pytest.raises(InvalidDate) as info:
        resolve_expression(bad, TUESDAY)
    assert isinstance(info.value, ValueError) and isinstance(info.value, ToolError)
    assert "e.g." in str(info.value)


async def test_time_tools_use_context_today(tmp_path: object) -> None:
    tools = {t.name: t for t in builtin_tools(FunctionsSettings(data_dir=str(tmp_path)))}
    ctx = ToolContext(today=TUESDAY)
    assert await tools["get_today"].call({}, ctx) == "2026-12-01 (Tuesday)"
    assert await tools["resolve_date"].call({"expression": "next Friday at 3pm"}, ctx) == "2026-12-04T15:00"
    assert await tools["resolve_date"].call({"expression": "in 2 days"}, ctx) == "2026-12-03"
    with pytest.raises(InvalidDate):
        await tools["resolve_date"].call({"expression": "someday"}, ctx)
