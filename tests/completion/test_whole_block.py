"""Whole blocks through the service (`Planner` and the syntax layer's whole-block rule): an
explicit request, or a blank line whose block is unwritten, generates with the `blockTokens` cap
and ends where the suffix says the block ends; a capped answer never ends inside a line or on a
header without a body; `blockTokens` 0 turns it all off."""

from __future__ import annotations

import asyncio

from spec_lsp.completion import CompletionService
from spec_lsp.completion.syntax_port import SyntaxPort
from spec_lsp.config import Options
from spec_lsp.engine.api import BackendBase, GenerationRequest, GenerationResult, GenerationStats
from spec_lsp.worker import InferenceWorker, ModelInfo
from tests.fakes import LOCAL, URI

# The loop's body is the hole: the empty line open, the cursor at its start.
TEXT = "def count(xs):\n    total = 0\n    for x in xs:\n\n    return total\n"
HOLE = (3, 0)
MID = "def f(a):\n    b = a + 1\n\n    return b\n"  # a blank line in the middle of a block


class Answers(BackendBase):
    """Answers `text` with `reason` as its stop reason, recording each request."""

    capabilities = LOCAL

    def __init__(self, text: str, reason: str = "eos") -> None:
        self.text, self.reason = text, reason
        self.calls: list[GenerationRequest] = []

    def generate(self, request: GenerationRequest) -> GenerationResult:
        self.calls.append(request)
        text = self.text
        if request.stop_callback is not None and (keep := request.stop_callback(text)) is not None:
            return GenerationResult(text[:keep], stats=GenerationStats(stop_reason="callback"))
        return GenerationResult(text, stats=GenerationStats(stop_reason=self.reason))  # type: ignore[arg-type]

    def count_tokens(self, text: str) -> int:
        return len(text)


async def _service(backend: Answers, **options: object) -> CompletionService:
    worker = InferenceWorker(asyncio.get_running_loop())
    worker.backend, worker.state, worker.info = backend, "ready", ModelInfo(preset="fake")
    opts = Options(max_tokens=32, prefetch=False, short_window=0, **options)  # type: ignore[arg-type]
    service = CompletionService(worker, opts, SyntaxPort())
    service.model_ready()
    return service


async def _ask(service: CompletionService, text: str, at: tuple[int, int], invoked: bool) -> str:
    service.did_open(URI, "python", 1, text)
    answer = await service.complete(URI, *at, "utf-16", invoked=invoked)
    service.did_close(URI)
    return "" if answer is None else answer.text


async def test_an_unwritten_block_generates_with_the_block_cap() -> None:
    backend = Answers("        total += x\n")
    service = await _service(backend, block_tokens=200)
    assert await _ask(service, TEXT, HOLE, invoked=False) == "        total += x"
    assert backend.calls[-1].max_new_tokens == 200


async def test_an_explicit_request_mid_block_generates_with_the_block_cap() -> None:
    backend = Answers("    c = b * 2\n")
    service = await _service(backend, block_tokens=200)
    await _ask(service, MID, (2, 0), invoked=False)
    assert backend.calls[-1].max_new_tokens == 32  # automatic, the block goes on below
    await _ask(service, MID, (2, 0), invoked=True)
    assert backend.calls[-1].max_new_tokens == 200


async def test_block_tokens_0_keeps_max_tokens_everywhere() -> None:
    backend = Answers("        total += x\n")
    service = await _service(backend, block_tokens=0)
    await _ask(service, TEXT, HOLE, invoked=True)
    assert backend.calls[-1].max_new_tokens == 32


async def test_a_capped_block_ends_on_its_last_whole_line_not_a_bare_header() -> None:
    raw = "        if x > 0:\n            total += x\n        elif x < 0:\n            total -"
    backend = Answers(raw, reason="max_tokens")
    service = await _service(backend, block_tokens=200)
    answer = await _ask(service, TEXT, HOLE, invoked=True)
    assert answer == "        if x > 0:\n            total += x"


async def test_the_block_stops_at_the_suffixs_first_line_written_again() -> None:
    backend = Answers("        total += x\n    return total\n")
    service = await _service(backend, block_tokens=200)
    assert await _ask(service, TEXT, HOLE, invoked=True) == "        total += x"


async def test_explicit_and_automatic_answers_are_cached_apart() -> None:
    """The same prompt under other rules (the block's cap and end) is another cache entry."""
    backend = Answers("    c = b * 2\n")
    service = await _service(backend, block_tokens=200)
    service.did_open(URI, "python", 1, MID)
    await service.complete(URI, 2, 0, "utf-16")
    service.reuse.forget(URI)  # not the document's last suggestion: the cache alone answers
    await service.complete(URI, 2, 0, "utf-16", invoked=True)
    assert [c.max_new_tokens for c in backend.calls] == [32, 200]
