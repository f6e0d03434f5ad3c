"""Scheduling properties with a scripted backend in the real worker thread (no model, no LSP).

The backend emits one character per step and waits for the test to release each step, so every
interleaving below is forced by events, not by timing.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from spec_lsp.completion import CompletionService
from spec_lsp.completion import service as service_module
from spec_lsp.completion.arrivals import debounce_s
from spec_lsp.completion.live import WARM_PREFILL_CHUNK
from spec_lsp.completion.syntax_port import SyntaxPort
from spec_lsp.config import Options
from spec_lsp.engine.api import GenerationRequest, GenerationResult, GenerationStats
from spec_lsp.worker import InferenceWorker, Job, ModelInfo

URI = "file:///doc.py"
WAIT_S = 30.0


class ScriptedBackend:
    def __init__(self, text: str) -> None:
        self.text = text
        self.calls: list[GenerationRequest] = []  # requests' and prefetches' generations
        self.warmups: list[GenerationRequest] = []
        self.started = threading.Event()
        self.step = threading.Semaphore(0)
        self.free_running = False

    def generate(self, request: GenerationRequest) -> GenerationResult:
        if request.prefill_chunk == WARM_PREFILL_CHUNK:  # a document's warm-up: a prefill only
            self.warmups.append(request)
            return GenerationResult("", stats=GenerationStats(stop_reason="max_tokens"))
        self.calls.append(request)
        self.started.set()
        out = ""
        for ch in self.text[: request.max_new_tokens]:
            if not self.free_running:
                self.step.acquire(timeout=WAIT_S)
            if request.cancel is not None and request.cancel.cancelled:
                return GenerationResult(out, stats=GenerationStats(stop_reason="cancelled"))
            out += ch
            if request.on_text is not None:
                request.on_text(ch)
        stats = GenerationStats(prompt_tokens=10, prefilled_tokens=2, stop_reason="max_tokens")
        return GenerationResult(out, stats=stats)

    def count_tokens(self, text: str) -> int:
        return len(text)

    def forget(self, doc_id: str) -> None:
        pass

    def release(self, n: int) -> None:
        for _ in range(n):
            self.step.release()


class KeepAll:
    """A cutter without rules: multi-line, never stops early, trims nothing."""

    mode = "multi"

    def stop(self, text: str) -> int | None:
        return None

    def trim(self, text: str, growing: bool = False) -> str | None:
        return text


class PlainSyntax(SyntaxPort):
    """No trimming, multi-line everywhere: the scheduler's behaviour alone."""

    def cutter(self, uri: str, row: int, col: int, prefix: str, suffix: str) -> KeepAll:  # type: ignore[override]
        return KeepAll()


async def service_with(backend: ScriptedBackend, prefetch: bool = False) -> CompletionService:
    """`prefetch`: off by default, so the calls counted here are the requests' own."""
    worker = InferenceWorker(asyncio.get_running_loop())
    worker.backend, worker.state, worker.info = backend, "ready", ModelInfo(preset="fake")
    service = CompletionService(worker, Options(max_tokens=32, prefetch=prefetch), PlainSyntax())
    service.model_ready()
    return service


async def wait_event(event: threading.Event) -> None:
    assert await asyncio.to_thread(event.wait, WAIT_S)


async def streamed(service: CompletionService, n: int) -> None:
    """Waits (bounded) until the live generation has streamed n characters."""
    for _ in range(int(WAIT_S / 0.01)):
        live = service.live.running(URI)
        if live is not None and len(live.job.streamed) >= n:
            return
        await asyncio.sleep(0.01)
    raise TimeoutError


def end(service: CompletionService) -> tuple[int, int]:
    doc = service.docs.get(URI)
    assert doc is not None
    return len(doc.lines) - 1, len(doc.lines[-1])


def type_text(service: CompletionService, version: int, text: str) -> None:
    line, col = end(service)
    service.did_change(URI, version, [((line, col, line, col), text)], "utf-16")


async def test_a_newer_request_cancels_the_running_generation_of_the_same_document() -> None:
    backend = ScriptedBackend("hello world")
    service = await service_with(backend)
    service.did_open(URI, "python", 1, "x = ")
    first = asyncio.ensure_future(service.complete(URI, *end(service), "utf-16"))
    await wait_event(backend.started)
    backend.release(2)
    await streamed(service, 2)
    type_text(service, 2, "q")  # not what the model streams: the first generation is dropped
    backend.free_running = True
    backend.release(100)
    second = await asyncio.wait_for(service.complete(URI, *end(service), "utf-16"), WAIT_S)
    assert await asyncio.wait_for(first, WAIT_S) is None
    assert second is not None and second.text == "hello world"
    assert backend.calls[0].cancel is not None and backend.calls[0].cancel.cancelled
    assert service.stats.cancelled == 1 and service.stats.generated == 2
    assert service.stats.latency["stop"].summary()["n"] == 1


async def test_typing_through_the_last_suggestion_needs_no_model_call() -> None:
    backend = ScriptedBackend("hello world")
    backend.free_running = True
    service = await service_with(backend)
    service.did_open(URI, "python", 1, "x = ")
    first = await service.complete(URI, *end(service), "utf-16")
    assert first is not None and first.text == "hello world"
    type_text(service, 2, "hel")
    again = await service.complete(URI, *end(service), "utf-16")
    assert again is not None and again.text == "lo world"
    assert len(backend.calls) == 1 and service.stats.typed_through == 1


async def test_typing_through_the_pending_suggestion_waits_for_it_instead_of_restarting() -> None:
    backend = ScriptedBackend("hello world")
    service = await service_with(backend)
    service.did_open(URI, "python", 1, "x = ")
    first = asyncio.ensure_future(service.complete(URI, *end(service), "utf-16"))
    await wait_event(backend.started)
    backend.release(4)
    await streamed(service, 4)
    type_text(service, 2, "he")  # matches what is streamed: the generation goes on
    second = asyncio.ensure_future(service.complete(URI, *end(service), "utf-16"))
    backend.free_running = True
    backend.release(100)
    assert await asyncio.wait_for(first, WAIT_S) is None  # for an outdated version
    result = await asyncio.wait_for(second, WAIT_S)
    assert result is not None and result.text == "llo world"
    assert len(backend.calls) == 1
    assert service.stats.typed_through == 1 and service.stats.cancelled == 0


async def test_revisiting_a_position_is_answered_from_the_cache() -> None:
    backend = ScriptedBackend("pass")
    backend.free_running = True
    service = await service_with(backend)
    service.did_open(URI, "python", 1, "a = \nb = ")
    await service.complete(URI, 0, 4, "utf-16")
    await service.complete(URI, 1, 4, "utf-16")
    again = await service.complete(URI, 0, 4, "utf-16")
    assert again is not None and again.text == "pass"
    assert len(backend.calls) == 2 and service.stats.cache_hits == 1


async def test_an_edit_that_does_not_type_through_makes_the_result_stale() -> None:
    backend = ScriptedBackend("hello world")
    service = await service_with(backend)
    service.did_open(URI, "python", 1, "x = ")
    pending = asyncio.ensure_future(service.complete(URI, *end(service), "utf-16"))
    await wait_event(backend.started)
    service.did_change(URI, 2, [((0, 0, 0, 0), "# note\n")], "utf-16")
    backend.free_running = True
    backend.release(100)
    assert await asyncio.wait_for(pending, WAIT_S) is None
    assert service.stats.answered == 0


def test_debounce_waits_only_while_requests_come_faster_than_the_model() -> None:
    assert debounce_s(50.0, 0, None) == 0.0  # no model latency measured yet
    assert debounce_s(None, 0, 200.0) == 0.0
    assert debounce_s(300.0, 0, 200.0) == 0.0
    assert 0 < debounce_s(60.0, 0, 200.0) <= 0.1
    assert debounce_s(None, 250, 200.0) == 0.25
    # A backend that stops a superseded generation within a step (the local engine): no wait,
    # unless one is configured.
    assert debounce_s(60.0, 0, 200.0, cheap_cancel=True) == 0.0
    assert debounce_s(60.0, 250, 200.0, cheap_cancel=True) == 0.25


class CheapCancelBackend(ScriptedBackend):
    cheap_cancel = True  # as the local engine: superseding a generation costs one step


async def test_a_backend_that_cancels_cheaply_starts_a_keystroke_request_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[float] = []
    real = service_module.debounce_s

    def recorded(*args: object, **kwargs: object) -> float:
        delay = real(*args, **kwargs)  # type: ignore[arg-type]
        seen.append(delay)
        return delay

    monkeypatch.setattr(service_module, "debounce_s", recorded)
    for backend, waits in ((ScriptedBackend("pass"), True), (CheapCancelBackend("pass"), False)):
        backend.free_running = True
        service = await service_with(backend)
        service.stats.model_ms_ema = 10_000.0  # a slow model: typing is faster than it answers
        service.did_open(URI, "python", 1, "x = ")
        await service.complete(URI, *end(service), "utf-16")  # the document's first request
        type_text(service, 2, "1")
        await service.complete(URI, *end(service), "utf-16")  # a keystroke right after it
        assert seen[-2] == 0.0 and (seen[-1] > 0.0) == waits, (type(backend).__name__, seen)


# -- the cursor after indentation on an empty line -------------------------------------------------


def applied(service: CompletionService, row: int, col: int, text: str) -> str:
    """The document's text once `text` is inserted at (row, col), as the client would."""
    doc = service.docs.get(URI)
    assert doc is not None
    lines = list(doc.lines)
    lines[row] = lines[row][:col] + text + lines[row][col:]
    return "\n".join(lines)


async def test_after_indentation_the_prompt_ends_before_its_last_space_and_it_is_not_repeated() -> (
    None
):
    # A BPE model continues "def f(x):\n   " with " return x" (the space belongs to the word).
    backend = ScriptedBackend(" return x")
    backend.free_running = True
    service = await service_with(backend)
    service.did_open(URI, "python", 1, "def f(x):\n    ")
    suggestion = await service.complete(URI, 1, 4, "utf-16")
    assert backend.calls[0].prompt == "def f(x):\n   "
    assert suggestion is not None and suggestion.text == "return x"
    assert applied(service, 1, 4, suggestion.text) == "def f(x):\n    return x"


async def test_deeper_indentation_from_the_model_keeps_only_what_was_not_typed() -> None:
    backend = ScriptedBackend("     return x")  # the model indents one level deeper
    backend.free_running = True
    service = await service_with(backend)
    service.did_open(URI, "python", 1, "if a:\n    ")
    suggestion = await service.complete(URI, 1, 4, "utf-16")
    assert suggestion is not None
    assert applied(service, 1, 4, suggestion.text) == "if a:\n        return x"


async def test_a_completion_that_does_not_begin_with_the_typed_indentation_is_dropped_at_once() -> (
    None
):
    backend = ScriptedBackend("\nprint(x)\nprint(y)")  # would leave a line of blanks behind
    backend.free_running = True
    service = await service_with(backend)
    service.did_open(URI, "python", 1, "def f(x):\n    ")
    assert await service.complete(URI, 1, 4, "utf-16") is None
    assert service.stats.generated == 1
    # the stop callback ended the generation on its first character
    stop = backend.calls[0].stop_callback
    assert stop is not None and stop("\n") == 0


async def test_typing_through_a_suggestion_made_after_indentation() -> None:
    backend = ScriptedBackend(" return x")
    backend.free_running = True
    service = await service_with(backend)
    service.did_open(URI, "python", 1, "def f(x):\n    ")
    first = await service.complete(URI, 1, 4, "utf-16")
    assert first is not None and first.text == "return x"
    type_text(service, 2, "re")
    again = await service.complete(URI, *end(service), "utf-16")
    assert again is not None and again.text == "turn x"
    assert len(backend.calls) == 1 and service.stats.typed_through == 1


async def test_typing_through_the_pending_generation_after_indentation() -> None:
    backend = ScriptedBackend(" return x")
    service = await service_with(backend)
    service.did_open(URI, "python", 1, "def f(x):\n    ")
    first = asyncio.ensure_future(service.complete(URI, 1, 4, "utf-16"))
    await wait_event(backend.started)
    backend.release(4)
    await streamed(service, 4)  # " ret": "ret" for the cursor
    type_text(service, 2, "re")  # types through it: the generation goes on
    second = asyncio.ensure_future(service.complete(URI, *end(service), "utf-16"))
    backend.free_running = True
    backend.release(100)
    assert await asyncio.wait_for(first, WAIT_S) is None  # for an outdated version
    result = await asyncio.wait_for(second, WAIT_S)
    assert result is not None and result.text == "turn x"
    assert len(backend.calls) == 1 and service.stats.cancelled == 0


def test_a_job_that_ends_after_its_event_loop_closed_is_dropped_quietly() -> None:
    """A one-shot command's loop may end while the worker still runs a job: its result has no one
    to go to, and the worker thread must not die of it."""
    errors: list[BaseException] = []
    hook = threading.excepthook
    threading.excepthook = lambda args: errors.append(args.exc_value)  # type: ignore[assignment]
    try:
        loop = asyncio.new_event_loop()
        worker = InferenceWorker(loop)
        backend = ScriptedBackend("hello")  # waits for `release` at each character
        worker.backend, worker.state = backend, "ready"
        job = Job(GenerationRequest("x = "), loop.create_future())
        worker.submit(job)
        assert backend.started.wait(WAIT_S)
        loop.close()
        backend.release(100)
        worker.stop()
        worker.join(WAIT_S)
    finally:
        threading.excepthook = hook
    assert errors == []
