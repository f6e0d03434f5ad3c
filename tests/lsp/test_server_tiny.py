"""End-to-end: the real server process with the tiny random-weight pair."""

from __future__ import annotations

from lsp_helpers import inline, open_doc, stats
from lsprotocol import types
from pytest_lsp import LanguageClient

URI = "file:///tmp/spec_lsp_demo.py"


async def test_inline_completion_is_advertised_and_answers_with_an_accept_command(
    client: LanguageClient,
) -> None:
    open_doc(client, URI, "import os\n\ndef main():\n    x = os.")
    result = await inline(client, URI, 3, 11)
    assert result is not None
    s = await stats(client)
    assert s["requests"] == 1
    for item in result.items:
        assert isinstance(item.insert_text, str) and item.insert_text
        assert item.range == types.Range(
            start=types.Position(line=3, character=11), end=types.Position(line=3, character=11)
        )
        assert item.command is not None
        assert item.command.command == "spec-lsp.didAcceptCompletion"
