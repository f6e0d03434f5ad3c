"""Fakes shared by the in-process tests: scripted backends on the real inference worker, a syntax
port without rules, and the small waits and edits the service tests drive them with.

`ScriptedBackend` emits one character per step and waits for the test to release each step, so
every interleaving a test needs is forced by events, not by timing. Every fake backend here
declares its `Capabilities` as a real one does (tests/engine/test_api.py checks them all).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

from spec_lsp.completion import CompletionService
from spec_lsp.completion.live import WARM_PREFILL_CHUNK
from spec_lsp.completion.syntax_port import SyntaxPort
from spec_lsp.config import Options
from spec_lsp.engine.api import (
    Backend,
    BackendBase,
    Capabilities,
    FileChunks,
    GenerationRequest,
    GenerationResult,
    GenerationStats,
)
from spec_lsp.worker import InferenceWorker, ModelInfo

URI = "file:///doc.py"
WAIT_S = 30.0  # a bound on every wait, never a measured time

LOCAL = Capabilities(cheap_cancel=True, warm_up=True)  # as the local engine declares


class ScriptedBackend(BackendBase):
    """Answers `text`, one character per released step (all at once when `free_running`);
    a document's warm-up (a prefill only) is counted apart and answered at once."""

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


class CheapCancelBackend(ScriptedBackend):
    """As ScriptedBackend, declaring the local engine's capabilities (cheap cancel, warm-ups)."""

    capabilities = LOCAL


class PrefillBackend(BackendBase):
    """Answers "pass" at once; reports `prefilled` prompt tokens per call."""

    def __init__(self, prefilled: int) -> None:
        self.prefilled = prefilled

    def generate(self, request: GenerationRequest) -> GenerationResult:
        stats = GenerationStats(prefilled_tokens=self.prefilled, stop_reason="max_tokens")
        return GenerationResult("pass", stats=stats)

    def count_tokens(self, text: str) -> int:
        return len(text)

    def forget(self, doc_id: str) -> None:
        pass


class RecordingBackend:
    """Wraps a backend, keeping each request with its result; declares what the wrapped one does
    and passes every call on."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.requests: list[tuple[GenerationRequest, GenerationResult]] = []

    @property
    def capabilities(self) -> Capabilities:
        return self.backend.capabilities

    def generate(self, request: GenerationRequest) -> GenerationResult:
        result = self.backend.generate(request)
        self.requests.append((request, result))
        return result

    def count_tokens(self, text: str) -> int:
        return self.backend.count_tokens(text)

    def forget(self, doc_id: str) -> None:
        self.backend.forget(doc_id)

    def persist(self, timeout_s: float) -> bool:
        return self.backend.persist(timeout_s)

    def other_files(self, doc_id: str, head: str, chunks: FileChunks) -> None:
        self.backend.other_files(doc_id, head, chunks)

    def status(self) -> dict[str, object] | None:
        return self.backend.status()

    def engine_stats(self) -> dict[str, object] | None:
        return self.backend.engine_stats()

    def warmup_stats(self) -> dict[str, int] | None:
        return self.backend.warmup_stats()


class KeepAll:
    """A cutter without rules: multi-line, never stops early, trims nothing."""

    mode = "multi"
    block = False  # the whole-block rule never holds

    def stop(self, text: str) -> int | None:
        return None

    def trim(self, text: str, growing: bool = False, capped: bool = False) -> str | None:
        return text


class PlainSyntax(SyntaxPort):
    """No trimming, multi-line everywhere: the scheduler's behaviour alone."""

    def cutter(  # type: ignore[override]
        self, uri: str, row: int, col: int, prefix: str, suffix: str, block: str = "off"
    ) -> KeepAll:
        return KeepAll()


async def service_with(
    backend: Backend,
    prefetch: bool = False,
    clock: Callable[[], float] = time.perf_counter,
    **options: object,
) -> CompletionService:
    """A ready service on the real worker thread with `backend` loaded and no syntax rules;
    `prefetch`: off by default, so the calls a test counts are the requests' own; `clock`: when
    requests arrive (a `tests.remote.fake_engine.Clock` makes a pause by `advance`)."""
    worker = InferenceWorker(asyncio.get_running_loop())
    worker.backend, worker.state, worker.info = backend, "ready", ModelInfo(preset="fake")
    opts = Options(max_tokens=32, prefetch=prefetch, **options)  # type: ignore[arg-type]
    service = CompletionService(worker, opts, PlainSyntax(), clock=clock)
    service.model_ready()
    return service


class StepTimer:
    """`Generations.timer` stepped by the test: a wait ends when its future does or when
    `advance` moves this clock past its time, never by itself."""

    def __init__(self) -> None:
        self.now = 0.0
        self._alarms: list[tuple[float, asyncio.Future[None]]] = []

    async def __call__(self, future: asyncio.Future[Any], seconds: float) -> None:
        alarm = asyncio.get_running_loop().create_future()
        self._alarms.append((self.now + seconds, alarm))
        await asyncio.wait({future, alarm}, return_when=asyncio.FIRST_COMPLETED)

    async def advance(self, seconds: float) -> None:
        """Moves the clock `seconds` on, once the tasks ready to run have reached their waits:
        every wait due by then has ended, and the tasks it woke have run to their next wait
        (which ends too, when it is due by then), on return."""
        await _run_ready()
        self.now += seconds
        while due := [a for t, a in self._alarms if t <= self.now and not a.done()]:
            for alarm in due:
                alarm.set_result(None)
            await _run_ready()
        self._alarms = [(t, a) for t, a in self._alarms if not a.done()]


async def _run_ready() -> None:
    """A few turns of the event loop: the tasks ready to run (and the callbacks that wake
    others: a done future's, `asyncio.wait`'s) run up to their next wait."""
    for _ in range(5):
        await asyncio.sleep(0)


async def wait_event(event: threading.Event) -> None:
    assert await asyncio.to_thread(event.wait, WAIT_S)


async def until(check: Callable[[], bool], what: str) -> None:
    """Waits (bounded) until `check()` holds."""
    for _ in range(int(WAIT_S / 0.005)):
        if check():
            return
        await asyncio.sleep(0.005)
    raise TimeoutError(what)


async def streamed(service: CompletionService, n: int, uri: str = URI) -> None:
    """Waits (bounded) until the live generation has streamed n characters."""
    for _ in range(int(WAIT_S / 0.01)):
        live = service.live.running(uri)
        if live is not None and len(live.job.streamed) >= n:
            return
        await asyncio.sleep(0.01)
    raise TimeoutError


def end(service: CompletionService, uri: str = URI) -> tuple[int, int]:
    """The (row, col) at the end of the document."""
    doc = service.docs.get(uri)
    assert doc is not None
    return len(doc.lines) - 1, len(doc.lines[-1])


def type_text(service: CompletionService, version: int, text: str, uri: str = URI) -> None:
    """Inserts `text` at the end of the document, as the editor's didChange."""
    line, col = end(service, uri)
    service.did_change(uri, version, [((line, col, line, col), text)], "utf-16")
