"""Prefetch after a suggestion: the scripted backend in the real worker thread (no model, no LSP),
then completion/prefetch.py's own parts (what an accept leads to, which keys a prefetch filled,
which prefetches a request cancels) without a worker.

The backend answers every prompt with the same text; what matters is which requests reach it.
"""

from __future__ import annotations

import asyncio
import time

from hypothesis import given
from hypothesis import strategies as st

from spec_lsp.completion import CompletionService
from spec_lsp.completion.live import WARM_PREFILL_CHUNK, Live
from spec_lsp.completion.prefetch import FILLED_SIZE, Ahead, Prefetch, after_accept
from spec_lsp.completion.reuse import Anchor
from spec_lsp.completion.syntax_port import Cut
from spec_lsp.config import Options
from spec_lsp.engine.api import (
    CancelToken,
    Capabilities,
    GenerationRequest,
    GenerationResult,
    GenerationStats,
)
from spec_lsp.stats import ServerStats
from spec_lsp.worker import Job
from tests.fakes import (
    LOCAL,
    URI,
    WAIT_S,
    KeepAll,
    ScriptedBackend,
    end,
    service_with,
    type_text,
    until,
)

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
    backend = ScriptedBackend(" hello world")
    service = await service_with(backend, prefetch=True)
    text = await shown(backend, service)
    await until(lambda: service.stats.prefetched == 1, "the prefetch finished")
    assert len(backend.calls) == 2  # the suggestion, then the one after its accept
    assert backend.calls[1].prompt.endswith("x = hello world")
    type_text(service, 2, text)  # the accept
    after = await service.complete(URI, *end(service), "utf-16")
    assert after is not None and after.text == " hello world"  # no lead after "world"
    assert len(backend.calls) == 2  # no model call for the request after the accept
    assert service.stats.prefetch_hits == 1 and service.stats.cache_hits == 1
    wire = service.stats_wire({})["prefetch"]
    assert wire == {"done": 1, "cancelled": 0, "hits": 1}


async def test_a_keystroke_that_is_not_the_accept_cancels_the_prefetch() -> None:
    backend = ScriptedBackend(" hello world")
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
    backend = ScriptedBackend(" hello world")
    service = await service_with(backend, prefetch=True)
    text = await shown(backend, service)
    backend.free_running = False
    await until(lambda: len(backend.calls) == 2, "the prefetch started")
    type_text(service, 2, text)  # the accept, before the prefetch has finished
    pending = asyncio.ensure_future(service.complete(URI, *end(service), "utf-16"))
    backend.free_running = True
    backend.release(100)
    after = await asyncio.wait_for(pending, WAIT_S)
    assert after is not None and after.text == " hello world"  # no lead after "world"
    assert len(backend.calls) == 2 and service.stats.prefetch_hits == 1


async def test_a_request_for_another_document_preempts_the_prefetch() -> None:
    backend = ScriptedBackend(" hello world")
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
    backend = ScriptedBackend(" hello world")
    service = await service_with(backend, prefetch=True)
    service.set_options(Options(max_tokens=32, prefetch=False))
    await shown(backend, service)
    assert not service.prefetch.busy(URI)  # a prefetch is scheduled before the answer returns
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
    backend = ScriptedBackend(" hello world")
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
    assert after is not None and after.text == " hello world"  # no lead after "world"
    assert len(backend.calls) == 2  # the suggestion and its one prefetch
    assert service.stats.prefetch_cancelled == 0 and service.stats.prefetch_hits == 1
    await drain(service)


async def test_a_prefetch_prefills_in_short_passes() -> None:
    backend = ScriptedBackend(" hello world")
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


async def test_opening_a_document_prefills_its_prompts_start_and_its_request_supersedes_it() -> (
    None
):
    backend = WarmBackend("pass")
    backend.free_running = True
    service = await service_with(backend, prefetch=True)
    service.did_open(URI, "python", 1, "import os\n\ndef f(x):\n    return x\n\ny = ")
    await until(lambda: len(backend.warmups) == 1, "the warm-up started")
    warm = backend.warmups[0]
    assert warm.doc_id == URI and warm.max_new_tokens == 1
    assert service.stats.to_wire({})["warmUp"]["running"] == 1
    answer = await service.complete(URI, 2, 9, "utf-16")  # after "def f(x):"
    assert answer is not None and answer.text == "pass"
    assert backend.warm_cancelled == [URI]  # the request superseded it
    # The warm-up's prompt begins with the request's: its KV is the request's prompt's start.
    assert warm.prompt.startswith(backend.calls[0].prompt)
    assert service.stats.generated == 1  # a warm-up is no request's generation
    await until(lambda: service.stats.warmed_tokens == 32, "the warm-up's prefill counted")
    assert service.stats.to_wire({})["warmUp"] == {
        "started": 1,
        "running": 0,
        "prefilledTokens": 32,
    }
    await drain(service)


async def test_a_request_for_another_document_cancels_a_warm_up() -> None:
    backend = WarmBackend(" pass")
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
    backend = WarmBackend(" pass", warm="raise")
    backend.free_running = True
    service = await service_with(backend, prefetch=True)
    service.did_open(URI, "python", 1, "x = ")
    await until(lambda: len(backend.warmups) == 1, "the warm-up ran")
    answer = await service.complete(URI, *end(service), "utf-16")
    assert answer is not None and answer.text == "pass"
    await drain(service)


async def test_a_backend_that_does_not_cancel_cheaply_gets_no_warm_up() -> None:
    backend = WarmBackend(" pass")
    backend.capabilities = Capabilities()  # a remote engine (it warms its own way)
    backend.free_running = True
    service = await service_with(backend, prefetch=True)
    service.did_open(URI, "python", 1, "x = ")
    answer = await service.complete(URI, *end(service), "utf-16")
    assert answer is not None and backend.warmups == []
    await drain(service)


# -- the module's own parts, without a worker ----------------------------------------------------


class Settler:
    """Stands for `Generations`: settling a prefetch's result fills its anchor."""

    def settle(self, live: Live, result: GenerationResult) -> bool:
        live.anchor.text = result.text
        return True


def ahead_for(uri: str, key: tuple[object, ...], text: str = "x = hello world\n") -> Ahead:
    loop = asyncio.get_running_loop()
    job = Job(GenerationRequest("p", cancel=CancelToken()), loop.create_future())
    live = Live(uri, job, Cut(KeepAll(), ""), Anchor("x = ", "\n"), kind="prefetch")
    return Ahead(uri, text, key, live, start=4, end=15)  # "hello world" accepted after "x = "


@given(st.text(alphabet="ab\n ", max_size=20), st.text(alphabet="cd\n ", max_size=20))
def test_after_accept_puts_the_cursor_at_the_end_of_the_accepted_suggestion(
    prefix: str, suggestion: str
) -> None:
    new_prefix, row, col = after_accept(prefix, suggestion)
    lines = new_prefix.split("\n")
    assert new_prefix == prefix + suggestion and (row, col) == (len(lines) - 1, len(lines[-1]))


async def test_a_document_is_on_the_way_to_a_prefetch_while_its_suggestion_is_typed_as_shown() -> (
    None
):
    ahead = ahead_for(URI, ("k",))
    for text in ("x = \n", "x = hel\n", "x = hello\n", "x = hello world\n"):
        assert ahead.toward(text), text
    for text in ("x = help\n", "y = hello world\n", "x = hello world!\n", "x = hello world"):
        assert not ahead.toward(text), text


async def test_a_prefetch_fills_its_key_once_and_a_failed_or_cancelled_one_fills_nothing() -> None:
    stats = ServerStats()
    prefetch = Prefetch(Settler(), stats)  # type: ignore[arg-type]
    outcomes = [("max_tokens", "hello world"), ("error", ""), ("cancelled", "hel")]
    for i, (reason, text) in enumerate(outcomes):
        ahead = ahead_for(URI, (i,))
        ahead.live.job.future.set_result(
            GenerationResult(text, stats=GenerationStats(stop_reason=reason))  # type: ignore[arg-type]
        )
        answer = await prefetch.run(ahead)
        assert answer == (text if reason == "max_tokens" else None), reason
    assert (stats.prefetched, stats.prefetch_cancelled) == (1, 1)
    assert prefetch.hit((0,)) and not prefetch.hit((0,))  # counted once per fill
    assert not prefetch.hit((1,)) and not prefetch.hit((2,)) and stats.prefetch_hits == 1


async def test_only_the_last_filled_keys_are_remembered_for_hits() -> None:
    prefetch = Prefetch(Settler(), ServerStats())  # type: ignore[arg-type]
    for i in range(FILLED_SIZE + 1):
        ahead = ahead_for(URI, (i,))
        ahead.live.job.future.set_result(GenerationResult("x", stats=GenerationStats()))
        await prefetch.run(ahead)
    assert not prefetch.hit((0,)) and prefetch.hit((FILLED_SIZE,))


async def test_a_request_cancels_every_prefetch_except_one_on_the_way_to_its_document() -> None:
    prefetch = Prefetch(Settler(), ServerStats())  # type: ignore[arg-type]
    mine, other = ahead_for(URI, ("a",)), ahead_for(OTHER, ("b",))
    running = [asyncio.ensure_future(prefetch.run(a)) for a in (mine, other)]
    await asyncio.sleep(0)
    assert prefetch.pending(URI, ("a",)) is mine.live and prefetch.pending(URI, ("b",)) is None
    prefetch.preempt(URI, "x = hel\n")  # this document, part of the suggestion typed
    assert not mine.live.job.request.cancel.cancelled  # type: ignore[union-attr]
    assert other.live.job.request.cancel.cancelled  # type: ignore[union-attr]
    prefetch.preempt(URI, "x = hex\n")  # typed otherwise: no longer on the way
    assert mine.live.job.request.cancel.cancelled  # type: ignore[union-attr]
    assert prefetch.pending(URI, ("a",)) is None
    for task in running:
        task.cancel()
    await asyncio.gather(*running, return_exceptions=True)
