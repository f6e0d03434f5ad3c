"""Prefetch after a suggestion: the scripted backend in the real worker thread (no model, no LSP).

The backend answers every prompt with the same text; what matters is which requests reach it.
"""

from __future__ import annotations

import asyncio
import time

from spec_lsp.completion import CompletionService
from spec_lsp.completion.live import WARM_PREFILL_CHUNK
from spec_lsp.config import Options
from spec_lsp.engine.api import Capabilities, GenerationRequest, GenerationResult, GenerationStats
from tests.fakes import LOCAL, URI, WAIT_S, ScriptedBackend, end, service_with, type_text, until

OTHER = "file:///other.py"


async def shown(backend: ScriptedBackend, service: CompletionService) -> str:
    """Opens the document, gets its first suggestion (run freely) and returns its text."""
    backend.free_running = True
    service.did_open(URI, "python", 1, "x = ")
    row, col = end(service)
    first = await service.complete(URI, row, col, "utf-16")
    assert first is not None and first.text == "hello world"
    return first.text


async def test_the_request_after_an_accept_is_answered_by_the_prefetch_without_a_model_call() -> (
    None
):
    backend = ScriptedBackend("hello world")
    service = await service_with(backend, prefetch=True)
    text = await shown(backend, service)
    await until(lambda: service.stats.prefetched == 1, "the prefetch finished")
    assert len(backend.calls) == 2  # the suggestion, then the one after its accept
    assert backend.calls[1].prompt.endswith("x = hello world")
    type_text(service, 2, text)  # the accept
    after = await service.complete(URI, *end(service), "utf-16")
    assert after is not None and after.text == "hello world"
    assert len(backend.calls) == 2  # no model call for the request after the accept
    assert service.stats.prefetch_hits == 1 and service.stats.cache_hits == 1
    wire = service.stats_wire({})["prefetch"]
    assert wire == {"done": 1, "cancelled": 0, "hits": 1}


async def test_a_keystroke_that_is_not_the_accept_cancels_the_prefetch() -> None:
    backend = ScriptedBackend("hello world")
    service = await service_with(backend, prefetch=True)
    await shown(backend, service)
    backend.started.clear()
    backend.free_running = False
    await until(lambda: len(backend.calls) == 2, "the prefetch started")
    type_text(service, 2, "q")  # not the accept
    prefetch = backend.calls[1]
    assert prefetch.cancel is not None and prefetch.cancel.cancelled
    backend.release(1)  # one decode step: the engine returns
    await until(lambda: service.stats.prefetch_cancelled == 1, "the prefetch stopped")
    assert service.stats.prefetched == 0


async def test_accepting_while_the_prefetch_runs_waits_for_it_instead_of_starting_another() -> None:
    backend = ScriptedBackend("hello world")
    service = await service_with(backend, prefetch=True)
    text = await shown(backend, service)
    backend.free_running = False
    await until(lambda: len(backend.calls) == 2, "the prefetch started")
    type_text(service, 2, text)  # the accept, before the prefetch has finished
    pending = asyncio.ensure_future(service.complete(URI, *end(service), "utf-16"))
    backend.free_running = True
    backend.release(100)
    after = await asyncio.wait_for(pending, WAIT_S)
    assert after is not None and after.text == "hello world"
    assert len(backend.calls) == 2 and service.stats.prefetch_hits == 1


async def test_a_request_for_another_document_preempts_the_prefetch() -> None:
    backend = ScriptedBackend("hello world")
    service = await service_with(backend, prefetch=True)
    await shown(backend, service)
    backend.free_running = False
    await until(lambda: len(backend.calls) == 2, "the prefetch started")
    service.did_open(OTHER, "python", 1, "y = ")
    pending = asyncio.ensure_future(service.complete(OTHER, 0, 4, "utf-16"))
    await asyncio.sleep(0)
    prefetch = backend.calls[1]
    assert prefetch.cancel is not None and prefetch.cancel.cancelled
    backend.free_running = True
    backend.release(100)
    other = await asyncio.wait_for(pending, WAIT_S)
    assert other is not None and other.text == "hello world"
    assert service.stats.prefetch_cancelled == 1


async def test_prefetch_off_computes_nothing_ahead() -> None:
    backend = ScriptedBackend("hello world")
    service = await service_with(backend, prefetch=True)
    service.set_options(Options(max_tokens=32, prefetch=False))
    await shown(backend, service)
    await asyncio.sleep(0.05)
    assert len(backend.calls) == 1 and service.stats.prefetched == 0


async def drain(service: CompletionService) -> None:
    """Stops the document's prefetches and the worker once its queued jobs are done, while the
    event loop still runs to take their results."""
    service.did_close(URI)
    service.worker.stop()
    await asyncio.to_thread(service.worker.join, WAIT_S)


async def test_accepting_a_word_of_the_suggestion_keeps_its_prefetch_running() -> None:
    """A partial accept (a word or a line) is on the way to the document the prefetch is for: the
    prefetch goes on, the rest of the suggestion is answered typed-through without starting the
    same prefetch again, and the full accept is answered by the one prefetch."""
    backend = ScriptedBackend("hello world")
    service = await service_with(backend, prefetch=True)
    await shown(backend, service)
    backend.free_running = False  # the prefetch (started next) advances only when released
    await until(lambda: len(backend.calls) == 2, "the prefetch started")
    prefetch = backend.calls[1]
    type_text(service, 2, "hello ")  # accept a word
    rest = await service.complete(URI, *end(service), "utf-16")
    assert rest is not None and rest.text == "world"
    assert prefetch.cancel is not None and not prefetch.cancel.cancelled
    type_text(service, 3, "world")  # the rest
    backend.free_running = True
    backend.release(100)
    after = await asyncio.wait_for(service.complete(URI, *end(service), "utf-16"), WAIT_S)
    assert after is not None and after.text == "hello world"
    assert len(backend.calls) == 2  # the suggestion and its one prefetch
    assert service.stats.prefetch_cancelled == 0 and service.stats.prefetch_hits == 1
    await drain(service)


async def test_a_prefetch_prefills_in_short_passes() -> None:
    backend = ScriptedBackend("hello world")
    service = await service_with(backend, prefetch=True)
    await shown(backend, service)
    await until(lambda: service.stats.prefetched == 1, "the prefetch finished")
    request, prefetch = backend.calls
    assert request.prefill_chunk is None  # the engine's own chunk
    assert prefetch.prefill_chunk is not None and prefetch.prefill_chunk <= 8
    await drain(service)


# -- warming a document up on open ------------------------------------------------------------


class WarmBackend(ScriptedBackend):
    """Warm-ups (prefills only) block until cancelled, or raise; the rest as ScriptedBackend."""

    capabilities = LOCAL  # warm-ups run only on a backend that declares them

    def __init__(self, text: str, warm: str = "block") -> None:
        super().__init__(text)
        self.warm, self.warm_cancelled = warm, []

    def generate(self, request: GenerationRequest) -> GenerationResult:
        if request.prefill_chunk != WARM_PREFILL_CHUNK:
            return super().generate(request)
        self.warmups.append(request)
        if self.warm == "raise":
            raise RuntimeError("a warm-up failed")
        cancel = request.cancel
        for _ in range(int(WAIT_S / 0.005)):
            if cancel is not None and cancel.cancelled:
                self.warm_cancelled.append(request.doc_id)
                stats = GenerationStats(prefilled_tokens=32, stop_reason="cancelled")
                return GenerationResult("", stats=stats)
            time.sleep(0.005)
        return GenerationResult("", stats=GenerationStats(stop_reason="max_tokens"))


async def test_opening_a_document_prefills_the_start_of_its_prompts_and_its_request_supersedes_it() -> (
    None
):
    backend = WarmBackend("pass")
    backend.free_running = True
    service = await service_with(backend, prefetch=True)
    service.did_open(URI, "python", 1, "import os\n\ndef f(x):\n    return x\n\ny = ")
    await until(lambda: len(backend.warmups) == 1, "the warm-up started")
    warm = backend.warmups[0]
    assert warm.doc_id == URI and warm.max_new_tokens == 1
    answer = await service.complete(URI, 2, 9, "utf-16")  # after "def f(x):"
    assert answer is not None and answer.text == "pass"
    assert backend.warm_cancelled == [URI]  # the request superseded it
    # The warm-up's prompt begins with the request's: its KV is the request's prompt's start.
    assert warm.prompt.startswith(backend.calls[0].prompt)
    assert service.stats.generated == 1  # a warm-up is no request's generation
    await until(lambda: service.stats.warmed_tokens == 32, "the warm-up's prefill counted")
    assert service.stats.to_wire({})["warmUp"] == {"started": 1, "prefilledTokens": 32}
    await drain(service)


async def test_a_request_for_another_document_cancels_a_warm_up() -> None:
    backend = WarmBackend("pass")
    backend.free_running = True
    service = await service_with(backend, prefetch=True)
    service.did_open(OTHER, "python", 1, "a = ")
    await until(lambda: len(backend.warmups) == 1, "the first warm-up started")
    service.did_open(URI, "python", 1, "x = 1\ny = ")  # the file opened last is warmed
    await until(lambda: backend.warm_cancelled == [OTHER], "the first warm-up was replaced")
    await until(lambda: len(backend.warmups) == 2, "the second warm-up started")
    answer = await service.complete(OTHER, 0, 4, "utf-16")
    assert answer is not None and answer.text == "pass"
    assert backend.warm_cancelled == [OTHER, URI]
    await drain(service)


async def test_a_failed_warm_up_leaves_the_requests_alone() -> None:
    backend = WarmBackend("pass", warm="raise")
    backend.free_running = True
    service = await service_with(backend, prefetch=True)
    service.did_open(URI, "python", 1, "x = ")
    await until(lambda: len(backend.warmups) == 1, "the warm-up ran")
    answer = await service.complete(URI, *end(service), "utf-16")
    assert answer is not None and answer.text == "pass"
    await drain(service)


async def test_a_backend_that_does_not_cancel_cheaply_gets_no_warm_up() -> None:
    backend = WarmBackend("pass")
    backend.capabilities = Capabilities()  # a remote engine (it warms its own way)
    backend.free_running = True
    service = await service_with(backend, prefetch=True)
    service.did_open(URI, "python", 1, "x = ")
    answer = await service.complete(URI, *end(service), "utf-16")
    assert answer is not None and backend.warmups == []
    await drain(service)
