"""The resident worker: ``tinyagent run`` and ``plan`` without a model load per process.

A ``tinyagent run`` process pays its imports (~1 s) and the model load (2-3.5 s for the 1.5B on 2 cores) before
its first token, and then throws away the model and the KV cache that held its system message. So ``tinyagent
run``, ``plan`` and ``warm`` with a local model run in a worker (as ollama keeps a model loaded): a process that
keeps the model, its KV cache and the imported code, and exits after ``TINYAGENT_KEEP_ALIVE`` idle seconds
(default 300; ``0`` turns the worker off, ``5m`` and ``1h`` work too). A command that finds none starts one, which
binds its socket at once and loads the model while the command waits. The command hands its arguments, working
directory, environment and terminal (its stdin, stdout and stderr, passed as file descriptors) to the worker,
which runs the same command on them: the output, the live view, confirmation prompts, Ctrl-C and the exit status
are the command's own.

Safety:

* The socket lives in a folder only this user can enter (``$XDG_RUNTIME_DIR/tinyagent`` or
  ``<tmp>/tinyagent-<uid>``, mode 0700, checked before use), and on Linux the worker also checks the peer's uid
  (``SO_PEERCRED``). It is a Unix socket: no web page can reach it, unlike a TCP port.
* The socket's name is a hash of the Python executable, tinyagent's source files (path, size and modification time),
  and the environment that decides where caches and data live (``HOME``, ``XDG_*``, ``TINYAGENT_*``), so a worker
  never serves another installation, edited code or another configuration.
* A request that was interrupted (Ctrl-C, the client gone) or failed unexpectedly ends the worker after it: the next
  run starts clean. One request runs at a time; the others queue (two llama.cpp processes on the same cores slow
  each other 5-20x).

This module is the client, on the ``tinyagent`` command's path before anything heavy is imported: the standard
library only. The worker is :mod:`tinyagent.apps.resident._worker` (``python -m tinyagent.apps.resident``).
Platforms without ``socket.send_fds`` (Windows) run every command in its own process, as before.
"""

from __future__ import annotations

from ._client import (
    DEFAULT_KEEP_ALIVE_S,
    FORWARDED_COMMANDS,
    KEEP_ALIVE_ENV,
    ResidentCommand,
    forward,
    keep_alive_seconds,
    main,
    parse_command,
    request_status,
    request_stop,
    runtime_dir,
    socket_path,
    spawn_worker,
    wait_for_listener,
    worker_key,
)

__all__ = ["DEFAULT_KEEP_ALIVE_S", "FORWARDED_COMMANDS", "KEEP_ALIVE_ENV", "ResidentCommand", "forward",
           "keep_alive_seconds", "main", "parse_command", "request_status", "request_stop", "runtime_dir",
           "socket_path", "spawn_worker", "wait_for_listener", "worker_key"]
