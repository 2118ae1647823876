"""Notes (markdown), files (find, read, PDF), summarize with a model sub-call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _helpers_functions import TODAY, allow, deny

from tinyagent import Tool, ToolContext
from tinyagent.errors import ConfirmationDenied, PathEscapeError, ToolError
from tinyagent.functions import (
    FunctionsSettings,
    InvalidArgument,
    ItemNotFound,
    StoreError,
    builtin_tools,
)
from tinyagent.models import ModelRequest, ScriptedModel


@pytest.fixture
def tools(data_dir: Path) -> dict[str, Tool]:
    return {t.name: t for t in builtin_tools(FunctionsSettings(data_dir=data_dir, timezone="UTC"))}


async def call(tools: dict[str, Tool], tool_name: str, /, hook: Any = deny, model: Any = None, **args: Any) -> Any:
    return await tools[tool_name].call(args, ToolContext(today=TODAY, confirm_hook=hook, model=model))


# -- notes -------------------------------------------------------------------------------------------------------
async def test_open_note_finds_todays_standup(tools: dict[str, Tool]) -> None:
    for title in ("today's standup", "standup", "Standup 2026-12-01", "notes from today's standup"):
        text = await call(tools, "open_note", title=title)
        assert text.startswith("# Standup 2026-12-01") and "webhook retries" in text


async def test_create_note_writes_markdown(tools: dict[str, Tool], data_dir: Path) -> None:
    result = await call(tools, "create_note", title="Packing list", body="- passport\n- charger", folder="travel")
    path = data_dir / "notes" / "travel" / "Packing list.md"
    assert Path(result["path"]) == path
    assert path.read_text() == "# Packing list\n\n- passport\n- charger\n"
    assert (await call(tools, "open_note", title="packing")).endswith("- charger")


async def test_overwriting_a_note_needs_confirmation(tools: dict[str, Tool], data_dir: Path) -> None:
    path = data_dir / "notes" / "personal" / "Shopping list.md"
    before = path.read_text()
    with pytest.raises(ConfirmationDenied, match="overwrite"):
        await call(tools, "create_note", title="Shopping list", body="new", folder="personal", hook=deny)
    assert path.read_text() == before
    await call(tools, "create_note", title="Shopping list", body="new", folder="personal", hook=allow)
    assert path.read_text() == "# Shopping list\n\nnew\n"


async def test_append_and_search(tools: dict[str, Tool], data_dir: Path) -> None:
    result = await call(tools, "append_note", title="shopping list", text="- olive oil")
    assert result["title"] == "Shopping list"
    assert (data_dir / "notes" / "personal" / "Shopping list.md").read_text().endswith("- coffee\n\n- olive oil\n")
    created = await call(tools, "append_note", title="Book club", text="Dune")
    assert created["created"] is True and (data_dir / "notes" / "Book club.md").read_text() == "# Book club\n\nDune\n"
    found = await call(tools, "search_notes", query="olive")
    assert [m["title"] for m in found["matches"]] == ["Shopping list"]
    assert "olive oil" in found["matches"][0]["snippet"]
    assert (await call(tools, "search_notes", query="zebra"))["matches"] == []
    with pytest.raises(InvalidArgument, match="empty"):
        await call(tools, "search_notes", query="  ")


async def test_delete_note_confirms_and_moves_to_trash(tools: dict[str, Tool], data_dir: Path) -> None:
    path = data_dir / "notes" / "personal" / "Gift ideas.md"
    with pytest.raises(ConfirmationDenied):
        await call(tools, "delete_note", title="gift ideas", hook=deny)
    assert path.exists()
    result = await call(tools, "delete_note", title="gift ideas", hook=allow)
    assert result["deleted"] == "Gift ideas" and not path.exists()
    assert (data_dir / "trash" / "Gift ideas.md").read_text().startswith("# Gift ideas")


async def test_note_errors(tools: dict[str, Tool], data_dir: Path) -> None:
    with pytest.raises(ItemNotFound, match="no note matches 'quarterly taxes'.*Shopping list"):
        await call(tools, "open_note", title="quarterly taxes")
    with pytest.raises(PathEscapeError):
        await call(tools, "create_note", title="x", body="y", folder="../../outside")
    with pytest.raises(InvalidArgument, match="no usable characters"):
        await call(tools, "create_note", title="..", body="y")
    assert not (data_dir.parent / "outside").exists()


# -- files -------------------------------------------------------------------------------------------------------
async def test_find_file_by_name_and_content(tools: dict[str, Tool], data_dir: Path) -> None:
    assert await call(tools, "find_file", query="lunch menu") == str(data_dir / "files" / "Lunch menu.pdf")
    assert await call(tools, "find_file", query="the Q4 budget") == str(data_dir / "files" / "Q4 budget.csv")
    assert await call(tools, "find_file", query="Frankfurt flight") == str(data_dir / "files" / "Trip itinerary.txt")
    # content of the PDF
    assert await call(tools, "find_file", query="fish tacos") == str(data_dir / "files" / "Lunch menu.pdf")
    with pytest.raises(ItemNotFound, match="no file matches"):
        await call(tools, "find_file", query="tax return 1999")


async def test_find_file_in_extra_roots_and_skips_escaping_links(data_dir: Path, tmp_path: Path) -> None:
    extra = tmp_path / "docs"
    extra.mkdir()
    (extra / "Holiday plan.md").write_text("# Holiday\nSki trip")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "Secret plan.md").write_text("secret")
    (data_dir / "files" / "Secret plan.md").symlink_to(outside / "Secret plan.md")
    tools = {t.name: t for t in builtin_tools(FunctionsSettings(data_dir=data_dir, roots=(extra,)))}
    assert await call(tools, "find_file", query="holiday plan") == str(extra / "Holiday plan.md")
    with pytest.raises(ItemNotFound):
        await call(tools, "find_file", query="secret")


async def test_read_file_text_and_pdf(tools: dict[str, Tool], data_dir: Path) -> None:
    pdf = await call(tools, "read_file", path=str(data_dir / "files" / "Lunch menu.pdf"))
    assert "Friday: Margherita pizza, fruit salad" in pdf
    text = await call(tools, "read_file", path="files/Trip itinerary.txt")
    assert text.startswith("Flight LH 454 to Frankfurt")


async def test_read_file_errors(tools: dict[str, Tool], data_dir: Path) -> None:
    with pytest.raises(ItemNotFound, match="does not exist"):
        await call(tools, "read_file", path="files/missing.pdf")
    with pytest.raises(PathEscapeError):
        await call(tools, "read_file", path="../../../etc/passwd")
    (data_dir / "files" / "blob.bin").write_bytes(b"\x00\x01\x02" * 100)
    with pytest.raises(InvalidArgument, match="binary"):
        await call(tools, "read_file", path="files/blob.bin")
    (data_dir / "files" / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    with pytest.raises(StoreError, match="cannot read the PDF"):
        await call(tools, "read_file", path="files/broken.pdf")


async def test_read_file_is_capped(data_dir: Path) -> None:
    (data_dir / "files" / "big.txt").write_text("word " * 10000)
    tools = {t.name: t for t in builtin_tools(FunctionsSettings(data_dir=data_dir, read_max_chars=500))}
    text = await call(tools, "read_file", path="files/big.txt")
    assert len(text) < 600 and text.endswith("[... truncated]")


# -- summarize ---------------------------------------------------------------------------------------------------
async def test_summarize_file_asks_the_model(data_dir: Path) -> None:
    tools = {t.name: t for t in builtin_tools(FunctionsSettings(data_dir=data_dir, summary_input_chars=300))}
    model = ScriptedModel(["A weekly cafeteria menu, with pizza on Friday."])
    summary = await call(tools, "summarize_file", model=model, path="files/Lunch menu.pdf")
    assert summary == "A weekly cafeteria menu, with pizza on Friday."
    [request] = model.requests
    assert isinstance(request, ModelRequest) and request.max_tokens <= 200
    prompt = request.messages[-1]["content"]
    assert "Lunch menu.pdf" in prompt and "Tomato soup" in prompt
    assert len(prompt) < 300 + 200  # the document was capped


async def test_summarize_errors(tools: dict[str, Tool]) -> None:
    with pytest.raises(ToolError, match="needs the agent's model"):
        await call(tools, "summarize_file", path="files/Lunch menu.pdf")
    with pytest.raises(ItemNotFound):
        await call(tools, "summarize_file", model=ScriptedModel(["x"]), path="files/none.pdf")
    with pytest.raises(ToolError, match="empty summary"):
        await call(tools, "summarize_file", model=ScriptedModel(["   "]), path="files/Lunch menu.pdf")


@pytest.mark.slow
async def test_summarize_with_a_real_model(data_dir: Path) -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (extra 'llama')")
    import tinyagent.models as models

    try:
        load_model = models.load_model
    except (AttributeError, ImportError) as exc:
        pytest.skip(f"tinyagent.models.load_model is not available yet: {exc}")
    try:
        model = load_model("smollm2-135m", n_threads=2)
    except Exception as exc:  # noqa: BLE001 - a missing model package is a skip, not a failure
        pytest.skip(f"SmolLM2-135M is not available: {exc}")
    try:
        tools = {t.name: t for t in builtin_tools(FunctionsSettings(data_dir=data_dir, summary_input_chars=1500))}
        summary = await call(tools, "summarize_file", model=model, path="files/Project Falcon proposal.md")
    finally:
        await model.aclose()
    assert isinstance(summary, str) and 10 < len(summary) < 2000
    assert any(w in summary.lower() for w in ("falcon", "offline", "mobile", "app", "project", "budget"))
