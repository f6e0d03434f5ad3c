#!/usr/bin/env bash
# Build llama.cpp's llama-server from the source that llama-cpp-python's sdist carries
# (vendor/llama.cpp, MIT), into a cache folder outside the work tree; a second run reuses it. The
# sdist's version is pinned in constraints-cpu.txt, so the peer baseline does not drift with
# PyPI's newest release; a cache built from another version is built again.
#
# The strongest build that runs here is chosen, each one smoke-tested (`--version` and a few greedy
# tokens on the bundled GGUF, under a timeout) before it is used:
# 1. native (-DGGML_NATIVE=ON: every instruction this CPU has) in build-native;
# 2. where the CPU has AMX and the native build failed: native without AMX (-mno-amx-tile
#    -mno-amx-int8 -mno-amx-bf16; AVX-512/VNNI kept) in build-native-noamx. A -DGGML_NATIVE=ON
#    build dies with SIGILL on some machines (on a Xeon with AMX in a Firecracker VM, at its first
#    AMX tile instruction, `tilezero` in ggml's AMX matmul), while the same build without AMX runs;
# 3. the portable build (AVX2/FMA/F16C, no AVX-512) in build/.
# The one that ran is linked as $CACHE/llama-server (spec_lsp.benchmarks.llama_cpp.server_binary()
# looks there first) and $CACHE/llama-server.build says which, in the line this script prints. The
# last line printed is the binary's path. A cache moved to another CPU smoke-tests its builds again.
set -euo pipefail
PY=$(realpath -s "${PY:-.venv/bin/python}")  # -s: a venv's python stays the venv's
CACHE=${SPEC_LSP_TOOLS:-$HOME/.cache/spec-lsp-tools}/llama.cpp
PORTABLE=$CACHE/build/bin/llama-server
LINK=$CACHE/llama-server
RECORD=$LINK.build
JOBS=${JOBS:-2}
FEATURES='avx2|avx_vnni|avx512f|avx512_vnni|avx512_bf16|amx_int8'  # named in the build's record
CONSTRAINTS=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/constraints-cpu.txt
PIN=$(grep -m1 -x -E 'llama-cpp-python==[0-9][0-9.]*' "$CONSTRAINTS") || {
  echo "llama-server: no llama-cpp-python==VERSION line in $CONSTRAINTS" >&2
  exit 1
}
SDIST=llama_cpp_python-${PIN#llama-cpp-python==}.tar.gz
mkdir -p "$CACHE"
# One build at a time: a second caller (the tests' fixture beside make bench-peers) waits for the
# first instead of running cmake in the same build folder.
exec 9>"$CACHE/.build.lock"
flock 9

# The source's version, and every build from it: another version's are removed. A cache from before
# the pin that holds the pinned sdist is kept.
if [ ! -f "$CACHE/src.version" ] && [ -d "$CACHE/src" ] && [ -f "$CACHE/sdist/$SDIST" ]; then
  echo "$PIN" >"$CACHE/src.version"
fi
if [ "$(cat "$CACHE/src.version" 2>/dev/null)" != "$PIN" ]; then
  rm -rf "$CACHE/src" "$CACHE/sdist" "$CACHE/build" "$CACHE"/build-native* "$CACHE/src.version"
  rm -f "$LINK" "$RECORD" "$CACHE/llama-server.cpu"
fi

cpu=$( (lscpu 2>/dev/null || true) | sed -n 's/^Model name: *//p' | head -n1)
cpu=${cpu:-unknown CPU}
# What a native build depends on: the CPU's model and instruction flags.
signature=$( (echo "$cpu"; grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true) | cksum | cut -d' ' -f1)

select_build() {  # BINARY LINE: link the binary that ran and record which build it is
  ln -sfn "$1" "$LINK"
  printf '%s\n' "$2" >"$RECORD"
  echo "$signature" >"$CACHE/llama-server.cpu"
  echo "llama-server: $2"
  echo "$LINK"
  exit 0
}

smoke() {  # BINARY: prints why it failed, or nothing
  local out
  if ! out=$(timeout 30 "$1" --version 2>&1); then
    echo "--version: $(tail -n1 <<<"$out")"
    return 1
  fi
  if ! out=$(timeout 180 "$PY" -c '
import sys
from pathlib import Path
from spec_lsp.benchmarks.llama_cpp import smoke_test
from spec_lsp.engine.from_source import bundled_gguf
try:
    print(smoke_test(Path(sys.argv[1]), bundled_gguf("smollm2-135m-instruct")))
except RuntimeError as exc:  # its first line says why: "llama-server exited (killed by SIGILL)"
    sys.exit(str(exc).splitlines()[0])
' "$1" 2>&1); then
    echo "generation: $(tail -n1 <<<"$out" | cut -c1-300)"
    return 1
  fi
}

fetch_source() {
  [ -d "$CACHE/src" ] && return 0
  (
    cd "$CACHE"
    "$PY" -m pip download -q --no-binary :all: --no-deps --dest sdist "$PIN"
    tar -xzf "sdist/$SDIST" -C "$CACHE"
    top=$(basename "$SDIST" .tar.gz)
    mv "$top/vendor/llama.cpp" src
    rm -rf "$top"
    echo "$PIN" >src.version
  )
}

build() {  # FOLDER CMAKE-FLAGS...: llama-server into $CACHE/FOLDER/bin
  local dir=$CACHE/$1
  shift
  mkdir -p "$dir"
  cmake -S "$CACHE/src" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF "$@" >/dev/null
  cmake --build "$dir" --target llama-server -j"$JOBS" >/dev/null
  test -x "$dir/bin/llama-server"
}

# Done before: the selected build, smoke-tested again only when the CPU is not the one it ran on.
if [ -x "$LINK" ] && [ -f "$RECORD" ]; then
  if [ "$(cat "$CACHE/llama-server.cpu" 2>/dev/null)" = "$signature" ]; then
    echo "llama-server: $(cat "$RECORD")"
    echo "$LINK"
    exit 0
  fi
  rm -f "$CACHE"/build-native*/smoke-failed
fi

# FOLDER LABEL CMAKE-FLAGS...: select the build in $CACHE/FOLDER (exits) when it builds and passes
# the smoke test; otherwise set $why, and remember it for this CPU in FOLDER/smoke-failed.
try_native() {
  local folder=$1 label=$2 dir=$CACHE/$1 flags
  shift 2
  local failed=$dir/smoke-failed
  if [ -f "$failed" ] && [ "$(head -n1 "$failed")" = "$signature" ]; then
    why=$(tail -n1 "$failed")
    return 0
  fi
  fetch_source
  # A native build is for the CPU it was built on: another CPU's is built again.
  if [ "$(cat "$dir/cpu" 2>/dev/null)" != "$signature" ]; then
    rm -rf "$dir"
  fi
  if [ -x "$dir/bin/llama-server" ] || build "$folder" "$@" 2>"$dir.err"; then
    echo "$signature" >"$dir/cpu"
    if why=$(smoke "$dir/bin/llama-server"); then
      flags=$( (grep -m1 '^flags' /proc/cpuinfo || true) | (grep -o -w -E "$FEATURES" || true) | tr '\n' ' ')
      select_build "$dir/bin/llama-server" "$label on $cpu: ${flags% }; smoke test passed)"
    fi
  else
    why="the build failed: $( (grep -m1 -E '(error|Error)[: ]' "$dir.err" ||
      tail -n1 "$dir.err") | cut -c1-300)"
  fi
  mkdir -p "$dir"
  printf '%s\n%s\n' "$signature" "$why" >"$failed"
}

why=""
try_native build-native "native build (-DGGML_NATIVE=ON" -DGGML_NATIVE=ON
native_why=$why
if grep -q -w amx_tile /proc/cpuinfo 2>/dev/null; then
  noamx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
  try_native build-native-noamx \
    "native build without AMX (-DGGML_NATIVE=ON $noamx; the full native build failed: $native_why;" \
    -DGGML_NATIVE=ON "-DCMAKE_C_FLAGS=$noamx" "-DCMAKE_CXX_FLAGS=$noamx"
  why="$native_why; without AMX: $why"
fi

fetch_source
if [ ! -x "$PORTABLE" ]; then
  build build -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_AVX512=OFF -DGGML_FMA=ON -DGGML_F16C=ON
fi
if ! portable_why=$(smoke "$PORTABLE"); then
  rm -f "$CACHE"/build-native*/smoke-failed  # all failing says more about this environment
  echo "llama-server: the portable build failed its smoke test too: $portable_why" >&2
  exit 1
fi
select_build "$PORTABLE" "portable AVX2 build (native build failed: $why)"
