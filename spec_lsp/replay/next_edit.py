"""Next-edit requests in a replay, sent as the editors send them: after the typing rests.

With `--next-edit-ms MS`, each document edit (re)starts a timer; when it runs out with no newer
edit, the replayer asks `textDocument/copilotInlineEdit` at the document's current version and at
the cursor of the session's latest completion request in that document (where the user types),
and records when the answer came and whether it held an edit. The editors do the same (their
`idle_ms`/`nextEditIdleMs`, 400 ms by default): so a replay with it measures completions with next
edit on, the server cancelling a next edit for each completion request that arrives.
Speaks LSP only over the wire, like the rest of replay/.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Any

from spec_lsp.replay.client import LspClient
from spec_lsp.replay.document import ReplayDocument

METHOD = "textDocument/copilotInlineEdit"


@dataclass
class NextEditRecord:
    uri: str
    version: int
    sent: float
    arrived: float | None = None
    edits: int = 0


@dataclass
class NextEditAsker:
    client: LspClient
    docs: dict[str, ReplayDocument]
    idle_s: float  # after the speed's scaling
    clock: Any  # () -> seconds since the session's start
    records: list[NextEditRecord] = field(default_factory=list)
    _cursor: dict[str, dict[str, int]] = field(default_factory=dict)
    _timers: dict[str, asyncio.Task[None]] = field(default_factory=dict)

    def cursor(self, uri: str, position: dict[str, int]) -> None:
        """Where the session's latest completion request in `uri` put the cursor."""
        self._cursor[uri] = dict(position)

    def edited(self, uri: str) -> None:
        """A document changed: its timer starts again."""
        if (old := self._timers.pop(uri, None)) is not None:
            old.cancel()
        if uri in self._cursor:
            self._timers[uri] = asyncio.ensure_future(self._ask_later(uri))

    async def _ask_later(self, uri: str) -> None:
        await asyncio.sleep(self.idle_s)
        doc = self.docs.get(uri)
        if doc is None:
            return
        record = NextEditRecord(uri, doc.version, self.clock())
        self.records.append(record)
        params = {
            "textDocument": {"uri": uri, "version": doc.version},
            "position": self._cursor[uri],
        }

        def on_response(response: dict[str, Any], arrived: float) -> None:
            record.arrived = self.clock()
            result = response.get("result")
            edits = result.get("edits") if isinstance(result, dict) else None
            record.edits = len(edits) if isinstance(edits, list) else 0

        self.client.send(
            {"jsonrpc": "2.0", "id": self.client.next_id(), "method": METHOD, "params": params},
            on_response,
        )

    def stop(self) -> None:
        for task in self._timers.values():
            task.cancel()
        self._timers.clear()


def figures(records: list[NextEditRecord]) -> dict[str, Any]:
    """Next-edit requests asked, answered with an edit, and their latency (ms, nearest rank)."""
    times = sorted(
        (r.arrived - r.sent) * 1000 for r in records if r.arrived is not None and r.edits
    )
    with contextlib.suppress(IndexError):
        return {
            "next_edits_asked": len(records),
            "next_edits_answered": len(times),
            "next_edit_ms": {
                "p50": round(times[len(times) // 2], 1),
                "p90": round(times[min(len(times) - 1, int(0.9 * len(times)))], 1),
            },
        }
    return {"next_edits_asked": len(records), "next_edits_answered": 0, "next_edit_ms": {}}
