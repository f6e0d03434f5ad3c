#!/usr/bin/env bash
# Replay tests/sessions with the current tree's replay client against the server of another
# checkout (a git worktree), so two commits' servers are compared under one client (issue 14).
#
#   tools/replay_versions.sh LABEL WORKTREE|head SPEED OUTDIR
#
# WORKTREE: a checkout (e.g. `git worktree add --detach /tmp/trim-old f8a5089^`); its server runs
# as `python -c ...cli.main() serve --preset bundled` from inside it with PYTHONPATH=WORKTREE (commits
# before spec_lsp/__main__ existed have cli.py's __main__ only), and appends the spec_lsp file it
# imported to OUTDIR/imported.txt. `head` runs the plain `spec-lsp replay` of this tree.
# Writes OUTDIR/LABEL.json (--json), LABEL.traces.jsonl (every request and answer,
# tools/replay_traces.py), LABEL.out (the table) and LABEL.err. Runs under
# flock /tmp/spec-lsp-bench.lock so timed runs never overlap.
set -euo pipefail
label=$1 tree=$2 speed=$3 out=$4
here=$(cd "$(dirname "$0")/.." && pwd)
py=$here/.venv/bin/python
mkdir -p "$out"
export OMP_NUM_THREADS=2
args=(replay "$here/tests/sessions" --preset bundled --speed "$speed" --json "$out/$label.json")
if [ "$tree" != head ]; then
    boot="import sys, spec_lsp.syntax.units as u; open('$out/imported.txt', 'a').write('$label ' + u.__file__ + '\\n'); from spec_lsp.cli import main; sys.exit(main())"
    args+=(--server-cmd "env PYTHONPATH=$tree OMP_NUM_THREADS=2 $py -c \"$boot\" serve --preset bundled")
    cd "$tree"
else
    cd "$here"
fi
{
    echo "label=$label tree=$tree speed=$speed commit=$(git rev-parse --short HEAD) queued=$(date -u +%FT%TZ)"
    flock /tmp/spec-lsp-bench.lock bash -c 'echo "start=$(date -u +%FT%TZ)"; exec "$@"' _ \
        "$py" "$here/tools/replay_traces.py" "$out/$label.traces.jsonl" "${args[@]}"
    echo "end=$(date -u +%FT%TZ)"
} >"$out/$label.out" 2>"$out/$label.err"
