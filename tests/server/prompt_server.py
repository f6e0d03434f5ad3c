"""The real `spec-lsp serve` over stdio (tiny preset) that writes each request's prompt, one JSON
string a line, to the file `SPEC_LSP_TEST_PROMPTS` names: what a test over LSP reads to see what
reached the model (a document's warm-up, a one-token prefill, is not written)."""

from __future__ import annotations

import json
import os
from typing import Any

from spec_lsp.commands.serve import leave, setup_logging
from spec_lsp.config import Options
from spec_lsp.engine.api import Backend, GenerationRequest, GenerationResult
from spec_lsp.server import build_server
from spec_lsp.worker import Loader, ModelInfo, ProgressFn, engine_loader


class PromptRecorder:
    def __init__(self, inner: Backend, path: str) -> None:
        self._inner, self._path = inner, path

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def generate(self, request: GenerationRequest) -> GenerationResult:
        if request.max_new_tokens > 1:
            with open(self._path, "a", encoding="utf-8") as f:
                f.write(json.dumps(request.prompt) + "\n")
        return self._inner.generate(request)


def recording_loader(options: Options) -> Loader:
    inner = engine_loader(options)

    def load(progress: ProgressFn) -> tuple[Backend, ModelInfo]:
        backend, info = inner(progress)
        recorder = PromptRecorder(backend, os.environ["SPEC_LSP_TEST_PROMPTS"])
        return recorder, info  # type: ignore[return-value]

    return load


def main() -> None:
    setup_logging("INFO", None)
    server = build_server(preset="tiny", loader=recording_loader)
    server.start_io()
    leave(server.exit_code)


if __name__ == "__main__":
    main()
