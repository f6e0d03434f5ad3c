"""Feedback: the suggestions handed out, and what the editor says became of them.

This module owns suggestion ids and counting shown, accepted and partly accepted suggestions into
the server's stats. It knows nothing of how a suggestion was made, nor of LSP (the server converts
the editor's notifications into these calls).
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from dataclasses import dataclass

from spec_lsp.stats import ServerStats

ISSUED_SIZE = 512  # suggestions remembered for a later accept


@dataclass
class Suggestion:
    id: str
    text: str


class Feedback:
    def __init__(self, stats: ServerStats) -> None:
        self.stats = stats
        self._issued: OrderedDict[str, str] = OrderedDict()
        self._ids = itertools.count(1)

    def issue(self, text: str) -> Suggestion:
        sid = str(next(self._ids))
        self._issued[sid] = text
        while len(self._issued) > ISSUED_SIZE:
            self._issued.popitem(last=False)
        return Suggestion(sid, text)

    def did_show(self, sid: str) -> None:
        if sid in self._issued:
            self.stats.shown += 1

    def did_accept(self, sid: str) -> None:
        text = self._issued.pop(sid, None)
        if text is not None:
            self.stats.accepted += 1
            self.stats.accepted_chars += len(text)

    def did_partially_accept(self, sid: str, accepted_length: int) -> None:
        if sid in self._issued:
            self.stats.partially_accepted += 1
            self.stats.accepted_chars += max(0, accepted_length)
