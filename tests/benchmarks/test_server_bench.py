"""`spec-lsp bench server` on the tiny preset: it drives the real server over LSP through the
replayer's client and reports figures for every phase, and the server exits cleanly."""

from __future__ import annotations

import json
from pathlib import Path

from spec_lsp.cli import main


def test_bench_server_measures_every_phase_and_the_server_exits_0(tmp_path: Path) -> None:
    out = tmp_path / "server.json"
    argv = ["bench", "server", "--preset", "tiny", "--device", "cpu", "--json", str(out)]
    assert main(argv + ["--chars", "4", "--docs", "2", "--supersedes", "1"]) == 0
    report = json.loads(out.read_text())
    assert report["exit_code"] == 0
    assert report["typing"]["keystrokes"] == 4
    assert report["memory"]["documents"] == 2
    assert report["supersede_stop_ms"] is not None
    assert report["rss_ready_mb"] > 0
    assert report["rss_peak_mb"] >= report["rss_peak_loading_mb"] >= report["rss_ready_mb"]
