"""``tinyagent tools``, ``models`` and ``demo``: what the agent can call, the model catalog, the demo data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from ... import ToolRegistry
from ...errors import ConfigurationError, ModelIntegrityError
from .. import _runtime as rt
from ._app import app, optional, progress, state

__all__ = ["demo_app", "models_app", "tools_app", "tools_table"]

tools_app = typer.Typer(help="Inspect the tools the agent can call.", no_args_is_help=True)
models_app = typer.Typer(help="The model catalog.", no_args_is_help=True)
demo_app = typer.Typer(help="Demo data for the built-in tools.", no_args_is_help=True)
app.add_typer(tools_app, name="tools")
app.add_typer(models_app, name="models")
app.add_typer(demo_app, name="demo")


def tools_table(tools: ToolRegistry) -> Table:
    """The tools as a table: name, arguments, whether they ask for confirmation, description."""
    table = Table(title=f"{len(tools)} tools", title_justify="left")
    table.add_column("name", style="cyan", no_wrap=True)
    table.add_column("arguments")
    table.add_column("confirm", justify="center")
    table.add_column("description")
    for t in tools.values():
        props = t.parameters.get("properties", {})
        required = set(t.required)
        args = ", ".join(f"{n}{'' if n in required else '?'}: {_type_name(s)}" for n, s in props.items())
        table.add_row(Text(t.name), Text(args), "yes" if t.requires_confirmation else "", Text(t.description))
    return table


def _type_name(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any"
    typ = schema.get("type")
    if typ == "array":
        return f"list[{_type_name(schema.get('items', {}))}]"
    if "enum" in schema:
        return "|".join(json.dumps(v) for v in schema["enum"])
    return str(typ or "any")


@tools_app.command("list")
def tools_list(ctx: typer.Context) -> None:
    """List the tools (name, arguments, whether they ask for confirmation)."""
    st = state(ctx)
    tools = st.tools()
    if st.json:
        st.emit_json(tools.to_openai())
        return
    st.console.print(tools_table(tools))


def catalog() -> Any:
    """The model catalog (``TINYAGENT_CACHE`` decides where it lives)."""
    try:
        from ...models import ModelCatalog
    except ImportError as exc:
        raise ConfigurationError(f"the model catalog is not available in this build: {exc}") from exc
    return ModelCatalog()


def _assembled(cat: Any, entry: Any) -> bool:
    if entry.path or entry.lora_path:
        return Path(entry.lora_path or entry.path).is_file()
    if len(entry.parts) == 1:
        return bool(cat.installed(entry.name))
    target = Path(cat.root) / entry.filename
    return bool(target.is_file() and target.stat().st_size == entry.size)


@models_app.command("list")
def models_list(ctx: typer.Context) -> None:
    """List the catalog: size, whether the packages are installed and the file assembled."""
    st = state(ctx)
    cat = catalog()
    rows = []
    for entry in cat.entries():
        installed = bool(cat.installed(entry.name))
        rows.append({
            "name": entry.name, "size_mb": round(entry.size / 1e6, 1), "installed": installed,
            "assembled": installed and _assembled(cat, entry), "description": entry.description,
            "install": entry.pip_install,
        })
    if st.json:
        st.emit_json(rows)
        return
    table = Table(title="model catalog", title_justify="left")
    for col in ("name", "size", "installed", "assembled", "description"):
        table.add_column(col, overflow="fold")
    default = rt.default_model_name()
    for row in rows:
        name = f"{row['name']} (default)" if row["name"] == default else row["name"]
        table.add_row(Text(name), f"{row['size_mb']:.0f} MB", "[green]yes[/]" if row["installed"] else "[dim]no[/]",
                      "[green]yes[/]" if row["assembled"] else "[dim]no[/]", Text(row["description"]))
    st.console.print(table)
    missing = [r for r in rows if not r["installed"] and r["install"]]
    if missing:
        st.console.print(Text(f"install a model: {missing[0]['install']}", style="dim"))


def _verify_all(st: Any, targets: list[str]) -> list[dict[str, Any]]:
    cat = catalog()
    outcome: list[dict[str, Any]] = []
    with progress(st) as bar:
        task = bar.add_task("verifying", total=len(targets))
        for name in targets:
            bar.update(task, description=f"hashing {name}")
            try:
                cat.path(name, verify=False)  # assemble a chunked model on first use
                outcome.append({"name": name, "ok": True, "sha256": cat.verify(name)})
            except ModelIntegrityError as exc:
                outcome.append({"name": name, "ok": False, "error": str(exc)})
            bar.advance(task)
    return outcome


@models_app.command("verify")
def models_verify(
    ctx: typer.Context,
    names: Annotated[list[str] | None, typer.Argument(help="Models to verify (default: every installed one).")]
    = None,
) -> None:
    """Assemble and re-hash model files against their pinned sha256; exit 1 on any mismatch."""
    st = state(ctx)
    cat = catalog()
    targets = list(names or [e.name for e in cat.entries() if cat.installed(e.name)])
    if not targets:
        raise ConfigurationError("no model is installed; see 'tinyagent models list'")
    outcome = _verify_all(st, targets)
    if st.json:
        st.emit_json(outcome)
    else:
        for item in outcome:
            if item["ok"]:
                st.console.print(Text.assemble(("✓ ", "green"), f"{item['name']}  sha256 {item['sha256']}"))
            else:
                st.console.print(Text.assemble((f"✗ {item['name']}", "red"), f"  {item['error']}"))
    if not all(item["ok"] for item in outcome):
        raise typer.Exit(1)


@models_app.command("verify-all")
def models_verify_all(ctx: typer.Context) -> None:
    """Assemble and verify every installed catalog model (what CI runs); exit 1 on any mismatch."""
    models_verify(ctx, None)


@demo_app.command("init")
def demo_init(ctx: typer.Context) -> None:
    """Seed the data folder with demo contacts, events, notes, mail and files (idempotent)."""
    st = state(ctx)
    functions = optional("tinyagent.functions", "the built-in tool library (tinyagent.functions)")
    info = functions.init_demo(st.data_folder, today=st.today)
    if st.json:
        st.emit_json(info)
        return
    st.console.print(Text.assemble("demo data in ", (str(info.data_dir), "bold"),
                                   f" ({info.created} new file(s)): {len(info.contacts)} contacts, "
                                   f"{len(info.events)} events, {len(info.notes)} notes, {len(info.files)} files"))
