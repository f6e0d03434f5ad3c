#!/usr/bin/env bash
# make gpu-check: on a machine with a CUDA GPU (no hub access needed), time the qwen2.5-coder-7b
# pair with random weights: ms per token against the weights' bandwidth roofline, the verify-cost
# curve and the exactness check. Elsewhere: "no CUDA device", exit 0. At most ~8 minutes.
set -euo pipefail
PY=${PY:-.venv/bin/python}
if ! "$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "no CUDA device"
  exit 0
fi
exec timeout 480 "$PY" -m spec_lsp.benchmarks.gpu_check --preset "${PRESET:-qwen2.5-coder-7b}" \
  --prompts "${PROMPTS:-4}" --max-new-tokens "${MAX_NEW:-64}"
