"""One client's view of a worker that several clients share (a shared server's connections).

`WorkerLane` is what a client's completion service and next edits hold instead of the worker
itself: the same calls (`WorkerPort`), with everything the client sends put in its own lane
(`lanes.py`: the client that typed last is served first) and its documents' ids kept apart from
every other client's. Two editor windows that open the same URI have two documents, so the
engine's per-document state (KV caches, a remote engine's other-file chunks) is keyed by
`<lane>|<uri>`: one client's text never reaches another's prompts, and one client's didClose never
drops another's cache.

It knows nothing of LSP or of what a client is beyond its lane's name; the model state (state,
info, backend) is the shared worker's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol

from spec_lsp.engine.api import (
    Backend,
    Capabilities,
    FileChunks,
    GenerationRequest,
    GenerationResult,
)
from spec_lsp.worker import InferenceWorker, Job, ModelInfo


class WorkerPort(Protocol):
    """What a completion service needs of the worker (the worker itself, or a client's lane)."""

    @property
    def state(self) -> str: ...

    @property
    def info(self) -> ModelInfo: ...

    @property
    def backend(self) -> Backend | None: ...

    @property
    def capabilities(self) -> Capabilities: ...

    def submit(self, job: Job) -> None: ...

    def call(self, fn: Callable[[Backend], Any], frees_memory: bool = False) -> None: ...

    def touch(self) -> None: ...


class WorkerLane:
    """A client's lane of the shared `worker`, named `name` (unique among the server's clients)."""

    def __init__(self, worker: InferenceWorker, name: str) -> None:
        self.worker = worker
        self.name = name

    @property
    def state(self) -> str:
        return self.worker.state

    @property
    def info(self) -> ModelInfo:
        return self.worker.info

    @property
    def backend(self) -> Backend | None:
        return self.worker.backend

    @property
    def capabilities(self) -> Capabilities:
        return self.worker.capabilities

    def doc_id(self, uri: str) -> str:
        """The engine's name for this client's document `uri`."""
        return f"{self.name}|{uri}"

    def submit(self, job: Job) -> None:
        request = job.request
        if request.doc_id is not None:
            request.doc_id = self.doc_id(request.doc_id)
        self.worker.submit(job, self.name)

    def call(self, fn: Callable[[Backend], Any], frees_memory: bool = False) -> None:
        self.worker.call(lambda backend: fn(LaneBackend(backend, self)), frees_memory, self.name)

    def touch(self) -> None:
        self.worker.touch(self.name)

    def close(self) -> None:
        """The client has gone: what it left queued goes after every live client's work."""
        self.worker.forget_lane(self.name)


class LaneBackend:
    """The shared backend as one client's calls see it: its document ids in the lane's names."""

    def __init__(self, backend: Backend, lane: WorkerLane) -> None:
        self._backend, self._lane = backend, lane

    @property
    def capabilities(self) -> Capabilities:
        return self._backend.capabilities

    def generate(self, request: GenerationRequest) -> GenerationResult:
        doc_id = None if request.doc_id is None else self._lane.doc_id(request.doc_id)
        return self._backend.generate(replace(request, doc_id=doc_id))

    def count_tokens(self, text: str) -> int:
        return self._backend.count_tokens(text)

    def forget(self, doc_id: str) -> None:
        self._backend.forget(self._lane.doc_id(doc_id))

    def other_files(self, doc_id: str, head: str, chunks: FileChunks) -> None:
        self._backend.other_files(self._lane.doc_id(doc_id), head, chunks)

    def persist(self, timeout_s: float) -> bool:
        return self._backend.persist(timeout_s)

    def status(self) -> dict[str, object] | None:
        return self._backend.status()

    def engine_stats(self) -> dict[str, object] | None:
        return self._backend.engine_stats()

    def warmup_stats(self) -> dict[str, int] | None:
        return self._backend.warmup_stats()
