"""Remote backends: generation sent to an existing serving engine over HTTP.

`llama_server` (llama.cpp's server: `/completion`, `/infill`) and `openai` (vLLM and other
OpenAI-compatible servers: `/v1/completions`) implement `spec_lsp.engine.api.Backend` with
httpx's streaming; `stream` is the loop they share (stop callback, stop strings and cancellation
close the stream; failures are empty answers with a reason and a back-off in `health`); `warmup`
re-sends a superseded llama-server request prompt-only so the slot's cache keeps up; `spec`
reads a preset's `[backend]` table. This room imports httpx and the torch-free `engine.api` and
`prompt` modules only: no torch, transformers, LSP library, tree-sitter, server or completion.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from spec_lsp.remote.spec import RemoteSpec, RemoteSpecError, parse_backend

if TYPE_CHECKING:
    from spec_lsp.remote.stream import RemoteBackend

__all__ = ["RemoteSpec", "RemoteSpecError", "connect", "parse_backend"]


def connect(spec: RemoteSpec, clock: Callable[[], float] = time.monotonic) -> RemoteBackend:
    """The backend for a remote spec (no request is sent until the first generation); `clock`
    times its back-off after a failure (`health.Health`)."""
    if spec.kind == "llama-server":
        from spec_lsp.remote.llama_server import LlamaServerBackend

        return LlamaServerBackend(spec, clock)
    from spec_lsp.remote.openai import OpenAIBackend

    return OpenAIBackend(spec, clock)
