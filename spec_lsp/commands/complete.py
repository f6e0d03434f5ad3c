"""`spec-lsp complete FILE:LINE:COL`: one suggestion at a position, printed with its stats.

The file is opened in a `CompletionService` with a local inference worker, as an editor's document
is in the server, so the suggestion is the server's (same prompt, stop callback and trim, and the
server's default options unless flags change them): `inprocess.local_service`, which `bench fim`
opens its many documents in too.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from spec_lsp.config import SPECULATION, Options
from spec_lsp.inprocess import LastResultBackend, local_service

if TYPE_CHECKING:  # imported when the command runs, so `spec-lsp --help` stays fast
    from spec_lsp.completion import Suggestion
    from spec_lsp.worker import ModelInfo, ProgressFn


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "complete", help="print the suggestion at FILE:LINE:COL (1-based) and its stats"
    )
    p.add_argument("location", help="FILE:LINE:COL, 1-based line and column (characters)")
    p.add_argument(
        "--preset",
        default=Options.preset,
        metavar="P",
        help="model pair: a preset name (spec-lsp models list), a .toml file, or tiny",
    )
    p.add_argument(
        "--device",
        default=Options.device,
        choices=("auto", "cpu", "cuda"),
        help="where the models run; auto: CUDA when torch sees a GPU, else the CPU",
    )
    p.add_argument(
        "--max-tokens",
        type=int,
        default=Options.max_tokens,
        metavar="N",
        help="most tokens the suggestion generates (the server's maxTokens)",
    )
    p.add_argument(
        "--method",
        choices=SPECULATION,
        default=Options.speculation,
        help="drafting method (the server's speculation); auto: the preset's method",
    )
    p.add_argument(
        "--temperature",
        type=float,
        default=Options.temperature,
        metavar="T",
        help="sampling temperature; 0 is greedy",
    )
    p.add_argument("--json", action="store_true", help="print the suggestion and stats as JSON")
    p.set_defaults(func=cmd_complete)


def split_location(location: str) -> tuple[Path, int, int]:
    try:
        file, line, col = location.rsplit(":", 2)
        return Path(file), int(line), int(col)
    except ValueError as exc:
        raise SystemExit(f"spec-lsp: expected FILE:LINE:COL, got {location!r}") from exc


def check_position(text: str, line: int, col: int) -> None:
    """Exits with a message unless 1-based (line, col) is in `text` (col may be past the end)."""
    lines = text.splitlines(keepends=True)
    if not 1 <= line <= len(lines) + 1:
        raise SystemExit(f"spec-lsp: line {line} is outside the file (1..{len(lines)})")
    content = lines[line - 1].rstrip("\r\n") if line <= len(lines) else ""
    if not 1 <= col <= len(content) + 1:
        raise SystemExit(f"spec-lsp: column {col} is outside line {line} (1..{len(content) + 1})")


async def complete_file(
    options: Options,
    path: Path,
    text: str,
    row: int,
    col: int,
    recorder: LastResultBackend,
    progress: ProgressFn,
) -> tuple[Suggestion | None, ModelInfo, str | None]:
    """The suggestion at 0-based (row, col in characters) of `path`, whose content is `text`, the
    model's info, and the load error (None when the model loaded)."""
    async with local_service(options, recorder, progress) as (service, info, error):
        if service is None:
            return None, info, error
        uri = path.resolve().as_uri()
        # The language comes from the file name.
        service.did_open(uri, path.name, 1, text)
        return await service.complete(uri, row, col, "utf-32"), info, None


class LoadPrinter:
    """Prints a model load's progress to `out` (stderr): each report with its fraction and the
    seconds since the load began, `[ 42%   37.1 s] reading ...gguf: 120/339 tensors`. On a
    terminal a step's sub-steps rewrite one line; elsewhere (a log) a sub-step is printed when the
    step changes or a tenth of the whole has passed since the last line."""

    def __init__(self, out: TextIO | None = None, clock: Callable[[], float] = time.monotonic):
        self.out, self.clock = out or sys.stderr, clock
        self.t0, self.tty = clock(), self.out.isatty()
        self.step, self.shown = "", -1.0

    def __call__(self, message: str, fraction: float) -> None:
        line = f"[{fraction:4.0%} {self.clock() - self.t0:7.1f} s] {message}"
        step = message.split(":", 1)[0] if ":" in message else message
        same = step == self.step
        if self.tty:
            self.out.write(("\r\x1b[K" if same else ("\n" if self.step else "")) + line)
            if fraction >= 1.0:
                self.out.write("\n")
        elif not same or fraction - self.shown >= 0.1 or fraction >= 1.0:
            self.out.write(line + "\n")
            self.shown = fraction
        self.out.flush()
        self.step = step


def cmd_complete(args: argparse.Namespace) -> int:
    path, line, col = split_location(args.location)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        print(f"spec-lsp: cannot read {path}: {exc.strerror}", file=sys.stderr)
        return 1
    check_position(text, line, col)
    options = Options(
        preset=args.preset,
        device=args.device,
        max_tokens=args.max_tokens,
        temperature=args.temperature,
        speculation=args.method,
        prefetch=False,  # one request, then the process ends: nothing to compute ahead
    )
    recorder = LastResultBackend()
    suggestion, info, error = asyncio.run(
        complete_file(options, path, text, line - 1, col - 1, recorder, LoadPrinter())
    )
    if error is not None:
        print(f"spec-lsp: {error}", file=sys.stderr)
        return 1
    shown = suggestion.text if suggestion is not None else ""
    last = recorder.last
    stats = last.stats.to_dict() if last is not None else {}
    if args.json:
        raw = last.text if last is not None else None
        print(json.dumps({"suggestion": shown, "raw": raw, "stats": stats}, indent=2))
        return 0
    print(f"--- suggestion at {path}:{line}:{col} ({info.preset}, {info.device})")
    print(shown if shown else "(no suggestion)")
    print("--- stats" if last is not None else "--- no generation (nothing to suggest here)")
    for key, value in stats.items():
        print(f"{key:>18}: {round(value, 2) if isinstance(value, float) else value}")
    return 0
