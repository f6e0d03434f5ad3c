"""`spec-lsp kernels build`: compiles the engine's native CPU kernels for this machine into the
cache now, with progress, so that no model load (and no editor's first request) waits on a
compiler. `make setup` and `spec-lsp models fetch` run it too. The work is in
`engine.native.ensure` (built, checked and smoke-tested in a child process)."""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("kernels", help="build the native CPU kernels for this machine")
    ksub = p.add_subparsers(dest="kernels_command", metavar="ACTION", required=True)
    build = ksub.add_parser(
        "build", help="compile, check and smoke-test the kernels into the cache (once per machine)"
    )
    build.add_argument(
        "--force", action="store_true", help="remove this machine's build and compile it again"
    )
    build.set_defaults(func=cmd_build)


def cmd_build(args: argparse.Namespace) -> int:
    return build_kernels(force=args.force)


def build_kernels(force: bool = False) -> int:
    """Builds (or checks) the kernels, printing progress to stderr and the outcome to stdout;
    1 when they cannot be built or loaded (torch's kernels then run: slower, same numbers)."""
    from spec_lsp.engine.weights import native

    if not native.wanted():
        print("native kernels: off here (SPEC_LSP_KERNELS=torch or not x86-64); torch's run")
        return 0
    try:
        path = native.ensure(_progress, force=force)
    except (OSError, RuntimeError) as exc:
        print(f"spec-lsp: native kernels: {exc}", file=sys.stderr)
        print("torch's kernels run instead (slower, the same numbers)", file=sys.stderr)
        return 1
    if not native.available():
        print(f"spec-lsp: native kernels: {native.failure()}", file=sys.stderr)
        return 1
    print(f"native kernels: {native.isa()} path, {path}")
    return 0


def _progress(message: str, fraction: float) -> None:
    print(f"[{fraction:4.0%}] {message}", file=sys.stderr, flush=True)
