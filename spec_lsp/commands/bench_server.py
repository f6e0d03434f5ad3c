"""`spec-lsp bench server`: figures for the language server (filled in below)."""

from __future__ import annotations

import argparse


def register_bench(bsub: argparse._SubParsersAction) -> None:
    p = bsub.add_parser("server", help="benchmark the language server")
    p.set_defaults(func=lambda args: 0)
