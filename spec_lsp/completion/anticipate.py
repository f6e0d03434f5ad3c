"""Anticipation: the work the service does beyond the request in hand.

- `prefetch_after`: on idle engine time, the suggestion the editor will ask for once the shown one
  is accepted whole, computed into the answer cache (`prefetch.py` owns the ones in flight).
- `alternatives`: for an explicit request, more suggestions that branch on the target's next most
  likely first tokens, each continued as usual (greedy, with speculation, over the prompt's KV).
- `_catch_up`: on idle engine time after a prefetch, a draft model left aside for a cold prompt
  (`GenerationStats.draft_lag`) has its KV caught up, so the next requests there can draft.
- `warm_up`: on idle engine time, a document just opened (or open when the model is ready) has
  the KV of its prompts' common start prefilled: the prompt for the furthest cursor whose window
  starts at the top of the file (`Planner.head`), which every prompt for a cursor above it
  begins with, token for token. A cold file's first request then prefills only what follows.
  Where the editor says where its cursor rests (`spec-lsp/didMoveCursor`), the prompt a request
  there would have is prefilled instead: typing there finds its window's KV ready. Where that
  window is cold, its short window (`engine/cold.py`) is prefilled first: the first key there
  is answered over it at once, while the rest of the full window fills.
- `fill_window`: after a request answered over a short window (its document's window was cold,
  `engine/cold.py`), the same cursor warm-up fills the full window on idle time, so the
  requests after it take the full window again; it catches the short window's draft model up
  first where that lags (the requests over it leave a cold draft aside).

Each takes its plan from the planner (`plan.py`), as a request at that position would, so their
answers are the ones that request would get. The service hands its parts in; this module does not
know the service.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from spec_lsp.completion.feedback import Suggestion
from spec_lsp.completion.live import GenerationFailed, Live
from spec_lsp.completion.parts import Parts
from spec_lsp.completion.prefetch import Ahead, after_accept
from spec_lsp.completion.reuse import Anchor
from spec_lsp.documents import Document


class Anticipation:
    def __init__(self, parts: Parts, can_warm: Callable[[Document], bool]) -> None:
        """`can_warm(doc)`: whether the document is served by a backend that stops within a
        pass and keeps what it computed."""
        self.planner = parts.planner
        self.docs = parts.docs
        self.live = parts.live
        self.prefetch = parts.prefetch
        self.reuse = parts.reuse
        self.feedback = parts.feedback
        self.neighbours = parts.neighbours
        self._options = parts.options
        self._can_warm = can_warm

    async def prefetch_after(
        self,
        doc: Document,
        version: int,
        pos: tuple[int, int],
        shown: str,
        early: Live | None = None,
    ) -> None:
        """The suggestion after `shown` (made at `pos` of `doc` at `version`) is accepted whole.
        `early`: the generation still running after an early answer (`shown` is its first
        lines): once it ends, its whole suggestion is the one whose accept is prefetched."""
        await asyncio.sleep(0)  # the answer goes out first
        if early is not None:
            await asyncio.wait({early.job.future})
            await asyncio.sleep(0)  # its settling callbacks run first
            if not early.settled or not early.anchor.text.startswith(shown):
                return
            shown = early.anchor.text
        if not self._still(doc, version, but_own_warm=True):
            return
        prefix, suffix = doc.prefix_suffix(*pos)
        new_prefix, row, col = after_accept(prefix, shown)
        text = new_prefix + suffix
        self.neighbours.settle(keep=doc.uri)  # idle time: what the request after it will see
        plan = self.planner.at(doc, row, col, lines=text.split("\n"), remember=False)
        if plan is None or self.reuse.cache.get(plan.key) is not None:
            return
        options = self._options()
        live = self.live.start(
            doc.uri,
            plan.prompt.text,
            plan.cut,
            plan.anchor(),
            options,
            kind="prefetch",
            short=plan.short_text,
        )
        ahead = Ahead(doc.uri, text, plan.key, live, len(prefix), len(new_prefix))
        live.keep = ahead.toward  # accepting a line or a word of it keeps this prefetch running
        answer = await self.prefetch.run(ahead)
        if answer is not None:
            self.reuse.cache.put(plan.key, answer)
        self._catch_up(doc, version, live)

    def _still(self, doc: Document, version: int, but_own_warm: bool = False) -> bool:
        """Whether `doc` is open at `version` and the worker has nothing else to do
        (`but_own_warm`: but `doc`'s own warm job, which a generation for `doc` supersedes;
        another document's would hold it up)."""
        current = self.docs.get(doc.uri) is doc and doc.version == version
        return current and not self.live.busy(doc.uri if but_own_warm else None)

    def _catch_up(self, doc: Document, version: int, done: Live) -> None:
        """After a generation whose draft model sat aside because its KV lagged the prompt
        (a cold window: prefilling the draft would have delayed the answer more than drafting
        saves), a warm job over the same prompt catches the draft's KV up on idle time: the
        target's KV is there already, so it prefills the draft alone, in short passes that the
        document's next generation supersedes and another document's request cancels (what
        they computed stays). A draft its gate has closed on this document is not caught up.
        The job carries the request's short window: where the full window is cold the engine
        catches that window's draft up first (`engine/cold.py`), the one the next keys use."""
        future = done.job.future
        if not future.done() or future.cancelled() or future.exception() is not None:
            return
        result = future.result()
        if result.cancelled or result.stats.draft_lag <= 0 or not self._still(doc, version):
            return
        if not self._options().kv_reuse or not self._can_warm(doc):
            return
        anchor = Anchor(done.anchor.prefix, done.anchor.suffix)  # never settled: no text
        request = done.job.request  # its short window's draft first, if that is the one lagging
        options, short = self._options(), request.short_prompt
        live = self.live.start(
            doc.uri, request.prompt, done.cut, anchor, options, "warm", short=short
        )
        live.keep = lambda _text: True  # as a warm-up: no keystroke makes its prompt useless
        self.prefetch.warming(live)

    async def alternatives(
        self, doc: Document, pos: tuple[int, int], first: str, n: int
    ) -> list[Suggestion]:
        """Up to n - 1 suggestions other than `first` at `pos`, issued (ids) in rank order."""
        version, texts = doc.version, [first]
        plan = self.planner.at(doc, *pos)
        if plan is None:
            return []
        for rank in range(1, n + 1):  # one rank more: a branch may trim to one already had
            if len(texts) >= n:
                break
            anchor = plan.anchor()
            live = self.live.start(
                doc.uri,
                plan.prompt.text,
                plan.cut,
                anchor,
                self._options(),
                kind="alternative",
                first_rank=rank,
                short=plan.short_text,
            )
            try:
                result = await self.live.wait(live)
            except GenerationFailed:  # the first suggestion stands; alternatives end here
                break
            if result is None or doc.version != version:
                break
            self.live.settle(live, result)
            if anchor.text and anchor.text not in texts:
                texts.append(anchor.text)
        return [self.feedback.issue(text) for text in texts[1:]]

    def fill_window(self, done: Live) -> None:
        """`done` was answered over a short window because its document's window was cold: on
        idle time, the full window of a request where it was made is prefilled (`warm_up`), in
        passes that the document's next generation supersedes (what they computed stays), so
        the requests after it find the window ready and take it (`engine.cold`)."""
        doc = self.docs.get(done.uri)
        if doc is None or not self._options().prefetch:
            return
        before = done.anchor.prefix  # the text before the cursor it was made at
        row = min(before.count("\n"), len(doc.lines) - 1)
        col = min(len(before) - before.rfind("\n") - 1, len(doc.lines[row]))
        asyncio.get_running_loop().call_soon(self.warm_up, doc, (row, col))

    def warm_up(self, doc: Document, at: tuple[int, int] | None = None) -> None:
        """Starts prefilling `doc`'s KV for the start of its prompts, or with `at` (row, col:
        where the editor's cursor rests) for the prompt of a request there (see the module
        docstring), as a prefetch: superseded by the document's next generation, cancelled by a
        request for another document. Only on a backend that stops within a pass and keeps what
        it computed (the local engine; `remote.warmup` has llama-server's own). A cursor's
        warm-up supersedes the document's earlier warm job, and waits for no one: while another
        generation runs, nothing starts."""
        if not self._options().kv_reuse or not self._can_warm(doc):
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no loop (a synchronous caller): nothing runs in the background
            return
        running = self.live.running(doc.uri)
        if at is None and running is not None:
            return
        if at is not None and self.live.busy(but_warm_of=doc.uri):
            return
        self.neighbours.settle(keep=doc.uri)  # the chunks of other files its request will see
        if at is None:
            plan = self.planner.head(doc)
        else:  # the window a request there would have, kept for the document as a request's
            plan = self.planner.at(doc, *at, prefill_only=True)
        if plan is None:
            return
        # A cursor's: its short window first where a request there would take it (`cold.py`)
        short = plan.short_text if at is not None else None
        live = self.live.start(
            doc.uri, plan.prompt.text, plan.cut, plan.anchor(), self._options(), "warm", short=short
        )
        live.keep = lambda _text: True  # no keystroke makes the start of its prompts useless
        self.prefetch.warming(live)
