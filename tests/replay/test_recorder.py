"""`spec-lsp record`: forwards both ways byte for byte, and what it records replays the same."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path
from typing import Any

from spec_lsp.replay.format import Session, read_session
from spec_lsp.replay.framing import read_frame
from spec_lsp.replay.replayer import ReplayConfig, replay
from tests.replay.builders import ROOT, fake_server_cmd, replay_cli_cmd, typing_session


def frame(body: str, extra_header: str = "") -> bytes:
    data = body.encode("utf-8")
    return f"Content-Length: {len(data)}\r\n{extra_header}\r\n".encode() + data


def test_the_proxy_forwards_every_byte_both_ways_and_records_the_editor_side(
    tmp_path: Path,
) -> None:
    doc = '{"uri": "file:///ü.py", "languageId": "python", "version": 1, "text": "héllo 😀\\n"}'
    frames = [
        frame('{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":{}}}'),
        frame('{"jsonrpc": "2.0", "method": "initialized", "params": {}}'),
        frame(
            '{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":'
            + doc
            + "}}",
            "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n",
        ),
        frame(
            '{ "jsonrpc" : "2.0", "id": "a", "method": "textDocument/inlineCompletion", "params": '
            '{"textDocument": {"uri": "file:///ü.py"}, "position": {"line": 0, "character": 3}}}'
        ),
        frame('{"jsonrpc":"2.0","id":1,"method":"shutdown"}'),
        frame('{"jsonrpc":"2.0","method":"exit"}'),
    ]
    sent = b"".join(frames)
    server = fake_server_cmd("--log", str(tmp_path / "server-in.bin"))
    out = subprocess.run(
        replay_cli_cmd("record", "--out", str(tmp_path / "s.jsonl"), "--", *server),
        input=sent,
        cwd=ROOT,
        capture_output=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr.decode()
    assert (tmp_path / "server-in.bin").read_bytes() == sent
    stream, replies = io.BytesIO(out.stdout), []
    while (got := read_frame(stream)) is not None:
        replies.append(json.loads(got[1]))
    assert [r.get("id") for r in replies] == [0, "a", 1]
    assert replies[1]["result"] == {"items": [{"insertText": "pass"}]}
    session = read_session(tmp_path / "s.jsonl")
    assert (session.header.uri, session.header.position_encoding) == ("file:///ü.py", "utf-16")
    assert [e.method for e in session.events] == [
        "textDocument/didOpen",
        "textDocument/inlineCompletion",
    ]
    assert session.events[1].msg["id"] == "a"


def normalized(session: Session) -> list[dict[str, Any]]:
    """The messages with request ids renumbered in order of appearance."""
    ids: dict[Any, int] = {}
    out = []
    for event in session.events:
        msg = json.loads(json.dumps(event.msg))
        if "id" in msg:
            msg["id"] = ids.setdefault(msg["id"], len(ids))
        if msg["method"] == "$/cancelRequest":
            msg["params"]["id"] = ids[msg["params"]["id"]]
        out.append(msg)
    return out


def test_a_session_replayed_through_the_proxy_records_the_same_message_stream(
    tmp_path: Path,
) -> None:
    session = typing_session("x = ", "abcd", gap_ms=100, cancel=True, end_ms=500)
    proxy = replay_cli_cmd(
        "record", "--out", str(tmp_path / "rec.jsonl"), "--", *fake_server_cmd("--delay-ms", "1500")
    )
    run = replay([session], ReplayConfig(proxy))
    assert run.traces[0].requests[-1].arrived is not None
    recorded = read_session(tmp_path / "rec.jsonl")
    # Every cancel reaches the server (every request is still pending); the replayer's own
    # requests (spec-lsp/status before, spec-lsp/stats after) are recorded around the session.
    own = [e for e in recorded.events if e.method in ("spec-lsp/status", "spec-lsp/stats")]
    recorded.events = [e for e in recorded.events if e not in own]
    assert normalized(recorded) == normalized(session)
    assert own[-1].method == "spec-lsp/stats"
    assert (recorded.header.uri, recorded.header.language_id) == (session.header.uri, "python")
    gaps = [b.t - a.t for a, b in zip(recorded.events, recorded.events[1:], strict=False)]
    assert all(g >= 0 for g in gaps)
