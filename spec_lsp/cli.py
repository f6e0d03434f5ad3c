"""`spec-lsp` command line: one subcommand per area, each registered by its own module.

This module owns the top-level parser and nothing else. Each module in `COMMANDS` has
`register(subparsers)`, which adds its subcommand(s) and sets `func` on the parser; the work
happens in `spec_lsp/` proper. Command modules import torch, pygls and the engine inside their
functions, so `spec-lsp --help` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from spec_lsp import interpreter
from spec_lsp.commands import (
    bench,
    complete,
    distill,
    doctor,
    kernels,
    models,
    replay,
    serve,
    trim,
)
from spec_lsp.version import version

COMMANDS = (complete, models, kernels, doctor, bench, serve, trim, replay, distill)


class DefaultsFormatter(argparse.HelpFormatter):
    """`--help` names the default of every option that takes a value (`(default: 64)`), unless its
    help text already speaks of its default; flags and positionals are left as written."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if (
            not action.option_strings
            or action.nargs == 0
            or action.default in (None, argparse.SUPPRESS, [], "")
            or "default" in text.lower()
        ):
            return action.help
        return f"{text} (default: %(default)s)"


class Parser(argparse.ArgumentParser):
    """The parser of `spec-lsp` and of each of its commands: `DefaultsFormatter` unless a command
    names its own."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", DefaultsFormatter)
        super().__init__(*args, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="spec-lsp",
        description="Code-completion language server with speculative decoding on local models.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for module in COMMANDS:
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    interpreter.drop_relative_pythonpath()  # before any lazy import (torch, transformers)
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
