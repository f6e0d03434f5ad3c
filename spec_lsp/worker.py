"""The inference worker: one thread that owns the models, so the event loop never blocks on torch.

This module owns loading a backend and running its calls one at a time; results come back to the
asyncio loop as futures. A loader returns the backend with what the app knows of it from the
preset (`ModelInfo`); `engine_loader` is the local engine's, and imports torch only when it runs,
in this thread; for a preset with a remote `[backend]` it connects `spec_lsp.remote` instead. The
module knows nothing of LSP, documents or prompts.

Failures: a job that raises (any error but KeyboardInterrupt and SystemExit, which end the
process) fails that job alone: its request gets the error, the thread goes on to the next one.
`stop` answers every job still queued (a generation as cancelled) before the thread ends, so no
request waits on a worker that is gone.

Memory: when the worker goes idle after a large prefill, a forgotten document or a (re)load, it
hands free heap memory back to the OS (`heap.release_free_memory`, a few ms, off the loop).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Literal

from spec_lsp.config import Options
from spec_lsp.engine.api import (
    Backend,
    Capabilities,
    GenerationRequest,
    GenerationResult,
    GenerationStats,
)
from spec_lsp.heap import release_free_memory
from spec_lsp.lanes import Lanes
from spec_lsp.presets import Preset, load_preset, load_preset_engine

log = logging.getLogger(__name__)

ProgressFn = Callable[[str, float], None]
Loader = Callable[[ProgressFn], "tuple[Backend, ModelInfo]"]
# The backend's: being loaded, or how its load ended (a failed load is reported in `error`).
WorkerState = Literal["loading", "ready", "failed"]
TRIM_AFTER_PREFILL = 256  # prompt tokens prefilled by one generation that make a trim worthwhile


@dataclass(frozen=True)
class ModelInfo:
    """What the app knows of the loaded pair, from its preset: names for status, and the prompt
    format (FIM family, context budget); from a local engine, the forward and kernel family it
    chose at load (`engine.forward`)."""

    preset: str = ""
    device: str = ""
    target: str = ""
    draft: str | None = None
    fim: str = "none"
    next_edit: str = "none"  # the next-edit prompt format (`nextedit.formats`)
    context_tokens: int = 2048
    forward: str | None = None  # "lean" or "transformers" (a local engine's)
    kernels: str | None = None  # "native-amx", "-avx512", "-vnni", "-avx2", "-plain", "torch"

    @classmethod
    def of(
        cls, preset: Preset, device: str, forward: str | None = None, kernels: str | None = None
    ) -> ModelInfo:
        return cls(
            preset=preset.name,
            device=device,
            target=preset.target,
            draft=preset.draft,
            fim=preset.fim,
            next_edit=preset.next_edit,
            context_tokens=preset.context_tokens,
            forward=forward,
            kernels=kernels,
        )


def engine_loader(options: Options) -> Loader:
    """Loads the local engine for `options.preset` (torch is imported then, in the worker thread,
    not at start)."""

    def load(progress: ProgressFn) -> tuple[Backend, ModelInfo]:
        preset = load_preset(options.preset)
        if preset.backend is not None:  # a remote engine serves it: nothing loads here
            from spec_lsp.remote import connect

            progress(f"connecting to {preset.backend.kind} at {preset.backend.base_url}", 1.0)
            return connect(preset.backend), ModelInfo.of(preset, "remote")
        engine = load_preset_engine(
            preset,
            device=options.device,
            trust_remote_code=options.trust_remote_code,
            progress=progress,
        )
        return engine, ModelInfo.of(preset, engine.device, engine.forward, engine.kernels)

    return load


@dataclass
class Job:
    """One generation, shared by the request that started it and any typing through it."""

    request: GenerationRequest
    future: asyncio.Future[GenerationResult]
    submitted: float = field(default_factory=time.perf_counter)
    started: float | None = None
    streamed: str = ""  # text generated so far (written by the worker thread)
    finished: float | None = None
    cancelled_at: float | None = None  # when the scheduler set the cancel token

    def cancel(self) -> None:
        if self.request.cancel is not None and not self.request.cancel.cancelled:
            self.cancelled_at = time.perf_counter()
            self.request.cancel.cancel()

    @property
    def stop_ms(self) -> float | None:
        """Time from cancelling a running generation to the engine returning."""
        if self.cancelled_at is None or self.finished is None or self.started is None:
            return None
        return max(0.0, self.finished - max(self.cancelled_at, self.started)) * 1000

    @property
    def queue_ms(self) -> float:
        return 0.0 if self.started is None else (self.started - self.submitted) * 1000


# What a queued job does when the worker runs it, and when the worker stops before it does.
_Task = tuple[Callable[[], None], Callable[[], None]]
_Loaded = tuple[WorkerState, str | None, "Backend | None", ModelInfo]  # state, error, backend, info
FATAL = (KeyboardInterrupt, SystemExit)  # end the process: never caught as one job's failure


class WorkerError(RuntimeError):
    """A job ended on an error that is no `Exception` (the request is answered with this)."""


def _as_exception(exc: BaseException) -> Exception:
    if isinstance(exc, Exception):
        return exc
    error = WorkerError(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
    error.__cause__ = exc
    return error


class InferenceWorker:
    """The thread and its queue. Every job goes in a lane (`lanes.py`): a stdio server's in one,
    a shared server's clients' each in their own (`worker_lane.WorkerLane`), so the client that
    typed last is served first and no client's work cancels another's."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._queue: Lanes[_Task] = Lanes()
        self._thread = threading.Thread(target=self._run, name="spec-lsp-inference", daemon=True)
        self.backend: Backend | None = None
        self.state: WorkerState = "loading"
        self.error: str | None = None
        self.info = ModelInfo()
        self._trim_due = False  # free heap memory to hand back once the queue is empty
        self.trims = 0
        self.failures = 0  # jobs that ended on an error (the thread went on)
        self._stopping = False  # set by `stop`: queued jobs are answered, not run
        self._finished = False  # `finish` ran its last job
        self._running: tuple[Hashable, Job] | None = None  # the generation running, its lane
        self._thread.start()

    # -- called from the event loop -------------------------------------------------------
    def load(
        self,
        preset: str,
        loader: Loader,
        progress: ProgressFn,
        done: Callable[[], None],
        lane: Hashable = None,
    ) -> None:
        """Replaces the backend in the worker thread, in `lane`'s turn (the client's that asked);
        `done` runs on the loop afterwards."""
        self.state, self.error, self.info = "loading", None, ModelInfo(preset=preset)

        def on_progress(message: str, fraction: float) -> None:
            self._loop.call_soon_threadsafe(progress, message, fraction)

        def failed(why: str) -> _Loaded:
            return ("failed", why, None, ModelInfo(preset=preset))

        def job() -> None:
            self.backend = None  # drop the old models before loading new ones
            try:
                backend, info = loader(on_progress)
                result: _Loaded = ("ready", None, backend, info)
            except FATAL:
                raise
            except BaseException as exc:  # a failed load is reported once, the server stays up
                log.exception("loading preset %r failed", preset)
                result = failed(str(exc) or type(exc).__name__)
            self._trim_due = True  # the old models, or a failed load's partial allocations
            self._call_loop(self._loaded, result, done)

        def dropped() -> None:
            self._call_loop(self._loaded, failed("the server stopped before loading"), done)

        self._put(job, dropped, lane)

    def _loaded(self, result: _Loaded, done: Callable[[], None]) -> None:
        self.state, self.error, self.backend, self.info = result
        done()

    def submit(self, job: Job, lane: Hashable = None) -> None:
        """Queues a generation at the end of `lane`."""
        self._put(lambda: self._generate(job, lane), lambda: self._resolve(job, _cancelled()), lane)

    def call(
        self, fn: Callable[[Backend], Any], frees_memory: bool = False, lane: Hashable = None
    ) -> None:
        """Runs `fn(backend)` in the worker, in `lane`'s turn (e.g. forgetting a document's KV
        state); `frees_memory`: hand free heap memory back to the OS once the worker is idle."""

        def job() -> None:
            if self.backend is not None:
                try:
                    fn(self.backend)
                finally:
                    self._trim_due = self._trim_due or frees_memory

        self._put(job, lambda: None, lane)

    def touch(self, lane: Hashable = None) -> None:
        """`lane`'s client edited or asked for a completion: its queued jobs go first, and idle
        work of another lane running now (a warm-up no one waits for) stops within a pass. A
        generation someone waits for is never cancelled by another lane."""
        self._queue.touch(lane)
        running = self._running
        if running is not None and running[0] != lane and running[1].request.idle:
            running[1].cancel()

    def forget_lane(self, lane: Hashable) -> None:
        """`lane`'s client has gone; what it left queued runs after every live client's."""
        self._queue.forget(lane)

    @property
    def capabilities(self) -> Capabilities:
        """What the loaded backend declares it can do; nothing while none is loaded."""
        return self.backend.capabilities if self.backend is not None else Capabilities()

    def engine_status(self) -> dict[str, object] | None:
        """A remote backend's own state (reachable, why not); None for the local engine."""
        backend = self.backend
        return backend.status() if backend is not None and backend.capabilities.status else None

    def stop(self) -> None:
        """Ends the thread after the job it runs now; the jobs queued behind it are answered
        without running (a generation as cancelled), as is any submitted later."""
        self._stopping = True
        self._queue.close()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    def finish(self, last: Callable[[Backend], Any], timeout: float) -> bool:
        """The server ends: stops the thread as `stop` does, cancelling the generation it runs
        (no one waits for an answer now; the engine stops within a pass), waits up to `timeout`
        s for it, then runs `last(backend)` on the caller's thread, the models being no one
        else's then (e.g. keeping documents' KV on disk). Whether `last` ran: not when the
        thread still runs (a model being loaded), there is no backend, or it ran before."""
        self.stop()
        running = self._running
        if running is not None:
            running[1].cancel()
        self._thread.join(timeout)
        backend = self.backend
        if self._finished or self._thread.is_alive() or backend is None:
            return False
        self._finished = True
        try:
            last(backend)
        except Exception:
            log.exception("the worker's last job failed")
        return True

    def is_alive(self) -> bool:
        """Whether the worker thread still runs (until `stop`, or a KeyboardInterrupt in a job)."""
        return self._thread.is_alive()

    # -- the worker thread ----------------------------------------------------------------
    def _put(self, run: Callable[[], None], drop: Callable[[], None], lane: Hashable) -> None:
        if self._stopping or not self._queue.put(lane, (run, drop)):
            drop()

    def _run(self) -> None:
        try:
            while (task := self._queue.get()) is not None and not self._stopping:
                self._run_one(task[0])
                if self._trim_due and self._queue.empty():
                    self._trim_due = False
                    self.trims += release_free_memory()
            if task is not None:
                task[1]()
        finally:
            self._drain()

    def _run_one(self, run: Callable[[], None]) -> None:
        """Runs one job; an error ends that job alone (KeyboardInterrupt and SystemExit end the
        thread, after the queued jobs are answered)."""
        try:
            run()
        except FATAL:
            raise
        except BaseException:
            self.failures += 1
            log.exception("a worker job failed")

    def _drain(self) -> None:
        """Answers every job still queued without running it."""
        self._stopping = True
        self._queue.close()
        for task in self._queue.drain():
            task[1]()

    def _generate(self, job: Job, lane: Hashable = None) -> None:
        self._running = (lane, job)
        try:
            self._generate_now(job)
        finally:
            self._running = None

    def _generate_now(self, job: Job) -> None:
        request = job.request
        job.started = time.perf_counter()
        backend = self.backend
        if (request.cancel is not None and request.cancel.cancelled) or backend is None:
            self._resolve(job, _cancelled())
            return

        def on_text(piece: str) -> None:
            job.streamed += piece

        request.on_text = on_text
        try:
            result = backend.generate(request)
        except FATAL:
            job.finished = time.perf_counter()
            self._resolve(job, _cancelled())
            raise
        except BaseException as exc:  # this request fails; the worker serves the next one
            job.finished = time.perf_counter()
            self.failures += 1
            log.exception("generation failed")
            self._call_loop(_set_exception, job.future, _as_exception(exc))
            return
        job.finished = time.perf_counter()
        if result.stats.prefilled_tokens >= TRIM_AFTER_PREFILL:
            self._trim_due = True
        self._resolve(job, result)

    def _resolve(self, job: Job, result: GenerationResult) -> None:
        self._call_loop(_set_result, job.future, result)

    def _call_loop(self, fn: Callable[..., None], *args: Any) -> None:
        """Runs `fn(*args)` on the loop; nothing when the loop is closed (a one-shot command's
        loop ended while a job still ran: no one waits for its result)."""
        try:
            self._loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:
            if not self._loop.is_closed():
                raise


def _cancelled() -> GenerationResult:
    return GenerationResult("", stats=GenerationStats(stop_reason="cancelled"))


def _set_result(future: asyncio.Future[GenerationResult], result: GenerationResult) -> None:
    if not future.done():
        future.set_result(result)


def _set_exception(future: asyncio.Future[GenerationResult], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)
