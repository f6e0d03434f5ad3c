#!/usr/bin/env bash
# torch for a virtual environment, the Makefile's torch step (`make install`, `demo`, `setup`).
# Where there is no NVIDIA GPU, torch's CPU build from PyTorch's CPU wheel index (an extra index:
# torch==2.13.0+cpu outranks PyPI's 2.13.0, everything else still comes from the ordinary index),
# so pip does not bring the CUDA build's nvidia-*, cuda-* and triton wheels (~3 GB). Where that
# index does not answer within a few seconds, the ordinary index alone: pip then takes the CPU
# wheel it finds there (a local folder in pip's find-links, as on the machines the tests run on),
# else PyPI's torch, which on Linux is the CUDA build. pip's progress shows.
#
#   bash tools/install_torch.sh PYTHON [PIP_ARGS...]   (PIP_ARGS: e.g. --dry-run --report r.json)
#   SPEC_LSP_TORCH=auto (default: cuda where `nvidia-smi -L` lists a GPU, else cpu) | cpu | cuda
#   SPEC_LSP_TORCH_INDEX  the CPU index (default https://download.pytorch.org/whl/cpu)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:?usage: tools/install_torch.sh PYTHON [PIP_ARGS...]}
shift
INDEX=${SPEC_LSP_TORCH_INDEX:-https://download.pytorch.org/whl/cpu}
INDEX=${INDEX%/}
PROBE_S=3  # seconds for the index to answer; `timeout` also bounds a name lookup that hangs

has_gpu() { nvidia-smi -L 2>/dev/null | grep -q '^GPU'; }
index_answers() {
  timeout "$((PROBE_S + 1))" "$PY" -c \
    'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=float(sys.argv[2]))' \
    "$INDEX/torch/" "$PROBE_S" >/dev/null 2>&1
}

build=${SPEC_LSP_TORCH:-auto}
case "$build" in
  auto) if has_gpu; then build=cuda why="nvidia-smi lists a GPU"; else build=cpu why="no NVIDIA GPU"; fi ;;
  cpu | cuda) why="SPEC_LSP_TORCH=$build" ;;
  *) echo "SPEC_LSP_TORCH=$build: use auto, cpu or cuda" >&2; exit 2 ;;
esac
args=(install -c constraints-cpu.txt)
if [ "$build" = cuda ]; then
  echo "torch: the ordinary index's build, CUDA on Linux ($why)"
elif index_answers; then
  args+=(--extra-index-url "$INDEX")
  echo "torch: the CPU build from $INDEX ($why)"
else
  echo "torch: $INDEX did not answer within ${PROBE_S} s: the ordinary index alone ($why;" \
    "its CPU wheel where pip finds one, else PyPI's build, CUDA on Linux)"
fi
echo "+ $PY -m pip ${args[*]} $* torch"
exec "$PY" -m pip "${args[@]}" "$@" torch
