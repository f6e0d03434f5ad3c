"""docs/protocol.md names every field `spec-lsp/stats` and `spec-lsp/status` return.

The real tiny server answers both methods; each key it returns, at every depth, must appear in
backticks (or JSON quotes) in that method's entry of the doc, so the doc cannot drift again.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsp_helpers import REQUEST_TIMEOUT_S, _plain, request, server_command, start_session
from pytest_lsp import ClientServerConfig, LanguageClient

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"


@pytest_lsp.fixture(config=ClientServerConfig(server_command=server_command("tiny")))
async def client(lsp_client: LanguageClient):
    await start_session(lsp_client, "visual-studio-code")
    yield
    await asyncio.wait_for(lsp_client.shutdown_session(), REQUEST_TIMEOUT_S)


def entry(method: str) -> str:
    """The doc's bullet for request `method`, up to the next top-level bullet or heading."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"- request `{method}`")
    end = re.compile(r"^(- |#)", re.M).search(text, start + 1)
    return text[start : end.start() if end else len(text)]


def keys(value: Any, path: str = "") -> list[str]:
    """Every key of a nested object, as dotted paths."""
    if not isinstance(value, dict):
        return []
    out = []
    for k, v in value.items():
        out.append(path + k)
        out += keys(v, path + k + ".")
    return out


def undocumented(value: dict[str, Any], doc: str) -> list[str]:
    named = set(re.findall(r"`([A-Za-z]+)`", doc)) | set(re.findall(r'"([A-Za-z]+)"', doc))
    for group in re.findall(r"`\{([^}`]*)\}`", doc):  # `{a, b: int|null}`: a and b
        named |= {m.group(1) for part in group.split(",") if (m := re.match(r"\s*(\w+)", part))}
    return [p for p in keys(value) if p.rsplit(".", 1)[-1] not in named]


@pytest.mark.parametrize("method", ["spec-lsp/stats", "spec-lsp/status"])
async def test_every_field_the_server_returns_is_in_the_protocol_doc(
    client: LanguageClient, method: str
) -> None:
    value = _plain(await request(client, method))
    assert isinstance(value, dict) and value
    assert undocumented(value, entry(method)) == []


def test_the_doc_check_finds_a_missing_field() -> None:
    doc = "- request `x` -> `a`, `b` `{c, d: int|null}`"
    assert undocumented({"a": 1, "b": {"c": 1, "d": 2}}, doc) == []
    assert undocumented({"a": 1, "e": {"c": 1, "f": 2}}, doc) == ["e", "e.f"]
