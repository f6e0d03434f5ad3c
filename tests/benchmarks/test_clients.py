"""`spec-lsp bench clients` on the tiny pair: N clients on one shared server, each its own session,
the figures as a table and JSON (the memory figures are docs/benchmarks.md's, never asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spec_lsp.benchmarks.clients import main

pytestmark = pytest.mark.timeout(300)


def test_every_client_is_a_session_of_its_own_on_one_server_with_a_row_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "clients.json"
    assert main("tiny", "cpu", 2, 1, str(out)) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.strip()[:1].isdigit()]
    assert len(rows) == 2
    figures = json.loads(out.read_text())
    assert figures["connected"] == 2
    assert len(figures["rssMbAfterClient"]) == 2
    assert all(mb > 0 for mb in figures["rssMbAfterClient"])
    sessions = figures["sessions"]
    assert [s["documents"] for s in sessions] == [1, 1]
    assert [s["requests"] for s in sessions] == [1, 1]
    assert sessions[0]["client"] != sessions[1]["client"]
