"""A remote engine cannot hold the worker or the memory, nor make spec-lsp leak a key: a stream
past its preset's byte or time cap ends as an error that says which cap, and an API key is never
put on plain HTTP to another machine (checked against the fake engine of tests/remote/)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from spec_lsp.engine.api import GenerationRequest
from spec_lsp.remote import RemoteSpec, RemoteSpecError, connect, parse_backend
from spec_lsp.remote.spec import MAX_STREAM_BYTES, MAX_STREAM_S, InsecureKeyError
from tests.remote.fake_engine import FakeEngine

pytestmark = pytest.mark.timeout(60)

KEY_ENV = "SPEC_LSP_TEST_KEY"


@pytest.fixture
def engine() -> Iterator[FakeEngine]:
    fake = FakeEngine(["x = 1\n"] * 40, delay_s=0.05)  # 40 chunks over about two seconds
    yield fake
    fake.stop()


def test_a_stream_past_its_byte_cap_ends_with_an_error_naming_the_cap(engine: FakeEngine) -> None:
    backend = connect(RemoteSpec(kind="llama-server", url=engine.url, max_stream_bytes=1000))
    result = backend.generate(GenerationRequest("p", max_new_tokens=64))
    assert (result.text, result.stats.stop_reason) == ("", "error")
    assert "max_stream_bytes" in str(backend.status()["message"])


def test_a_stream_past_its_time_cap_ends_with_an_error_naming_the_cap(engine: FakeEngine) -> None:
    backend = connect(RemoteSpec(kind="llama-server", url=engine.url, max_stream_s=0.3))
    result = backend.generate(GenerationRequest("p", max_new_tokens=64))
    assert (result.text, result.stats.stop_reason) == ("", "error")
    assert "max_stream_s" in str(backend.status()["message"])


def test_a_stream_within_its_caps_is_whole(engine: FakeEngine) -> None:
    engine.delay_s = 0.0
    backend = connect(RemoteSpec(kind="llama-server", url=engine.url))
    assert backend.generate(GenerationRequest("p")).text == "x = 1\n" * 40


def test_the_caps_are_read_from_the_backend_table_with_defaults() -> None:
    table = {"kind": "llama-server", "url": "http://127.0.0.1:1"}
    spec = parse_backend("p", table)
    assert spec is not None
    assert (spec.max_stream_bytes, spec.max_stream_s) == (MAX_STREAM_BYTES, MAX_STREAM_S)
    spec = parse_backend("p", {**table, "max_stream_bytes": 2048, "max_stream_s": 5})
    assert spec is not None and (spec.max_stream_bytes, spec.max_stream_s) == (2048, 5.0)
    for bad in ({"max_stream_bytes": 0}, {"max_stream_bytes": 1.5}, {"max_stream_s": "10"}):
        with pytest.raises(RemoteSpecError, match=next(iter(bad))):
            parse_backend("p", {**table, **bad})


def test_an_api_key_is_refused_over_plain_http_to_another_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-secret")
    spec = RemoteSpec(kind="openai-compatible", url="http://10.0.0.5:8000", api_key_env=KEY_ENV)
    with pytest.raises(InsecureKeyError, match="https://") as refused:
        spec.headers()
    assert "sk-secret" not in str(refused.value)
    result = connect(spec).generate(GenerationRequest("p"))  # refused before any connection
    assert result.stats.stop_reason == "error"
    for url in ("https://10.0.0.5:8000", "http://127.0.0.1:8000", "http://[::1]:8000"):
        assert RemoteSpec(kind="llama-server", url=url, api_key_env=KEY_ENV).headers() == {
            "Authorization": "Bearer sk-secret"
        }


def test_the_refused_key_never_reaches_the_engine(
    engine: FakeEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fake listens on 127.0.0.1, so the override names it by another address of this
    machine (the host's name), which is not loopback to the check: nothing may be sent."""
    monkeypatch.setenv(KEY_ENV, "sk-secret")
    monkeypatch.setenv("SPEC_LSP_REMOTE_URL", f"http://0.0.0.0:{engine.port}")
    backend = connect(RemoteSpec(kind="llama-server", url=engine.url, api_key_env=KEY_ENV))
    result = backend.generate(GenerationRequest("p"))
    assert result.stats.stop_reason == "error" and "plain http" in str(backend.status()["message"])
    assert engine.bodies == []
    assert backend.count_tokens("abcdefgh") == 2  # the estimate: /tokenize was not asked either
    assert engine.bodies == []
