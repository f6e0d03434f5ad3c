"""The session file format: round trips, and each rule of the validator."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from spec_lsp.replay.format import (
    Event,
    SessionFormatError,
    SessionWriter,
    dump_lines,
    parse_session,
    read_session,
    write_session,
)
from tests.replay.builders import typing_session

HEADER = (
    '{"format": "spec-lsp-session", "version": 1, "languageId": "python", "uri": "file:///a.py"}'
)
OPEN = (
    '{"t": 0, "msg": {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": '
    '{"textDocument": {"uri": "file:///a.py", "languageId": "python", "version": 1, "text": ""}}}}'
)


def test_write_then_read_gives_the_same_session(tmp_path: Path) -> None:
    session = typing_session("x = ", "1 + 2", gap_ms=120.5)
    session.header.position_encoding = "utf-8"
    write_session(tmp_path / "s.jsonl", session)
    back = read_session(tmp_path / "s.jsonl")
    assert back.header == session.header
    assert back.events == session.events
    assert back.name == "s"


def test_unknown_header_keys_survive_a_rewrite() -> None:
    header = json.loads(HEADER) | {"editor": "nvim 0.11"}
    session = parse_session([json.dumps(header), OPEN])
    assert json.loads(next(dump_lines(session)))["editor"] == "nvim 0.11"


@pytest.mark.parametrize(
    ("lines", "complaint"),
    [
        ([], "no header"),
        (['{"format": "other", "version": 1}'], "not a header"),
        ([HEADER.replace('"version": 1', '"version": 2')], "version 2"),
        ([HEADER.replace('"uri": "file:///a.py"', '"uri": 3')], "'uri'"),
        ([HEADER, "not json"], "line 2: not JSON"),
        ([HEADER, '{"t": 0}'], 'exactly "t" and "msg"'),
        ([HEADER, OPEN.replace('"t": 0', '"t": -1')], "t must be a number"),
        ([HEADER, OPEN.replace('"t": 0', '"t": 5'), OPEN], "back in time"),
        ([HEADER, OPEN.replace('"2.0"', '"1.0"')], "JSON-RPC 2.0"),
        ([HEADER, '{"t": 0, "msg": {"jsonrpc": "2.0", "id": 1, "result": null}}'], "no method"),
        ([HEADER, OPEN.replace("textDocument/didOpen", "initialize")], "done by the replayer"),
    ],
)
def test_invalid_files_are_rejected_with_the_line(lines: list[str], complaint: str) -> None:
    with pytest.raises(SessionFormatError, match=complaint):
        parse_session(lines)


def test_a_reused_request_id_is_rejected() -> None:
    request = (
        '{"t": 1, "msg": {"jsonrpc": "2.0", "id": 7, "method": "textDocument/completion", '
        '"params": {"textDocument": {"uri": "file:///a.py"}, "position": {"line": 0, '
        '"character": 0}}}}'
    )
    with pytest.raises(SessionFormatError, match="line 3: request id 7 reused"):
        parse_session([HEADER, request, request])


def test_writer_holds_events_until_the_first_didopen_names_the_document() -> None:
    stream = io.StringIO()
    writer = SessionWriter(stream, source="recorded")
    writer.position_encoding = "utf-8"
    config = {"jsonrpc": "2.0", "method": "workspace/didChangeConfiguration", "params": {}}
    writer.add(Event(0, config))
    assert stream.getvalue() == ""
    doc = {"uri": "file:///b.rs", "languageId": "rust", "version": 1, "text": ""}
    opened = {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": doc}}
    writer.add(Event(3, opened))
    writer.close()
    session = parse_session(stream.getvalue().splitlines())
    assert (session.header.uri, session.header.language_id) == ("file:///b.rs", "rust")
    assert session.header.position_encoding == "utf-8"
    assert [e.method for e in session.events] == [
        "workspace/didChangeConfiguration",
        "textDocument/didOpen",
    ]
