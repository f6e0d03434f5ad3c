"""The editor's resting cursor (`spec-lsp/didMoveCursor`) warms the prompt a request there would
have.

A file opened deep in its text has a prompt window far from its top: warming its head up (what
opening it does) computes nothing a request there reuses. A cursor notification prefills the
request's own window instead, on idle time, superseded by the document's next generation.
"""

from __future__ import annotations

import asyncio

from spec_lsp.completion import CompletionService
from tests.completion.test_prefetch import WarmBackend
from tests.fakes import URI, service_with, until

LINES = [f"value_{i} = compute({i}, scale=2)" for i in range(600)]  # ~20,000 characters
TEXT = "\n".join(LINES) + "\n"
ROW = 500


async def opened(backend: WarmBackend) -> CompletionService:
    service = await service_with(backend, prefetch=True)
    service.did_open(URI, "python", 1, TEXT)
    await until(lambda: len(backend.warmups) == 1, "the head's warm-up started")
    return service


async def test_a_resting_cursor_prefills_the_prompt_a_request_there_sends() -> None:
    backend = WarmBackend("x")
    backend.free_running = True
    service = await opened(backend)
    head = backend.warmups[0]
    service.did_move_cursor(URI, 1, ROW, 0, "utf-16")
    await until(lambda: len(backend.warmups) == 2, "the cursor's warm-up started")
    assert backend.warm_cancelled == [URI]  # it superseded the head's
    cursor = backend.warmups[1]
    answer = await service.complete(URI, ROW, 0, "utf-16")
    assert answer is not None and answer.text == "x"
    request = backend.calls[0].prompt
    assert request == cursor.prompt  # the request's KV is all there
    assert not request.startswith(head.prompt[:200])  # the head's window is elsewhere
    assert service.stats.to_wire({})["warmUp"]["started"] == 2


async def test_typing_where_the_cursor_rested_keeps_the_warmed_window() -> None:
    backend = WarmBackend("x")
    backend.free_running = True
    service = await opened(backend)
    service.did_move_cursor(URI, 1, ROW, 0, "utf-16")
    await until(lambda: len(backend.warmups) == 2, "the cursor's warm-up started")
    service.did_change(URI, 2, [((ROW, 0, ROW, 0), "a")], "utf-16")
    answer = await service.complete(URI, ROW, 1, "utf-16")
    assert answer is not None
    assert backend.calls[0].prompt.startswith(backend.warmups[1].prompt)


async def test_cursors_that_do_not_fit_the_document_warm_nothing() -> None:
    backend = WarmBackend("x")
    backend.free_running = True
    service = await opened(backend)
    service.did_move_cursor(URI, 7, ROW, 0, "utf-16")  # another version than the server's
    service.did_move_cursor(URI, 1, 10_000, 0, "utf-16")  # past the end
    service.did_move_cursor("file:///nowhere.py", None, 0, 0, "utf-16")  # not open
    service.did_move_cursor(URI, None, ROW, 3, "utf-16")  # no version named: taken
    await until(lambda: len(backend.warmups) == 2, "the last cursor's warm-up started")
    assert backend.warmups[1].prompt.endswith(LINES[ROW][:3])


async def test_no_cursor_warm_up_while_a_request_runs_or_without_prefetch() -> None:
    backend = WarmBackend("x")
    service = await opened(backend)  # requests block until released
    task = asyncio.ensure_future(service.complete(URI, ROW, 0, "utf-16"))
    await until(lambda: len(backend.calls) == 1, "the request runs")
    service.did_move_cursor(URI, 1, ROW + 10, 0, "utf-16")
    assert len(backend.warmups) == 1
    backend.release(len(backend.text))
    await task
    plain = await service_with(WarmBackend("x"), prefetch=False)
    plain.did_open(URI, "python", 1, TEXT)
    plain.did_move_cursor(URI, 1, ROW, 0, "utf-16")
    assert plain.stats.to_wire({})["warmUp"]["started"] == 0


async def test_a_cursors_warm_up_carries_the_short_window_a_request_there_would_take() -> None:
    """The engine prefills it first where the full window is cold (`engine/cold.py`), so the
    first key there is answered over a short window whose KV is already there."""
    backend = WarmBackend("x")
    backend.free_running = True
    service = await service_with(backend, prefetch=True, short_window=64)
    service.did_open(URI, "python", 1, TEXT)
    await until(lambda: len(backend.warmups) == 1, "the head's warm-up started")
    assert backend.warmups[0].short_prompt is None  # the head's: no cursor to be short at
    service.did_move_cursor(URI, 1, ROW, 0, "utf-16")
    await until(lambda: len(backend.warmups) == 2, "the cursor's warm-up started")
    cursor = backend.warmups[1]
    service.did_change(URI, 2, [((ROW, 0, ROW, 0), "a")], "utf-16")
    await service.complete(URI, ROW, 1, "utf-16")
    short = backend.calls[0].short_prompt
    assert cursor.short_prompt is not None and short is not None
    assert short.startswith(cursor.short_prompt)  # its KV reused, the key typed added
