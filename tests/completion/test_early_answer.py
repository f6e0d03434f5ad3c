"""An automatic request whose generation runs past `partial_ms` is answered with the complete lines
streamed so far; the generation goes on, and what it adds answers the request after the accept.
Scripted backend in the real worker thread: the interleavings are forced by events."""

from __future__ import annotations

import asyncio

from spec_lsp.completion import CompletionService
from spec_lsp.completion.live import Live
from spec_lsp.completion.reuse import Anchor
from spec_lsp.completion.syntax_port import Cut
from spec_lsp.engine.api import GenerationRequest
from spec_lsp.worker import Job
from tests.fakes import (
    URI,
    WAIT_S,
    KeepAll,
    ScriptedBackend,
    StepTimer,
    end,
    service_with,
    streamed,
    type_text,
    until,
    wait_event,
)

TEXT = "a = 1\nb = 2\nc = 3"


async def answered_early() -> tuple[ScriptedBackend, CompletionService]:
    """A request answered "a = 1" early; its generation stays stuck at "a = 1\nb "."""
    backend = ScriptedBackend(TEXT)
    service = await service_with(backend, partial_ms=30)
    service.did_open(URI, "python", 1, "")
    first = asyncio.ensure_future(service.complete(URI, 0, 0, "utf-16"))
    await wait_event(backend.started)
    backend.release(8)
    answer = await asyncio.wait_for(first, WAIT_S)
    assert answer is not None and answer.text == "a = 1"
    return backend, service


async def test_a_slow_generation_answers_its_complete_lines_and_the_rest_follows_the_accept() -> (
    None
):
    backend = ScriptedBackend(TEXT)
    service = await service_with(backend, partial_ms=30)
    service.live.timer = timer = StepTimer()
    service.did_open(URI, "python", 1, "")
    first = asyncio.ensure_future(service.complete(URI, 0, 0, "utf-16"))
    await wait_event(backend.started)
    backend.release(3)  # "a =": no complete line yet, so the request waits on past partial_ms
    await streamed(service, 3)
    await timer.advance(0.1)  # past partial_ms (30 ms) with no complete line
    assert not first.done()
    backend.release(5)  # "a = 1\nb ": one complete line
    await streamed(service, 8)
    await timer.advance(0.02)  # the next look at what it streamed
    answer = await asyncio.wait_for(first, WAIT_S)
    assert answer is not None and answer.text == "a = 1"
    assert service.stats.early == 1
    live = service.live.running(URI)
    assert live is not None and not live.job.request.cancel.cancelled  # type: ignore[union-attr]
    type_text(service, 2, "a = 1\n")  # the accept (the line and its end)
    backend.free_running = True
    backend.release(100)
    rest = await asyncio.wait_for(service.complete(URI, *end(service), "utf-16"), WAIT_S)
    assert rest is not None and rest.text == "b = 2\nc = 3"
    assert len(backend.calls) == 1  # the same generation answered both


async def test_the_whole_suggestion_settles_when_the_early_answered_generation_ends() -> None:
    backend, service = await answered_early()
    live = service.live.running(URI)
    assert live is not None
    backend.free_running = True
    backend.release(100)
    await until(lambda: live.settled, "the generation ended and settled")
    # Asked again at the same place (the editor re-asks after Escape): the whole suggestion.
    again = await service.complete(URI, 0, 0, "utf-16")
    assert again is not None and again.text == TEXT
    assert len(backend.calls) == 1


async def test_an_explicit_request_and_partial_ms_0_wait_for_the_whole_suggestion() -> None:
    for partial_ms, invoked in ((30, True), (0, False)):
        backend = ScriptedBackend(TEXT)
        service = await service_with(backend, partial_ms=partial_ms)
        service.live.timer = timer = StepTimer()
        service.did_open(URI, "python", 1, "")
        first = asyncio.ensure_future(service.complete(URI, 0, 0, "utf-16", invoked=invoked))
        await wait_event(backend.started)
        backend.release(8)
        await streamed(service, 8)  # "a = 1\nb ": a complete line
        await timer.advance(0.15)  # past partial_ms, were it 30 ms
        assert not first.done()
        backend.release(100)
        answer = await asyncio.wait_for(first, WAIT_S)
        assert answer is not None and answer.text == TEXT and service.stats.early == 0


async def test_an_edit_that_leaves_the_early_answered_generation_stops_it() -> None:
    backend, service = await answered_early()
    live = service.live.running(URI)
    assert live is not None
    type_text(service, 2, "zzz")  # not the suggestion: the generation is cancelled
    assert live.job.request.cancel is not None and live.job.request.cancel.cancelled
    backend.release(100)


async def test_typing_through_a_still_running_generation_is_answered_early_too() -> None:
    backend, service = await answered_early()
    type_text(service, 2, "a")  # typed through; the generation is stuck at "a = 1\nb "
    again = await asyncio.wait_for(service.complete(URI, *end(service), "utf-16"), WAIT_S)
    assert again is not None and again.text == " = 1"
    assert service.stats.early == 2 and len(backend.calls) == 1
    backend.free_running = True
    backend.release(100)


async def test_typing_through_the_early_lines_waits_for_the_next_complete_line_only() -> None:
    backend, service = await answered_early()  # stuck at "a = 1\nb "
    service.live.timer = timer = StepTimer()
    type_text(service, 2, "a = 1\n")  # the early lines accepted: nothing of them is left
    rest = asyncio.ensure_future(service.complete(URI, *end(service), "utf-16"))
    await timer.advance(0.1)  # past partial_ms: no new complete line yet
    assert not rest.done()
    backend.release(4)  # "= 2\n": the next line is complete, the generation still runs
    await streamed(service, 12)
    await timer.advance(0.02)  # the next look at what it streamed
    answer = await asyncio.wait_for(rest, WAIT_S)
    assert answer is not None and answer.text == "b = 2"
    live = service.live.running(URI)
    assert live is not None and not live.job.future.done()
    assert service.stats.early == 2 and len(backend.calls) == 1
    backend.free_running = True
    backend.release(100)


async def test_complete_lines_are_trimmed_past_the_prompts_lead() -> None:
    """The prompt may leave out the indentation's last blank (`Prompt.lead`): the model's text
    begins with it, and the early answer is the complete lines after it."""
    loop = asyncio.get_running_loop()
    job = Job(GenerationRequest(prompt=""), loop.create_future())
    live = Live(URI, job, Cut(KeepAll(), lead=" "), Anchor("", ""))  # type: ignore[arg-type]
    job.streamed = " return x"
    assert live.complete_lines() == ""
    job.streamed = " return x\n    y"
    assert live.complete_lines() == "return x"
    job.streamed = "return x\n"  # not the lead: nothing of it is shown
    assert live.complete_lines() == ""
