"""Prefetch: the suggestion after an accept, computed on idle engine time before it is asked for.

When a suggestion has been handed out and the engine has nothing else to do, the service computes
the suggestion the editor will ask for once the user accepts it whole: the document with the
suggestion inserted and the cursor after it. Its answer lands in the answer cache under the key the
request after the accept will have, so that request needs no model call (a prefetch hit). While it
runs it is the document's live generation (`live.py`): the accept's own keystroke types through it
and leaves it running (the request after the accept waits for it instead of starting another); any
other keystroke stops it within one decode step, by the same supersede path as a typed request.
A real request for any other document, or for this one in another state, cancels it at once, so a
prefetch never holds the worker while a real request waits.

Accepting only the first line of a multi-line suggestion needs no prefetch: the rest of the shown
suggestion answers it (typed-through, `reuse.py`).

This module owns the prefetches in flight and which cache entries they filled. It knows nothing of
prompts, the syntax layer or LSP (the service builds the request).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

from spec_lsp.completion.live import GenerationFailed, Generations, Live
from spec_lsp.completion.reuse import CacheKey
from spec_lsp.stats import ServerStats

FILLED_SIZE = 64  # cache keys filled by prefetches, remembered to count hits


@dataclass
class Ahead:
    """A prefetch in flight: the document text it is for, its cache key and its generation."""

    uri: str
    text: str  # the whole document after the accept
    key: CacheKey
    live: Live
    start: int = 0  # where the accepted suggestion begins in `text`
    end: int = 0  # and where it ends (the cursor after the accept)

    def toward(self, text: str) -> bool:
        """Whether `text` is the document with a start of the suggestion accepted (a line or a
        word of it, or typed as shown): on the way to this prefetch's document."""
        tail = self.text[self.end :]
        head = len(text) - len(tail)
        return (
            self.start <= head <= self.end
            and text.endswith(tail)
            and self.text.startswith(text[:head])
        )


def after_accept(prefix: str, suggestion: str) -> tuple[str, int, int]:
    """The prefix once `suggestion` is accepted at its end, and the cursor (row, col) after it."""
    new_prefix = prefix + suggestion
    row = new_prefix.count("\n")
    return new_prefix, row, len(new_prefix) - (new_prefix.rfind("\n") + 1)


class Prefetch:
    def __init__(self, live: Generations, stats: ServerStats) -> None:
        self.live = live
        self.stats = stats
        self._ahead: dict[str, Ahead] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._filled: OrderedDict[CacheKey, None] = OrderedDict()
        self._warm: dict[str, Live] = {}  # documents' warm-ups (`anticipate.warm_up`)

    def schedule(self, uri: str, work: Coroutine[Any, Any, None], text: str | None = None) -> None:
        """Runs `work` (the service's prefetch for `uri`, for the document `text` after the
        accept) in the background, replacing any; a prefetch already running for that very
        document (a part of the suggestion was accepted, the rest is shown) is kept instead."""
        ahead = self._ahead.get(uri)
        same = text is not None and ahead is not None and ahead.text == text
        if same and ahead is not None and self.pending(uri, ahead.key) is not None:
            work.close()
            return
        self.forget(uri)
        task = asyncio.get_running_loop().create_task(work)
        self._tasks[uri] = task
        task.add_done_callback(lambda t: self._done(uri, t))

    async def run(self, ahead: Ahead) -> str | None:
        """Waits for a prefetch's generation; its settled text, None if it was cancelled or the
        remote engine failed (the same position is then asked again, not answered empty)."""
        self._ahead[ahead.uri] = ahead
        try:
            result = await asyncio.shield(ahead.live.job.future)
        except asyncio.CancelledError:
            ahead.live.job.cancel()
            raise
        except Exception:
            return None
        finally:
            if self._ahead.get(ahead.uri) is ahead:
                del self._ahead[ahead.uri]
        if result.cancelled:
            self.stats.prefetch_cancelled += 1
            return None
        if result.failed:  # a remote engine failed: no answer to cache
            return None
        self.live.settle(ahead.live, result)
        self.stats.prefetched += 1
        self._filled[ahead.key] = None
        while len(self._filled) > FILLED_SIZE:
            self._filled.popitem(last=False)
        return ahead.live.anchor.text

    def busy(self, uri: str) -> bool:
        """Whether a prefetch for `uri` is scheduled or running."""
        return uri in self._tasks

    async def answer(self, uri: str, key: CacheKey) -> str | None:
        """The answer of a prefetch still computing `key` for `uri`, once it ends (None when
        there is none, or it failed: its failure is not the request's, which runs its own)."""
        live = self.pending(uri, key)
        if live is None:
            return None
        try:
            result = await self.live.wait(live, owner=False)
        except GenerationFailed:
            return None
        if result is None:
            return None
        self.live.settle(live, result)
        self.stats.prefetch_hits += 1
        return live.anchor.text or None

    def pending(self, uri: str, key: CacheKey) -> Live | None:
        """The prefetch computing `key` for `uri`, if it still runs."""
        ahead = self._ahead.get(uri)
        if ahead is None or ahead.key != key or ahead.live.job.future.done():
            return None
        cancel = ahead.live.job.request.cancel
        return None if cancel is not None and cancel.cancelled else ahead.live

    def warming(self, live: Live) -> None:
        """A document's warm-up, to cancel when a request for another document comes; it
        replaces other documents' (the file opened last is the one about to be typed in)."""
        for other in list(self._warm.values()):
            if other.uri != live.uri:
                other.job.cancel()
        self._warm[live.uri] = live
        self.stats.warm_ups += 1
        live.job.future.add_done_callback(lambda _: self._warmed(live))

    def _warmed(self, live: Live) -> None:
        self.stats.warm_ups_ended += 1
        if self._warm.get(live.uri) is live:
            del self._warm[live.uri]
        future = live.job.future
        if future.cancelled() or future.exception() is not None:
            return  # a failed warm-up: the worker logged it, no one waits
        self.stats.warmed_tokens += future.result().stats.prefilled_tokens

    def preempt(self, uri: str, text: str) -> None:
        """A real request for `uri` at document `text`: every prefetch not for that document
        state, or on the way to it (`Ahead.toward`), and every other document's warm-up is
        cancelled (the engine stops it within one decode step or one short prefill pass). The
        document's own warm-up computes the start of its prompt: the request supersedes it when
        it starts (`Generations.start`)."""
        for ahead in list(self._ahead.values()):
            if ahead.uri != uri or not (ahead.text == text or ahead.toward(text)):
                ahead.live.job.cancel()
        for live in list(self._warm.values()):
            if live.uri != uri:
                live.job.cancel()

    def hit(self, key: CacheKey) -> bool:
        """Counts a cache answer that a prefetch filled (once per fill)."""
        if key not in self._filled:
            return False
        del self._filled[key]
        self.stats.prefetch_hits += 1
        return True

    def forget(self, uri: str) -> None:
        warm = self._warm.pop(uri, None)
        if warm is not None:
            warm.job.cancel()
        task = self._tasks.pop(uri, None)
        if task is not None:
            task.cancel()
        ahead = self._ahead.pop(uri, None)
        if ahead is not None:
            ahead.live.job.cancel()

    def _done(self, uri: str, task: asyncio.Task[None]) -> None:
        if self._tasks.get(uri) is task:
            del self._tasks[uri]

    def clear(self) -> None:
        self._filled.clear()
