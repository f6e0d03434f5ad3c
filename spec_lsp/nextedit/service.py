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
import difflib
import itertools
import time
from collections import OrderedDict
from dataclasses import dataclass, field, replace

from spec_lsp.completion.history import Hunk
from spec_lsp.completion.neighbours import private, uri_path
from spec_lsp.completion.service import CompletionService
from spec_lsp.config import Options
from spec_lsp.documents import Document
from spec_lsp.engine.api import CancelToken, GenerationRequest, GenerationResult
from spec_lsp.nextedit.early import complete_lines, settled_edits
from spec_lsp.nextedit.edits import (
    Replacement,
    choose,
    cosmetic,
    region_edits,
    reverts,
    unrelated,
)
from spec_lsp.nextedit.formats import EditContext, EditPrompt, format_for, region_lines
from spec_lsp.nextedit.region import context_lines, editable_region, recent_hunks
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
POLL_S = 0.02  # how often a running rewrite's text is read for a settled edit
REST_WAIT_S = 10.0  # the longest a request waits for an early answer's rewrite to end


@dataclass
class Suggested:
    """An edit handed out, in document positions (row, col in characters)."""

    id: str
    uri: str
    version: int
    edit: Replacement


@dataclass
class Rewrite:
    """A rewrite of a document's region: the old lines from `first` and the new ones (once it
    has ended), with the document around the region as it was then."""

    uri: str
    first: int
    old: list[str]
    total: int  # the document's line count then
    outside: list[str]  # the document's lines outside the region then
    new: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, doc: Document, first: int, old: list[str]) -> Rewrite:
        outside = doc.lines[:first] + doc.lines[first + len(old) :]
        return cls(doc.uri, first, old, len(doc.lines), outside)

    def region_now(self, lines: list[str]) -> list[str] | None:
        """The region's lines in the document `lines`; None when it changed outside them."""
        size = len(self.old) + len(lines) - self.total
        if size < 0 or lines[: self.first] + lines[self.first + size :] != self.outside:
            return None
        return lines[self.first : self.first + size]


class NextEdits:
    def __init__(self, completion: CompletionService) -> None:
        self.c = completion
        self.stats = NextEditStats()
        self._ids = itertools.count(1)
        self._issued: OrderedDict[str, Suggested] = OrderedDict()
        self._job: tuple[str, Job] | None = None
        self._rewrites: dict[str, Rewrite] = {}
        self._early: tuple[Job, Rewrite] | None = None  # the rewrite that answered early
        completion.listeners.append(self._give_way)

    # -- requests -------------------------------------------------------------------------------
    async def suggest(self, uri: str, version: int, row: int, col: int) -> Suggested | None:
        """The edit to show for a cursor at (row, col) (characters) of `uri` at `version`."""
        cpu0 = time.process_time()  # the server's CPU time (all its threads) while it answers
        try:
            return await self._suggest(uri, version, row, col)
        finally:
            self.stats.cpu_ms += (time.process_time() - cpu0) * 1000

    async def _suggest(self, uri: str, version: int, row: int, col: int) -> Suggested | None:
        t0 = time.perf_counter()
        self.stats.requests += 1
        self.stats.confidence = None
        doc = self.c.docs.get(uri)
        if doc is None or doc.version != version or not self._serving(doc):
            self.stats.empty += 1
            return None
        if (running := self._pending(uri)) is not None:  # an early answer's rewrite runs on:
            await asyncio.wait({running.future}, timeout=REST_WAIT_S)  # its rest answers
            await asyncio.sleep(0)  # its done callback keeps the rest (`_keep_rest`)
        edit = self._from_rewrite(doc, row) if self.c.docs.get(uri) is doc else None
        if edit is None and self.c.docs.get(uri) is doc and doc.version == version:
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
        now = rw.region_now(doc.lines)
        if now is None or now == rw.new or not _between(now, rw.old, rw.new):
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
            hunks=recent_hunks(hunks),
            cursor=(row - first, col),
            first_line=first,
        )
        prompt = fmt.render(ctx)
        job = self._submit(doc, prompt)
        early = await self._first_settled(job, doc, first, ctx.region, row, hunks)
        if early is not None:  # shown now; the rest of the rewrite answers the next request
            rest = Rewrite.of(doc, first, ctx.region)
            self._early = (job, rest)
            job.future.add_done_callback(lambda f: self._keep_rest(f, rest))
            return early
        result = await self._result(job)
        if result is None or not self._usable(result):
            return None
        new = region_lines(result.text)
        edits = self._worth(region_edits(doc.lines, first, ctx.region, new), doc, hunks)
        if not edits:
            return None
        self._rewrites[doc.uri] = replace(Rewrite.of(doc, first, ctx.region), new=new)
        return choose(edits, row)

    async def _first_settled(
        self, job: Job, doc: Document, first: int, old: list[str], row: int, hunks: list[Hunk]
    ) -> Replacement | None:
        """The first settled edit at or below the cursor's line while the rewrite runs (`early`),
        if the model was sure of every departure so far; None when the rewrite ended first."""
        departures: list[float] = []
        job.request.on_departure = lambda _i, p: departures.append(p)
        while not job.future.done():
            await asyncio.wait({job.future}, timeout=POLL_S)
            written = complete_lines(job.streamed)
            if written is None or (departures and min(departures) < MIN_CONFIDENCE):
                continue
            edits = settled_edits(doc.lines, first, old, written)
            below = [e for e in self._worth(edits, doc, hunks) if e.end[0] >= row]
            if below and self.c.docs.get(doc.uri) is doc:
                self.stats.early += 1
                self.stats.confidence = min(departures, default=1.0)
                return below[0]
        return None

    def _usable(self, result: GenerationResult, answers: bool = True) -> bool:
        """A finished rewrite worth reading: it ended with its marker, and the model was sure
        wherever it departed from the old text. One that `answers` the request waiting on it
        leaves its confidence in the counters."""
        self.stats.record(result.stats)
        if result.stats.stop_reason not in ("stop_string", "eos"):
            return False  # no end marker: the rewrite ran out of tokens, or was cut off
        confidence = min((p for _, p in result.departures), default=1.0)
        if answers:
            self.stats.confidence = confidence
        if confidence < MIN_CONFIDENCE:
            self.stats.unsure += 1
            return False
        return True

    def _keep_rest(self, future: asyncio.Future[GenerationResult], rest: Rewrite) -> None:
        """A rewrite that answered early has ended: its rest answers the next request."""
        if future.cancelled() or future.exception() is not None:
            return
        result = future.result()
        if result.cancelled or result.failed or not self._usable(result, answers=False):
            return
        if self.c.docs.get(rest.uri) is not None:
            self._rewrites[rest.uri] = replace(rest, new=region_lines(result.text))

    def _submit(self, doc: Document, prompt: EditPrompt) -> Job:
        """Starts the rewrite in the worker, superseding any other next-edit generation."""
        if self._job is not None:
            self._job[1].cancel()
        request = rewrite_request(prompt, doc.uri, self.c.options)
        job = Job(request, asyncio.get_running_loop().create_future())
        self._job = (doc.uri, job)
        self.c.worker.submit(job)
        return job

    async def _result(self, job: Job) -> GenerationResult | None:
        """The rewrite's result; None when cancelled or failed."""
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
        """The edits worth showing: none that undoes the user's own, only moves whitespace, or
        lies far from the user's edits without carrying one through."""
        return [
            e
            for e in edits
            if not reverts(e, doc.lines, hunks)
            and not cosmetic(e, doc.lines)
            and not unrelated(e, doc.lines, hunks)
        ]

    def _give_way(self, uri: str | None) -> None:
        """A completion request arrived (None) or `uri` changed: its next edit stops (unless
        the change made edits of the rewrite going on after an early answer: an accept), and a
        closed document's rewrite is dropped."""
        job = self._job
        if job is not None and (uri is None or (job[0] == uri and not self._accepting(uri))):
            job[1].cancel()
        if uri is not None and self.c.docs.get(uri) is None:
            self._rewrites.pop(uri, None)

    def _pending(self, uri: str) -> Job | None:
        """The rewrite that answered early for `uri`, while it runs and the document holds only
        its old lines and lines it wrote."""
        if self._early is None or self._early[0].future.done() or not self._accepting(uri):
            return None
        return self._early[0]

    def _accepting(self, uri: str) -> bool:
        """Whether `uri` holds, where its early-answered rewrite runs, only old lines and lines
        that rewrite wrote: the user accepted its edit (the rest is still worth having)."""
        doc = self.c.docs.get(uri)
        if self._early is None or doc is None or self._job is None:
            return False
        job, rest = self._early
        if job is not self._job[1] or rest.uri != uri:
            return False
        now = rest.region_now(doc.lines)
        return now is not None and _between(now, rest.old, complete_lines(job.streamed) or [])

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
            self._rewrites.clear()


def _blocks(old: list[str], new: list[str]) -> dict[tuple[int, int], list[str]]:
    """The changed blocks of old -> new by their old line range, a replace of as many lines as
    it has split line by line (as `region_edits` shows them: one can be accepted alone)."""
    out: dict[tuple[int, int], list[str]] = {}
    ops = difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes()
    for tag, a1, a2, b1, b2 in ops:
        if tag == "replace" and a2 - a1 == b2 - b1:
            out.update({(a1 + i, a1 + i + 1): [new[b1 + i]] for i in range(a2 - a1)})
        elif tag != "equal":
            out[(a1, a2)] = new[b1:b2]
    return out


def _between(now: list[str], old: list[str], new: list[str]) -> bool:
    """Whether `now` is `old` with some of the rewrite's changes toward `new` made, and nothing
    else changed (the user's own typing since leaves the rewrite behind)."""
    made = _blocks(old, now)
    wanted = _blocks(old, new)
    return all(wanted.get(span) == lines for span, lines in made.items())


def rewrite_request(prompt: EditPrompt, uri: str, o: Options) -> GenerationRequest:
    """The engine's request for a rewrite. Its references go with it whatever the drafting: with
    speculation off nothing is copied from them (`method` "off"), but the engine still finds
    the departures from them (the confidence the server gates on) and keeps the rewrite's KV
    apart from the document's completions."""
    # Code runs 3-4 characters a token: half the old region's characters in tokens leaves the
    # rewrite room to grow by half (no tokenizer on the event loop: the worker uses it).
    return GenerationRequest(
        prompt=prompt.text,
        doc_id=uri,
        max_new_tokens=len(prompt.reference[0]) // 2 + 32,
        temperature=0.0,
        stop_strings=prompt.stop,
        cancel=CancelToken(),
        method="off" if o.speculation == "off" else "ngram",
        reuse_kv=o.kv_reuse,
        prefill_chunk=PREFILL_CHUNK,
        reference=prompt.reference,
    )
