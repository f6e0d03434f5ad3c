"""`spec-lsp record` and `spec-lsp replay` (with its `replay synthesize` mode)."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

SYNTHESIZE = "synthesize"


def register(subparsers: Any) -> None:
    record = subparsers.add_parser(
        "record",
        help="stdio proxy that records a typing session",
        description="Launched by an editor in place of the server: forwards LSP both ways, "
        "byte for byte, and writes what the editor sent as a session (docs/sessions.md).",
    )
    record.add_argument("--out", required=True, help="session file to write (.jsonl)")
    record.add_argument("--source", default="", help="free text for the header's source")
    record.add_argument("server_cmd", nargs=argparse.REMAINDER, help="-- <server command...>")
    record.set_defaults(func=run_record)

    replay = subparsers.add_parser(
        "replay",
        help="replay typing sessions against the server and measure latency",
        description="spec-lsp replay SESSION.jsonl... [options]  |  "
        "spec-lsp replay synthesize FILE... --out DIR [options]",
    )
    replay.add_argument("inputs", nargs="+", metavar="SESSION", help="session files or folders")
    group = replay.add_argument_group("replay")
    group.add_argument("--preset", help="model preset (server --preset and initializationOptions)")
    group.add_argument("--speed", type=float, default=1.0, help="time scale (2 = twice as fast)")
    group.add_argument("--json", metavar="PATH", help="write the figures as JSON")
    group.add_argument(
        "--plot", metavar="PATH", help="write a latency plot (PNG; needs the extra spec-lsp[plot])"
    )
    group.add_argument(
        "--compare",
        choices=["plain", "target-only", "no-prefetch"],
        help="replay again without speculation or KV reuse (plain), without drafting "
        "(target-only) or without prefetch (no-prefetch)",
    )
    _editor_arguments(group)
    group.add_argument("--server-cmd", help="server command line (default: spec-lsp serve)")
    group.add_argument("--init-options", default="{}", help="extra initializationOptions (JSON)")
    group.add_argument(
        "--root",
        metavar="DIR",
        help="open DIR as the workspace folder (the server indexes its symbols); default: none",
    )
    group.add_argument("--pause-ms", type=float, default=300.0, help="pause threshold")
    group.add_argument("--load-timeout", type=float, default=600.0, help="seconds to load a model")
    _synthesize_arguments(replay)
    replay.set_defaults(func=run_replay)


def _editor_arguments(group: Any) -> None:
    """What the simulated editor does beyond what the sessions hold."""
    group.add_argument(
        "--no-accepts",
        action="store_true",
        help="never accept a suggestion typed as shown (sessions without accepts of their own)",
    )
    group.add_argument(
        "--next-edit-ms",
        type=float,
        default=0.0,
        help="ask for a next edit (textDocument/copilotInlineEdit) after this many ms without "
        "an edit, as the editors do (400); 0: never (the default)",
    )
    group.add_argument(
        "--cursor-rest-ms",
        type=float,
        default=0.0,
        metavar="MS",
        help="send spec-lsp/didMoveCursor MS after each file opens, at its first edit, as the "
        "editor plugins do for a file opened where its typing starts (they wait ~300 ms); "
        "0: never, as recorded (the default)",
    )


def _synthesize_arguments(replay: Any) -> None:
    synth = replay.add_argument_group(
        f"{SYNTHESIZE} (spec-lsp replay {SYNTHESIZE} FILE... --out DIR)"
    )
    synth.add_argument("--out", metavar="DIR", help="where to write synthesized sessions")
    synth.add_argument("--seed", type=int, default=0, help="draws the regions and the typing")
    synth.add_argument("--per-file", type=int, default=1, help="regions to type per file")
    synth.add_argument("--min-chars", type=int, default=80, help="smallest region to type")
    synth.add_argument("--max-chars", type=int, default=300, help="largest region to type")
    synth.add_argument(
        "--region", action="append", default=[], help="type these functions (by name), not drawn"
    )
    synth.add_argument(
        "--line-pause-ms",
        type=float,
        help="pause this long (to 1.5 times) at every line's start, as a user reading the "
        "suggestion before accepting it (default: 65%% of lines, 450-1600 ms)",
    )


def run_record(args: argparse.Namespace) -> int:
    from spec_lsp.replay.recorder import record

    cmd = list(args.server_cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        print("spec-lsp record: give the server command after --", file=sys.stderr)
        return 2
    try:
        code = record(cmd, args.out, source=args.source)
    except OSError as exc:  # the session file: a link, not a regular file, not writable
        print(f"spec-lsp record: {exc}", file=sys.stderr)
        return 2
    # The thread reading the editor's stdin may still be blocked in read() when the server has
    # exited first; a normal interpreter shutdown then aborts on the stdin buffer's lock ("could
    # not acquire lock ... at interpreter shutdown"). The session file is closed and complete by
    # now: flush and leave without the shutdown.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def session_paths(inputs: list[str]) -> list[Path]:
    paths: list[Path] = []
    for item in inputs:
        path = Path(item)
        paths += sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    return paths


def run_replay(args: argparse.Namespace) -> int:
    if args.inputs[0] == SYNTHESIZE:
        return run_synthesize(args)
    if args.out is not None:
        print(f"spec-lsp replay: --out is for `replay {SYNTHESIZE}`", file=sys.stderr)
        return 2
    from spec_lsp.replay.client import ServerError
    from spec_lsp.replay.format import SessionFormatError, read_session
    from spec_lsp.replay.report import plot_missing

    if args.plot and (why := plot_missing()):  # before minutes of replay, not after
        print(f"spec-lsp replay: {why}", file=sys.stderr)
        return 2
    from spec_lsp.replay.run import ReplayOptions, replay_command

    try:
        sessions = [read_session(p) for p in session_paths(args.inputs)]
        extra = json.loads(args.init_options)
    except (OSError, SessionFormatError, json.JSONDecodeError) as exc:
        print(f"spec-lsp replay: {exc}", file=sys.stderr)
        return 2
    if not sessions or not isinstance(extra, dict):
        print("spec-lsp replay: no sessions, or --init-options is not an object", file=sys.stderr)
        return 2
    options = ReplayOptions(
        preset=args.preset,
        speed=args.speed,
        server_cmd=shlex.split(args.server_cmd) if args.server_cmd else None,
        init_options=extra,
        compare=args.compare,
        pause_ms=args.pause_ms,
        load_timeout_s=args.load_timeout,
        json_path=args.json,
        plot_path=args.plot,
        accepts=not args.no_accepts,
        next_edit_ms=args.next_edit_ms,
        root=args.root,
        cursor_rest_ms=args.cursor_rest_ms,
    )
    try:
        return replay_command(sessions, options)
    except ServerError as exc:
        print(f"spec-lsp replay: {exc}", file=sys.stderr)
        return 1


def run_synthesize(args: argparse.Namespace) -> int:
    from spec_lsp.replay.synthesize import Timing, patient, synthesize

    files = [Path(p) for p in args.inputs[1:]]
    if not files or args.out is None:
        print(f"usage: spec-lsp replay {SYNTHESIZE} FILE... --out DIR", file=sys.stderr)
        return 2
    try:
        written = synthesize(
            files,
            Path(args.out),
            args.seed,
            args.per_file,
            args.min_chars,
            args.max_chars,
            tuple(args.region),
            Timing() if args.line_pause_ms is None else patient(args.line_pause_ms),
        )
    except (OSError, UnicodeDecodeError) as exc:
        print(f"spec-lsp replay {SYNTHESIZE}: {exc}", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    if not written:
        print("no region fitted the size limits", file=sys.stderr)
    return 0 if written else 1


def main(argv: list[str] | None = None) -> int:
    """`python -m spec_lsp.commands.replay record|replay ...`: these two commands alone."""
    parser = argparse.ArgumentParser(prog="spec-lsp")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
