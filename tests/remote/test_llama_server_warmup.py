"""Against the real llama-server: a request closed by a keystroke while its prompt was being
evaluated leaves a prompt-only warm-up, and the next request for that prompt finds it cached.

The server runs 64-token batches here, so a cancel stops the evaluation after at most a batch or
two (llama-server checks for a closed connection between batches): without the warm-up only
those batches would be cached (measured: 257 of 924 tokens with 256-token batches)."""

from __future__ import annotations

import colorsys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from spec_lsp.engine.api import CancelToken, GenerationRequest
from spec_lsp.remote import RemoteSpec, connect
from spec_lsp.remote.launch import LlamaServer

pytestmark = [pytest.mark.llama_server, pytest.mark.timeout(300)]

PROMPT = Path(colorsys.__file__).read_text()[:4000]  # about 1000 tokens of plain Python
DOC = "file:///remote/colorsys.py"


@pytest.fixture(scope="module")
def small_batches(
    llama_server_binary: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LlamaServer]:
    from spec_lsp.engine.from_source import bundled_gguf

    log = tmp_path_factory.mktemp("llama-warmup") / "llama-server.log"
    model = bundled_gguf("smollm2-135m-instruct")
    server = LlamaServer(llama_server_binary, model, extra=("-b", "64", "-ub", "64"), log=log)
    server.start()
    yield server
    server.stop()


def test_a_superseded_prompt_is_cached_afterwards(small_batches: LlamaServer) -> None:
    spec = RemoteSpec(kind="llama-server", url=small_batches.url, read_timeout_s=60.0, slots=1)
    backend = connect(spec)
    try:
        token = CancelToken()
        threading.Timer(0.15, token.cancel).start()  # the keystroke, while the prompt evaluates
        closed = backend.generate(GenerationRequest(PROMPT, doc_id=DOC, cancel=token))
        assert closed.cancelled and closed.text == ""
        warmer = backend.warmer
        assert warmer is not None
        deadline = time.monotonic() + 240
        while warmer.done + warmer.failed == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (warmer.done, warmer.failed) == (1, 0), backend.status()
        prompt_tokens = backend.count_tokens(PROMPT)
        assert warmer.evaluated > 0
        after = backend.generate(GenerationRequest(PROMPT, doc_id=DOC, max_new_tokens=1))
        s = after.stats
        assert s.stop_reason != "error"
        # Everything but the last token (llama-server always evaluates one) came from the cache.
        assert s.reused_tokens >= prompt_tokens - 2 and s.prefilled_tokens <= 2, s
    finally:
        backend.close()
