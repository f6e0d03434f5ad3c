"""Synthesized accepts: keys that type exactly the shown suggestion are replayed as its accept."""

from __future__ import annotations

from pathlib import Path

from spec_lsp.replay import accepts
from spec_lsp.replay.analysis import analyze
from spec_lsp.replay.replayer import ReplayConfig, replay
from tests.replay.builders import fake_server_cmd, typing_session

BEFORE, TYPED = "def f():\n    ", "return 42 + 1"


def run(tmp_path: Path, accept: bool) -> dict[str, object]:
    # The fake server suggests the target's next 12 characters: after the first key, exactly
    # the rest of what is typed; after that, the comment that follows.
    (tmp_path / "target.py").write_text(BEFORE + TYPED + "  # the tail of the target")
    session = typing_session(BEFORE, TYPED, gap_ms=300, cancel=True, end_ms=600)
    config = ReplayConfig(fake_server_cmd("--target", str(tmp_path / "target.py")))
    config.accepts = accept
    result = replay([session], config)
    figures, _ = analyze(result.traces)
    return figures | accepts.figures(result.traces, result.server_stats)


def test_keys_that_type_the_shown_suggestion_become_its_accept(tmp_path: Path) -> None:
    figures = run(tmp_path, accept=True)
    # The first key's request, then the request after the accept; the other keys are skipped.
    assert figures["requests"] == figures["answered"] == 2
    assert (figures["accepts"], figures["accepts_with_suggestion"]) == (1, 1)
    wait = figures["accept_to_suggestion_ms"]
    assert isinstance(wait, dict) and wait["p50"] is not None and wait["p50"] < 1000
    assert figures["accept_waits_ms"] == [wait["p50"]] and figures["accepts_answered_empty"] == 0
    assert figures["accept_to_answer_ms"] == wait and figures["accepts_superseded"] == 0
    assert figures["typed_chars"] == len(TYPED)  # one key, then the accepted rest
    assert figures["prefetch_hits"] is None  # the fake server has no prefetch


def test_without_accepts_every_key_is_sent(tmp_path: Path) -> None:
    figures = run(tmp_path, accept=False)
    assert figures["requests"] == len(TYPED) and figures["accepts"] == 0
