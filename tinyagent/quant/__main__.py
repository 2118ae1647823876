"""``python -m tinyagent.quant export|merge|quantize|compare|register``: the same commands as ``tinyagent quant ...``.

Examples::

    python -m tinyagent.quant export --adapter runs/train/adapter
    python -m tinyagent.quant merge --adapter runs/train/adapter --out runs/export --types Q8_0,Q4_K_M
    python -m tinyagent.quant quantize model-f16.gguf --types Q8_0,Q5_K_M,Q4_K_M --eval 20
    python -m tinyagent.quant compare a.gguf b.gguf --eval 20
    python -m tinyagent.quant register my-planner runs/export/tuned-Q4_K_M.gguf
"""

from __future__ import annotations

if __name__ == "__main__":
    from tinyagent.apps import run_command

    run_command(["quant"])
