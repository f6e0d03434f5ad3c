"""A draft model left aside for a cold prompt is caught up on idle time after the prefetch.

The engine leaves a draft whose KV lags the prompt aside when prefilling it would delay the answer
more than drafting saves, and says so in `GenerationStats.draft_lag`; a prefetch is no longer idle
work that catches it up (the request after an accept waits for it). The scripted backend in the
real worker thread reports a lag for its generations; what matters is which requests reach it.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from spec_lsp.completion import CompletionService
from spec_lsp.completion.live import WARM_PREFILL_CHUNK
from spec_lsp.engine.api import (
    Capabilities,
    GenerationRequest,
    GenerationResult,
    GenerationStats,
)
from tests.fakes import (
    LOCAL,
    URI,
    WAIT_S,
    ScriptedBackend,
    end,
    service_with,
    type_text,
    until,
    wait_event,
)


class LaggingBackend(ScriptedBackend):
    """Every generation but a warm job reports a draft KV `lag` tokens behind its prompt."""

    capabilities = LOCAL

    def __init__(self, text: str, lag: int, block_warm: bool = False) -> None:
        super().__init__(text)
        self.lag, self.block_warm, self.warm_cancelled = lag, block_warm, 0
        self.free_running = True

    def generate(self, request: GenerationRequest) -> GenerationResult:
        if request.prefill_chunk == WARM_PREFILL_CHUNK and self.block_warm:
            self.warmups.append(request)  # a long catch-up: runs until cancelled
            for _ in range(int(WAIT_S / 0.005)):
                if request.cancel is not None and request.cancel.cancelled:
                    self.warm_cancelled += 1
                    return GenerationResult("", stats=GenerationStats(stop_reason="cancelled"))
                time.sleep(0.005)
            return GenerationResult("", stats=GenerationStats(stop_reason="max_tokens"))
        result = super().generate(request)
        if request.prefill_chunk != WARM_PREFILL_CHUNK:
            result.stats.draft_lag = self.lag
        return result


def catch_ups(backend: ScriptedBackend) -> list[GenerationRequest]:
    """The warm jobs over the prefetch's prompt (the document with the suggestion accepted)."""
    return [w for w in backend.warmups if w.prompt.endswith("x = hello world")]


async def first_suggestion(service: CompletionService) -> None:
    service.did_open(URI, "python", 1, "x = ")
    answer = await service.complete(URI, *end(service), "utf-16")
    assert answer is not None and answer.text == "hello world"


async def after_the_prefetch(service: CompletionService) -> None:
    """Returns once the prefetch's task has ended (deciding on a catch-up, and submitting it,
    is its last step) and the worker has run every job submitted before then."""
    await until(lambda: not service.prefetch.busy(URI), "the prefetch's task ended")
    ran = threading.Event()
    service.worker.call(lambda _backend: ran.set())  # behind a catch-up, were one queued
    await wait_event(ran)


async def drain(service: CompletionService) -> None:
    service.did_close(URI)
    service.worker.stop()
    await asyncio.to_thread(service.worker.join, WAIT_S)


async def test_a_lagging_draft_is_caught_up_over_the_prefetchs_prompt_once_it_ends() -> None:
    backend = LaggingBackend(" hello world", lag=500)
    service = await service_with(backend, prefetch=True)
    await first_suggestion(service)
    await until(lambda: service.stats.prefetched == 1, "the prefetch finished")
    request, prefetch = backend.calls
    assert not request.idle and not prefetch.idle  # the draft catches up in neither
    await until(lambda: catch_ups(backend) != [], "the catch-up ran after the prefetch")
    (catch_up,) = catch_ups(backend)
    assert catch_up.idle and catch_up.doc_id == URI and catch_up.max_new_tokens == 1
    assert service.stats.prefetched == 1  # the prefetch's answer was kept before it
    await drain(service)


@pytest.mark.parametrize(
    ("lag", "warm_up"),
    [(0, True), (500, False)],
    ids=["the draft kept up", "a backend without warm-ups"],
)
async def test_no_catch_up(lag: int, warm_up: bool) -> None:
    backend = LaggingBackend(" hello world", lag=lag)
    backend.capabilities = Capabilities(cheap_cancel=True, warm_up=warm_up)
    service = await service_with(backend, prefetch=True)
    await first_suggestion(service)
    await until(lambda: service.stats.prefetched == 1, "the prefetch finished")
    await after_the_prefetch(service)
    assert catch_ups(backend) == []
    await drain(service)


async def test_the_next_prefetch_supersedes_the_documents_catch_up() -> None:
    """The accept is answered by the prefetch; the prefetch after it does not wait for (or skip
    because of) the document's own catch-up: it stops it, and its answer comes first."""
    backend = LaggingBackend(" hello world", lag=500, block_warm=True)
    service = await service_with(backend, prefetch=True)
    await first_suggestion(service)
    await until(lambda: catch_ups(backend) != [], "the catch-up is running")
    type_text(service, 2, "hello world")  # the accept: the catch-up keeps running through it
    after = await service.complete(URI, *end(service), "utf-16")
    assert after is not None and after.text == " hello world"  # the prefetch's answer
    await until(lambda: len(backend.calls) == 3, "the next prefetch started")
    assert backend.calls[2].prompt.endswith("x = hello world hello world")
    await until(lambda: backend.warm_cancelled >= 1, "the catch-up was superseded")
    await drain(service)
