"""``python -m tinyagent.models verify-all``: assemble and verify every installed catalog model (used by CI)."""

from __future__ import annotations

import logging
import sys

from ..errors import ModelIntegrityError
from ._catalog import ModelCatalog


def main(argv: list[str] | None = None) -> int:
    """Verify every installed catalog model; exit non-zero on any mismatch."""
    args = sys.argv[1:] if argv is None else argv
    if args != ["verify-all"]:
        sys.stderr.write("usage: python -m tinyagent.models verify-all\n")
        return 2
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    catalog = ModelCatalog()
    failed = 0
    for entry in catalog.entries():
        if not catalog.installed(entry.name):
            sys.stdout.write(f"{entry.name:24} not installed ({entry.pip_install})\n")
            continue
        try:
            catalog.path(entry.name)
            digest = catalog.verify(entry.name)
            sys.stdout.write(f"{entry.name:24} ok  sha256 {digest[:16]}…\n")
        except ModelIntegrityError as exc:
            failed += 1
            sys.stdout.write(f"{entry.name:24} FAILED: {exc}\n")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
