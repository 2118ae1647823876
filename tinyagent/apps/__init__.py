"""Apps built on the library: the ``tinyagent`` CLI, the voice assistant, the HTTP server and MCP import/export.

Each app is its own module, imported on demand (rich and typer live only here):

* :mod:`tinyagent.apps.cli`: the command line (extra ``cli``);
* :mod:`tinyagent.apps.server`: the HTTP server for desktop apps (extra ``server``);
* :mod:`tinyagent.apps.voice`: speech in, speech out (extra ``voice`` and the ``espeak-ng`` program);
* :mod:`tinyagent.apps.mcp`: MCP tools in and out (extra ``mcp``).

:func:`load_model_spec` and :func:`load_tools` turn the CLI's ``--model`` and ``--tools`` values into objects, for
apps that take the same options.
"""

from __future__ import annotations

from ._entry import run_command
from ._runtime import build_agent, load_model_spec, load_tools

__all__ = ["build_agent", "load_model_spec", "load_tools", "run_command"]
