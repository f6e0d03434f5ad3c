"""Request scheduling: what makes suggestions feel instant and never stale.

This module owns deciding, per request, whether to answer from what is already known (typing
through the pending or last suggestion, the LRU cache), to wait (debounce), or to run the model in
the inference worker, cancelling the document's older generation. It knows nothing of pygls or
lsprotocol (the server converts), nor of torch (the worker's backend runs it).

Per document there is at most one live generation. A result is shown only if the document is still
at the version and request it was computed for; otherwise it is kept as the document's last
suggestion, so the next keystroke that types through it is answered without a model call.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from spec_lsp.config import Options
from spec_lsp.documents import Document, DocumentStore, Encoding
from spec_lsp.engine.api import CancelToken, GenerationRequest, GenerationResult
from spec_lsp.prompt import PromptBuilder, after_lead, unlead
from spec_lsp.stats import ServerStats
from spec_lsp.syntax_adapter import StopFn, Syntax
from spec_lsp.worker import InferenceWorker, Job

log = logging.getLogger(__name__)

CACHE_SIZE = 256
ISSUED_SIZE = 512
MAX_ADAPTIVE_DEBOUNCE_MS = 100.0


@dataclass
class Suggestion:
    id: str
    text: str


@dataclass(frozen=True)
class Arrival:
    """A request as it was when read: the document version and its order among the requests."""

    version: int
    seq: int
    t0: float
    gap_ms: float | None  # time since the document's previous request


@dataclass
class Anchor:
    """A suggestion and the document text around the position it was made for."""

    prefix: str
    suffix: str
    text: str

    def rest_after(self, prefix: str, suffix: str) -> tuple[str, str] | None:
        """(typed, rest) if `prefix` is this anchor's prefix plus the start of its text."""
        if len(prefix) < len(self.prefix) or suffix != self.suffix:
            return None
        if not prefix.startswith(self.prefix):
            return None
        typed = prefix[len(self.prefix) :]
        if not self.text.startswith(typed) or len(self.text) <= len(typed):
            return None
        return typed, self.text[len(typed) :]


@dataclass
class _Live:
    """The document's generation in flight, and what is needed to settle its text."""

    job: Job
    anchor: Anchor  # text is filled in when the job ends
    version: int
    pos: tuple[int, int]
    mode: str
    lead: str = ""  # typed text the prompt left out; the model's text begins with it
    settled: bool = False

    @property
    def streamed(self) -> str | None:
        """What the generation has streamed for the cursor (None: it does not begin with lead)."""
        return unlead(self.job.streamed, self.lead)


class CompletionService:
    def __init__(
        self,
        worker: InferenceWorker,
        options: Options,
        syntax: Syntax | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.worker = worker
        self.options = options
        self.syntax = syntax or Syntax()
        self.docs = DocumentStore()
        self.syntax.source = self._syntax_source
        self.stats = ServerStats()
        self._clock = clock
        self._prompts: PromptBuilder | None = None
        self._seq: dict[str, int] = {}
        self._last_request_at: dict[str, float] = {}
        self._gap_ema: dict[str, float] = {}
        self._live: dict[str, _Live] = {}
        self._last: dict[str, Anchor] = {}
        self._cache: OrderedDict[tuple[object, ...], str] = OrderedDict()
        self._issued: OrderedDict[str, str] = OrderedDict()
        self._ids = itertools.count(1)

    # -- documents ----------------------------------------------------------------------------
    def did_open(self, uri: str, language_id: str, version: int, text: str) -> None:
        self.docs.open(uri, language_id, version, text)
        self.syntax.open(uri, language_id, text)

    def _syntax_source(self, uri: str) -> tuple[str, str] | None:
        doc = self.docs.get(uri)
        return None if doc is None else (doc.language_id, doc.text)

    def did_change(
        self,
        uri: str,
        version: int,
        changes: list[tuple[tuple[int, int, int, int] | None, str]],
        encoding: Encoding,
    ) -> bool:
        """Applies LSP content changes ((line, char, line, char) in `encoding`, or None: full)."""
        doc = self.docs.get(uri)
        if doc is None:
            return False
        for rng, text in changes:
            if rng is None:
                doc.lines = text.split("\n")
                self.syntax.replace(uri, text)
                continue
            start = doc.clamp(rng[0], rng[1], encoding)
            end = doc.clamp(rng[2], rng[3], encoding)
            doc.apply(start, end, text)
            self.syntax.apply_edit(uri, start, end, text)
        doc.version = version
        self._cancel_if_diverged(doc)
        return True

    def _cancel_if_diverged(self, doc: Document) -> None:
        """Stops the live generation at once when an edit is not typing through it."""
        live = self._live.get(doc.uri)
        if live is None or live.job.future.done():
            return
        a, text = live.anchor, doc.text
        inside = len(text) >= len(a.prefix) + len(a.suffix)
        if inside and text.startswith(a.prefix) and text.endswith(a.suffix):
            typed = text[len(a.prefix) : len(text) - len(a.suffix)]
            streamed = live.streamed
            if streamed is not None and streamed.startswith(typed):
                return  # the model already wrote what was typed: let it go on
        live.job.cancel()

    def did_close(self, uri: str) -> None:
        self.docs.close(uri)
        self.syntax.close(uri)
        live = self._live.pop(uri, None)
        if live is not None:
            live.job.cancel()
        for table in (self._seq, self._last_request_at, self._gap_ema, self._last):
            table.pop(uri, None)
        if self._prompts is not None:
            self._prompts.forget(uri)
        self.worker.call(lambda backend: backend.forget(uri), frees_memory=True)

    # -- model --------------------------------------------------------------------------------
    def model_ready(self) -> None:
        """Called after a (re)load: prompts follow the new model family."""
        info = self.worker.info
        self._prompts = PromptBuilder(info.fim, info.context_tokens, self.options.max_tokens)
        self._cache.clear()
        self._last.clear()

    def set_options(self, options: Options) -> None:
        if (options.max_tokens, options.temperature, options.speculation) != (
            self.options.max_tokens,
            self.options.temperature,
            self.options.speculation,
        ):
            self._cache.clear()
            self._last.clear()
        self.options = options
        if self._prompts is not None:
            info = self.worker.info
            self._prompts = PromptBuilder(info.fim, info.context_tokens, options.max_tokens)

    def stats_wire(self, model: dict[str, object]) -> dict[str, object]:
        out = self.stats.to_wire(model)
        out["running"] = sum(
            1 for live in self._live.values() if live.job.started and not live.job.future.done()
        )
        out["streaming"] = sum(
            1 for live in self._live.values() if live.job.streamed and not live.job.future.done()
        )
        out["documents"] = len(self.docs)
        return out

    # -- feedback -----------------------------------------------------------------------------
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

    def _issue(self, text: str) -> Suggestion:
        sid = str(next(self._ids))
        self._issued[sid] = text
        while len(self._issued) > ISSUED_SIZE:
            self._issued.popitem(last=False)
        return Suggestion(sid, text)

    # -- completion ---------------------------------------------------------------------------
    def arrive(self, uri: str) -> Arrival | None:
        """Registers a request the moment it is read, before any queued handler runs.

        The request then answers for the document as it was when the client sent it: if an edit
        arrives before the request is served, the request is superseded (answered empty).
        """
        doc = self.docs.get(uri)
        if doc is None:
            return None
        t0 = self._clock()
        seq = self._seq[uri] = self._seq.get(uri, 0) + 1
        return Arrival(doc.version, seq, t0, self._note_gap(uri, t0))

    async def complete(
        self,
        uri: str,
        line: int,
        character: int,
        encoding: Encoding,
        arrival: Arrival | None = None,
    ) -> Suggestion | None:
        """The suggestion at an LSP position, or None; raises CancelledError if cancelled."""
        arrival = arrival or self.arrive(uri)
        doc = self.docs.get(uri)
        if doc is None or arrival is None:
            return None
        pos = doc.position(line, character, encoding)
        if pos is None or not self._serving(doc):
            return None
        self.stats.requests += 1
        if not self._current(doc, arrival.version, arrival.seq):
            self.stats.cancelled += 1  # an edit or a newer request came in before this was served
            text = ""
        else:
            text = await self._answer(doc, pos, arrival)
        self.stats.record_answer((self._clock() - arrival.t0) * 1000, text)
        return self._issue(text) if text else None

    def _serving(self, doc: Document) -> bool:
        o = self.options
        return o.enabled and o.language_enabled(doc.language_id) and self.worker.state == "ready"

    async def _answer(self, doc: Document, pos: tuple[int, int], arrival: Arrival) -> str:
        uri, version, seq, t0 = doc.uri, arrival.version, arrival.seq, arrival.t0
        prefix, suffix = doc.prefix_suffix(*pos)
        rest = self._typed_through(uri, prefix, suffix)
        if rest is not None:
            self.stats.typed_through += 1
            self.stats.latency["typedThrough"].add((self._clock() - t0) * 1000)
            return rest
        rest = await self._through_live(uri, prefix, suffix)
        if rest is not None:
            if self._current(doc, version, seq):
                return rest
            self.stats.stale += 1
            return ""
        mode = self.syntax.mode(uri, doc.language_id, prefix, suffix, *pos)
        if mode == "none" or self._prompts is None:
            return ""
        context = self.syntax.context(uri, *pos)
        prompt = self._prompts.build(uri, doc.lines, pos[0], pos[1], context)
        key = (prompt.text, prompt.lead, mode, self.options.max_tokens, self.options.speculation)
        if key in self._cache and self.options.temperature == 0:
            self._cache.move_to_end(key)
            self.stats.cache_hits += 1
            text = self._cache[key]
            self._last[uri] = Anchor(prefix, suffix, text)
            return text
        delay = self._debounce_s(arrival.gap_ms)
        if delay > 0:
            await asyncio.sleep(delay)
        if not self._current(doc, version, seq):
            self.stats.cancelled += 1
            return ""
        stop = after_lead(self.syntax.stop_callback(uri, *pos, mode), prompt.lead)
        live = self._start(doc, prompt.text, stop, Anchor(prefix, suffix, ""), pos, mode)
        live.lead = prompt.lead
        result = await self._wait(live.job)
        if result is None:
            return ""
        text = self._settle(doc, live, result)
        if self.options.temperature == 0:
            self._cache_put(key, text)
        if not self._current(doc, version, seq):
            self.stats.stale += 1
            return ""
        return text

    def _current(self, doc: Document, version: int, seq: int) -> bool:
        live_doc = self.docs.get(doc.uri)
        return live_doc is doc and doc.version == version and self._seq.get(doc.uri) == seq

    def _typed_through(self, uri: str, prefix: str, suffix: str) -> str | None:
        anchor = self._last.get(uri)
        if anchor is None:
            return None
        typed_rest = anchor.rest_after(prefix, suffix)
        return None if typed_rest is None else typed_rest[1]

    async def _through_live(self, uri: str, prefix: str, suffix: str) -> str | None:
        """Waits for the live generation when the typed text matches what it has streamed."""
        live = self._live.get(uri)
        if live is None or live.job.future.done():
            return None
        a = live.anchor
        if suffix != a.suffix or not prefix.startswith(a.prefix):
            return None
        typed, streamed = prefix[len(a.prefix) :], live.streamed
        if streamed is None or not streamed.startswith(typed) or len(streamed) <= len(typed):
            return None
        result = await self._wait(live.job, owner=False)
        if result is None:
            return None
        self._settle(self.docs.get(uri), live, result)
        typed_rest = a.rest_after(prefix, suffix)
        if typed_rest is None:
            return None
        self.stats.typed_through += 1
        return typed_rest[1]

    def _start(
        self,
        doc: Document,
        prompt: str,
        stop: StopFn | None,
        anchor: Anchor,
        pos: tuple[int, int],
        mode: str,
    ) -> _Live:
        old = self._live.pop(doc.uri, None)
        if old is not None:
            old.job.cancel()  # supersede: the engine stops within one decode step
        o = self.options
        request = GenerationRequest(
            prompt=prompt,
            doc_id=doc.uri,
            max_new_tokens=o.max_tokens,
            temperature=o.temperature,
            stop_callback=stop,
            cancel=CancelToken(),
            method=None if o.speculation == "auto" else o.speculation,  # type: ignore[arg-type]
            reuse_kv=o.kv_reuse,
        )
        job = Job(request, asyncio.get_running_loop().create_future())
        live = self._live[doc.uri] = _Live(job, anchor, doc.version, pos, mode)
        job.future.add_done_callback(lambda _: self._record(job))
        self.worker.submit(job)
        return live

    def _record(self, job: Job) -> None:
        """Counts a finished generation once, whether or not anyone still waits for it."""
        if job.future.cancelled() or job.future.exception() is not None:
            return
        self.stats.record_generation(job.future.result().stats, job.queue_ms)
        if (stop_ms := job.stop_ms) is not None:
            self.stats.latency["stop"].add(stop_ms)

    async def _wait(self, job: Job, owner: bool = True) -> GenerationResult | None:
        """The job's result (None if cancelled or failed); records its stats once."""
        if not owner:
            job.waiters += 1
        try:
            result = await asyncio.shield(job.future)
        except asyncio.CancelledError:
            job.waiters -= 1
            if job.waiters <= 0:
                job.cancel()
            self.stats.cancelled += 1
            raise
        except Exception:
            return None
        if result.cancelled:
            if owner:
                self.stats.cancelled += 1
            return None
        return result

    def _settle(self, doc: Document | None, live: _Live, result: GenerationResult) -> str:
        """Trims a finished generation at the position it was made for, once; it becomes the
        document's last suggestion (what later keystrokes can type through)."""
        if live.settled:
            return live.anchor.text
        live.settled = True
        a = live.anchor
        raw = unlead(result.text, live.lead)  # the text for the cursor, after the typed lead
        if not raw or doc is None:
            text = None
        elif doc.version == live.version and self.docs.get(doc.uri) is doc:
            text = self.syntax.trim(doc.uri, *live.pos, raw, live.mode)
        else:
            text = self.syntax.trim_text(doc.language_id, a.prefix, a.suffix, raw)
        a.text = text or ""
        uri = live.job.request.doc_id or ""
        if self._live.get(uri) is live:
            del self._live[uri]
        if a.text and doc is not None:
            self._last[uri] = a
        return a.text

    def _cache_put(self, key: tuple[object, ...], text: str) -> None:
        self._cache[key] = text
        self._cache.move_to_end(key)
        while len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)

    # -- debounce -----------------------------------------------------------------------------
    def _note_gap(self, uri: str, now: float) -> float | None:
        last = self._last_request_at.get(uri)
        self._last_request_at[uri] = now
        if last is None:
            return None
        gap = (now - last) * 1000
        ema = self._gap_ema.get(uri)
        self._gap_ema[uri] = gap if ema is None else 0.7 * ema + 0.3 * gap
        return gap

    def _debounce_s(self, gap_ms: float | None) -> float:
        """Configured, or adaptive: wait only while the user types faster than the model answers.

        A request that comes after a pause longer than a model call goes at once. While requests
        come faster than that, wait half the typical gap between them (at most half a model call,
        and 100 ms), so a burst of keystrokes starts one generation instead of many.
        """
        if self.options.debounce_ms > 0:
            return self.options.debounce_ms / 1000
        model_ms = self.stats.model_ms_ema
        if gap_ms is None or model_ms is None or gap_ms >= model_ms:
            return 0.0
        return min(0.5 * gap_ms, 0.5 * model_ms, MAX_ADAPTIVE_DEBOUNCE_MS) / 1000
