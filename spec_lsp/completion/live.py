"""The running generation: at most one per document, superseded by the next, settled once.

This module owns starting a generation in the inference worker (cancelling the document's older
one: the engine stops within one decode step), waiting for it (shared by the request that started
it and any request that types through what it streams), stopping it as soon as an edit leaves
what it streams, and settling its text once, with the rules of the request that started it. It
knows nothing of what a prompt contains, of the syntax layer's rules (a `Cut` stands for them),
of documents or of LSP.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal

from spec_lsp.completion.reuse import Anchor
from spec_lsp.completion.syntax_port import Cut
from spec_lsp.config import Options
from spec_lsp.engine.api import CancelToken, GenerationRequest, GenerationResult, as_method
from spec_lsp.stats import ServerStats
from spec_lsp.worker import Job
from spec_lsp.worker_lane import WorkerPort

log = logging.getLogger(__name__)


class GenerationFailed(Exception):
    """An exception inside the engine's generation; the request that waited answers an error."""


# What a generation is for: a request's suggestion, an alternative to it (another first token,
# `anticipate.alternatives`), the suggestion after an accept computed ahead (`prefetch.py`), or a
# prefill of a document's KV with no suggestion (`anticipate.warm_up`, `_catch_up`).
Kind = Literal["request", "alternative", "prefetch", "warm"]

# A prefetch prefills in passes of this many tokens (~40-55 ms each for the bundled target on a
# 2-core CPU, against ~0.6 s for the engine's 128-token chunk): a real request cancelling it waits
# one such pass at most.
PREFETCH_PREFILL_CHUNK = 8
# A warm-up prefills in passes of this many tokens: a request for its document needs that prefix
# too (the pass is not lost), and one for another document cancels it at the next pass.
WARM_PREFILL_CHUNK = 32


@dataclass(frozen=True)
class KindRule:
    """What a kind of generation sets in its request, and whether it is a request's."""

    prefill_chunk: int | None  # tokens per prefill pass; None: the engine's chunk
    max_tokens: int | None  # a cap on what it generates; None: the request's rules' or options'
    idle: bool  # idle work: the engine may drop it for any request
    ahead: bool  # computed ahead of any request: not counted as a request's generation


KINDS: dict[Kind, KindRule] = {
    "request": KindRule(prefill_chunk=None, max_tokens=None, idle=False, ahead=False),
    "alternative": KindRule(prefill_chunk=None, max_tokens=None, idle=False, ahead=False),
    # waited for by the request after an accept: not idle work
    "prefetch": KindRule(PREFETCH_PREFILL_CHUNK, max_tokens=None, idle=False, ahead=True),
    "warm": KindRule(WARM_PREFILL_CHUNK, max_tokens=1, idle=True, ahead=True),
}


@dataclass
class Live:
    """A document's generation, and what is needed to settle its text."""

    uri: str
    job: Job
    cut: Cut  # the rules of the request that started it
    anchor: Anchor  # its text is filled in when settled
    settled: bool = False
    kind: Kind = "request"
    # A document text at which the generation stays useful though not typed through (a prefetch:
    # the suggestion it was made for accepted in part, on the way to the whole).
    keep: Callable[[str], bool] | None = None
    # Who waits for it (`Generations.waiting`): its owner, who started it, from the start.
    waiters: int = 1

    @property
    def ahead(self) -> bool:
        """Computed ahead of any request (a prefetch or a warm-up): no request's generation."""
        return KINDS[self.kind].ahead

    @property
    def streamed(self) -> str | None:
        """What the generation has streamed for the cursor (None: it does not begin with lead)."""
        return self.cut.for_cursor(self.job.streamed)

    def complete_lines(self) -> str:
        """The complete lines streamed so far, trimmed with the request's rules ("" for none):
        what a request answers before the generation ends (`Generations.wait_partial`). Last
        lines that open blocks stay: their bodies follow the accept, from the same generation."""
        raw = self.job.streamed
        streamed = self.cut.for_cursor(raw)
        if not streamed or "\n" not in streamed.lstrip("\n"):
            return ""
        # `Cut.trim` takes the model's text (with the lead), as it ends the generation with.
        return self.cut.trim(raw[: raw.rindex("\n")], growing=True) or ""


def request_for(
    uri: str,
    prompt: str,
    cut: Cut,
    options: Options,
    kind: Kind = "request",
    first_rank: int = 0,
    short: str | None = None,
) -> GenerationRequest:
    """The engine's request for a generation of `kind` (its settings from `KINDS`)."""
    rule = KINDS[kind]
    return GenerationRequest(
        prompt=prompt,
        doc_id=uri,
        max_new_tokens=rule.max_tokens or cut.max_tokens or options.max_tokens,
        temperature=options.temperature,
        stop_callback=cut.stop,
        cancel=CancelToken(),
        method=None if options.speculation == "auto" else as_method(options.speculation),
        reuse_kv=options.kv_reuse,
        first_rank=first_rank,
        prefill_chunk=rule.prefill_chunk,
        idle=rule.idle,
        short_prompt=short,
        heal=cut.heal,
    )


# Waits until `future` is done or `seconds` have passed (`Generations.timer`).
Timer = Callable[["asyncio.Future[Any]", float], Awaitable[None]]


async def loop_timer(future: asyncio.Future[Any], seconds: float) -> None:
    """The event loop's clock: returns when `future` is done or after `seconds`."""
    await asyncio.wait({future}, timeout=seconds)


class Generations:
    def __init__(self, worker: WorkerPort, stats: ServerStats, timer: Timer = loop_timer) -> None:
        self.worker = worker
        self.stats = stats
        # How `wait_partial` waits out its times; a test passes one it steps by hand.
        self.timer = timer
        self._live: dict[str, Live] = {}
        # Called with each finished generation that was answered over a short window (its
        # document's window was cold): the service fills the full window on idle time.
        self.on_short: Callable[[Live], None] | None = None

    def running(self, uri: str) -> Live | None:
        """The document's generation, if it has not finished."""
        live = self._live.get(uri)
        return None if live is None or live.job.future.done() else live

    def start(
        self,
        uri: str,
        prompt: str,
        cut: Cut,
        anchor: Anchor,
        options: Options,
        kind: Kind = "request",
        first_rank: int = 0,
        short: str | None = None,
    ) -> Live:
        """Submits a generation of `kind` for `uri`, superseding the document's older one
        (`first_rank`: the target's n-th most likely first token, for an alternative; `short`:
        the prompt over a short window, answered while the document's KV for `prompt` is
        cold)."""
        old = self._live.pop(uri, None)
        if old is not None:
            old.job.cancel()
        job = Job(
            request_for(uri, prompt, cut, options, kind, first_rank, short),
            asyncio.get_running_loop().create_future(),
        )
        live = Live(uri, job, cut, anchor, kind=kind)
        self._live[uri] = live
        job.future.add_done_callback(lambda _: self._record(live))
        self.worker.submit(job)
        return live

    def busy(self, but_warm_of: str | None = None) -> bool:
        """Whether any document's generation is queued or running, other than a warm job of
        document `but_warm_of` (idle work that the document's next generation supersedes)."""
        return any(
            not live.job.future.done() and not (live.kind == "warm" and live.uri == but_warm_of)
            for live in self._live.values()
        )

    def stop_unless_typed_through(self, uri: str, text: str) -> None:
        """Cancels the running generation at once when the document `text` is no longer its
        anchor with a start of what it streamed typed in."""
        live = self.running(uri)
        if live is None:
            return
        if live.keep is not None and live.keep(text):
            return
        streamed = live.streamed
        if streamed is None or live.anchor.rest_in(streamed, text) is None:
            live.job.cancel()

    def close(self, uri: str) -> None:
        live = self._live.pop(uri, None)
        if live is not None:
            live.job.cancel()

    def counts(self) -> tuple[int, int]:
        """(running, streaming): requests' generations started and not finished, and those
        with text (a prefetch is no request's)."""
        jobs = [
            live.job
            for live in self._live.values()
            if not live.job.future.done() and not live.ahead
        ]
        return sum(1 for j in jobs if j.started), sum(1 for j in jobs if j.streamed)

    @asynccontextmanager
    async def waiting(self, live: Live, owner: bool = True) -> AsyncIterator[None]:
        """One waiter on `live` for the block: one who joins it (not its `owner`, who is counted
        from the start) counts itself in, and every waiter counts itself out when it leaves. A
        waiter cancelled inside the block cancels the job once no one else waits for it."""
        if not owner:
            live.waiters += 1
        cancelled = False
        try:
            yield
        except asyncio.CancelledError:
            cancelled = True
            raise
        finally:
            live.waiters -= 1
            if cancelled:
                if live.waiters <= 0:
                    live.job.cancel()
                self.stats.cancelled += 1

    async def wait(self, live: Live, owner: bool = True) -> GenerationResult | None:
        """The generation's result (None if cancelled, or a remote engine's failure, which the
        status reports). An exception inside generation raises `GenerationFailed`: that request
        answers with an error, the next one runs afresh. Cancelling a waiter cancels the job
        once no one else waits for it (`waiting`)."""
        async with self.waiting(live, owner):
            try:
                result = await asyncio.shield(live.job.future)
            except Exception as exc:
                raise GenerationFailed(f"generation failed: {type(exc).__name__}: {exc}") from exc
        if result.failed:  # a remote engine failed: empty, never cached
            return None
        if result.cancelled:
            if owner:
                self.stats.cancelled += 1
            return None
        return result

    async def wait_partial(
        self,
        live: Live,
        after_s: float,
        owner: bool = True,
        poll_s: float = 0.02,
        shows: Callable[[str], bool] | None = None,
    ) -> str | None:
        """Waits up to `after_s` for the generation, then until it ends or has complete lines to
        show (`shows(lines)`, when given, says whether they add anything for the waiter: a
        request that typed through the first lines waits for the next): None when it ended (the
        caller then `wait`s for its result), else those lines; the generation goes on without
        this waiter (a request typing through it joins it, an edit that leaves it or the
        document's next generation cancels it). Cancelling the waiter cancels the job once no
        one else waits for it, as `wait` does."""
        future = live.job.future
        async with self.waiting(live, owner):
            await self.timer(future, after_s)
            while not future.done():
                lines = live.complete_lines()
                if lines and (shows is None or shows(lines)):
                    return lines
                await self.timer(future, poll_s)
        return None

    def settle(self, live: Live, result: GenerationResult) -> bool:
        """Trims a finished generation with its request's rules, once; False if it was already.
        The text lands in `live.anchor.text` ("" when there is nothing to show)."""
        if live.settled:
            return False
        live.settled = True
        capped = result.stats.stop_reason == "max_tokens"
        live.anchor.text = live.cut.trim(result.text, capped=capped) or ""
        if self._live.get(live.uri) is live:
            del self._live[live.uri]
        return True

    def _record(self, live: Live) -> None:
        """Counts a finished generation once, whether or not anyone still waits for it; a
        prefetch is no request's generation (`ServerStats.prefetched` counts it)."""
        job = live.job
        if job.future.cancelled() or job.future.exception() is not None:
            return
        if log.isEnabledFor(logging.DEBUG):
            s = job.future.result().stats
            log.debug(
                "%s %s: queued %.0f ms, prompt %d tokens (%d reused, %d prefilled in %.0f ms), "
                "%d generated, %.0f ms in all, %s; %s: %d of %d drafted accepted, %d gated "
                "rounds, draft KV %d behind; %d target passes (%d prefill), %d draft passes, "
                "%.0f ms drafting, %.0f ms verifying",
                live.kind,
                live.uri.rsplit("/", 1)[-1],
                job.queue_ms,
                s.prompt_tokens,
                s.reused_tokens,
                s.prefilled_tokens,
                s.prefill_ms,
                s.generated_tokens,
                s.total_ms,
                s.stop_reason,
                s.method,
                s.accepted_tokens,
                s.proposed_tokens,
                s.gated_rounds,
                s.draft_lag,
                s.target_forwards,
                s.prefill_forwards,
                s.draft_forwards,
                s.draft_ms,
                s.verify_ms,
            )
        stats = job.future.result().stats
        self.stats.note_prefill(stats)
        if stats.short_window and self.on_short is not None:
            self.on_short(live)
        if live.ahead:
            return
        self.stats.record_generation(stats, job.queue_ms)
        if (stop_ms := job.stop_ms) is not None:
            self.stats.latency["stop"].add(stop_ms)
