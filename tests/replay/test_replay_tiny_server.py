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


def test_next_edits_are_asked_when_the_typing_rests_and_completions_still_answer() -> None:
    """With `next_edit_ms`, the replayer asks for a next edit once the typing rests, as the
    editors do; the server answers each (tiny: random weights, an edit or none) and every
    completion request is still accounted for."""
    from spec_lsp.replay.next_edit import figures as next_edit_figures

    session = typing_session("def add(a, b):\n    ", "return a", gap_ms=250, end_ms=3000)
    config = ReplayConfig(default_server_cmd("tiny"), {"preset": "tiny"}, load_timeout_s=300)
    config.next_edit_ms = 100  # under the session's 250 ms gaps: asked after every key
    run = replay([session], config)
    figures, _ = analyze(run.traces)
    assert (figures["errors"], figures["unanswered"], figures["stale_shown"]) == (0, 0, 0)
    records = run.traces[0].next_edits
    assert len(records) >= 4
    assert all(r.arrived is not None for r in records)
    assert next_edit_figures(records)["next_edits_asked"] == len(records)
    assert run.server_stats["nextEdit"]["requests"] == len(records)
