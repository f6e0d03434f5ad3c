#!/usr/bin/env bash
# Build llama.cpp's llama-server from the source that llama-cpp-python's sdist carries
# (vendor/llama.cpp, MIT), into a cache folder outside the work tree; a second run reuses it.
# Portable flags: a -DGGML_NATIVE=ON build crashed at generation on this machine class.
set -euo pipefail
PY=$(realpath "${PY:-.venv/bin/python}")
CACHE=${SPEC_LSP_TOOLS:-$HOME/.cache/spec-lsp-tools}/llama.cpp
BIN=$CACHE/build/bin/llama-server
JOBS=${JOBS:-2}
mkdir -p "$CACHE"
# One build at a time: a second caller (the tests' fixture beside make bench-peers) waits for the
# first instead of running cmake in the same build folder.
exec 9>"$CACHE/.build.lock"
flock 9
if [ -x "$BIN" ]; then
  echo "$BIN"
  exit 0
fi
cd "$CACHE"
if [ ! -d src ]; then
  "$PY" -m pip download -q --no-binary :all: --no-deps --dest sdist llama-cpp-python
  tarball=$(ls sdist/llama_cpp_python-*.tar.gz | head -n1)
  tar -xzf "$tarball" -C "$CACHE"
  top=$(basename "$tarball" .tar.gz)
  mv "$top/vendor/llama.cpp" src
  rm -rf "$top"
fi
mkdir -p build
cd build
cmake ../src -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_AVX512=OFF \
  -DGGML_FMA=ON -DGGML_F16C=ON -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF >/dev/null
cmake --build . --target llama-server -j"$JOBS" >/dev/null
test -x "$BIN"
echo "$BIN"
