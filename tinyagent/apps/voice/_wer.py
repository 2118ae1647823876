"""Word error rate, for measuring the recogniser."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass

logger = logging.getLogger("tinyagent.apps.voice")

def word_error_rate(reference: str, hypothesis: str) -> float:
    """Word error rate: (substitutions + insertions + deletions) / words in ``reference``."""
    ref, hyp = reference.lower().split(), hypothesis.lower().split()
    if not ref:
        return 0.0 if not hyp else 1.0
    prev = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        cur = [i] + [0] * len(hyp)
        for j, h in enumerate(hyp, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r != h))
        prev = cur
    return prev[-1] / len(ref)
