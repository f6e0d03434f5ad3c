"""A draft model left aside for a cold prompt is caught up on idle time after the prefetch.

The engine leaves a draft whose KV lags the prompt aside when prefilling it would delay the answer
more than drafting saves, and says so in `GenerationStats.draft_lag`; a prefetch is no longer idle
work that catches it up (the request after an accept waits for it). The scripted backend in the
real worker thread reports a lag for its generations; what matters is which requests reach it.
"""

from __future__ import annotations

import asyncio

from spec_lsp.completion import CompletionService
from spec_lsp.completion.live import WARM_PREFILL_CHUNK
from spec_lsp.engine.api import Capabilities, GenerationRequest, GenerationResult
from tests.fakes import LOCAL, URI, WAIT_S, ScriptedBackend, end, service_with, until


class LaggingBackend(ScriptedBackend):
    """Every generation but a warm job reports a draft KV `lag` tokens behind its prompt."""

    capabilities = LOCAL

    def __init__(self, text: str, lag: int) -> None:
        super().__init__(text)
        self.lag = lag
        self.free_running = True

    def generate(self, request: GenerationRequest) -> GenerationResult:
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


async def drain(service: CompletionService) -> None:
    service.did_close(URI)
    service.worker.stop()
    await asyncio.to_thread(service.worker.join, WAIT_S)


async def test_a_lagging_draft_is_caught_up_over_the_prefetchs_prompt_once_it_ends() -> None:
    backend = LaggingBackend("hello world", lag=500)
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


async def test_no_catch_up_when_the_draft_kept_up() -> None:
    backend = LaggingBackend("hello world", lag=0)
    service = await service_with(backend, prefetch=True)
    await first_suggestion(service)
    await until(lambda: service.stats.prefetched == 1, "the prefetch finished")
    await asyncio.sleep(0.05)
    assert catch_ups(backend) == []
    await drain(service)


async def test_no_catch_up_on_a_backend_without_warm_ups() -> None:
    backend = LaggingBackend("hello world", lag=500)
    backend.capabilities = Capabilities(cheap_cancel=True, warm_up=False)
    service = await service_with(backend, prefetch=True)
    await first_suggestion(service)
    await until(lambda: service.stats.prefetched == 1, "the prefetch finished")
    await asyncio.sleep(0.05)
    assert catch_ups(backend) == []
    await drain(service)
