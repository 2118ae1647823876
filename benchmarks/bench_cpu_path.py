"""What the AMX-safe load path costs: llama.cpp with and without its extra buffer types, side by side.

    python benchmarks/bench_cpu_path.py [--model qwen2.5-coder-1.5b] [--threads 2] [--rounds 3]

On CPUs with AMX, tinyagent loads models with ``use_extra_bufts=False`` (ggml's AMX matmul crashes there); that
also turns off weight repacking. This measures prompt and decode tokens/s of the same prompt, model and threads on
both paths, alternating them in fresh processes (``TINYAGENT_LLAMA_EXTRA_BUFTS=1`` / ``=0``), and writes
benchmarks/results/cpu_path.json with the machine's CPU flags, llama.cpp build features and load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

RESULTS = Path(__file__).parent / "results"

_PROBE = r"""
import json, sys, time
from tinyagent.models import ModelCatalog, new_llama
llm = new_llama(model_path=str(ModelCatalog().path(sys.argv[1])), n_ctx=2048, n_threads=int(sys.argv[2]),
                verbose=False)
prompt = llm.tokenize(("Plan the user's request as numbered tool calls. " * 40).encode(), add_bos=True)[:400]
start = time.perf_counter()
llm.eval(prompt)
prompt_s = time.perf_counter() - start
start = time.perf_counter()
out = llm.create_completion("def fibonacci(n):", max_tokens=64, temperature=0, top_k=1,
                            logit_bias={llm.token_eos(): -1e9})
decode_s = time.perf_counter() - start
out_tokens = out["usage"]["completion_tokens"]
print(json.dumps({"extra_bufts": bool(llm.model_params.use_extra_bufts), "prompt_tok_s": len(prompt) / prompt_s,
                  "decode_tok_s": out_tokens / decode_s}))
"""


def probe(model: str, threads: int, extra_bufts: bool) -> dict[str, float]:
    env = {**os.environ, "TINYAGENT_LLAMA_EXTRA_BUFTS": "1" if extra_bufts else "0"}
    out = subprocess.run([sys.executable, "-c", _PROBE, model, str(threads)], env=env, check=True,
                         capture_output=True, text=True, timeout=900)
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from tinyagent.models import cpu_features, llama_build_features

    load_before = os.getloadavg()
    runs: dict[str, list[dict[str, float]]] = {"default": [], "amx_safe": []}
    for _ in range(args.rounds):  # alternate, so drift in the machine's load hits both paths alike
        runs["default"].append(probe(args.model, args.threads, True))
        runs["amx_safe"].append(probe(args.model, args.threads, False))
    summary = {name: {k: round(statistics.median(r[k] for r in rows), 2) for k in ("prompt_tok_s", "decode_tok_s")}
               for name, rows in runs.items()}
    cpu = cpu_features()
    out = {
        "model": args.model, "threads": args.threads, "rounds": args.rounds,
        "cpu": {"arch": cpu.arch, "amx": cpu.amx, "avx2": cpu.avx2, "avx512": cpu.avx512, "neon": cpu.neon},
        "llama_build": sorted(llama_build_features() or ()),
        "loadavg_before": [round(x, 2) for x in load_before], "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "paths": summary, "runs": runs,
        "amx_safe_decode_ratio": round(summary["amx_safe"]["decode_tok_s"] / summary["default"]["decode_tok_s"], 3),
        "amx_safe_prompt_ratio": round(summary["amx_safe"]["prompt_tok_s"] / summary["default"]["prompt_tok_s"], 3),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "cpu_path.json").write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps({k: v for k, v in out.items() if k != "runs"}, indent=2))


if __name__ == "__main__":
    main()
