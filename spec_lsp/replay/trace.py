"""What one replay observed: document changes and requests, each stamped with replayed time.

The replayer fills these in; `analysis` turns them into figures. Times are seconds since the
session's replay began, on the client's clock (what a user would see).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from spec_lsp.replay.document import Edit


@dataclass
class Change:
    """A didOpen (no edits) or didChange, as the replayer sent it."""

    uri: str
    t: float
    version: int
    text: str  # the document after the change
    edits: list[Edit] = field(default_factory=list)
    gap_ms: float | None = None  # scheduled time to the next change (or to the session's end)

    @property
    def is_keystroke(self) -> bool:
        return bool(self.edits)


@dataclass
class RequestRecord:
    id: int  # the replayer's id on the wire
    session_id: Any  # the id in the session file
    method: str
    uri: str
    sent: float
    version: int
    text: str  # the document when the request was sent
    cursor: int  # str offset of the request's position in `text`
    cancel_sent: float | None = None
    arrived: float | None = None
    arrived_version: int | None = None
    result: Any = None
    error: dict[str, Any] | None = None
    accepted_at: float | None = None  # asked right after an accept made then

    @property
    def latency_ms(self) -> float | None:
        return None if self.arrived is None else (self.arrived - self.sent) * 1000.0


@dataclass
class SessionTrace:
    name: str
    encoding: str
    changes: list[Change] = field(default_factory=list)
    requests: list[RequestRecord] = field(default_factory=list)
    end: float = 0.0  # when the last message of the session was sent
    late_ms_max: float = 0.0  # how far behind schedule the replayer ever sent a message
    next_edits: list[Any] = field(default_factory=list)  # `next_edit.NextEditRecord`s


@dataclass
class Run:
    """One replay of all sessions against one server configuration."""

    label: str
    init_options: dict[str, Any]
    traces: list[SessionTrace] = field(default_factory=list)
    server_stats: Any = None
    server_status: Any = None
    messages: list[str] = field(default_factory=list)  # the server's window/showMessage texts
