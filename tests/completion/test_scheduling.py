"""Scheduling properties with a scripted backend in the real worker thread (no model, no LSP).

The backend (tests/fakes.py) emits one character per step and waits for the test to release each
step, so every interleaving below is forced by events, not by timing.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from spec_lsp.completion import CompletionService
from spec_lsp.completion import service as service_module
from spec_lsp.completion.arrivals import debounce_s
from spec_lsp.engine.api import GenerationRequest
from spec_lsp.worker import InferenceWorker, Job
from tests.fakes import (
    URI,
    WAIT_S,
    CheapCancelBackend,
    ScriptedBackend,
    end,
    service_with,
    streamed,
    type_text,
    wait_event,
)


async def test_a_newer_request_cancels_the_running_generation_of_the_same_document() -> None:
    backend = ScriptedBackend(" hello world")
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
    assert second is not None and second.text == " hello world"  # after "x = q": no lead
    assert backend.calls[0].cancel is not None and backend.calls[0].cancel.cancelled
    assert service.stats.cancelled == 1 and service.stats.generated == 2
    assert service.stats.latency["stop"].summary()["n"] == 1


async def test_typing_through_the_last_suggestion_needs_no_model_call() -> None:
    backend = ScriptedBackend(" hello world")
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
    backend = ScriptedBackend(" hello world")
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
    backend = ScriptedBackend(" pass")
    backend.free_running = True
    service = await service_with(backend)
    service.did_open(URI, "python", 1, "a = \nb = ")
    await service.complete(URI, 0, 4, "utf-16")
    await service.complete(URI, 1, 4, "utf-16")
    again = await service.complete(URI, 0, 4, "utf-16")
    assert again is not None and again.text == "pass"
    assert len(backend.calls) == 2 and service.stats.cache_hits == 1


async def test_an_edit_that_does_not_type_through_makes_the_result_stale() -> None:
    backend = ScriptedBackend(" hello world")
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
    for backend, waits in ((ScriptedBackend(" pass"), True), (CheapCancelBackend("pass"), False)):
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
