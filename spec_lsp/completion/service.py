"""The completion service: the per-request pipeline, from a position to a suggestion.

A request is answered from what is already known when it can be (`known.py`: typing through the
document's last suggestion or its running generation, the answer cache or a prefetch computing
the same key); else it waits out the debounce and runs the model on the request's plan
(`plan.py`: the prompt, the syntax layer's rules, the cache key, the anchor), one generation per
document, settled with the same rules. A result is shown only if the document is still at the
version and request it was computed for; otherwise it is kept as the document's last suggestion,
so the next keystroke that types through it needs no model call. What comes after an answer (the
prefetch of its accept, alternatives, warm-ups) is `anticipate.py`'s.

This module owns that order and the documents' text. It knows nothing of pygls or lsprotocol
(the server converts), of torch (the worker's backend runs it) or of tree-sitter (the syntax port
is the one door to the syntax layer).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import replace

from spec_lsp.completion.anticipate import Anticipation
from spec_lsp.completion.arrivals import Arrival, Arrivals, debounce_s
from spec_lsp.completion.feedback import Feedback, Suggestion
from spec_lsp.completion.known import Known
from spec_lsp.completion.live import Generations
from spec_lsp.completion.neighbours import Neighbours, private, shareable
from spec_lsp.completion.parts import Parts
from spec_lsp.completion.plan import Plan, Planner
from spec_lsp.completion.prefetch import Prefetch
from spec_lsp.completion.reuse import Reuse
from spec_lsp.completion.syntax_port import SyntaxPort
from spec_lsp.config import Options
from spec_lsp.documents import Document, DocumentStore, Encoding
from spec_lsp.stats import ServerStats
from spec_lsp.worker_lane import WorkerPort

IDLE_MS = 1000.0  # a request after this long without one: the user paused (chunks may change)
Change = tuple[tuple[int, int, int, int] | None, str]  # (line, char, line, char) or None: full


class CompletionService:
    def __init__(
        self,
        worker: WorkerPort,
        options: Options,
        syntax: SyntaxPort | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.worker = worker
        self.options = options
        self.docs = DocumentStore()
        self.syntax = syntax or SyntaxPort()
        self.syntax.source = self._syntax_source
        self.stats = ServerStats()
        self.arrivals = Arrivals(clock)
        self.reuse = Reuse()
        self.live = Generations(worker, self.stats)
        self.feedback = Feedback(self.stats)
        self.prefetch = Prefetch(self.live, self.stats)
        self.neighbours = Neighbours(admits=lambda uri, lang: shareable(self.options, uri, lang))
        self.planner = Planner(
            self.syntax, self.neighbours, self._tell_other_files, lambda: self.stats.prefill_rate
        )
        self.planner.configure(None, options)
        parts = Parts(
            docs=self.docs,
            reuse=self.reuse,
            live=self.live,
            prefetch=self.prefetch,
            planner=self.planner,
            feedback=self.feedback,
            neighbours=self.neighbours,
            stats=self.stats,
            options=lambda: self.options,
        )
        self.known = Known(parts)
        self.anticipation = Anticipation(
            parts, lambda doc: self._serving(doc) and self.worker.capabilities.warm_up
        )
        self._opened: str | None = None  # the document opened last
        self.live.on_short = self.anticipation.fill_window  # a cold window fills on idle
        # Each document's recent edits (next edit's input, and other documents' context in
        # completion prompts: the planner's `repo`, which also keeps the workspace symbol index).
        self.history = self.planner.repo.history
        self.planner.repo.source = self._syntax_source
        # Called with a document's uri after each of its edits, and with None when a
        # completion request arrives (next edit's work gives way to both).
        self.listeners: list[Callable[[str | None], None]] = []

    # -- documents ----------------------------------------------------------------------------
    def did_open(self, uri: str, language_id: str, version: int, text: str) -> None:
        self.docs.open(uri, language_id, version, text)
        self.syntax.open(uri, language_id, text)
        self.neighbours.note(uri, text.split("\n"), 0, language_id)
        self.planner.repo.changed(uri)
        self._opened = uri
        if self.options.prefetch and (doc := self.docs.get(uri)) is not None:
            self.anticipation.warm_up(doc)  # idle time before the first keystroke

    def did_move_cursor(
        self, uri: str, version: int | None, line: int, character: int, encoding: Encoding
    ) -> None:
        """The editor's cursor rests at (line, character) of `uri` (`spec-lsp/didMoveCursor`):
        on idle time, the prompt of a request there is prefilled (`Anticipation.warm_up`). A
        document unknown, of another version than the one named, or a position outside it:
        nothing."""
        doc = self.docs.get(uri)
        if doc is None or (version is not None and version != doc.version):
            return
        pos = doc.position(line, character, encoding)
        if pos is not None and self.options.prefetch:
            self.anticipation.warm_up(doc, pos)

    def _syntax_source(self, uri: str) -> tuple[str, str] | None:
        doc = self.docs.get(uri)
        return None if doc is None else (doc.language_id, doc.text)

    def did_change(self, uri: str, version: int, changes: list[Change], encoding: Encoding) -> bool:
        """Applies LSP content changes (positions in `encoding`); False for an unknown document."""
        doc = self.docs.get(uri)
        if doc is None:
            return False
        keep = not private(self.options, uri)  # `exclude` too: never a private file's edits
        for rng, text in changes:
            if rng is None:
                before, doc.lines = doc.lines, text.split("\n")
                self.syntax.replace(uri, text)
                if keep:
                    self.history.record_whole(uri, before, doc.lines)
                continue
            start = doc.clamp(rng[0], rng[1], encoding)
            end = doc.clamp(rng[2], rng[3], encoding)
            (r1, _), (r2, _) = sorted((start, end))
            replaced = doc.lines[r1 : r2 + 1] if keep else []  # the lines the history keeps
            doc.apply(start, end, text)
            self.syntax.apply_edit(uri, start, end, text)
            if keep:
                self.history.record(uri, replaced, r1, doc.lines, text.count("\n"))
        doc.version = version
        self.worker.touch()  # this client's work goes ahead of quieter clients'
        if changes and changes[-1][0] is not None:
            row = changes[-1][0][0]  # type: ignore[index]
            self.neighbours.note(uri, doc.lines, row, doc.language_id)
        self.planner.repo.changed(uri)  # indexed again at the next pause
        self.live.stop_unless_typed_through(uri, doc.text)
        for listener in self.listeners:
            listener(uri)
        return True

    def did_close(self, uri: str) -> None:
        self.docs.close(uri)
        self.history.forget(uri)
        self.planner.repo.saved_or_closed(uri)
        for listener in self.listeners:
            listener(uri)
        self.syntax.close(uri)
        self.prefetch.forget(uri)
        self.neighbours.forget(uri)
        self.live.close(uri)
        self.arrivals.forget(uri)
        self.reuse.forget(uri)
        self.planner.forget(uri)
        self.worker.call(lambda backend: backend.forget(uri), frees_memory=True)

    # -- model and options ----------------------------------------------------------------------
    def model_ready(self) -> None:
        """Called after a (re)load: prompts follow the new model family; the document opened
        last is warmed up (`Anticipation.warm_up`)."""
        self.planner.configure(self.worker.info, self._plan_options(self.options))
        self.reuse.clear()
        self.prefetch.clear()
        doc = self.docs.get(self._opened) if self._opened else None
        if self.options.prefetch and doc is not None:
            self.anticipation.warm_up(doc)

    def set_options(self, options: Options) -> None:
        def generation(o: Options) -> tuple[object, ...]:
            return o.max_tokens, o.temperature, o.speculation

        if generation(options) != generation(self.options):
            self.reuse.clear()
            self.prefetch.clear()
        self.options = options
        self.neighbours.refilter()  # a language turned off, a private pattern added
        loaded = self.planner.prompts is not None
        self.planner.configure(self.worker.info if loaded else None, self._plan_options(options))

    def _plan_options(self, options: Options) -> Options:
        """The options plans are made with: no short window for a backend that keeps no KV per
        document (a remote engine's prompt cache is its own), so no keystroke builds one."""
        return options if self.worker.capabilities.warm_up else replace(options, short_window=0)

    def stats_wire(self, model: dict[str, object]) -> dict[str, object]:
        out = self.stats.to_wire(model)
        out["running"], out["streaming"] = self.live.counts()
        if (b := self.worker.backend) is not None:  # a remote engine's /metrics, its warm-ups
            for key, can, figures in (
                ("engineMetrics", b.capabilities.engine_stats, b.engine_stats),
                ("remoteWarmups", b.capabilities.remote_warmups, b.warmup_stats),
            ):
                if can and (value := figures()) is not None:
                    out[key] = value
        out["documents"] = len(self.docs)
        return out

    # -- completion ---------------------------------------------------------------------------
    def arrive(self, uri: str) -> Arrival | None:
        """Registers a request the moment it is read, before any queued handler runs.

        The request then answers for the document as it was when the client sent it: if an edit
        or a newer request arrives before it is served, it is superseded (answered empty).
        """
        doc = self.docs.get(uri)
        if doc is None:
            return None
        self.worker.touch()
        self.prefetch.preempt(uri, doc.text)  # a prefetch never holds the worker from a request
        for listener in self.listeners:  # nor does next edit's work
            listener(None)
        return self.arrivals.arrive(uri, doc.version)

    async def complete(
        self,
        uri: str,
        line: int,
        character: int,
        encoding: Encoding,
        arrival: Arrival | None = None,
        invoked: bool = False,
    ) -> Suggestion | None:
        """The suggestion at an LSP position, or None; raises CancelledError if cancelled.
        `invoked`: the user asked explicitly (waits for the whole suggestion)."""
        arrival = arrival or self.arrive(uri)
        doc = self.docs.get(uri)
        if doc is None or arrival is None:
            return None
        pos = doc.position(line, character, encoding)
        if pos is None or not self._serving(doc):
            return None
        self.stats.requests += 1
        if self._current(doc, arrival):
            text = await self._answer(doc, pos, arrival, invoked)
        else:
            self.stats.cancelled += 1  # an edit or a newer request came in before this was served
            text = ""
        self.stats.record_answer(self.arrivals.since_ms(arrival), text)
        if not text:
            return None
        if self.options.prefetch and self.options.temperature == 0:
            running = self.live.running(uri)  # still generating: the text is an early answer
            early = running if running is not None and not running.ahead else None
            after = self.anticipation.prefetch_after(doc, doc.version, pos, text, early)
            prefix, suffix = doc.prefix_suffix(*pos)
            self.prefetch.schedule(uri, after, None if early else prefix + text + suffix)
        return self.feedback.issue(text)

    async def complete_all(
        self,
        uri: str,
        line: int,
        character: int,
        encoding: Encoding,
        arrival: Arrival | None = None,
        n: int = 1,
    ) -> list[Suggestion]:
        """Up to `n` distinct suggestions: `complete`'s, then (for an explicit request, n > 1)
        ones that branch on the target's next most likely first tokens, each continued as usual
        (greedy, with speculation; the prompt's KV is already there). n = 1 costs nothing more."""
        doc = self.docs.get(uri)
        version = None if doc is None else doc.version
        first = await self.complete(uri, line, character, encoding, arrival, invoked=n > 1)
        if first is None or n <= 1 or doc is None or self.docs.get(uri) is not doc:
            return [] if first is None else [first]
        pos = doc.position(line, character, encoding)
        if pos is None or doc.version != version:
            return [first]
        return [first] + await self.anticipation.alternatives(doc, pos, first.text, n)

    def _serving(self, doc: Document) -> bool:
        o = self.options
        ready = o.enabled and o.language_enabled(doc.language_id) and self.worker.state == "ready"
        return ready and not private(o, doc.uri)  # a private file's text is in no prompt

    def _current(self, doc: Document, arrival: Arrival) -> bool:
        return (
            self.docs.get(doc.uri) is doc
            and doc.version == arrival.version
            and self.arrivals.is_newest(doc.uri, arrival)
        )

    async def _answer(
        self, doc: Document, pos: tuple[int, int], arrival: Arrival, invoked: bool = False
    ) -> str:
        """Typed through what is known, else the model's answer; "" for nothing."""
        prefix, suffix = doc.prefix_suffix(*pos)
        rest = self.known.typed(doc.uri, prefix, suffix)
        if rest is not None:
            self.stats.latency["typedThrough"].add(self.arrivals.since_ms(arrival))
            return rest
        rest = await self.known.through_live(doc.uri, prefix, suffix, invoked)
        if rest is not None:
            return rest if self._current(doc, arrival) else self._stale()
        if arrival.gap_ms is None or arrival.gap_ms >= IDLE_MS:
            self.neighbours.settle(keep=doc.uri)  # other files' chunks change only on a pause
        plan = self.planner.at(doc, *pos, invoked=invoked)
        return "" if plan is None else await self._generate(doc, arrival, plan, invoked)

    async def _generate(
        self, doc: Document, arrival: Arrival, plan: Plan, invoked: bool = False
    ) -> str:
        """The answer from the cache or, after the debounce, from the model (for an automatic
        request still generating after `partial_ms`, its complete lines so far)."""
        o = self.options
        exact = o.temperature == 0
        if exact and (cached := await self.known.cached(plan)) is not None:
            return cached if self._current(doc, arrival) else self._stale()
        cheap = self.worker.capabilities.cheap_cancel
        delay = debounce_s(arrival.gap_ms, o.debounce_ms, self.stats.model_ms_ema, cheap)
        if delay > 0:
            await asyncio.sleep(delay)
        if not self._current(doc, arrival):
            self.stats.cancelled += 1
            return ""
        live = self.live.start(
            doc.uri, plan.prompt.text, plan.cut, plan.anchor(), o, short=plan.short_text
        )
        if o.partial_ms > 0 and not invoked:
            lines = await self.live.wait_partial(live, o.partial_ms / 1000)
            if lines is not None:  # the generation goes on: its whole text settles when done
                self.stats.early += 1
                live.job.future.add_done_callback(lambda _: self.known.settle_later(live, plan.key))
                return lines if self._current(doc, arrival) else self._stale()
        result = await self.live.wait(live)
        if result is None:
            return ""
        text = self.known.settle(live, result)
        if exact:
            self.reuse.cache.put(plan.key, text)
        return text if self._current(doc, arrival) else self._stale()

    def _tell_other_files(self, uri: str, files: str, kept: tuple[tuple[str, str], ...]) -> None:
        """Other files' chunks for a backend that sends them apart (llama-server's input_extra)."""
        if self.worker.capabilities.other_files:
            self.worker.call(lambda backend: backend.other_files(uri, files, kept))

    def _stale(self) -> str:
        self.stats.stale += 1
        return ""
