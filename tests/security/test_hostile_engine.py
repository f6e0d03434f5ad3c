"""A hostile engine cannot take the server's memory, time or secrets: every body it sends is read
within a byte cap and a total deadline (`remote/body.py`), and a loopback engine is reached
directly, never through the environment's proxy, so neither the API key nor the code goes there.

In-process checks count what the engine managed to send before the reader closed the connection;
`test_the_servers_peak_memory_holds_under_huge_bodies` reads the peak memory (VmHWM) of a real
`spec-lsp serve` subprocess while the engine offers a 400 MB error body and a 200 MB `/metrics`
page.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from spec_lsp.benchmarks.server import start
from spec_lsp.engine.api import GenerationRequest
from spec_lsp.remote import RemoteSpec, connect
from spec_lsp.remote.llama_server import LlamaServerBackend
from spec_lsp.remote.sse import RemoteError
from tests.remote.fake_engine import FakeEngine
from tests.remote.lsp_doc import Doc, suggest
from tests.security.hostile_engine import HostileEngine
from tests.security.memory import MIB, peak_rss

pytestmark = pytest.mark.timeout(120)
KEY_ENV = "SPEC_LSP_TEST_KEY"
READ_AT_MOST = 32 * MIB  # the caps are 4 MiB and less; socket buffers hold a few MB more
MEMORY_BOUND = 100 * MIB


def backend_on(url: str, **spec: object) -> LlamaServerBackend:
    backend = connect(RemoteSpec(kind="llama-server", url=url, **spec))  # type: ignore[arg-type]
    assert isinstance(backend, LlamaServerBackend)
    return backend


@pytest.fixture
def hostile() -> Iterator[HostileEngine]:
    sizes = {"/completion": 400_000_000, "/metrics": 200_000_000, "/tokenize": 200_000_000}
    engine = HostileEngine({**sizes, "warm-up": 200_000_000})
    yield engine
    engine.stop()


def test_a_400_mb_error_body_is_read_only_for_its_start(hostile: HostileEngine) -> None:
    backend = backend_on(hostile.url, metrics_interval_s=0)
    result = backend.generate(GenerationRequest("p"))
    assert result.stats.stop_reason == "error"
    assert "HTTP 500" in str(backend.status()["message"])
    assert hostile.wait("/completion") < READ_AT_MOST
    backend.close()


def test_a_200_mb_metrics_page_is_refused_past_its_cap(hostile: HostileEngine) -> None:
    backend = backend_on(hostile.url)
    backend.metrics.figures = kept = {"draftTokens": 1}
    backend.metrics.poll()
    assert backend.metrics.figures is kept  # a failed poll keeps the last figures
    assert hostile.wait("/metrics") < READ_AT_MOST
    backend.close()


def test_a_warm_up_or_tokenize_answer_past_its_cap_is_an_error(hostile: HostileEngine) -> None:
    backend = backend_on(hostile.url)
    with pytest.raises(RemoteError, match="max_stream_bytes"):
        backend.send_warmup("/completion", {"prompt": "p", "stream": False})
    assert hostile.wait("warm-up") < READ_AT_MOST
    assert backend.count_tokens("abcdefgh") == 2  # the estimate
    assert hostile.wait("/tokenize") < READ_AT_MOST
    backend.close()


def test_a_page_dripped_without_end_is_closed_at_its_deadline() -> None:
    engine = HostileEngine({"/metrics": -1}, drip_s=0.02)
    try:
        backend = backend_on(engine.url, max_stream_s=1.0)
        backend.metrics.poll()  # returns: before the total deadline, it never did
        assert engine.wait("/metrics") > 0
        backend.close()
    finally:
        engine.stop()


class Proxy:
    """A listener that records whatever is sent to it, as a proxy named in the environment."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.seen: list[bytes] = []
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            with client:
                client.settimeout(2)
                try:
                    self.seen.append(client.recv(65536))
                except OSError:
                    self.seen.append(b"")


def test_a_loopback_engine_is_reached_directly_never_through_the_proxy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    proxy, engine = Proxy(), FakeEngine(["x = 1\n"])
    engine.metrics = "llamacpp:spec_decode_num_draft_tokens_total 4\n"
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, proxy.url)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(KEY_ENV, "sk-secret")
    try:
        backend = backend_on(engine.url, api_key_env=KEY_ENV)
        assert backend.generate(GenerationRequest("p", max_new_tokens=8)).text == "x = 1\n"
        assert backend.count_tokens("x" * 30) == 10  # the engine's own count
        backend.send_warmup("/completion", {"prompt": "p", "stream": False})
        backend.metrics.poll()
        assert backend.metrics.figures is not None
        backend.close()
    finally:
        proxy.sock.close()
        engine.stop()
    assert proxy.seen == []
    assert engine.paths == ["/completion", "/tokenize", "/completion"]


def test_only_an_engine_on_another_host_may_go_through_the_proxy() -> None:
    for url in ("http://127.0.0.1:8080", "http://localhost:8080", "https://[::1]:8443"):
        assert RemoteSpec(kind="llama-server", url=url).client_options()["trust_env"] is False
    remote = RemoteSpec(kind="llama-server", url="https://engine.example:8443", verify_tls=False)
    assert remote.client_options() == {"verify": False, "trust_env": True}


async def test_the_servers_peak_memory_holds_under_huge_bodies(
    hostile: HostileEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 400 MB error body for a suggestion, then (the poll that follows a generation) a 200 MB
    /metrics page: the server's peak memory stays within MEMORY_BOUND of its idle figure."""
    monkeypatch.setenv("SPEC_LSP_REMOTE_URL", hostile.url)
    client, _ = await start("remote-llama-server", "cpu")
    try:
        idle = peak_rss(client.pid)
        doc = Doc(client, "file:///hostile/a.py", "def area(r):\n    return ")
        assert await suggest(client, doc.uri, doc.text) == ""
        assert hostile.wait("/completion") < READ_AT_MOST
        assert hostile.wait("/metrics") < READ_AT_MOST
        grown = peak_rss(client.pid) - idle
        assert grown < MEMORY_BOUND, f"peak memory grew by {grown / MIB:.0f} MiB"
    finally:
        await client.stop(timeout=30.0)
