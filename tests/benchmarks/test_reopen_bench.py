"""`python -m spec_lsp.benchmarks.reopen` on the tiny pair: a session's file as it was left, asked
cold, warm, reopened and on a restarted server (the latencies are docs/benchmarks.md's, never
asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spec_lsp.benchmarks.reopen import PHASES, last_state, main
from spec_lsp.replay.format import parse_session

pytestmark = pytest.mark.timeout(300)

SESSION = Path(__file__).parents[1] / "sessions" / "glob-has_magic.jsonl"


def _session() -> list[str]:
    header = {"format": "spec-lsp-session", "version": 1, "languageId": "python", "uri": "u"}
    item = {"uri": "file:///w/a.py", "languageId": "python", "version": 1, "text": "ab\ncd\n"}
    change = {"range": {"start": {"line": 1, "character": 1}, "end": {"line": 1, "character": 1}}}
    events = [
        {"t": 0, "msg": {"jsonrpc": "2.0", "method": "textDocument/didOpen",
                         "params": {"textDocument": item}}},
        {"t": 5, "msg": {"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": "file:///w/a.py", "version": 2},
            "contentChanges": [{**change, "text": "XY\nZ"}]}}},
    ]  # fmt: skip
    return [json.dumps(header)] + [json.dumps(e) for e in events]


def test_the_file_as_the_session_left_it_with_the_cursor_after_its_last_edit() -> None:
    uri, language, text, position = last_state(parse_session(_session(), "a"))
    assert (uri, language, text) == ("file:///w/a.py", "python", "ab\ncXY\nZd\n")
    assert position == {"line": 2, "character": 1}


def test_a_restarted_server_restores_the_whole_prompt_and_answers_as_the_warm_window(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "reopen.json"
    assert main([str(SESSION), "--preset", "tiny", "--kv-folder", str(tmp_path / "kv"),
                 "--json", str(out)]) == 0  # fmt: skip
    table = capsys.readouterr().out
    assert all(f"| glob-has_magic | {phase} |" in table for phase in PHASES)
    (row,) = json.loads(out.read_text())["rows"]
    asks = row["asks"]
    assert asks["cold"]["restored_tokens"] == 0  # no KV on disk there
    warm, restarted = asks["warm"], asks["restarted"]
    assert warm["prompt_tokens"] > 100 and warm["prefilled_tokens"] <= 1  # the warm-up filled it
    assert restarted["restored_tokens"] >= restarted["prompt_tokens"] == warm["prompt_tokens"]
    assert restarted["prefilled_tokens"] == 1  # its last token, for its logits
    assert restarted["answer"] == warm["answer"]
    assert list(tmp_path.joinpath("kv").glob("*.kv"))
