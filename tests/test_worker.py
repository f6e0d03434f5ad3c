"""The inference worker survives any error of one job and answers every queued job on shutdown
(issue 27 item 5): scripted backends on the real worker thread, interleavings forced by events."""

from __future__ import annotations

import asyncio

import pytest

from spec_lsp.engine.api import (
    BackendBase,
    CancelToken,
    Capabilities,
    GenerationRequest,
    GenerationResult,
)
from spec_lsp.worker import InferenceWorker, Job, ModelInfo, WorkerError
from tests.fakes import WAIT_S, ScriptedBackend, wait_event


class Crash(BaseException):
    """No `Exception`: what a bare `except Exception` lets through (as GeneratorExit would)."""


class CrashingBackend(ScriptedBackend):
    """Raises `error` on a prompt that asks for it, answers the rest as ScriptedBackend."""

    def __init__(self, error: BaseException) -> None:
        super().__init__("ok")
        self.free_running = True
        self.error = error

    def generate(self, request: GenerationRequest) -> GenerationResult:
        if request.prompt == "crash":
            raise self.error
        return super().generate(request)


def ready(backend: BackendBase) -> InferenceWorker:
    worker = InferenceWorker(asyncio.get_running_loop())
    worker.backend, worker.state, worker.info = backend, "ready", ModelInfo(preset="fake")  # type: ignore[assignment]
    return worker


def job(prompt: str) -> Job:
    request = GenerationRequest(prompt, cancel=CancelToken())
    return Job(request, asyncio.get_running_loop().create_future())


async def answer(j: Job) -> GenerationResult:
    return await asyncio.wait_for(j.future, WAIT_S)


async def test_a_generation_that_raises_a_non_exception_fails_alone() -> None:
    worker = ready(CrashingBackend(Crash("no Exception")))
    crashed, after = job("crash"), job("x = ")
    worker.submit(crashed)
    worker.submit(after)
    with pytest.raises(WorkerError, match="Crash: no Exception"):
        await answer(crashed)
    assert (await answer(after)).text == "ok"  # the thread went on
    assert worker.failures == 1 and worker.is_alive()
    worker.stop()


async def test_a_generation_that_raises_an_exception_gets_that_exception() -> None:
    worker = ready(CrashingBackend(ValueError("bad")))
    crashed = job("crash")
    worker.submit(crashed)
    with pytest.raises(ValueError, match="bad"):
        await answer(crashed)
    assert (await answer(_submitted(worker, job("y = ")))).text == "ok"
    worker.stop()


def _submitted(worker: InferenceWorker, j: Job) -> Job:
    worker.submit(j)
    return j


async def test_a_call_or_a_load_that_raises_a_non_exception_leaves_the_worker_serving() -> None:
    worker = ready(CrashingBackend(Crash()))

    def crash(_backend: object) -> None:
        raise Crash("in a call")

    worker.call(crash)
    assert (await answer(_submitted(worker, job("a = ")))).text == "ok"
    loaded = asyncio.Event()

    def load(_progress: object) -> tuple[BackendBase, ModelInfo]:
        raise Crash("in a load")

    worker.load("broken", load, lambda m, f: None, loaded.set)  # type: ignore[arg-type]
    await asyncio.wait_for(loaded.wait(), WAIT_S)
    assert worker.state == "failed" and worker.error == "in a load"
    assert worker.failures == 1  # the call; the load is reported as a failed load
    worker.backend = CrashingBackend(Crash())
    assert (await answer(_submitted(worker, job("b = ")))).text == "ok"
    worker.stop()


async def test_stopping_answers_the_queued_jobs_without_running_them() -> None:
    backend = ScriptedBackend("hello")
    worker = ready(backend)
    running, queued = job("x = "), [job("y = "), job("z = ")]
    worker.submit(running)
    await wait_event(backend.started)
    for j in queued:
        worker.submit(j)
    worker.stop()
    backend.free_running = True
    backend.release(10)
    assert (await answer(running)).text == "hello"  # the job it ran finishes
    for j in queued:
        assert (await answer(j)).cancelled
    late = _submitted(worker, job("w = "))  # after stop: answered at once
    assert (await answer(late)).cancelled
    assert [r.prompt for r in backend.calls] == ["x = "]
    worker.join(WAIT_S)
    assert not worker.is_alive()


async def test_finishing_cancels_the_running_generation_then_runs_the_last_job_once() -> None:
    """The server ends: nothing waits for the generation running, the queued jobs are answered
    without running, and the last job (keeping KV on disk) runs once, with the models idle."""
    backend = ScriptedBackend("hello")
    worker = ready(backend)
    running, queued = job("x = "), job("y = ")
    worker.submit(running)
    await wait_event(backend.started)
    worker.submit(queued)
    last: list[object] = []
    finishing = asyncio.ensure_future(asyncio.to_thread(worker.finish, last.append, WAIT_S))
    cancel = running.request.cancel
    assert cancel is not None
    for _ in range(int(WAIT_S * 100)):
        if cancel.cancelled:
            break
        await asyncio.sleep(0.01)
    assert cancel.cancelled
    backend.release(10)  # the generation takes its next step and sees the cancel
    assert await asyncio.wait_for(finishing, WAIT_S)
    assert (await answer(running)).cancelled and (await answer(queued)).cancelled
    assert last == [backend] and not worker.is_alive()
    assert [r.prompt for r in backend.calls] == ["x = "]
    assert not worker.finish(last.append, WAIT_S) and last == [backend]  # once


async def test_finishing_without_a_backend_runs_nothing() -> None:
    worker = InferenceWorker(asyncio.get_running_loop())  # never loaded
    last: list[object] = []
    assert not await asyncio.to_thread(worker.finish, last.append, WAIT_S)
    assert last == [] and not worker.is_alive()


async def test_a_load_queued_at_shutdown_reports_done_as_failed() -> None:
    backend = ScriptedBackend("hello")
    worker = ready(backend)
    running = _submitted(worker, job("x = "))
    await wait_event(backend.started)
    loaded = asyncio.Event()
    worker.load("next", lambda progress: (backend, ModelInfo()), lambda m, f: None, loaded.set)
    worker.stop()
    backend.free_running = True
    backend.release(10)
    await answer(running)
    await asyncio.wait_for(loaded.wait(), WAIT_S)
    assert worker.state == "failed" and "stopped" in str(worker.error)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
async def test_system_exit_in_a_job_ends_the_thread_but_answers_the_queued_jobs() -> None:
    backend = CrashingBackend(SystemExit(3))
    backend.free_running = False
    worker = ready(backend)
    blocker = _submitted(worker, job("first"))
    await wait_event(backend.started)
    crashed, queued = _submitted(worker, job("crash")), _submitted(worker, job("after"))
    backend.free_running = True
    backend.release(10)
    await answer(blocker)
    assert (await answer(crashed)).cancelled  # answered, never left waiting
    assert (await answer(queued)).cancelled
    worker.join(WAIT_S)
    assert not worker.is_alive()


async def test_the_worker_reports_no_capability_without_a_backend() -> None:
    worker = InferenceWorker(asyncio.get_running_loop())
    assert worker.capabilities == Capabilities() and worker.engine_status() is None
    worker.stop()
