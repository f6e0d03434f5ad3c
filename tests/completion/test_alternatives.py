"""Alternatives on an explicit request: branches on the target's next most likely first tokens.

The scripted backend answers by the request's `first_rank` (the tiny server shows the protocol:
tests/server/test_alternatives.py).
"""

from __future__ import annotations

from spec_lsp.engine.api import GenerationRequest, GenerationResult
from tests.fakes import URI, ScriptedBackend, service_with


class RankedBackend(ScriptedBackend):
    """Answers `texts[first_rank]` (ranks past the end: the last text)."""

    def __init__(self, *texts: str) -> None:
        super().__init__(texts[0])
        self.texts = texts
        self.free_running = True

    def generate(self, request: GenerationRequest) -> GenerationResult:
        self.text = self.texts[min(request.first_rank, len(self.texts) - 1)]
        return super().generate(request)


async def test_an_explicit_request_gets_distinct_branches_of_the_first_token() -> None:
    backend = RankedBackend(" hello", " world", " hello", " again")
    service = await service_with(backend)
    service.did_open(URI, "python", 1, "x = ")
    found = await service.complete_all(URI, 0, 4, "utf-16", n=3)
    assert [s.text for s in found] == ["hello", "world", "again"]  # rank 2 repeats rank 0
    assert [r.first_rank for r in backend.calls] == [0, 1, 2, 3]
    assert len({s.id for s in found}) == 3


async def test_an_automatic_request_runs_the_model_once() -> None:
    backend = RankedBackend(" hello", " world")
    service = await service_with(backend)
    service.did_open(URI, "python", 1, "x = ")
    found = await service.complete_all(URI, 0, 4, "utf-16")
    assert [s.text for s in found] == ["hello"] and len(backend.calls) == 1
