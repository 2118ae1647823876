"""Build ``tinyagent/retrieval/data/stress_distractors.json``: distractor tools from BFCL's function docs.

Usage::

    pip download --no-deps bfcl-eval==2026.3.23 -d /tmp/bfcl      # never pip install it
    python benchmarks/stress_registry.py /tmp/bfcl/bfcl_eval-2026.3.23-py3-none-any.whl [--count 400]

The wheel is read as a zip. Names are made identifiers ('.' and '-' become '_'), deduplicated case-insensitively,
and names of built-in tools are dropped. Each spec must load with ``Tool.from_openai``. The selection is
deterministic (ordered by a hash of the name), so re-running gives the same file. BFCL is Apache-2.0.

At run time, ``tinyagent.retrieval.stress_registry()`` loads the built-in tools plus these distractors.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import zipfile
from pathlib import Path
from typing import Any

from tinyagent import Tool
from tinyagent.errors import TinyAgentError

OUT = Path(__file__).resolve().parent.parent / "tinyagent" / "retrieval" / "data" / "stress_distractors.json"
BFCL_VERSION = "2026.3.23"
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


def _builtin_names() -> set[str]:
    try:
        from tinyagent.functions import builtin_tools
    except ImportError:
        return set()
    return {(t if isinstance(t, str) else t.name).lower() for t in builtin_tools()}


def _compact_schema(node: Any, depth: int = 0) -> Any:
    """Keep what a planner reads; cut very long descriptions and enum lists."""
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k == "description" and isinstance(v, str):
                out[k] = " ".join(v.split())[:300]
            elif k == "enum" and isinstance(v, list):
                out[k] = v[:20]
            elif k in ("default",) and depth > 0 and isinstance(v, str) and len(v) > 80:
                continue
            else:
                out[k] = _compact_schema(v, depth + 1)
        return out
    if isinstance(node, list):
        return [_compact_schema(v, depth + 1) for v in node]
    return node


def collect(wheel: Path) -> list[dict[str, Any]]:
    """Every usable, renamed, deduplicated function spec in the wheel's BFCL_v4 data files."""
    seen: dict[str, dict[str, Any]] = {}
    builtin = _builtin_names()
    with zipfile.ZipFile(wheel) as zf:
        members = sorted(n for n in zf.namelist() if re.search(r"bfcl_eval/data/BFCL_v4_[a-z_]+\.json$", n))
        for member in members:
            if "format_sensitivity" in member:
                continue
            for line in zf.read(member).decode("utf-8").splitlines():
                if not line.strip():
                    continue
                for fn in json.loads(line).get("function") or []:
                    name = re.sub(r"[.\-]", "_", str(fn.get("name", "")))
                    if not _IDENT.match(name) or name.lower() in builtin or name.lower() in seen:
                        continue
                    desc = " ".join(str(fn.get("description", "")).split())
                    if len(desc) < 20:
                        continue
                    spec = {
                        "name": name,
                        "description": desc[:500],
                        "parameters": _compact_schema(fn.get("parameters") or {}),
                    }
                    try:
                        Tool.from_openai(spec)
                    except TinyAgentError:
                        continue
                    seen[name.lower()] = spec
    return list(seen.values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("wheel", type=Path, help=f"bfcl_eval-{BFCL_VERSION}-py3-none-any.whl")
    parser.add_argument("--count", type=int, default=400)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    specs = collect(args.wheel)
    specs.sort(key=lambda s: hashlib.sha1(s["name"].encode()).hexdigest())
    chosen = sorted(specs[: args.count], key=lambda s: s["name"])
    doc = {
        "source": f"bfcl-eval {BFCL_VERSION} (bfcl_eval/data/BFCL_v4_*.json), Apache-2.0; renamed and compacted",
        "count": len(chosen),
        "tools": [{"type": "function", "function": s} for s in chosen],
    }
    args.out.write_text(json.dumps(doc, separators=(",", ":"), ensure_ascii=False) + "\n")
    print(f"{len(specs)} candidates; wrote {len(chosen)} distractors to {args.out} ({args.out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
