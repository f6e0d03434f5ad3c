"""`spec-lsp replay --cursor-rest-ms`: the plugins' `spec-lsp/didMoveCursor` added to a session
(spec_lsp/replay/cursor.py): once per opened file, at its first edit, where typing comes later."""

from __future__ import annotations

from spec_lsp.replay.cursor import DID_MOVE_CURSOR, with_cursor_rests
from tests.replay.builders import URI, typing_session


def test_a_rest_is_sent_at_the_first_edit_before_typing_begins() -> None:
    session = typing_session("x = ", "ab", gap_ms=100)  # opens at 0, types at 200 ms
    rested = with_cursor_rests(session, 150)
    moves = [e for e in rested.events if e.method == DID_MOVE_CURSOR]
    assert len(moves) == 1 and moves[0].t == 150
    assert moves[0].msg["params"] == {
        "textDocument": {"uri": URI},
        "position": {"line": 0, "character": 4},  # where "a" is typed
    }
    assert rested.events[1] is moves[0]  # in time order, before the first key
    assert [e for e in rested.events if e.method != DID_MOVE_CURSOR] == session.events


def test_no_rest_where_typing_begins_first() -> None:
    session = typing_session("x = ", "ab", gap_ms=100)
    assert with_cursor_rests(session, 200) is session  # the key at 200 ms: typing came first
    assert with_cursor_rests(session, 500) is session
