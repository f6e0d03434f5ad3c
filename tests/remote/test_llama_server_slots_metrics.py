"""Against the real llama-server with two slots, n-gram speculation and `--metrics`: each document
is served in its own slot, and the engine's /metrics counters agree with its per-request figures."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from spec_lsp.engine.api import GenerationRequest
from spec_lsp.remote import RemoteSpec, connect
from spec_lsp.remote.launch import LlamaServer
from spec_lsp.remote.stream import Chunk, RemoteBackend

pytestmark = [pytest.mark.llama_server, pytest.mark.timeout(300)]

PROMPT = "def f():\n    return 1\n\n\n"
LOOP = "a b c d e f g " * 3 + "a b c"  # the model repeats it: the n-gram drafter proposes
SPECULATION = ("--spec-type", "ngram-mod", "--spec-draft-n-max", "4")


@pytest.fixture(scope="module")
def server(
    llama_server_binary: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LlamaServer]:
    from spec_lsp.engine.from_source import bundled_gguf

    log = tmp_path_factory.mktemp("llama-slots") / "llama-server.log"
    extra = ("--metrics", "-np", "2", *SPECULATION)
    s = LlamaServer(
        llama_server_binary, bundled_gguf("smollm2-135m-instruct"), extra=extra, log=log
    )
    s.start()
    yield s
    s.stop()


def test_each_document_is_served_in_its_own_slot(server: LlamaServer) -> None:
    b = connect(RemoteSpec(kind="llama-server", url=server.url, read_timeout_s=30.0, slots=2))
    seen: list[int] = []
    read_chunk = b.read_chunk

    def recording(data: dict[str, Any]) -> Chunk:
        if data.get("stop") is True:  # partial chunks say -1 in this build; the last one says
            seen.append(int(data["id_slot"]))
        return read_chunk(data)

    b.read_chunk = recording  # type: ignore[method-assign]
    try:
        used: dict[str, int] = {}
        for doc in ("file:///a.py", "file:///b.py", "file:///a.py", "file:///b.py"):
            seen.clear()
            result = b.generate(GenerationRequest(PROMPT + doc, doc_id=doc, max_new_tokens=8))
            assert result.text and result.stats.stop_reason != "error"
            assert len(seen) == 1
            used.setdefault(doc, seen[0])
            assert seen[0] == used[doc]  # the same slot every time
        assert sorted(used.values()) == [0, 1]
    finally:
        b.close()


def counts(b: RemoteBackend) -> tuple[int, int]:
    """(drafted, accepted) as the engine's /metrics page says now."""
    b.metrics.poll()
    figures = b.engine_stats()
    assert figures is not None and figures["source"] == "llamacpp"
    return int(str(figures["draftTokens"])), int(str(figures["acceptedTokens"]))


def test_the_metrics_counters_agree_with_the_per_request_draft_figures(server: LlamaServer) -> None:
    b = connect(RemoteSpec(kind="llama-server", url=server.url, read_timeout_s=30.0))
    try:
        before = counts(b)
        drafted = accepted = 0
        for n in (24, 32):
            result = b.generate(GenerationRequest(LOOP, max_new_tokens=n))
            assert result.stats.stop_reason in ("max_tokens", "eos")
            drafted += result.stats.proposed_tokens
            accepted += result.stats.accepted_tokens
        assert drafted > 0  # n-gram speculation ran
        deadline, now = time.monotonic() + 10, before
        while now[0] - before[0] < drafted and time.monotonic() < deadline:
            time.sleep(0.05)  # the engine adds a slot's counts when it releases the slot
            now = counts(b)
        assert (now[0] - before[0], now[1] - before[1]) == (drafted, accepted)
    finally:
        b.close()
