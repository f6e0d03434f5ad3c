"""Alternatives on an explicit request: branches on the target's next most likely first tokens.

The scripted backend answers by the request's `first_rank`; the tiny server shows the protocol.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from lsp_helpers import REQUEST_TIMEOUT_S, doc_uri, open_doc, stats
from lsprotocol import types
from pytest_lsp import LanguageClient
from test_scheduling import URI, ScriptedBackend, service_with

from spec_lsp.engine.api import GenerationRequest, GenerationResult


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
    backend = RankedBackend("hello", "world", "hello", "again")
    service = await service_with(backend)
    service.did_open(URI, "python", 1, "x = ")
    found = await service.complete_all(URI, 0, 4, "utf-16", n=3)
    assert [s.text for s in found] == ["hello", "world", "again"]  # rank 2 repeats rank 0
    assert [r.first_rank for r in backend.calls] == [0, 1, 2, 3]
    assert len({s.id for s in found}) == 3


async def test_an_automatic_request_runs_the_model_once() -> None:
    backend = RankedBackend("hello", "world")
    service = await service_with(backend)
    service.did_open(URI, "python", 1, "x = ")
    found = await service.complete_all(URI, 0, 4, "utf-16")
    assert [s.text for s in found] == ["hello"] and len(backend.calls) == 1


def invoked(uri: str, line: int, char: int) -> types.InlineCompletionParams:
    return types.InlineCompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=line, character=char),
        context=types.InlineCompletionContext(
            trigger_kind=types.InlineCompletionTriggerKind.Invoked
        ),
    )


@pytest.mark.asyncio(loop_scope="module")
async def test_the_tiny_server_answers_an_invoked_request_with_three_items(
    client: LanguageClient,
) -> None:
    uri = doc_uri("alternatives.py")
    text = "def add(a, b):\n    return "
    open_doc(client, uri, text)
    before = await stats(client)
    result: Any = await asyncio.wait_for(
        client.text_document_inline_completion_async(invoked(uri, 1, 11)), REQUEST_TIMEOUT_S
    )
    after = await stats(client)
    assert isinstance(result, types.InlineCompletionList)
    texts = [item.insert_text for item in result.items]
    assert len(texts) == 3 and len(set(texts)) == 3, texts
    assert after["generated"] - before["generated"] >= 3
