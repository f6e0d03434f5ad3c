"""Driving `spec-lsp serve` through replay's LSP client: a document typed into at its end."""

from __future__ import annotations

from typing import Any

from spec_lsp.benchmarks.server import answer, end_position, inline, insert_at_end, open_doc
from spec_lsp.replay.client import LspClient


async def status_of(client: LspClient) -> dict[str, Any]:
    result: dict[str, Any] = await client.request("spec-lsp/status", timeout=30.0)
    return result


async def suggest(client: LspClient, uri: str, text: str) -> str:
    result = await answer(client, inline(client, uri, end_position(text)))
    items = result["items"] if isinstance(result, dict) else result
    return str(items[0]["insertText"]) if items else ""


class Doc:
    """A document typed into at its end, so each request has a new prompt (no cache answers)."""

    def __init__(self, client: LspClient, uri: str, text: str) -> None:
        self.client, self.uri, self.text, self.version = client, uri, text, 1
        open_doc(client, uri, text)

    def type(self, typed: str) -> None:
        insert_at_end(self.client, self.uri, self.version + 1, self.text, typed)
        self.version += 1
        self.text += typed
