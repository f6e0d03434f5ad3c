"""The benchmarks' argument parser.

`spec-lsp bench engine|server|clients|syntax|remote|load|fim|blocks|repo|next-edit|verify-cost`.

Each subcommand parses its arguments and calls one `main` in `spec_lsp/benchmarks/`, imported
when the subcommand runs (they load torch or start a server), so `spec-lsp --help` stays fast.
Benchmarks print a table and write JSON; they are never timed asserts.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from spec_lsp.commands.bench_blocks import register_blocks
from spec_lsp.commands.bench_repo import register_repo
from spec_lsp.commands.peer_args import add_llama_server_arguments
from spec_lsp.config import Options

PRESET_HELP = "model pair: a preset name (spec-lsp models list) or a .toml file"
DEVICE_HELP = "where the models run: auto (CUDA when torch sees a GPU), cpu or cuda"


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("bench", help="benchmarks (print figures; never timed asserts)")
    bsub = p.add_subparsers(dest="bench_command", metavar="BENCH", required=True)
    _register_engine(bsub)
    _register_server(bsub)
    _register_clients(bsub)
    _register_syntax(bsub)
    _register_remote(bsub)
    _register_load(bsub)
    _register_fim(bsub)
    register_blocks(bsub)
    register_repo(bsub)
    _register_next_edit(bsub)
    _register_verify_cost(bsub)


def _register_engine(bsub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    e = bsub.add_parser(
        "engine", help="engine modes vs transformers generate/assisted, same prompts"
    )
    e.add_argument("--preset", default="coder", metavar="P", help=PRESET_HELP)
    e.add_argument("--device", default="auto", help=DEVICE_HELP)
    e.add_argument("--max-new-tokens", type=int, default=64, help="tokens generated per prompt")
    e.add_argument(
        "--prompts", type=int, default=12, help="number of prompts cut from stdlib files"
    )
    e.add_argument("--json", metavar="PATH", help="write the report as JSON")
    e.add_argument(
        "--random-weights",
        action="store_true",
        help=(
            "build the preset's architectures from models/configs with random weights (timing only)"
        ),
    )
    e.add_argument(
        "--assistant",
        metavar="MODEL",
        help="a standalone draft model (directory or model id) for hf_assisted_draft, when the "
        "preset's draft is a feature head that transformers' assisted generation cannot run",
    )
    e.set_defaults(func=cmd_engine)


def _register_server(bsub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = bsub.add_parser("server", help="language server figures: typing through, stop, RSS, KV")
    p.add_argument("--preset", default="bundled", metavar="P", help=PRESET_HELP)
    p.add_argument("--device", default="auto", help=DEVICE_HELP)
    p.add_argument("--chars", type=int, default=120, help="characters typed one at a time")
    p.add_argument("--docs", type=int, default=100, help="documents opened and completed in")
    p.add_argument("--supersedes", type=int, default=10, help="generations cancelled mid-way")
    p.add_argument("--max-tokens", type=int, default=16, help="maxTokens while typing")
    p.add_argument("--phases", default="typing,supersede,memory", help="which figures to measure")
    p.add_argument("--json", metavar="PATH", help="write the figures as JSON")
    p.set_defaults(func=cmd_server)


def _register_clients(bsub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = bsub.add_parser("clients", help="a shared server's RSS with one editor client, then N")
    p.add_argument("--preset", default="bundled", metavar="P", help=PRESET_HELP)
    p.add_argument("--device", default="auto", help=DEVICE_HELP)
    p.add_argument("--clients", type=int, default=3, help="editor clients connected in turn")
    p.add_argument("--docs", type=int, default=2, help="documents each client completes in")
    p.add_argument("--json", metavar="PATH", help="write the figures as JSON")
    p.set_defaults(func=cmd_clients)


def cmd_clients(args: argparse.Namespace) -> int:
    from spec_lsp.benchmarks.clients import main
    from spec_lsp.replay.client import ServerError

    try:
        return main(args.preset, args.device, args.clients, args.docs, args.json)
    except ServerError as exc:
        print(f"spec-lsp bench clients: {exc}", file=sys.stderr)
        return 1


def _register_syntax(bsub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = bsub.add_parser("syntax", help="tokens generated with and without the syntax stop callback")
    p.add_argument("--preset", default="bundled", metavar="P", help=PRESET_HELP)
    p.add_argument("--device", default="auto", help=DEVICE_HELP)
    p.add_argument("--max-new-tokens", type=int, default=64, help="tokens generated per prompt")
    p.add_argument(
        "--prompts", type=int, default=12, help="number of prompts cut from stdlib files"
    )
    p.add_argument("--json", metavar="PATH", help="write the report as JSON")
    p.set_defaults(func=cmd_syntax)


def _register_load(bsub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = bsub.add_parser("load", help="many open documents and steady typing: RSS, latency, fds")
    p.add_argument("--preset", default="tiny", metavar="P", help=PRESET_HELP)
    p.add_argument("--device", default="cpu", help=DEVICE_HELP)
    p.add_argument("--docs", type=int, default=1000, help="documents opened")
    p.add_argument("--typed", type=int, default=50, help="documents typed into, round-robin")
    p.add_argument("--rate", type=float, default=20.0, help="keystrokes per second, in all")
    p.add_argument("--seconds", type=float, default=180.0, help="how long to type")
    p.add_argument("--max-tokens", type=int, default=16, help="maxTokens while typing")
    p.add_argument("--json", metavar="PATH", help="write the figures as JSON")
    p.set_defaults(func=cmd_load)


def cmd_load(args: argparse.Namespace) -> int:
    from spec_lsp.benchmarks.load import main
    from spec_lsp.replay.client import ServerError

    try:
        return main(
            args.preset,
            args.device,
            args.docs,
            args.typed,
            args.rate,
            args.seconds,
            args.max_tokens,
            args.json,
        )
    except ServerError as exc:
        print(f"spec-lsp: {exc}")
        return 1


def _register_remote(bsub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = bsub.add_parser("remote", help="a superseded llama-server request: time to close it")
    p.add_argument("--url", help="a running llama-server (default: start the cached build)")
    p.add_argument("--rounds", type=int, default=20, help="superseded requests timed")
    p.add_argument("--max-new-tokens", type=int, default=200, help="tokens each request asks for")
    p.add_argument("--json", metavar="PATH", help="also write the figures here")
    p.set_defaults(func=cmd_remote)


def cmd_remote(args: argparse.Namespace) -> int:
    from spec_lsp.benchmarks.remote import main

    return main(args)


def cmd_engine(args: argparse.Namespace) -> int:
    from spec_lsp.benchmarks.engine_bench import main
    from spec_lsp.engine.loading import ModelLoadError
    from spec_lsp.presets import PresetError

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
    except (ModelLoadError, PresetError) as exc:
        print(f"spec-lsp: {exc}")
        return 1


def cmd_server(args: argparse.Namespace) -> int:
    from spec_lsp.benchmarks.server import main
    from spec_lsp.replay.client import ServerError

    try:
        return main(
            args.preset,
            args.device,
            args.chars,
            args.docs,
            args.supersedes,
            args.max_tokens,
            args.phases,
            args.json,
        )
    except ServerError as exc:
        print(f"spec-lsp: {exc}")
        return 1


def cmd_syntax(args: argparse.Namespace) -> int:
    from spec_lsp.benchmarks.syntax import main
    from spec_lsp.engine.loading import ModelLoadError
    from spec_lsp.presets import PresetError

    try:
        return main(args.preset, args.device, args.max_new_tokens, args.prompts, args.json)
    except (ModelLoadError, PresetError) as exc:
        print(f"spec-lsp: {exc}")
        return 1


def _register_fim(bsub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = bsub.add_parser(
        "fim", help="fill-in-the-middle pass@1 on HumanEval infilling, the server's pipeline"
    )
    p.add_argument("--data", type=Path, metavar="FILE", help="problems, .jsonl or .jsonl.gz")
    p.add_argument(
        "--merge",
        nargs="+",
        type=Path,
        metavar="PART",
        help="instead of a run: join the --json reports of consecutive --offset/--limit slices",
    )
    p.add_argument(
        "--preset", metavar="P", help=f"model pair (default: the server's, {Options.preset})"
    )
    p.add_argument("--device", default="auto", help=DEVICE_HELP)
    p.add_argument(
        "--limit", type=int, metavar="N", help="the first N problems (from --offset; default all)"
    )
    p.add_argument("--offset", type=int, default=0, metavar="N", help="problems skipped first")
    p.add_argument(
        "--widen",
        type=int,
        default=1,
        metavar="N",
        help="grow each hole to up to N lines (the next lines of its block): multi-line holes",
    )
    p.add_argument(
        "--max-tokens",
        type=int,
        default=Options.max_tokens,
        metavar="N",
        help="most tokens a suggestion generates, a whole block too (the server's maxTokens)",
    )
    p.add_argument(
        "--timeout", type=float, default=10.0, metavar="S", help="seconds per problem's tests"
    )
    p.add_argument("--json", metavar="PATH", help="write the report with per-problem rows")
    add_llama_server_arguments(p)
    p.set_defaults(func=cmd_fim)


def cmd_fim(args: argparse.Namespace) -> int:
    from spec_lsp.benchmarks.fim import main  # a failed load is a FimError: main says it, exits 1

    if args.merge:
        from spec_lsp.benchmarks.fim_merge import main as merge_main

        return merge_main(args.merge, args.json)
    if args.data is None:
        print("spec-lsp bench fim: --data FILE is needed (or --merge PART...)", file=sys.stderr)
        return 2
    return main(
        args.data,
        args.preset,
        args.gguf,
        args.json,
        limit=args.limit,
        offset=args.offset,
        widen_to=args.widen,
        max_tokens=args.max_tokens,
        timeout_s=args.timeout,
        llama_server=args.llama_server,
        threads=args.threads,
        device=args.device,
    )


def _register_next_edit(bsub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = bsub.add_parser(
        "next-edit", help="next edit suggestions on cases mined from a git repository's history"
    )
    p.add_argument("--repo", default=".", metavar="PATH", help="a git repository (default: here)")
    p.add_argument("--preset", default="coder", metavar="P", help="model pair or preset file")
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"), help=DEVICE_HELP)
    p.add_argument("--limit", type=int, default=200, metavar="N", help="positive cases")
    p.add_argument("--negatives", type=int, default=50, metavar="N", help="negative cases")
    p.add_argument("--json", metavar="PATH", help="write the figures and per-case rows as JSON")
    p.add_argument(
        "--rev",
        default="HEAD",
        metavar="REV",
        help="mine the history up to this commit (default: HEAD); a fixed one gives the same cases "
        "whatever is committed since",
    )
    p.add_argument(
        "--every",
        type=int,
        default=1,
        metavar="K",
        help="run every K-th of the mined cases (a subset of the same cases; default: all)",
    )
    p.add_argument(
        "--compare",
        choices=("target-only",),
        help="rerun the cases with speculation off: the rewrite's decode speed ratio",
    )
    p.set_defaults(func=cmd_next_edit)


def cmd_next_edit(args: argparse.Namespace) -> int:
    from spec_lsp.benchmarks.next_edit import main
    from spec_lsp.benchmarks.next_edit_cases import MiningError
    from spec_lsp.replay.client import ServerError

    try:
        return main(
            args.repo,
            args.preset,
            args.limit,
            args.negatives,
            args.json,
            compare=args.compare,
            device=args.device,
            rev=args.rev,
            every=args.every,
        )
    except (MiningError, ServerError) as exc:
        print(f"spec-lsp: {exc}", file=sys.stderr)
        return 1


def _register_verify_cost(bsub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = bsub.add_parser(
        "verify-cost", help="a target pass over 1..N new tokens against one (the verify cost)"
    )
    p.add_argument("--preset", default="coder", metavar="P", help=PRESET_HELP)
    p.add_argument("--device", default="auto", help=DEVICE_HELP)
    p.add_argument("--rows", type=int, default=16, help="the most new tokens a pass runs")
    p.add_argument(
        "--context", type=int, nargs="+", default=[200, 1200], help="cached tokens before"
    )
    p.add_argument("--reps", type=int, default=3, help="runs per point (the best is kept)")
    p.add_argument("--json", metavar="PATH", help="write the curve as JSON")
    p.add_argument(
        "--random-weights", action="store_true", help="the preset's architecture, random weights"
    )
    p.add_argument(
        "--cpu-time",
        action="store_true",
        help="one thread, timed by its CPU time: a curve that another busy process barely moves",
    )
    p.set_defaults(func=cmd_verify_cost)


def cmd_verify_cost(args: argparse.Namespace) -> int:
    from spec_lsp.benchmarks.verify_cost import main
    from spec_lsp.engine.loading import ModelLoadError
    from spec_lsp.presets import PresetError

    try:
        return main(
            args.preset,
            args.device,
            max(1, args.rows),
            args.context,
            max(1, args.reps),
            args.json,
            args.random_weights,
            args.cpu_time,
        )
    except (ModelLoadError, PresetError) as exc:
        print(f"spec-lsp: {exc}")
        return 1
