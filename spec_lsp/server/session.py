"""A client's session: what `initialize` creates and every later handler works on.

The protocol refuses requests and drops notifications before `initialize` (pygls_internals.py),
so a handler that runs finds the session made. Each client of a shared server has its own (its
`SpecServer` holds it): its documents, options, feedback and next edits, and its lane of the
shared worker (`worker_lane.py`), named so that its documents are its own in the engine too.
Knows nothing of pygls or lsprotocol.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from spec_lsp.completion import CompletionService
from spec_lsp.nextedit.service import NextEdits
from spec_lsp.worker_lane import WorkerLane


@dataclass
class ClientSession:
    """One client's completion service (its documents, options in use and feedback), its next
    edits, and the warnings about its settings shown once it says `initialized`. `name`: the
    client's among a shared server's (None over stdio); `lane`: its lane of the shared worker."""

    service: CompletionService
    next_edits: NextEdits
    pending_warnings: list[str] = field(default_factory=list)
    name: str | None = None
    lane: WorkerLane | None = None

    def summary(self) -> dict[str, object]:
        """This client's own part of `spec-lsp/status`: its name, documents and requests."""
        stats = self.service.stats
        running, _ = self.service.live.counts()
        return {
            "client": self.name,
            "documents": len(self.service.docs),
            "requests": stats.requests,
            "cancelled": stats.cancelled,
            "running": running,
        }

    def close(self) -> None:
        """Closes every document the client left open (their KV and state go); what it left in
        the shared worker's queue goes behind every other client's."""
        for uri in self.service.docs.uris():
            self.service.did_close(uri)
        if self.lane is not None:
            self.lane.close()
