"""Hand-built sessions for the replay tests: typing with set gaps, with or without cancels."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from spec_lsp.replay.document import position_of
from spec_lsp.replay.format import Event, Header, Session

ROOT = Path(__file__).resolve().parents[2]
FAKE_SERVER = Path(__file__).with_name("fake_server.py")
URI = "file:///tmp/example.py"


def fake_server_cmd(*args: str) -> list[str]:
    return [sys.executable, str(FAKE_SERVER), *args]


def replay_cli_cmd(*args: str) -> list[str]:
    """The record/replay commands alone, so the tests do not depend on other subcommands."""
    return [sys.executable, "-m", "spec_lsp.commands.replay", *args]


def typing_session(
    before: str,
    typed: str,
    gap_ms: float,
    cancel: bool = True,
    end_ms: float = 1500.0,
    name: str = "typing",
) -> Session:
    """Opens `before`, types `typed` at its end one key every `gap_ms`, asking after each key."""
    msg: dict[str, Any]
    events = [
        Event(
            0.0,
            {
                "jsonrpc": "2.0",
                "method": "textDocument/didOpen",
                "params": {
                    "textDocument": {
                        "uri": URI,
                        "languageId": "python",
                        "version": 1,
                        "text": before,
                    }
                },
            },
        )
    ]
    text, t, pending = before, 200.0, None
    for n, ch in enumerate(typed, start=1):
        if cancel and pending is not None:
            msg = {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": pending}}
            events.append(Event(t, msg))
        pos = position_of(text, len(text))
        text += ch
        change = {"range": {"start": pos, "end": pos}, "text": ch}
        msg = {
            "jsonrpc": "2.0",
            "method": "textDocument/didChange",
            "params": {"textDocument": {"uri": URI, "version": n + 1}, "contentChanges": [change]},
        }
        events.append(Event(t, msg))
        params = {
            "textDocument": {"uri": URI},
            "position": position_of(text, len(text)),
            "context": {"triggerKind": 2, "selectedCompletionInfo": None},
        }
        msg = {
            "jsonrpc": "2.0",
            "id": n,
            "method": "textDocument/inlineCompletion",
            "params": params,
        }
        events.append(Event(t, msg))
        pending = n
        t += gap_ms
    t += end_ms - gap_ms
    close = {
        "jsonrpc": "2.0",
        "method": "textDocument/didClose",
        "params": {"textDocument": {"uri": URI}},
    }
    events.append(Event(t, close))
    return Session(Header("python", URI, "test"), events, name=name)
