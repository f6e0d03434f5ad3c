"""The replayer against the real server (`spec-lsp serve --preset tiny`, random weights).

Suggestions are gibberish, so only what must hold whatever the model says is checked: every
request is accounted for exactly once, on both sides, and nothing stale is shown.
"""

from __future__ import annotations

from spec_lsp.replay.analysis import analyze
from spec_lsp.replay.replayer import ReplayConfig, default_server_cmd, replay
from tests.replay.builders import typing_session


def test_every_request_to_the_real_server_is_accounted_for_and_none_is_stale() -> None:
    session = typing_session("def add(a, b):\n    ", "return a", gap_ms=250, end_ms=3000)
    config = ReplayConfig(default_server_cmd("tiny"), {"preset": "tiny"}, load_timeout_s=300)
    run = replay([session], config)
    figures, _ = analyze(run.traces)
    assert run.server_status is not None and run.server_status["state"] == "ready"
    assert figures["requests"] == 8
    assert (figures["errors"], figures["unanswered"], figures["stale_shown"]) == (0, 0, 0)
    assert figures["answered"] + figures["cancelled"] == 8
    assert isinstance(run.server_stats, dict) and run.server_stats["requests"] == 8
