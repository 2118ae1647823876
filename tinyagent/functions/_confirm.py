"""The confirmation hook for command-line apps: ask on the terminal, refuse when there is none."""

from __future__ import annotations

import sys

from .._tools import ConfirmationRequest

__all__ = ["terminal_confirm"]


def terminal_confirm(request: ConfirmationRequest) -> bool:
    """Ask the user on the terminal whether ``request`` may go ahead; refuse when stdin is not a terminal.

    Args:
        request: what the tool is about to do.

    Returns:
        True only when the user answers yes (``y`` or ``yes``); False without a terminal, on EOF, or on any other
        answer.
    """
    if not sys.stdin.isatty():
        return False
    details = ", ".join(f"{k}={v!r}" for k, v in request.details.items() if k not in ("body", "text"))
    prompt = f"{request.tool or 'tool'} wants to {request.action}" + (f" ({details})" if details else "")
    try:
        answer = input(f"{prompt}. Allow? [y/N] ")
    except (EOFError, KeyboardInterrupt):
        return False
    return answer.strip().lower() in ("y", "yes")
