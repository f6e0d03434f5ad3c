"""A completion service in this process, on a local inference worker: what `spec-lsp complete`
prints and `bench fim` measures.

`local_service` loads the model once, as the server does, and opens a `CompletionService` on it,
so a suggestion made here is the server's (same prompt, stop callback and trim). The backend it
runs on is wrapped in a `LastResultBackend`, which keeps the last generation's raw text and stats
for printing. It sits below the commands and the benchmarks that use it, and knows no LSP.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from spec_lsp.config import Options
from spec_lsp.engine.api import BackendBase

if TYPE_CHECKING:  # imported when a service opens, so `spec-lsp --help` stays fast
    from spec_lsp.completion import CompletionService
    from spec_lsp.engine.api import Backend, GenerationRequest, GenerationResult
    from spec_lsp.worker import ModelInfo, ProgressFn


class LastResultBackend(BackendBase):
    """A backend that keeps its last result, for printing the raw text and its stats. It declares
    no capability (no warm-up, a debounce, no other-files field), as before `Capabilities`."""

    def __init__(self) -> None:
        self.backend: Backend | None = None
        self.last: GenerationResult | None = None

    def generate(self, request: GenerationRequest) -> GenerationResult:
        assert self.backend is not None
        self.last = self.backend.generate(request)
        return self.last

    def count_tokens(self, text: str) -> int:
        assert self.backend is not None
        return self.backend.count_tokens(text)

    def forget(self, doc_id: str) -> None:
        if self.backend is not None:
            self.backend.forget(doc_id)

    def persist(self, timeout_s: float) -> bool:
        return self.backend is None or self.backend.persist(timeout_s)


@asynccontextmanager
async def local_service(
    options: Options, recorder: LastResultBackend, progress: ProgressFn
) -> AsyncIterator[tuple[CompletionService | None, ModelInfo, str | None]]:
    """A `CompletionService` on a local inference worker whose model is loaded once, as the
    server's is, for the block: (the service, the model's info, None), or (None, the info, the
    load error) when the model did not load. The worker stops when the block ends."""
    from spec_lsp.completion import CompletionService
    from spec_lsp.worker import InferenceWorker, engine_loader

    loop = asyncio.get_running_loop()
    worker = InferenceWorker(loop)
    loader = engine_loader(options)

    def load(report: ProgressFn) -> tuple[Backend, ModelInfo]:
        recorder.backend, info = loader(report)
        return recorder, info

    loaded = loop.create_future()
    worker.load(options.preset, load, progress, lambda: loaded.set_result(None))
    await loaded
    try:
        if worker.state != "ready":
            yield None, worker.info, worker.error
            return
        service = CompletionService(worker, options)
        service.model_ready()
        yield service, worker.info, None
    finally:  # the worker's thread ends before the interpreter does (else: a C++ abort at exit)
        worker.stop()
        await asyncio.to_thread(worker.join, 30.0)
