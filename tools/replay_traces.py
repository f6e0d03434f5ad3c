"""Run `spec-lsp replay ...` unchanged and also dump what each request was asked and answered.

    python tools/replay_traces.py TRACES.jsonl replay tests/sessions --preset bundled [...]

Everything after TRACES.jsonl is the `spec-lsp` command line, run through `spec_lsp.cli.main`
as the console script runs it (same figures, same --json). Each replay's traces are written as
JSON lines: one per request (session, label, ids, times, the document text and cursor when sent,
the answer) plus one per session with its final document, so two runs' suggestions can be
compared at the same moments (issue 14: trimming before and after the rework).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import Any

from spec_lsp import cli
from spec_lsp.replay import run as run_module


def _suggestion(result: Any) -> str | None:
    items = result.get("items") if isinstance(result, dict) else result
    if not items:
        return None
    first = items[0]
    text = first.get("insertText") if isinstance(first, dict) else None
    if isinstance(text, dict):
        text = text.get("value")
    return text if isinstance(text, str) else None


def dump(path: str, run: Any) -> None:
    with open(path, "a", encoding="utf-8") as out:
        for trace in run.traces:
            final = trace.changes[-1].text if trace.changes else ""
            row = {"kind": "session", "label": run.label, "session": trace.name, "final": final}
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            for req in trace.requests:
                row = dataclasses.asdict(req)
                row |= {"kind": "request", "label": run.label, "session": trace.name}
                row["suggestion"] = _suggestion(req.result)
                out.write(json.dumps(row, ensure_ascii=False) + "\n")


def main() -> int:
    path, argv = sys.argv[1], sys.argv[2:]
    open(path, "w").close()
    original = run_module.replay

    def replay_and_dump(sessions: Any, config: Any) -> Any:
        run = original(sessions, config)
        dump(path, run)
        return run

    run_module.replay = replay_and_dump
    return cli.main(argv)


if __name__ == "__main__":
    sys.exit(main())
