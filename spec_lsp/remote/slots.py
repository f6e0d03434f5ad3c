"""A stable llama-server slot per document, so each document's KV stays in a slot of its own.

llama-server runs `-np N` slots, each with its own prompt cache. Without `id_slot` a request takes
any idle slot, so typing in two files in turn can re-evaluate each file's whole prompt at every
switch. With `slots = N` in the preset's `[backend]` (N at most the server's `-np`), a document
keeps the slot it was given while it is used; a new document takes a free slot, else the one of the
document used least recently. Off (0, the default): no `id_slot` is sent (the server's -1).

Used from the inference worker's thread only, like the backend's other per-document state.
"""

from __future__ import annotations

from collections import OrderedDict

OFF = -1  # llama-server's "any idle slot"


class Slots:
    def __init__(self, count: int) -> None:
        self.count = max(0, count)
        self._of: OrderedDict[str, int] = OrderedDict()  # least recently used first

    def slot(self, doc_id: str | None) -> int:
        """The document's slot (OFF when slots are off or the request has no document)."""
        if self.count == 0 or doc_id is None:
            return OFF
        slot = self._of.get(doc_id)
        if slot is None:
            taken = set(self._of.values())
            free = [s for s in range(self.count) if s not in taken]
            if free:
                slot = free[0]
            else:
                _, slot = self._of.popitem(last=False)
            self._of[doc_id] = slot
        self._of.move_to_end(doc_id)
        return slot

    def forget(self, doc_id: str) -> None:
        """The document closed: its slot is free for the next new one."""
        self._of.pop(doc_id, None)
