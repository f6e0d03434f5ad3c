"""`spec-lsp replay --cursor-rest-ms`: the cursor notifications the editor plugins send, added.

Both plugins send `spec-lsp/didMoveCursor` once the cursor has rested a while (~300 ms) after a
move that was not typing, and when a file becomes the active one (`editors/*/cursor.*`); the
server then prefills the prompt of a request there. Recorded and synthesized sessions hold no
such notification: they open their file and type ~1 s later at a place deep in it. This adds the
one a plugin sends for a file opened where its typing starts: at the first edit's position,
`rest_ms` after the file opened, where that is before the first edit (else typing came first and
the plugins send nothing while typing). Knows nothing of the server or the replay's timing.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from spec_lsp.replay.format import Event, Session

DID_MOVE_CURSOR = "spec-lsp/didMoveCursor"


def with_cursor_rests(session: Session, rest_ms: float) -> Session:
    """`session` with a `spec-lsp/didMoveCursor` `rest_ms` after each file's didOpen, at the
    start of that file's first edit, where the edit comes later (the session itself when none
    is added)."""
    added: list[Event] = []
    opened: dict[str, float] = {}  # uri -> when it opened, until its first edit
    for event in session.events:
        params: Any = event.msg.get("params") or {}
        if event.method == "textDocument/didOpen":
            opened[params["textDocument"]["uri"]] = event.t
        elif event.method == "textDocument/didChange":
            uri = params["textDocument"]["uri"]
            start = opened.pop(uri, None)
            changes = params.get("contentChanges") or []
            where = changes[0].get("range", {}).get("start") if changes else None
            if start is None or where is None or event.t <= start + rest_ms:
                continue
            notify = {"textDocument": {"uri": uri}, "position": dict(where)}
            msg = {"jsonrpc": "2.0", "method": DID_MOVE_CURSOR, "params": notify}
            added.append(Event(start + rest_ms, msg))
    if not added:
        return session
    events = sorted(session.events + added, key=lambda e: e.t)  # stable: ties keep their order
    return replace(session, events=events)
