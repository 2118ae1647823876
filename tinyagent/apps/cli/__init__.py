"""The ``tinyagent`` command line: one typer app (rich output), one module per group of commands.

Global options (accepted before or after the command): ``--model NAME|PATH.gguf|openai:URL|scripted:FILE.json``,
``--tools builtin|demo|FILE.py|FILE.json|MODULE:ATTR``, ``--data-dir``, ``--today YYYY-MM-DD``, ``--threads``,
``--max-replans``, ``--yes``, ``--json``, ``--verbose``.

``--model scripted:FILE.json`` is a testing and demo hook: the model answers from a JSON script
(see :func:`tinyagent.apps._runtime.scripted_model_from_file`), so the apps can be driven without weights.

Commands: run, chat, plan, tools, models, demo, eval, examples, distill, finetune, quant, retrieval, routing, serve,
voice, mcp, doctor, resident. ``python -m tinyagent.finetune|quant|models`` run the same commands (see
:func:`main_with_prefix`).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence as _Sequence

import typer
from rich.console import Console as _Console
from rich.text import Text as _Text

from ...errors import TinyAgentError as _TinyAgentError
from ._app import accept_global_options as _accept_global_options
from ._app import app
from .resident import app as _resident_app
from .routing import app as _routing_app

__all__ = ["app", "main", "main_with_prefix", "run_cli"]

# Each module registers its commands; the order is the order of ``tinyagent --help``.
for _module in ("run", "catalog", "evals", "examples", "finetune", "quant", "retrieval", "serve", "voice_cmd",
                "doctor"):
    importlib.import_module(f"{__name__}.{_module}")
app.add_typer(_routing_app, name="routing")  # the routing package's sub-app lives in .routing
app.add_typer(_resident_app, name="resident")
_accept_global_options(app)


def _usage_error(exc: Exception, err: _Console) -> int | None:
    """Print a click usage error as one line and return its exit code; None when ``exc`` is not one."""
    message, exit_code = getattr(exc, "format_message", None), getattr(exc, "exit_code", None)
    if not callable(message) or not isinstance(exit_code, int):
        return None
    ctx = getattr(exc, "ctx", None)
    hint = f" (see '{ctx.command_path} --help')" if ctx is not None and exit_code == 2 else ""
    err.print(_Text.assemble(("error: ", "bold red"), f"{message()}{hint}"), highlight=False, soft_wrap=True)
    return exit_code


def run_cli(argv: _Sequence[str] | None = None, *, console: _Console | None = None, err: _Console | None = None) -> int:
    """Run the CLI with ``argv`` (default: ``sys.argv[1:]``) and return the exit code.

    Every failure the user can fix is one ``error:`` line on ``err``: exit 1 for a _TinyAgentError, 2 for a usage error.

    Args:
        argv: the arguments.
        console: where normal output goes (inject a recording _Console in tests).
        err: where progress and errors go (default: stderr).
    """
    args = list(sys.argv[1:] if argv is None else argv)
    err_console = err or _Console(stderr=True)
    obj = {"console": console, "err": err_console}
    try:
        # Without standalone mode, click returns the code of a ``typer.Exit`` instead of raising it.
        code = app(args=args, prog_name="tinyagent", standalone_mode=False, obj=obj)
    except typer.Exit as exc:
        return int(exc.exit_code or 0)
    except SystemExit as exc:  # click's own exits (--help)
        return int(exc.code or 0) if isinstance(exc.code, int | None) else 1
    except (typer.Abort, KeyboardInterrupt):
        err_console.print(_Text("aborted", style="yellow"))
        return 130
    except _TinyAgentError as exc:
        err_console.print(_Text.assemble(("error: ", "bold red"), str(exc)), highlight=False, soft_wrap=True)
        return 1
    except Exception as exc:
        # Usage errors: typer vendors click, so they are recognised by their shape rather than their class.
        code = _usage_error(exc, err_console)
        if code is None:
            raise
        return code
    return code if isinstance(code, int) else 0


def main() -> None:
    """The ``tinyagent`` console script."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    raise SystemExit(run_cli())


def main_with_prefix(prefix: _Sequence[str]) -> None:
    """``python -m tinyagent.X ARGS``: run ``tinyagent PREFIX ARGS`` (e.g. ``python -m tinyagent.quant merge ...``)."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    raise SystemExit(run_cli([*prefix, *sys.argv[1:]]))
