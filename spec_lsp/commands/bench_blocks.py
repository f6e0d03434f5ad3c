"""`spec-lsp bench blocks`: its arguments (the bench is `spec_lsp/benchmarks/blocks.py`, imported
when the subcommand runs)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from spec_lsp.commands.peer_args import add_llama_server_arguments
from spec_lsp.config import Options

DEVICE_HELP = "where the models run: auto (CUDA when torch sees a GPU), cpu or cuda"


def register_blocks(bsub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = bsub.add_parser(
        "blocks",
        help="whole blocks: pass@1 on multi-line holes (HumanEval widened, stdlib blocks), "
        "explicit requests before and after the whole-block rule, beside llama-server",
    )
    p.add_argument(
        "--data", type=Path, required=True, metavar="FILE", help="HumanEval infilling, .jsonl(.gz)"
    )
    p.add_argument(
        "--preset", metavar="P", help=f"model pair (default: the server's, {Options.preset})"
    )
    p.add_argument("--device", default="auto", help=DEVICE_HELP)
    p.add_argument("--humaneval", type=int, default=30, metavar="N", help="HumanEval holes")
    p.add_argument(
        "--stdlib", type=int, default=20, metavar="N", help="holes cut from the standard library"
    )
    p.add_argument(
        "--max-tokens", type=int, default=Options.max_tokens, metavar="N", help="maxTokens"
    )
    p.add_argument(
        "--block-tokens",
        type=int,
        default=Options.block_tokens,
        metavar="N",
        help="blockTokens of the `after` mode (`before` runs with 0: the rule off)",
    )
    p.add_argument(
        "--llama-tokens", type=int, default=128, metavar="N", help="llama-server's n_predict"
    )
    p.add_argument(
        "--timeout", type=float, default=60.0, metavar="S", help="seconds per hole's tests"
    )
    p.add_argument("--json", metavar="PATH", help="write the report with per-hole rows")
    add_llama_server_arguments(p)
    p.add_argument(
        "--modes",
        default="before,after",
        metavar="M,M",
        help="the server's modes to run (before, after; an empty string: llama-server's only)",
    )
    p.set_defaults(func=cmd_blocks)


def cmd_blocks(args: argparse.Namespace) -> int:
    from spec_lsp.benchmarks.blocks import main  # a failed load is a FimError: main says it

    unknown = set(args.modes.split(",")) - {"before", "after", ""}
    if unknown:
        print(f"spec-lsp bench blocks: unknown modes {sorted(unknown)}", file=sys.stderr)
        return 2

    return main(
        args.data,
        args.json,
        preset=args.preset,
        gguf=args.gguf,
        humaneval=args.humaneval,
        stdlib=args.stdlib,
        max_tokens=args.max_tokens,
        block_tokens=args.block_tokens,
        llama_tokens=args.llama_tokens,
        timeout_s=args.timeout,
        llama_server=args.llama_server,
        threads=args.threads,
        device=args.device,
        modes=tuple(m for m in args.modes.split(",") if m),
    )
