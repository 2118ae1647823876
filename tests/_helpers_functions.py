"""Shared pieces of the ``tinyagent.functions`` tests: the demo date and the two simple confirmation hooks.

The demo data set itself comes from the ``demo_template`` and ``data_dir`` fixtures in ``conftest.py``.
"""

from __future__ import annotations

import datetime as dt

from tinyagent import ConfirmationRequest

TODAY = dt.date(2026, 12, 1)
"""The date the demo data set is seeded around and the tools resolve relative dates against."""


def allow(request: ConfirmationRequest) -> bool:
    """A confirmation hook that approves everything."""
    return True


def deny(request: ConfirmationRequest) -> bool:
    """A confirmation hook that refuses everything."""
    return False
