"""Answers from what is already known, before any new model call.

- `typed`: the document's last suggestion, typed through (`reuse.py`);
- `through_live`: its running generation, when the cursor types through what it has streamed (an
  automatic request waits `partial_ms` for its complete lines, else for the end);
- `cached`: the answer cache, or a prefetch still computing the same plan's key.

Each counts what answered in the server's stats. `settle` makes a finished generation's suggestion
the document's last one (what `typed` answers from next) and `settle_later` does it for one that
answered early. This module knows nothing of prompts or of the order the service asks in.
"""

from __future__ import annotations

from spec_lsp.completion.live import GenerationFailed, Live
from spec_lsp.completion.parts import Parts
from spec_lsp.completion.plan import Plan
from spec_lsp.completion.reuse import CacheKey
from spec_lsp.engine.api import GenerationResult


class Known:
    def __init__(self, parts: Parts) -> None:
        self.docs = parts.docs
        self.reuse = parts.reuse
        self.live = parts.live
        self.prefetch = parts.prefetch
        self.stats = parts.stats
        self._options = parts.options

    def typed(self, uri: str, prefix: str, suffix: str) -> str | None:
        """The rest of the document's last suggestion when the cursor typed through its start."""
        rest = self.reuse.typed_through(uri, prefix, suffix)
        if rest is not None:
            self.stats.typed_through += 1
        return rest

    async def through_live(
        self, uri: str, prefix: str, suffix: str, invoked: bool = False
    ) -> str | None:
        """Waits for the running generation when the cursor types through what it streamed (an
        automatic request, past `partial_ms`, for its complete lines)."""
        live = self.live.running(uri)
        live = None if live is None or live.kind == "warm" else live  # a warm-up suggests nothing
        streamed = None if live is None else live.streamed
        if live is None or streamed is None or not live.anchor.rest(streamed, prefix, suffix):
            return None
        partial_ms = self._options().partial_ms
        if partial_ms > 0 and not invoked:
            anchor = live.anchor
            lines = await self.live.wait_partial(
                live,
                partial_ms / 1000,
                False,
                shows=lambda lines: bool(anchor.rest(lines, prefix, suffix)),
            )
            rest = None if lines is None else anchor.rest(lines, prefix, suffix)
            if rest:
                self.stats.early += 1
                return rest
        try:
            result = await self.live.wait(live, owner=False)
        except GenerationFailed:  # an earlier request's generation: it answered the error
            return None
        if result is None:
            return None
        self.settle(live, result)
        rest = live.anchor.rest(live.anchor.text, prefix, suffix)
        if not rest:
            return None
        if live.kind == "prefetch":
            self.stats.prefetch_hits += 1
        else:
            self.stats.typed_through += 1
        return rest

    async def cached(self, plan: Plan) -> str | None:
        """The answer cache's text for `plan`, or that of a prefetch still computing it; it
        becomes the document's last suggestion."""
        text = self.reuse.cache.get(plan.key)
        if text is not None:
            self.prefetch.hit(plan.key)
        else:
            text = await self.prefetch.answer(plan.uri, plan.key)
        if text is None:
            return None
        self.stats.cache_hits += 1
        anchor = plan.anchor()
        anchor.text = text
        self.reuse.remember(plan.uri, anchor)
        return text

    def settle(self, live: Live, result: GenerationResult) -> str:
        """The generation's suggestion; the first time, it becomes the document's last one."""
        first = self.live.settle(live, result)
        if first and live.anchor.text and self.docs.get(live.uri) is not None:
            self.reuse.remember(live.uri, live.anchor)
        return live.anchor.text

    def settle_later(self, live: Live, key: CacheKey) -> None:
        """Settles a generation that answered early, once it ends (unless a request typing
        through it did): its whole suggestion becomes the document's last one and is cached."""
        future = live.job.future
        if future.cancelled() or future.exception() is not None or live.settled:
            return
        result = future.result()
        if result.cancelled or result.failed:
            return
        text = self.settle(live, result)
        if self._options().temperature == 0:
            self.reuse.cache.put(key, text)
