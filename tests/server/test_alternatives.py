"""Alternatives over LSP: the tiny server answers an invoked request with distinct items (the
branches themselves: tests/completion/test_alternatives.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from lsp_helpers import REQUEST_TIMEOUT_S, doc_uri, open_doc, stats
from lsprotocol import types
from pytest_lsp import LanguageClient


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
