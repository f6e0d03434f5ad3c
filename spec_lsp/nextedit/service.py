"""Next edit: from a document, its recent edits and a cursor to the edit the user makes next.

`NextEdits.suggest` answers `textDocument/copilotInlineEdit`. For a document at the version the
client names, it picks an editable region around the cursor (`region.py`), renders the preset's
next-edit prompt (`formats.py`), and has the model rewrite the region; the old region is the
rewrite's draft (`GenerationRequest.reference`: the engine's copy drafter), so unchanged stretches
cost one verify pass per 16-32 tokens. The old and new regions are diffed into the smallest edits
(`edits.py`); one is shown: the first at or below the cursor. Nothing is shown when the rewrite
equals the region, when it did not end with the format's end marker, when the model was unsure
where it departed from the old text (`MIN_CONFIDENCE`), or when the edit would undo one of the
user's own recent edits. The rest of a rewrite is kept: after the edit shown is accepted, the next
request is answered from it without a model call, as long as the region holds what it expects.

Never stale: a request for a version other than the document's answers nothing; a generation is
cancelled by any edit of its document and by any completion request (completions keep priority on
the worker), and a result for a version that has moved on is dropped. One next-edit generation
runs at a time; a newer request cancels the older.

This module owns that pipeline and its counters (`spec-lsp/stats` nextEdit). It knows nothing of
LSP (the server converts), of torch or of tree-sitter (the completion service's syntax port).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import OrderedDict
from dataclasses import dataclass

from spec_lsp.completion.history import Hunk
from spec_lsp.completion.neighbours import private, uri_path
from spec_lsp.completion.service import CompletionService
from spec_lsp.documents import Document
from spec_lsp.engine.api import CancelToken, GenerationRequest, GenerationResult
from spec_lsp.nextedit.edits import Replacement, choose, cosmetic, region_edits, reverts
from spec_lsp.nextedit.formats import EditContext, EditPrompt, format_for, region_lines
from spec_lsp.nextedit.region import context_lines, editable_region
from spec_lsp.nextedit.stats import NextEditStats
from spec_lsp.worker import Job

# A departure from the old text the target was less sure of than this: no edit is shown (quiet
# beats noise). Measured by `spec-lsp bench next-edit` on this repository's history: see
# docs/benchmarks.md.
MIN_CONFIDENCE = 0.5
# A completion request that cancels a next edit waits one such pass at most (~0.3 s here); passes
# much shorter prefill slower.
PREFILL_CHUNK = 64
ISSUED_SIZE = 256  # edits remembered for their shown/accepted notifications


@dataclass
class Suggested:
    """An edit handed out, in document positions (row, col in characters)."""

    id: str
    uri: str
    version: int
    edit: Replacement


@dataclass
class Rewrite:
    """A document's last rewrite: the region's old and new lines from `first`."""

    first: int
    old: list[str]
    new: list[str]
    total: int  # the document's line count when the rewrite was made


class NextEdits:
    def __init__(self, completion: CompletionService) -> None:
        self.c = completion
        self.stats = NextEditStats()
        self._ids = itertools.count(1)
        self._issued: OrderedDict[str, Suggested] = OrderedDict()
        self._job: tuple[str, Job] | None = None
        self._rewrites: dict[str, Rewrite] = {}
        completion.listeners.append(self._give_way)

    # -- requests -------------------------------------------------------------------------------
    async def suggest(self, uri: str, version: int, row: int, col: int) -> Suggested | None:
        """The edit to show for a cursor at (row, col) (characters) of `uri` at `version`."""
        t0 = time.perf_counter()
        self.stats.requests += 1
        doc = self.c.docs.get(uri)
        if doc is None or doc.version != version or not self._serving(doc):
            self.stats.empty += 1
            return None
        edit = self._from_rewrite(doc, row)
        if edit is None:
            edit = await self._predict(doc, row, col)
        if edit is not None and (self.c.docs.get(uri) is not doc or doc.version != version):
            self.stats.stale += 1
            return None
        if edit is None:
            self.stats.empty += 1
            return None
        self.stats.answered += 1
        self.stats.latency.add((time.perf_counter() - t0) * 1000)
        return self._issue(uri, version, edit)

    def _serving(self, doc: Document) -> bool:
        o = self.c.options
        info = self.c.worker.info
        ready = o.enabled and o.next_edit and self.c.worker.state == "ready"
        ready = ready and o.language_enabled(doc.language_id) and not private(o, doc.uri)
        return ready and format_for(info.next_edit) is not None

    def _from_rewrite(self, doc: Document, row: int) -> Replacement | None:
        """The next edit of the document's last rewrite, while its region holds the old lines
        with some of the rewrite's edits made (the ones shown and accepted), and nothing else
        changed the document's length."""
        rw = self._rewrites.get(doc.uri)
        if rw is None:
            return None
        size = len(rw.old) + len(doc.lines) - rw.total
        now = doc.lines[rw.first : rw.first + size]
        if size < 0 or now == rw.new or not _between(now, rw.old, rw.new):
            self._rewrites.pop(doc.uri, None)  # all made, or edited otherwise: ask the model
            return None
        hunks = self.c.history.hunks(doc.uri)
        edits = self._worth(region_edits(doc.lines, rw.first, now, rw.new), doc, hunks)
        if not edits:
            self._rewrites.pop(doc.uri, None)
        return choose(edits, row)

    async def _predict(self, doc: Document, row: int, col: int) -> Replacement | None:
        fmt = format_for(self.c.worker.info.next_edit)
        if fmt is None:
            return None
        hunks = self.c.history.hunks(doc.uri)
        last_hunk = hunks[-1] if hunks else None
        first, last = editable_region(doc.lines, row, last_hunk, self.c.syntax.region, doc.uri)
        above, below = context_lines(doc.lines, first, last)
        ctx = EditContext(
            path=uri_path(doc.uri).rsplit("/", 1)[-1],
            language=doc.language_id,
            above=above,
            region=doc.lines[first : last + 1],
            below=below,
            hunks=hunks,
            cursor=(row - first, col),
            first_line=first,
        )
        prompt = fmt.render(ctx)
        result = await self._generate(doc, prompt)
        if result is None:
            return None
        self.stats.record(result.stats)
        if result.stats.stop_reason not in ("stop_string", "eos"):
            return None  # no end marker: the rewrite ran out of tokens, or was cut off
        if result.departures and min(p for _, p in result.departures) < MIN_CONFIDENCE:
            self.stats.unsure += 1
            return None
        new = region_lines(result.text)
        if new == ctx.region:
            return None
        edits = self._worth(region_edits(doc.lines, first, ctx.region, new), doc, hunks)
        if not edits:
            return None
        self._rewrites[doc.uri] = Rewrite(first, ctx.region, new, len(doc.lines))
        return choose(edits, row)

    async def _generate(self, doc: Document, prompt: EditPrompt) -> GenerationResult | None:
        """Runs the rewrite in the worker; None when cancelled or failed."""
        if self._job is not None:
            self._job[1].cancel()
        o = self.c.options
        # Code runs 3-4 characters a token: half the old region's characters in tokens leaves
        # the rewrite room to grow by half (no tokenizer on the event loop: the worker uses it).
        request = GenerationRequest(
            prompt=prompt.text,
            doc_id=doc.uri,
            max_new_tokens=len(prompt.reference[0]) // 2 + 32,
            temperature=0.0,
            stop_strings=prompt.stop,
            cancel=CancelToken(),
            method="off" if o.speculation == "off" else "ngram",
            reuse_kv=o.kv_reuse,
            prefill_chunk=PREFILL_CHUNK,
            reference=prompt.reference if o.speculation != "off" else (),
        )
        job = Job(request, asyncio.get_running_loop().create_future())
        self._job = (doc.uri, job)
        self.c.worker.submit(job)
        try:
            result = await asyncio.shield(job.future)
        except asyncio.CancelledError:
            job.cancel()
            raise
        except Exception:
            self.stats.failed += 1
            return None
        finally:
            if self._job is not None and self._job[1] is job:
                self._job = None
        if result.cancelled or result.failed:
            self.stats.cancelled += int(result.cancelled)
            return None
        return result

    @staticmethod
    def _worth(edits: list[Replacement], doc: Document, hunks: list[Hunk]) -> list[Replacement]:
        """The edits worth showing: none that undoes the user's own or only moves whitespace."""
        return [e for e in edits if not reverts(e, doc.lines, hunks) and not cosmetic(e, doc.lines)]

    def _give_way(self, uri: str | None) -> None:
        """A completion request arrived (None) or `uri` changed: its next edit stops, and a
        document closed or edited away from its rewrite is re-examined at the next request."""
        if self._job is not None and (uri is None or self._job[0] == uri):
            self._job[1].cancel()
        if uri is not None and self.c.docs.get(uri) is None:
            self._rewrites.pop(uri, None)

    # -- feedback -------------------------------------------------------------------------------
    def _issue(self, uri: str, version: int, edit: Replacement) -> Suggested:
        sid = f"e{next(self._ids)}"
        item = Suggested(sid, uri, version, edit)
        self._issued[sid] = item
        while len(self._issued) > ISSUED_SIZE:
            self._issued.popitem(last=False)
        return item

    def did_show(self, sid: str) -> None:
        if sid in self._issued:
            self.stats.shown += 1

    def did_accept(self, sid: str) -> None:
        if self._issued.pop(sid, None) is not None:
            self.stats.accepted += 1

    def did_reject(self, sid: str) -> None:
        if self._issued.pop(sid, None) is not None:
            self.stats.rejected += 1
            # A dismissed rewrite is not offered again piece by piece.
            for uri in [u for u in self._rewrites]:
                self._rewrites.pop(uri, None)


def _between(now: list[str], old: list[str], new: list[str]) -> bool:
    """Whether `now` could be `old` with some of the changes toward `new` made: every line of
    `now` is a line of `old` or of `new`."""
    allowed = set(old) | set(new)
    return all(line in allowed for line in now)
