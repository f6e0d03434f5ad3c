"""A client's session: what `initialize` creates and every later handler works on.

The protocol refuses requests and drops notifications before `initialize` (pygls_internals.py),
so a handler that runs finds the session made; a shared server makes a new one for each client
(`SpecServer.close_session` forgets the last). Knows nothing of pygls or lsprotocol.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from spec_lsp.completion import CompletionService
from spec_lsp.nextedit.service import NextEdits


@dataclass
class ClientSession:
    """One client's completion service (its documents, options in use and feedback), its next
    edits, and the warnings about its settings shown once it says `initialized`."""

    service: CompletionService
    next_edits: NextEdits
    pending_warnings: list[str] = field(default_factory=list)

    def close(self) -> None:
        """Closes every document the client left open (their KV and state go)."""
        for uri in self.service.docs.uris():
            self.service.did_close(uri)
