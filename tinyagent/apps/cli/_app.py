"""The root typer app, its global options, and the shared state every command reads.

Global options belong to the root callback (``tinyagent --model X run ...``). :class:`GlobalOptionsCommand` also
offers them on every command, parsed by click itself (``tinyagent run --model X ...``): a value given after the
command overrides the one given before it. An option a command defines itself (``eval bfcl --data-dir``) wins.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import importlib
import json
import logging
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.text import Text
from typer.core import TyperCommand

from ... import ToolRegistry
from ...errors import ConfigurationError
from ...models import Model
from .. import _runtime as rt
from .._render import RichConfirm

__all__ = ["AppState", "GlobalOptionsCommand", "accept_global_options", "app", "optional", "progress", "state"]

GLOBAL_PANEL = "Global options"
GLOBAL_NAMES = ("model", "tools", "data_dir", "today", "threads", "max_replans", "yes", "as_json", "verbose")


@dataclass
class AppState:
    """What every command shares: the global options, the consoles, and the lazily built model and tools."""

    console: Console
    err: Console
    model_spec: str = rt.DEFAULT_MODEL
    tools_spec: str | None = None
    data_dir: Path | None = None
    today: dt.date | None = None
    threads: int | None = None
    max_replans: int | None = None
    yes: bool = False
    json: bool = False
    _model: Model | None = None
    _tools: ToolRegistry | None = None
    live: Live | None = None

    def set_option(self, name: str, value: Any) -> None:
        """Apply one global option (the root callback and each command's own copy call this)."""
        if name == "model":
            self.model_spec = value
        elif name == "tools":
            self.tools_spec = value
        elif name == "data_dir":
            self.data_dir = Path(value).expanduser()
        elif name == "today":
            self.today = rt.parse_today(value)
        elif name == "as_json":
            self.json = bool(value)
        elif name == "verbose":
            if value:
                logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s",
                                    stream=sys.stderr)
        else:
            setattr(self, name, value)

    @property
    def data_folder(self) -> Path:
        """``--data-dir``, else ``TINYAGENT_DATA_DIR``, else the platform's user data dir."""
        return self.data_dir or rt.default_data_dir()

    def model(self) -> Model:
        if self._model is None:
            status = self.err.status(f"loading model {self.model_spec}…") if not self.json else contextlib.nullcontext()
            with status:
                self._model = rt.load_model_spec(self.model_spec, threads=self.threads)
        return self._model

    def tools(self) -> ToolRegistry:
        if self._tools is None:
            self._tools = rt.load_tools(self.tools_spec, self.data_folder)
        return self._tools

    def confirm_hook(self, *, ask: bool = True) -> RichConfirm:
        return RichConfirm(self.err if self.json else self.console, auto_yes=self.yes,
                           is_tty=None if ask else False, live=lambda: self.live)

    def agent(self, *, ask: bool = True) -> Any:
        overrides = {} if self.max_replans is None else {"max_replans": self.max_replans}
        return rt.build_agent(self.tools(), self.model(), confirm=self.confirm_hook(ask=ask), **overrides)

    def emit_json(self, data: Any) -> None:
        self.console.out(json.dumps(rt.jsonable(data), ensure_ascii=False), highlight=False)

    def error(self, message: str) -> None:
        """Print ``message`` literally (never as markup) as one ``error:`` line on stderr."""
        self.err.print(Text.assemble(("error: ", "bold red"), message), highlight=False)


class GlobalOptionsCommand(TyperCommand):
    """A command that also accepts the root's global options after its name."""

    def _globals(self, ctx: Any) -> list[Any]:
        root = ctx.find_root().command
        own_opts = {o for p in self.params for o in (*p.opts, *p.secondary_opts)}
        own_names = {p.name for p in self.params}
        return [p for p in getattr(root, "params", []) if p.name in GLOBAL_NAMES and p.name not in own_names
                and not own_opts & {*p.opts, *p.secondary_opts}]

    def get_params(self, ctx: Any) -> list[Any]:
        params: list[Any] = super().get_params(ctx)
        help_option = self.get_help_option(ctx)
        own = [p for p in params if p is not help_option]
        return [*own, *self._globals(ctx), *([help_option] if help_option is not None else [])]

    def invoke(self, ctx: Any) -> Any:
        st = ctx.find_root().obj
        for param in self._globals(ctx):
            value = ctx.params.pop(param.name, None)
            source = ctx.get_parameter_source(param.name)
            if isinstance(st, AppState) and source is not None and source.name == "COMMANDLINE":
                st.set_option(param.name, value)
        return super().invoke(ctx)


def accept_global_options(typer_app: typer.Typer) -> None:
    """Make every command of ``typer_app`` and its sub-apps a :class:`GlobalOptionsCommand` (unless it chose its own
    command class)."""
    for info in typer_app.registered_commands:
        if info.cls in (None, TyperCommand):
            info.cls = GlobalOptionsCommand
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            accept_global_options(group.typer_instance)


app = typer.Typer(
    name="tinyagent",
    help="Plan and run tool calls with a small local model.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def state(ctx: typer.Context) -> AppState:
    """The shared state (built by the root callback)."""
    obj = ctx.find_root().obj
    if not isinstance(obj, AppState):
        raise ConfigurationError("the CLI state is missing; run through tinyagent.apps.cli.main()")
    return obj


def _nonempty(value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise typer.BadParameter("must not be empty: give a catalog name (see 'tinyagent models list'), "
                                 "a .gguf path or openai:URL")
    return value


@app.callback()
def _global(
    ctx: typer.Context,
    model: Annotated[str | None, typer.Option(
        "--model", "-m", envvar="TINYAGENT_MODEL", callback=_nonempty, rich_help_panel=GLOBAL_PANEL,
        help="Catalog name, path to a .gguf, openai:URL[#MODEL] or scripted:FILE.json (testing hook).")] = None,
    tools: Annotated[str | None, typer.Option(
        "--tools", rich_help_panel=GLOBAL_PANEL,
        help="builtin (default), demo, my_tools.py, an OpenAI tools .json (plan only) or MODULE:ATTR.")] = None,
    data_dir: Annotated[Path | None, typer.Option(
        "--data-dir", envvar="TINYAGENT_DATA_DIR", rich_help_panel=GLOBAL_PANEL,
        help="The built-in tools' data folder.")] = None,
    today: Annotated[str | None, typer.Option(
        "--today", rich_help_panel=GLOBAL_PANEL, help="Resolve dates against this day (YYYY-MM-DD).")] = None,
    threads: Annotated[int | None, typer.Option(
        "--threads", min=1, rich_help_panel=GLOBAL_PANEL, help="llama.cpp / torch threads.")] = None,
    max_replans: Annotated[int | None, typer.Option(
        "--max-replans", min=0, rich_help_panel=GLOBAL_PANEL, help="Replans after a failed plan.")] = None,
    yes: Annotated[bool, typer.Option(
        "--yes", "-y", rich_help_panel=GLOBAL_PANEL,
        help="Approve outgoing/destructive actions without asking.")] = False,
    as_json: Annotated[bool, typer.Option(
        "--json", rich_help_panel=GLOBAL_PANEL, help="Machine-readable JSON output.")] = False,
    verbose: Annotated[bool, typer.Option(
        "--verbose", "-v", rich_help_panel=GLOBAL_PANEL, help="Log to stderr.")] = False,
) -> None:
    """Global options; each command accepts them too, before or after its name."""
    existing = ctx.obj if isinstance(ctx.obj, dict) else {}
    st = AppState(console=existing.get("console") or Console(), err=existing.get("err") or Console(stderr=True),
                  model_spec=rt.default_model_name())
    values = {"model": model, "tools": tools, "data_dir": data_dir, "today": today, "threads": threads,
              "max_replans": max_replans, "yes": yes, "as_json": as_json, "verbose": verbose}
    for name, value in values.items():
        if value is not None:
            st.set_option(name, value)
    ctx.obj = st


@contextlib.contextmanager
def progress(st: AppState) -> Iterator[Progress]:
    """A rich progress bar on stderr (hidden with ``--json``)."""
    bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), console=st.err, disable=st.json, transient=False)
    with bar:
        yield bar


def optional(module: str, what: str) -> Any:
    """Import ``module``, or raise a ConfigurationError naming ``what`` when it is not part of this build."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if exc.name and module.startswith(exc.name):
            raise ConfigurationError(f"{what} is not available in this build ({exc})") from exc
        raise
