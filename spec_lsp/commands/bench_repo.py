"""`spec-lsp bench repo`: its arguments (the bench is `spec_lsp/benchmarks/repo.py`, imported
when the subcommand runs)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from spec_lsp.benchmarks.repo_hole import CUTS
from spec_lsp.commands.peer_args import add_llama_server_arguments

ROW_NAMES = (
    "definitions_edits",
    "definitions",
    "definitions_only",
    "ring",
    "in_file",
    "llama_server_ring",
)


def register_repo(bsub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = bsub.add_parser(
        "repo",
        help="repository context: holes that use a name from another file of a package (PyPI "
        "or npm packages fetched and cached), rows per context setting and llama-server's /infill",
    )
    p.add_argument("--preset", default="coder", help="model pair (default: coder)")
    p.add_argument("--device", default="auto", help="where the models run: auto, cpu or cuda")
    add_hole_arguments(p)
    p.add_argument(
        "--rows",
        default=",".join(ROW_NAMES),
        metavar="R,R",
        help=f"rows to run (default: all of {', '.join(ROW_NAMES)})",
    )
    p.add_argument("--max-tokens", type=int, default=64, metavar="N", help="maxTokens")
    p.add_argument(
        "--open-files", type=int, default=8, metavar="N", help="other files open at a hole"
    )
    p.add_argument("--no-tests", action="store_true", help="no pass@1 (the packages' own tests)")
    p.add_argument("--timeout", type=float, default=120.0, metavar="S", help="seconds per test run")
    p.add_argument("--list", action="store_true", help="print the chosen set's packages and exit")
    p.add_argument("--json", metavar="PATH", help="write the report with every answer")
    p.add_argument(
        "--merge",
        type=Path,
        nargs="+",
        metavar="REPORT",
        help="run nothing: merge these runs' JSON reports (parts of one bench: other packages, "
        "other rows) into one, figures recomputed; --json writes it",
    )
    add_llama_server_arguments(p)
    p.set_defaults(func=cmd_repo)


def add_hole_arguments(p: argparse.ArgumentParser) -> None:
    """Which holes: the package set, its packages or folders, how many, the seed and the cut."""
    p.add_argument(
        "--set",
        dest="package_set",
        choices=("pypi", "npm"),
        default="pypi",
        help="the pinned package list: pypi (Python, with pass@1) or npm (JavaScript and "
        "TypeScript, no pass@1); with --source, how the folders' files are read (default: pypi)",
    )
    p.add_argument(
        "--packages",
        default="",
        metavar="A,B",
        help="which packages of the set (default: all; `--list` shows them)",
    )
    p.add_argument(
        "--source",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="a package folder on disk instead of the set's list (repeatable; no download)",
    )
    p.add_argument("--holes", type=int, default=30, metavar="N", help="holes per package")
    p.add_argument("--seed", type=int, default=0, help="the holes' sampling seed")
    p.add_argument(
        "--cut",
        choices=CUTS,
        default="name",
        help="where a hole starts: at the imported name's use (name), or, for the holes that "
        "call it, after the call's `(`, the name typed and its arguments to write (args) "
        "(default: name)",
    )


def cmd_repo(args: argparse.Namespace) -> int:
    from spec_lsp.benchmarks.repo import RepoRun, main

    if args.merge:
        from spec_lsp.benchmarks.repo_merge import main as merge_main

        return merge_main(args.merge, args.json)
    if args.list:
        return list_set(args.package_set)
    rows = tuple(r for r in args.rows.split(",") if r)
    if unknown := set(rows) - set(ROW_NAMES):
        print(f"spec-lsp bench repo: unknown rows {sorted(unknown)}", file=sys.stderr)
        return 2
    plan = RepoRun(
        preset=args.preset,
        rows=rows,
        holes=args.holes,
        seed=args.seed,
        max_tokens=args.max_tokens,
        open_files=args.open_files,
        tests=not args.no_tests,
        timeout_s=args.timeout,
        device=args.device,
        threads=args.threads,
        llama_server=args.llama_server,
        gguf=args.gguf,
        package_set=args.package_set,
        cut=args.cut,
    )
    names = [n for n in args.packages.split(",") if n]
    return main(plan, names, args.source, args.json)


def list_set(package_set: str) -> int:
    """Prints the set's pinned packages (name-version and checksum) and where they are cached."""
    from spec_lsp.benchmarks.repo_npm import NPM_PACKAGES
    from spec_lsp.benchmarks.repo_packages import PACKAGES, cache_dir

    if package_set == "npm":
        for npm in NPM_PACKAGES:
            print(f"{npm.label:<24} {npm.integrity}")
        print(f"cached under {cache_dir() / 'npm'}")
    else:
        for package in PACKAGES:
            print(f"{package.label:<24} sha256 {package.sha256}")
        print(f"cached under {cache_dir()}")
    return 0
