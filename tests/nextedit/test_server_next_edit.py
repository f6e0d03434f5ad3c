"""The real `spec-lsp serve` answering `textDocument/copilotInlineEdit` as Copilot's clients expect,
with the deterministic fake next-edit model (`fake_rewriter.py`) behind the remote backend."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from spec_lsp.replay.client import LspClient, ServerError
from tests.nextedit.fake_rewriter import FakeRewriter

URI = "file:///work/shapes.py"
TEXT = (
    "def area(width, height):\n"
    "    return width * height\n"
    "\n"
    "\n"
    "def perimeter(width, height):\n"
    "    return 2 * (width + height)\n"
)


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeRewriter]:
    rewriter = FakeRewriter()
    yield rewriter
    rewriter.stop()


@pytest_asyncio.fixture
async def lsp(fake: FakeRewriter, tmp_path: Path) -> AsyncIterator[LspClient]:
    preset = fake.write_preset(tmp_path)
    client = LspClient([sys.executable, "-m", "spec_lsp.cli", "serve", "--preset", str(preset)])
    await client.start()
    await client.request("initialize", {"processId": None, "capabilities": {}, "rootUri": None})
    client.notify("initialized", {})
    for _ in range(600):
        if (await client.request("spec-lsp/status"))["state"] != "loading":
            break
        await asyncio.sleep(0.05)
    yield client
    await client.stop()


def apply(text: str, edit: dict[str, Any]) -> str:
    lines = text.split("\n")
    r = edit["range"]
    s, e = r["start"], r["end"]
    head = lines[s["line"]][: s["character"]]
    tail = lines[e["line"]][e["character"] :]
    return "\n".join(
        lines[: s["line"]] + (head + edit["text"] + tail).split("\n") + lines[e["line"] + 1 :]
    )


def rename_line0(client: LspClient, version: int) -> None:
    client.notify(
        "textDocument/didChange",
        {
            "textDocument": {"uri": URI, "version": version},
            "contentChanges": [
                {
                    "range": {
                        "start": {"line": 0, "character": 9},
                        "end": {"line": 0, "character": 14},
                    },
                    "text": "w",
                }
            ],
        },
    )


async def ask(
    client: LspClient, version: int, line: int = 0, character: int = 10
) -> list[dict[str, Any]]:
    params = {
        "textDocument": {"uri": URI, "version": version},
        "position": {"line": line, "character": character},
    }
    return (await client.request("textDocument/copilotInlineEdit", params))["edits"]


async def test_a_rename_is_carried_to_the_next_line_and_accepted(
    lsp: LspClient, fake: FakeRewriter
) -> None:
    lsp.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": URI, "languageId": "python", "version": 1, "text": TEXT}},
    )
    assert await ask(lsp, 1) == []  # no recent edit: nothing follows
    rename_line0(lsp, 2)
    edits = await ask(lsp, 2)
    assert len(edits) == 1
    stats = (await lsp.request("spec-lsp/stats"))["nextEdit"]
    assert stats["confidence"] == 1.0  # a backend that reports no departure: sure of it
    assert stats["cpuMs"] > 0
    edit = edits[0]
    assert edit["textDocument"] == {"uri": URI, "version": 2}
    assert edit["command"]["command"] == "spec-lsp.didAcceptInlineEdit"
    text = TEXT.replace("def area(width", "def area(w", 1)
    after = apply(text, edit)
    assert after.split("\n")[1] == "    return w * height"
    lsp.notify("textDocument/didShowInlineEdit", {"item": edit})
    lsp.notify(
        "textDocument/didChange",
        {
            "textDocument": {"uri": URI, "version": 3},
            "contentChanges": [{"range": edit["range"], "text": edit["text"]}],
        },
    )
    await lsp.request(
        "workspace/executeCommand",
        {"command": edit["command"]["command"], "arguments": edit["command"]["arguments"]},
    )
    # The rest of the same rewrite answers the next request without the model.
    asked = len(fake.prompts)
    nxt = await ask(lsp, 3, 1, 4)
    assert len(nxt) == 1 and nxt[0]["range"]["start"]["line"] >= 1
    assert len(fake.prompts) == asked
    assert "width" not in apply(after, nxt[0]).split("\n")[nxt[0]["range"]["start"]["line"]]
    stats = (await lsp.request("spec-lsp/stats"))["nextEdit"]
    assert stats["answered"] == 2 and stats["shown"] == 1 and stats["accepted"] == 1
    assert stats["confidence"] is None  # answered from the kept rewrite: no model asked


async def test_the_server_advertises_next_edit(fake: FakeRewriter, tmp_path: Path) -> None:
    preset = fake.write_preset(tmp_path)
    client = LspClient([sys.executable, "-m", "spec_lsp.cli", "serve", "--preset", str(preset)])
    await client.start()
    try:
        init = await client.request("initialize", {"processId": None, "capabilities": {}})
        assert init["capabilities"]["experimental"]["copilotInlineEdit"] is True
    finally:
        await client.stop()


async def test_a_request_for_an_older_version_answers_no_edit(lsp: LspClient) -> None:
    lsp.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": URI, "languageId": "python", "version": 1, "text": TEXT}},
    )
    rename_line0(lsp, 2)
    assert await ask(lsp, 1) == []


async def test_next_edit_off_answers_no_edit(lsp: LspClient) -> None:
    lsp.notify("workspace/didChangeConfiguration", {"settings": {"specLsp": {"nextEdit": False}}})
    lsp.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": URI, "languageId": "python", "version": 1, "text": TEXT}},
    )
    rename_line0(lsp, 2)
    assert await ask(lsp, 2) == []


async def test_a_request_without_a_version_is_invalid(lsp: LspClient) -> None:
    lsp.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": URI, "languageId": "python", "version": 1, "text": TEXT}},
    )
    with pytest.raises(ServerError):
        await lsp.request(
            "textDocument/copilotInlineEdit",
            {"textDocument": {"uri": URI}, "position": {"line": 0, "character": 0}},
        )
