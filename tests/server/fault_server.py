"""The real `spec-lsp serve` over stdio, with faults a test can switch on from its environment.

It is `build_server` with the tiny preset's own loader, wrapped:
- `SPEC_LSP_TEST_LOAD_GATE=PATH`: the load, once its models are in memory (it then creates
  `PATH.loaded`), waits until PATH exists before it reports done (a model still loading);
- a prompt containing `RAISE_IN_GENERATION` makes that generation raise;
- a prompt containing `STUCK_IN_GENERATION` blocks the worker for 30 s, ignoring cancellation
  (a torch call that does not return);
  (both for requests' generations: a document's warm-up, one token, runs as usual);
- `SPEC_LSP_TEST_INVOKED_WAIT_S`: how long an invoked request waits for a load.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import spec_lsp.server.handlers as handlers
from spec_lsp.commands.serve import leave, setup_logging
from spec_lsp.config import Options
from spec_lsp.engine.api import Backend, GenerationRequest, GenerationResult
from spec_lsp.server import build_server
from spec_lsp.worker import Loader, ModelInfo, ProgressFn, engine_loader

RAISE = "RAISE_IN_GENERATION"
STUCK = "STUCK_IN_GENERATION"


class FaultyBackend:
    def __init__(self, inner: Backend) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def generate(self, request: GenerationRequest) -> GenerationResult:
        if (
            request.max_new_tokens <= 1
        ):  # a document's warm-up (a prefill): the faults are requests'
            return self._inner.generate(request)
        if RAISE in request.prompt:
            raise RuntimeError("injected fault inside generation")
        if STUCK in request.prompt:
            time.sleep(30)
        return self._inner.generate(request)


def faulty_loader(options: Options) -> Loader:
    inner = engine_loader(options)

    def load(progress: ProgressFn) -> tuple[Backend, ModelInfo]:
        backend, info = inner(progress)
        gate = os.environ.get("SPEC_LSP_TEST_LOAD_GATE")
        if gate:  # loaded; the load reports done only once the test opens the gate
            Path(f"{gate}.loaded").touch()
            while not Path(gate).exists():
                time.sleep(0.05)
        return FaultyBackend(backend), info  # type: ignore[return-value]

    return load


def main() -> None:
    setup_logging("INFO", None)
    wait = os.environ.get("SPEC_LSP_TEST_INVOKED_WAIT_S")
    if wait:
        handlers.INVOKED_LOAD_WAIT_S = float(wait)
    server = build_server(preset="tiny", loader=faulty_loader)
    server.start_io()
    leave(server.exit_code)  # as `spec-lsp serve` ends


if __name__ == "__main__":
    main()
