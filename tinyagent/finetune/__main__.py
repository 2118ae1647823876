"""``python -m tinyagent.finetune distill|train|run``: the same commands as ``tinyagent finetune ...``.

Examples::

    python -m tinyagent.finetune distill --tools my_tools.py --teacher qwen2.5-coder-1.5b --out runs/data -n 300
    python -m tinyagent.finetune train --data runs/data --base qwen2.5-coder-0.5b --out runs/train --epochs 2
"""

from __future__ import annotations

if __name__ == "__main__":
    from tinyagent.apps import run_command

    run_command(["finetune"])
