"""Two clients on one worker (`spec_lsp/worker_lane.py`), as a shared server's windows are: the
same URI opened in both is two documents, in the service and in the engine; one client's edits
and closes never touch the other's work; the client that typed last is served first.

Scripted backends on the real worker thread (tests/fakes.py); every interleaving is forced by
events, never by timing.
"""

from __future__ import annotations

import asyncio
import threading

from spec_lsp.completion import CompletionService
from spec_lsp.config import Options
from spec_lsp.engine.api import CancelToken, GenerationRequest, GenerationResult
from spec_lsp.worker import InferenceWorker, Job, ModelInfo
from spec_lsp.worker_lane import WorkerLane
from tests.fakes import (
    URI,
    WAIT_S,
    PlainSyntax,
    RecordingBackend,
    ScriptedBackend,
    end,
    streamed,
    type_text,
    wait_event,
)


class ForgettingBackend(ScriptedBackend):
    """ScriptedBackend that keeps the document ids it was asked to forget."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.forgotten: list[str] = []

    def forget(self, doc_id: str) -> None:
        self.forgotten.append(doc_id)


def shared_worker(backend: object) -> InferenceWorker:
    worker = InferenceWorker(asyncio.get_running_loop())
    worker.backend, worker.state = backend, "ready"  # type: ignore[assignment]
    worker.info = ModelInfo(preset="fake")
    return worker


def client(worker: InferenceWorker, name: str, text: str) -> CompletionService:
    """A client's ready service on its own lane of `worker`, `text` open at URI."""
    options = Options(max_tokens=32, prefetch=False, debounce_ms=0)
    service = CompletionService(WorkerLane(worker, name), options, PlainSyntax())
    service.model_ready()
    service.did_open(URI, "python", 1, text)
    return service


async def complete(service: CompletionService) -> str | None:
    found = await service.complete(URI, *end(service), "utf-16")
    return None if found is None else found.text


async def test_the_same_uri_in_two_clients_is_two_documents_in_the_service_and_the_engine() -> None:
    scripted = ScriptedBackend("pass")
    scripted.free_running = True
    backend = RecordingBackend(scripted)
    worker = shared_worker(backend)
    alice = client(worker, "c1", "alice_secret = 1\n")
    bob = client(worker, "c2", "bob_secret = 2\n")
    assert await complete(alice) == "pass"
    assert await complete(bob) == "pass"
    assert alice.docs.get(URI).text == "alice_secret = 1\n"  # type: ignore[union-attr]
    assert bob.docs.get(URI).text == "bob_secret = 2\n"  # type: ignore[union-attr]
    by_doc = {request.doc_id: request.prompt for request, _ in backend.requests}
    assert set(by_doc) == {f"c1|{URI}", f"c2|{URI}"}
    assert "alice_secret" in by_doc[f"c1|{URI}"] and "bob" not in by_doc[f"c1|{URI}"]
    assert "bob_secret" in by_doc[f"c2|{URI}"] and "alice" not in by_doc[f"c2|{URI}"]
    worker.stop()


async def test_a_client_closing_a_document_forgets_its_own_state_only() -> None:
    backend = ForgettingBackend("pass")
    worker = shared_worker(backend)
    alice = client(worker, "c1", "a = 1\n")
    bob = client(worker, "c2", "b = 2\n")
    alice.did_close(URI)
    done = threading.Event()
    worker.call(lambda _: done.set())  # after the forget queued before it
    await wait_event(done)
    assert backend.forgotten == [f"c1|{URI}"]
    assert bob.docs.get(URI) is not None
    worker.stop()


async def test_an_edit_cancels_its_own_clients_generation_never_another_clients() -> None:
    backend = ScriptedBackend("abcdefgh")
    worker = shared_worker(backend)
    alice = client(worker, "c1", "x = 1\n")
    bob = client(worker, "c2", "x = 1\n")
    bobs = asyncio.ensure_future(complete(bob))
    await wait_event(backend.started)
    backend.step.release()
    await streamed(bob, 1)
    running = bob.live.running(URI)
    assert running is not None
    type_text(alice, 2, "y")  # the same URI, edited in the other window
    assert running.job.request.cancel is not None
    assert not running.job.request.cancel.cancelled
    type_text(bob, 2, "z")  # its own window's edit, off what it streams: stale now
    assert running.job.request.cancel.cancelled
    backend.free_running = True
    for _ in range(8):
        backend.step.release()
    await asyncio.wait_for(bobs, WAIT_S)
    worker.stop()


async def test_the_client_that_typed_last_is_served_first() -> None:
    order: list[str] = []
    hold = threading.Event()
    backend = ScriptedBackend("")
    worker = shared_worker(backend)
    quiet, typing = WorkerLane(worker, "c1"), WorkerLane(worker, "c2")
    held = threading.Event()

    def block(_: object) -> None:
        held.set()
        hold.wait(WAIT_S)

    worker.call(block)  # the worker is busy while both clients queue
    await wait_event(held)
    quiet.call(lambda _: order.append("quiet"))
    typing.call(lambda _: order.append("typing"))
    quiet.touch()
    typing.touch()  # the newest keystroke
    done = threading.Event()
    quiet.call(lambda _: done.set())
    hold.set()
    await wait_event(done)
    assert order == ["typing", "quiet"]
    worker.stop()


async def test_a_lane_names_the_documents_of_a_generation_it_runs_through_a_call() -> None:
    seen: list[str | None] = []

    class Seeing(ScriptedBackend):
        def generate(self, request: GenerationRequest) -> GenerationResult:
            seen.append(request.doc_id)
            return GenerationResult("")

    worker = shared_worker(Seeing(""))
    done = threading.Event()

    def run(backend: object) -> None:
        backend.generate(GenerationRequest("p", doc_id=URI))  # type: ignore[attr-defined]
        done.set()

    WorkerLane(worker, "c7").call(run)
    await wait_event(done)
    assert seen == [f"c7|{URI}"]
    worker.stop()


async def test_another_clients_keystroke_stops_idle_work_but_never_a_waited_generation() -> None:
    backend = ScriptedBackend("abcdefgh")
    worker = shared_worker(backend)
    quiet, typing = WorkerLane(worker, "c1"), WorkerLane(worker, "c2")
    for idle in (True, False):  # a warm-up no one waits for, then a request's generation
        backend.started.clear()
        request = GenerationRequest("p", doc_id=URI, cancel=CancelToken(), idle=idle)
        job = Job(request, asyncio.get_running_loop().create_future())
        quiet.submit(job)
        await wait_event(backend.started)
        quiet.touch()  # its own client: nothing stops
        assert request.cancel is not None and not request.cancel.cancelled
        typing.touch()  # another client's keystroke
        assert request.cancel.cancelled is idle
        backend.free_running = True
        backend.step.release()
        await asyncio.wait_for(job.future, WAIT_S)
        backend.free_running = False
    worker.stop()
