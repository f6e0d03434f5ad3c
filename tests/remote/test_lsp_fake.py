"""spec-lsp serve with the remote-llama-server preset pointed at a fake engine: suggestions arrive,
an engine that goes away gives empty answers and a reason in spec-lsp/status, and it recovers."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator

import pytest

from spec_lsp.benchmarks.server import start
from spec_lsp.replay.client import LspClient
from tests.remote.fake_engine import FakeEngine
from tests.remote.lsp_doc import Doc, status_of, suggest

pytestmark = pytest.mark.timeout(120)

DOC = "def area(radius):\n    return 3.14 * radius * radius\n\n\ndef perimeter(radius):\n"


@pytest.fixture
def fake() -> Iterator[FakeEngine]:
    engine = FakeEngine(["    return", " 2", " *", " 3.14", " *", " radius", "\n"], delay_s=0.005)
    yield engine
    engine.stop()


@pytest.fixture
async def lsp(fake: FakeEngine, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[LspClient]:
    monkeypatch.setenv("SPEC_LSP_REMOTE_URL", fake.url)
    client, _ = await start("remote-llama-server", "cpu")
    yield client
    await client.stop(timeout=30.0)


async def test_suggestions_failures_and_recovery(fake: FakeEngine, lsp: LspClient) -> None:
    status = await status_of(lsp)
    assert (status["state"], status["device"]) == ("ready", "remote")
    doc = Doc(lsp, "file:///fake/circle.py", DOC)
    assert "return 2 * 3.14 * radius" in await suggest(lsp, doc.uri, doc.text)
    assert fake.paths[-1] == "/completion" and fake.bodies[-1]["stream"] is True
    stats = await lsp.request("spec-lsp/stats", timeout=30.0)
    assert stats["kvReuse"]["reusedTokens"] > 0 and stats["acceptance"] is not None

    fake.mode = "5xx"
    doc.type("\n")
    assert await suggest(lsp, doc.uri, doc.text) == ""
    status = await status_of(lsp)
    assert status["state"] == "ready" and status["engine"]["available"] is False
    assert "HTTP 503" in str(status["error"])

    fake.mode = "ok"  # the engine is back: after the back-off, the same position suggests again
    deadline, text = time.monotonic() + 10, ""
    while not text and time.monotonic() < deadline:
        await asyncio.sleep(0.3)
        text = await suggest(lsp, doc.uri, doc.text)
    assert text
    status = await status_of(lsp)
    assert status["engine"]["available"] is True and status["error"] is None
