"""`spec-lsp trim`: the syntax trimmer over JSON lines, for headless use and debugging.

Each stdin line is `{"languageId", "prefix", "suffix", "completion"}` (and optionally `"mode"`:
"none" | "single" | "multi", else it is decided from the text); each stdout line is
`{"text": <trimmed completion or null>}`, or `{"error": "line N: ..."}` for a line it cannot use,
after which it goes on with the next line. It never loads a model.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import IO, Any

FIELDS = ("languageId", "prefix", "suffix", "completion")


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "trim",
        help="trim completions at syntactic boundaries (JSON lines on stdin and stdout)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--show-mode", action="store_true", help="add the completion mode to each line")
    p.set_defaults(func=cmd_trim)


def cmd_trim(args: argparse.Namespace) -> int:
    run(sys.stdin.buffer, sys.stdout, show_mode=bool(getattr(args, "show_mode", False)))
    return 0


def run(stdin: IO[bytes], stdout: IO[str], show_mode: bool = False) -> None:
    for number, raw in enumerate(stdin, start=1):
        answer = answer_line(raw.decode("utf-8", "replace"), show_mode)
        if "error" in answer:
            answer["error"] = f"line {number}: {answer['error']}"
        stdout.write(json.dumps(answer) + "\n")
        stdout.flush()


def answer_line(line: str, show_mode: bool = False) -> dict[str, Any]:
    """One output object for one input line; never raises."""
    try:
        request = json.loads(line)
    except (ValueError, RecursionError) as exc:
        return {"error": f"invalid JSON: {exc}"}
    if not isinstance(request, dict):
        return {"error": "expected a JSON object"}
    missing = [f for f in FIELDS if not isinstance(request.get(f), str)]
    if missing:
        return {"error": "missing or non-string field(s): " + ", ".join(missing)}
    mode = request.get("mode")
    if mode is not None and mode not in ("none", "single", "multi"):
        return {"error": 'mode must be "none", "single" or "multi"'}
    try:
        from spec_lsp.syntax import cutter_for

        cutter = cutter_for(request["languageId"], request["prefix"], request["suffix"], mode=mode)
        answer: dict[str, Any] = {"text": cutter.trim(request["completion"])}
        if show_mode:
            answer["mode"] = cutter.mode
        return answer
    except Exception as exc:  # a bug in the trimmer is reported on its line, not fatal
        return {"error": f"trim failed: {type(exc).__name__}: {exc}"}


if __name__ == "__main__":  # `python -m spec_lsp.commands.trim` works without the other commands
    sys.exit(cmd_trim(argparse.Namespace(show_mode="--show-mode" in sys.argv[1:])))
