"""`spec-lsp bench engine|...`: benchmarks that print a table and write JSON."""

from __future__ import annotations

import argparse
import importlib


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("bench", help="benchmarks (print figures; never timed asserts)")
    bsub = p.add_subparsers(dest="bench_command", metavar="BENCH", required=True)
    e = bsub.add_parser(
        "engine", help="engine modes vs transformers generate/assisted, same prompts"
    )
    e.add_argument("--preset", default="bundled")
    e.add_argument("--device", default="auto")
    e.add_argument("--max-new-tokens", type=int, default=64)
    e.add_argument(
        "--prompts", type=int, default=12, help="number of prompts cut from stdlib files"
    )
    e.add_argument("--json", metavar="PATH", help="write the report as JSON")
    e.add_argument(
        "--random-weights",
        action="store_true",
        help="build the preset's architectures from models/configs with random weights (timing only)",
    )
    e.add_argument(
        "--assistant",
        metavar="MODEL",
        help="a standalone draft model (directory or model id) for hf_assisted_draft, when the "
        "preset's draft is a feature head that transformers' assisted generation cannot run",
    )
    e.set_defaults(func=cmd_engine)
    # Other areas add their own benchmarks (e.g. `bench server`) through a module of their own.
    for name in ("spec_lsp.commands.bench_server", "spec_lsp.commands.bench_syntax"):
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        module.register_bench(bsub)


def cmd_engine(args: argparse.Namespace) -> int:
    from spec_lsp.benchmarks.engine_bench import main
    from spec_lsp.engine.loading import ModelLoadError

    try:
        return main(
            args.preset,
            args.device,
            args.max_new_tokens,
            args.prompts,
            args.json,
            args.random_weights,
            args.assistant,
        )
    except ModelLoadError as exc:
        print(f"spec-lsp: {exc}")
        return 1
