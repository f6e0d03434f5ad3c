"""`spec-lsp` command line: one subcommand per area, each registered by its own module.

Each module in `COMMAND_MODULES` has `register(subparsers)` which adds its subcommand(s) and sets
`func` on the parser. Modules import torch lazily, so `spec-lsp --help` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMAND_MODULES = (
    "spec_lsp.commands.complete",  # complete FILE:LINE:COL
    "spec_lsp.commands.models",  # models list
    "spec_lsp.commands.bench",  # bench engine
    "spec_lsp.commands.serve",  # serve (issue 4)
    "spec_lsp.commands.trim",  # trim (issue 3)
    "spec_lsp.commands.replay",  # record, replay (issue 5)
    "spec_lsp.commands.distill",  # distill (issue 8)
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="spec-lsp",
        description="Code-completion language server with speculative decoding on local models.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:  # a real missing dependency inside the module: surface it
                raise
            continue  # that area is not built yet
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
