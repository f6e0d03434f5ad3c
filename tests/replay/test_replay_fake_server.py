"""The replayer end to end against a fake server slowed on purpose (tests/replay/fake_server.py).

Gaps between keys and server delays are far apart (a factor of 5 or more), so the outcome does not
depend on the machine's load.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from spec_lsp.replay.analysis import analyze
from spec_lsp.replay.format import write_session
from spec_lsp.replay.replayer import ReplayConfig, replay
from tests.replay.builders import ROOT, fake_server_cmd, replay_cli_cmd, typing_session


def run_fake(session_args: dict[str, object], *server_args: str) -> dict[str, object]:
    session = typing_session("x = ", "abcde", **session_args)  # type: ignore[arg-type]
    run = replay([session], ReplayConfig(fake_server_cmd(*server_args)))
    figures, _ = analyze(run.traces)
    return figures | {"server_stats": run.server_stats}


def test_pending_requests_are_cancelled_and_reported_as_cancelled() -> None:
    figures = run_fake({"gap_ms": 150, "cancel": True, "end_ms": 4000}, "--delay-ms", "1500")
    assert (figures["requests"], figures["cancels_sent"], figures["cancelled"]) == (5, 4, 4)
    assert (figures["answered"], figures["stale_shown"], figures["shown"]) == (1, 0, 1)
    assert figures["server_stats"]["cancelled"] == 4  # type: ignore[index]
    assert (figures["pauses"], figures["pauses_with_suggestion"]) == (1, 1)


def test_late_answers_to_a_client_that_never_cancels_are_stale_shown() -> None:
    figures = run_fake({"gap_ms": 100, "cancel": False}, "--delay-ms", "1000", "--text", "zzz")
    assert (figures["requests"], figures["answered"], figures["cancels_sent"]) == (5, 5, 0)
    assert (figures["stale_shown"], figures["stale_dropped"], figures["shown"]) == (4, 0, 1)


def test_late_answers_to_cancelled_requests_are_dropped_not_shown() -> None:
    figures = run_fake(
        {"gap_ms": 150, "cancel": True}, "--delay-ms", "1000", "--text", "zzz", "--ignore-cancel"
    )
    assert (figures["answered"], figures["cancelled"], figures["cancels_sent"]) == (5, 0, 4)
    assert (figures["stale_shown"], figures["stale_dropped"]) == (0, 4)


@pytest.mark.parametrize("compare", ["plain", "target-only"])
def test_cli_report_on_a_server_whose_answers_are_known(tmp_path: Path, compare: str) -> None:
    before, typed = "def f():\n    ", "return 42"
    (tmp_path / "target.py").write_text(before + typed)
    session = typing_session(before, typed, gap_ms=600, cancel=True, end_ms=800)
    write_session(tmp_path / "s.jsonl", session)
    server = " ".join(fake_server_cmd("--target", str(tmp_path / "target.py")))
    out = subprocess.run(
        replay_cli_cmd(
            "replay",
            str(tmp_path),
            "--server-cmd",
            server,
            "--preset",
            "tiny",
            "--compare",
            compare,
            "--json",
            str(tmp_path / "r.json"),
            "--plot",
            str(tmp_path / "r.png"),
            "--no-accepts",  # every key typed, as in the session (test_accepts.py accepts)
        ),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "pause->suggestion p50 ms" in out.stdout and f"{compare}/spec" in out.stdout
    report = json.loads((tmp_path / "r.json").read_text())
    # Every key is a pause and every answer arrives within it; the answer after the last key is
    # empty (nothing is left of the target); every key but the first was predicted.
    for figures in (report, report["compare"]):
        assert figures["requests"] == figures["answered"] == figures["pauses"] == 9
        assert (figures["empty"], figures["cancelled"], figures["stale_shown"]) == (1, 0, 0)
        assert figures["pauses_with_suggestion"] == 8
        assert (figures["predicted_chars"], figures["typed_chars"]) == (8, 9)
        assert set(figures["latency_ms"]) == {"p50", "p90", "p99", "max"}
        assert set(figures["pause_to_suggestion_ms"]) == {"p50", "p90", "p99"}
    assert report["server_stats"]["initializationOptions"] == {"preset": "tiny"}
    other = report["compare"]["server_stats"]["initializationOptions"]
    reuse = {"kvReuse": False} if compare == "plain" else {}
    assert other == {"preset": "tiny", "speculation": "off"} | reuse
    assert set(report["compare"]["ratios"]) >= {"pause_to_suggestion_ms.p50"}
    # The server's own decode speed, without drafting over with it (the main run 1.5x faster).
    assert (report["decode_tokens_per_s"], report["draft_acceptance"]) == (30.0, 0.5)
    assert report["compare"]["decode_tokens_per_s"] == 20.0
    assert report["compare"]["ratios"]["decode_tokens_per_s"] == 0.67
    assert "requests' decode tok/s (server)" in out.stdout
    assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
