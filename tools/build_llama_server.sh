#!/usr/bin/env bash
# Build llama.cpp's llama-server from the source that llama-cpp-python's sdist carries
# (vendor/llama.cpp, MIT), into a cache folder outside the work tree; a second run reuses it.
#
# A native build (-DGGML_NATIVE=ON: every instruction this CPU has) goes into build-native and must
# pass a smoke test (`--version` and a few greedy tokens on the bundled GGUF, under a timeout): a
# -DGGML_NATIVE=ON build dies with SIGILL on some machines (on a Xeon with AMX in a Firecracker VM,
# at its first AMX tile instruction, `tilezero` in ggml's AMX matmul). Where it fails, the
# portable build (AVX2/FMA/F16C, no AVX-512) in build/ is used instead. The one that ran is linked as
# $CACHE/llama-server (spec_lsp.benchmarks.llama_cpp.server_binary() looks there first) and
# $CACHE/llama-server.build says which, in the line this script prints. The last line printed is the
# binary's path. A cache moved to another CPU smoke-tests its native build again.
set -euo pipefail
PY=$(realpath -s "${PY:-.venv/bin/python}")  # -s: a venv's python stays the venv's
CACHE=${SPEC_LSP_TOOLS:-$HOME/.cache/spec-lsp-tools}/llama.cpp
PORTABLE=$CACHE/build/bin/llama-server
NATIVE=$CACHE/build-native/bin/llama-server
LINK=$CACHE/llama-server
RECORD=$LINK.build
FAILED=$CACHE/build-native/smoke-failed  # why the native build was given up on this CPU
JOBS=${JOBS:-2}
FEATURES='avx2|avx_vnni|avx512f|avx512_vnni|avx512_bf16|amx_int8'  # named in the build's record
mkdir -p "$CACHE"
# One build at a time: a second caller (the tests' fixture beside make bench-peers) waits for the
# first instead of running cmake in the same build folder.
exec 9>"$CACHE/.build.lock"
flock 9

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
from spec_lsp.engine.sources import bundled_gguf
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
    "$PY" -m pip download -q --no-binary :all: --no-deps --dest sdist llama-cpp-python
    tarball=$(ls sdist/llama_cpp_python-*.tar.gz | head -n1)
    tar -xzf "$tarball" -C "$CACHE"
    top=$(basename "$tarball" .tar.gz)
    mv "$top/vendor/llama.cpp" src
    rm -rf "$top"
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
  rm -f "$FAILED"
fi

why=""
if [ -f "$FAILED" ] && [ "$(head -n1 "$FAILED")" = "$signature" ]; then
  why=$(tail -n1 "$FAILED")
else
  fetch_source
  # A native build is for the CPU it was built on: another CPU's is built again.
  if [ "$(cat "$CACHE/build-native/cpu" 2>/dev/null)" != "$signature" ]; then
    rm -rf "$CACHE/build-native"
  fi
  if [ -x "$NATIVE" ] || build build-native -DGGML_NATIVE=ON 2>"$CACHE/build-native.err"; then
    echo "$signature" >"$CACHE/build-native/cpu"
    if why=$(smoke "$NATIVE"); then
      flags=$( (grep -m1 '^flags' /proc/cpuinfo || true) | (grep -o -w -E "$FEATURES" || true) | tr '\n' ' ')
      select_build "$NATIVE" "native build (-DGGML_NATIVE=ON on $cpu: ${flags% }; smoke test passed)"
    fi
  else
    why="the build failed: $( (grep -m1 -E '(error|Error)[: ]' "$CACHE/build-native.err" ||
      tail -n1 "$CACHE/build-native.err") | cut -c1-300)"
  fi
  mkdir -p "$CACHE/build-native"
  printf '%s\n%s\n' "$signature" "$why" >"$FAILED"
fi

fetch_source
if [ ! -x "$PORTABLE" ]; then
  build build -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_AVX512=OFF -DGGML_FMA=ON -DGGML_F16C=ON
fi
if ! portable_why=$(smoke "$PORTABLE"); then
  rm -f "$FAILED"  # both failing says more about this environment than the native build
  echo "llama-server: the portable build failed its smoke test too: $portable_why" >&2
  exit 1
fi
select_build "$PORTABLE" "portable AVX2 build (native build failed its smoke test: $why)"
