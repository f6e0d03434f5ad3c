"""Reuse: answering from what is already known, without a model call.

This module owns the one typed-through rule (the document is a suggestion's text around the cursor
with the start of the suggestion typed at it: the rest of the suggestion still answers), each
document's last suggestion, and the answer cache (prompts answered before, at temperature 0). It
knows nothing of the worker, the syntax layer or LSP.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

CACHE_SIZE = 256

CacheKey = tuple[object, ...]


@dataclass
class Anchor:
    """A suggestion and the document text around the position it was made for."""

    prefix: str
    suffix: str
    text: str = ""  # filled in when a generation is settled

    def rest(self, proposal: str, prefix: str, suffix: str) -> str | None:
        """What is left of `proposal` (made here) for a cursor between `prefix` and `suffix`:
        its part after what was typed at this anchor; None if the text typed is not its start.
        "" when all of it was typed."""
        if suffix != self.suffix or not prefix.startswith(self.prefix):
            return None
        typed = prefix[len(self.prefix) :]
        return proposal[len(typed) :] if proposal.startswith(typed) else None

    def rest_in(self, proposal: str, text: str) -> str | None:
        """`rest` for a whole document `text`, typed at this anchor (cursor unknown)."""
        end = len(text) - len(self.suffix)
        return None if end < 0 else self.rest(proposal, text[:end], text[end:])


class AnswerCache:
    """Answers by prompt and generation settings, least recently used dropped first."""

    def __init__(self, size: int = CACHE_SIZE) -> None:
        self.size = size
        self._answers: OrderedDict[CacheKey, str] = OrderedDict()

    def get(self, key: CacheKey) -> str | None:
        text = self._answers.get(key)
        if text is not None:
            self._answers.move_to_end(key)
        return text

    def put(self, key: CacheKey, text: str) -> None:
        self._answers[key] = text
        self._answers.move_to_end(key)
        while len(self._answers) > self.size:
            self._answers.popitem(last=False)

    def clear(self) -> None:
        self._answers.clear()


class Reuse:
    """Each document's last suggestion (what later keystrokes type through) and the cache."""

    def __init__(self) -> None:
        self.cache = AnswerCache()
        self._last: dict[str, Anchor] = {}

    def typed_through(self, uri: str, prefix: str, suffix: str) -> str | None:
        """The rest of the document's last suggestion, if the cursor types through it."""
        anchor = self._last.get(uri)
        return None if anchor is None else anchor.rest(anchor.text, prefix, suffix) or None

    def remember(self, uri: str, anchor: Anchor) -> None:
        self._last[uri] = anchor

    def forget(self, uri: str) -> None:
        self._last.pop(uri, None)

    def clear(self) -> None:
        """After a model or settings change nothing known before answers any more."""
        self.cache.clear()
        self._last.clear()
