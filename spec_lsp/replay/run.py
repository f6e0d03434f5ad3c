"""The `spec-lsp replay` command: one replay (and optionally a plain one), then the report."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

from spec_lsp.replay import accepts, next_edit
from spec_lsp.replay.analysis import Tally, analyze
from spec_lsp.replay.cursor import with_cursor_rests
from spec_lsp.replay.format import Session
from spec_lsp.replay.replayer import PLAIN_OPTIONS, ReplayConfig, default_server_cmd, replay
from spec_lsp.replay.report import plot, ratios, table, write_json
from spec_lsp.replay.trace import Run


@dataclass
class ReplayOptions:
    preset: str | None = None
    speed: float = 1.0
    server_cmd: list[str] | None = None
    init_options: dict[str, Any] = field(default_factory=dict)
    compare: str | None = None
    pause_ms: float = 300.0
    load_timeout_s: float = 600.0
    json_path: str | None = None
    plot_path: str | None = None
    accepts: bool = True  # synthesize accepts in sessions without their own (`accepts`)
    next_edit_ms: float = 0.0  # ask for next edits after this long without an edit (0: never)
    root: str | None = None  # a workspace folder to open (the server indexes its files)
    cursor_rest_ms: float = 0.0  # send the plugins' didMoveCursor this long after opening (0: no)


def _config(options: ReplayOptions, label: str, extra: dict[str, Any]) -> ReplayConfig:
    init = dict(options.init_options)
    if options.preset:
        init["preset"] = options.preset
    init.update(extra)
    cmd = options.server_cmd or default_server_cmd(options.preset)
    config = ReplayConfig(cmd, init, options.speed, options.load_timeout_s, label=label)
    config.accepts = options.accepts
    config.next_edit_ms = options.next_edit_ms
    config.root = options.root
    config.progress = lambda line: print(line, file=sys.stderr, flush=True)
    return config


def _document(run: Run, figures: dict[str, Any]) -> dict[str, Any]:
    return figures | {
        "init_options": run.init_options,
        "server_status": run.server_status,
        "server_messages": run.messages,
        "server_stats": run.server_stats,
    }


def _server(stats: Any) -> dict[str, Any]:
    """What the server measured itself (`spec-lsp/stats`): its requests' decoding speed and the
    drafts' acceptance (None where it did not say)."""
    stats = stats if isinstance(stats, dict) else {}
    decode = stats.get("decode") if isinstance(stats.get("decode"), dict) else {}
    return {
        "decode_tokens_per_s": decode.get("tokensPerS"),
        "draft_acceptance": stats.get("acceptance"),
    }


def replay_command(sessions: list[Session], options: ReplayOptions) -> int:
    names = ", ".join(s.name for s in sessions)
    if options.cursor_rest_ms > 0:
        sessions = [with_cursor_rests(s, options.cursor_rest_ms) for s in sessions]
    runs: list[tuple[Run, dict[str, Any], Tally]] = []
    plans: list[tuple[str, dict[str, Any]]] = [("spec", {})]
    if options.compare == "plain":
        plans.append(("plain", dict(PLAIN_OPTIONS)))
    elif options.compare == "target-only":  # no drafting, the KV reused as in the main run
        plans.append(("target-only", {"speculation": "off"}))
    elif options.compare == "no-prefetch":
        plans.append(("no-prefetch", {"prefetch": False}))
    for label, extra in plans:
        print(f"replaying {len(sessions)} session(s) [{label}]: {names}", file=sys.stderr)
        run = replay(sessions, _config(options, label, extra))
        figures, tally = analyze(run.traces, options.pause_ms)
        figures |= accepts.figures(run.traces, run.server_stats) | _server(run.server_stats)
        if options.next_edit_ms > 0:
            figures |= next_edit.figures([r for t in run.traces for r in t.next_edits])
        runs.append((run, figures, tally))
    print(table([(run.label, figures) for run, figures, _ in runs], options.pause_ms))
    for run, _, _ in runs:
        for message in run.messages:
            print(f"[{run.label}] server message: {message}", file=sys.stderr)
    main_run, main_figures, _ = runs[0]
    document: dict[str, Any] = {
        "sessions": [s.name for s in sessions],
        "preset": options.preset,
        "speed": options.speed,
        "pause_ms": options.pause_ms,
        "cursor_rest_ms": options.cursor_rest_ms,
    }
    document |= _document(main_run, main_figures)
    if len(runs) == 2:
        other_run, other_figures, _ = runs[1]
        document["compare"] = {"mode": options.compare} | _document(other_run, other_figures)
        document["compare"]["ratios"] = ratios(main_figures, other_figures)
    if options.json_path:
        write_json(options.json_path, document)
    if options.plot_path:
        plot(options.plot_path, [(run.label, tally) for run, _, tally in runs])
    return 0
