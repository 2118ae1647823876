"""``python -m tinyagent.models.llama_server ARGS``: ``llama_cpp.server`` with the CPU-safe load parameters.

``llama_cpp.server`` builds its own ``Llama``; this applies :func:`tinyagent.models.llama_load_params`' decision
(no AMX extra buffer types where they crash) to it, then runs the server with the same arguments.
"""

from __future__ import annotations

import runpy

from ._cpu import install_default_params_patch


def main() -> None:
    """Patch the default model parameters, then run ``llama_cpp.server`` as ``python -m`` would."""
    install_default_params_patch()
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
