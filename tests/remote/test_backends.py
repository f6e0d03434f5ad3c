"""Remote backends against a fake engine: streaming, early close, cancel, failures, recovery."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from spec_lsp.engine.api import CancelToken, GenerationRequest, GenerationResult
from spec_lsp.remote import RemoteSpec, connect, parse_backend
from spec_lsp.remote.llama_server import split_fim
from spec_lsp.remote.stream import RemoteBackend
from tests.remote.fake_engine import WAIT_S, Clock, FakeEngine, wait_until

PIECES = ["def", " add", "(a", ", b", "):", "\n", "    return", " a", " +", " b", "\n"] * 3


@pytest.fixture
def engine() -> Iterator[FakeEngine]:
    fake = FakeEngine(PIECES)
    yield fake
    fake.stop()


def backend_for(
    fake: FakeEngine, kind: str = "llama-server", fim: str = "none", clock: Clock | None = None
) -> RemoteBackend:
    spec = RemoteSpec(kind=kind, url=fake.url, model="m", read_timeout_s=1.0, fim=fim)
    return connect(spec) if clock is None else connect(spec, clock)


def test_llama_server_streams_a_completion_with_engine_stats(engine: FakeEngine) -> None:
    streamed: list[str] = []
    result = backend_for(engine).generate(
        GenerationRequest("x = 1\n", max_new_tokens=40, on_text=streamed.append)
    )
    assert result.text == "".join(PIECES)
    assert "".join(streamed) == result.text
    s = result.stats
    assert (s.stop_reason, s.generated_tokens) == ("max_tokens", len(PIECES))
    assert (s.reused_tokens, s.prefilled_tokens, s.prompt_tokens) == (8, 4, 12)
    assert (s.proposed_tokens, s.accepted_tokens) == (6, 4)
    assert engine.paths == ["/completion"]
    body = engine.bodies[0]
    assert body["stream"] and body["cache_prompt"] and body["n_predict"] == 40
    assert body["samplers"] == ["top_k"] and body["top_k"] == 1


def test_openai_streams_over_sse_with_usage() -> None:
    fake = FakeEngine(PIECES[:5], flavor="openai")
    try:
        result = backend_for(fake, "openai-compatible").generate(GenerationRequest("p"))
    finally:
        fake.stop()
    assert result.text == "".join(PIECES[:5])
    assert result.stats.stop_reason == "max_tokens"
    assert (result.stats.prompt_tokens, result.stats.reused_tokens) == (10, 6)
    assert fake.paths == ["/v1/completions"] and fake.bodies[0]["model"] == "m"


def test_fim_prompt_goes_to_infill_split_back() -> None:
    prompt = "<|fim_prefix|>def f(\n<|fim_suffix|>\nreturn 1<|fim_middle|>"
    assert split_fim(prompt, "qwen") == ("def f(\n", "\nreturn 1", "")
    assert split_fim(prompt + "    x", "qwen") == ("def f(\n", "\nreturn 1", "    x")
    assert split_fim("plain", "qwen") is None
    spm = "<fim_prefix><fim_suffix>S<fim_middle>P"
    assert split_fim(spm, "starcoder") == ("P", "S", "")
    fake = FakeEngine(PIECES[:2])
    try:
        backend_for(fake, fim="qwen").generate(GenerationRequest(prompt))
    finally:
        fake.stop()
    assert fake.paths == ["/infill"]
    assert fake.bodies[0]["input_prefix"] == "def f(\n"
    assert fake.bodies[0]["input_suffix"] == "\nreturn 1"
    assert fake.bodies[0]["prompt"] == ""


def test_stop_callback_closes_the_stream_early(engine: FakeEngine) -> None:
    engine.delay_s = 0.05
    cb = lambda text: text.index("\n") if "\n" in text else None  # noqa: E731
    result = backend_for(engine).generate(GenerationRequest("p", stop_callback=cb))
    assert result.text == "def add(a, b):"
    assert result.stats.stop_reason == "callback"
    assert wait_until(lambda: engine.sent, timeout=3.0)
    assert engine.sent[0] < len(PIECES)  # the server stopped writing: the stream was closed


def test_stop_string_cuts_and_closes(engine: FakeEngine) -> None:
    result = backend_for(engine).generate(GenerationRequest("p", stop_strings=("return",)))
    assert result.text == "def add(a, b):\n    "
    assert result.stats.stop_reason == "stop_string"
    assert engine.bodies[0]["stop"] == ["return"]


def test_cancel_closes_the_request_within_one_chunk(engine: FakeEngine) -> None:
    engine.hold_after = 1  # the second chunk is not sent until the test says
    token = CancelToken()
    streamed: list[str] = []
    request = GenerationRequest("p", cancel=token, on_text=streamed.append)
    results: list[GenerationResult] = []
    thread = threading.Thread(target=lambda: results.append(backend_for(engine).generate(request)))
    thread.start()
    assert wait_until(lambda: streamed, timeout=WAIT_S)
    token.cancel()
    thread.join(WAIT_S)
    # It came back while the engine still held its next chunk: not a chunk later.
    assert results and not engine.released.is_set()
    assert results[0].cancelled and results[0].text == PIECES[0]
    engine.released.set()
    assert wait_until(lambda: engine.sent, timeout=WAIT_S) and engine.sent[0] < len(PIECES)


def test_cancel_during_a_silent_prefill_is_immediate(engine: FakeEngine) -> None:
    engine.mode = "slow"  # no chunk for 30 s, past the backend's 1 s read timeout
    token = CancelToken()

    def keystroke() -> None:
        wait_until(lambda: engine.bodies, timeout=WAIT_S)
        token.cancel()

    threading.Thread(target=keystroke, daemon=True).start()
    result = backend_for(engine).generate(GenerationRequest("p", cancel=token))
    # Cancelled, not timed out: it came back before the 1 s read timeout could fire.
    assert result.cancelled and result.text == "" and result.stats.stop_reason == "cancelled"


@pytest.mark.parametrize(
    ("mode", "words"),
    [("5xx", "HTTP 503"), ("malformed", "malformed chunk"), ("reset", "mid-answer")],
)
def test_failures_are_empty_with_a_reason_then_recover(
    engine: FakeEngine, mode: str, words: str
) -> None:
    clock = Clock()
    backend = backend_for(engine, clock=clock)
    engine.mode = mode
    result = backend.generate(GenerationRequest("p"))
    assert (result.text, result.stats.stop_reason) == ("", "error")
    status = backend.status()
    assert status["available"] is False and words in str(status["message"])
    # Backing off: the next request is answered at once without reaching the engine.
    calls = len(engine.bodies)
    clock.advance(0.49)
    assert backend.generate(GenerationRequest("p")).stats.stop_reason == "error"
    assert len(engine.bodies) == calls
    engine.mode = "ok"
    clock.advance(0.02)  # the back-off after one failure (0.5 s) has passed
    assert backend.generate(GenerationRequest("p")).text == "".join(PIECES)
    assert backend.status()["available"] is True


def test_slow_engine_times_out_with_a_reason(engine: FakeEngine) -> None:
    engine.mode = "slow"
    backend = backend_for(engine)  # read timeout 1 s
    result = backend.generate(GenerationRequest("p"))
    assert result.stats.stop_reason == "error"
    assert "no answer within 1 s" in str(backend.status()["message"])


def test_engine_down_is_a_reason_and_backs_off() -> None:
    fake = FakeEngine(PIECES)
    fake.stop()  # nothing listens on the port any more
    backend = backend_for(fake)
    assert backend.generate(GenerationRequest("p")).text == ""
    message = str(backend.status()["message"])
    assert "connection refused" in message and "retrying at the first request after " in message
    assert backend.health.failures == 1


def test_count_tokens_asks_the_server_then_estimates(engine: FakeEngine) -> None:
    backend = backend_for(engine)
    assert backend.count_tokens("x" * 30) == 10
    engine.stop()
    assert backend.count_tokens("x" * 40) == 10  # chars/4


def test_backend_table_parses_and_keeps_the_key_out(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse_backend("p", None) is None
    assert parse_backend("p", {"kind": "local"}) is None
    spec = parse_backend(
        "p", {"kind": "openai-compatible", "url": "https://h:1/", "api_key_env": "K"}, "qwen"
    )
    assert spec is not None and spec.verify_tls and spec.fim == "qwen"
    monkeypatch.setenv("K", "sekrit")
    assert spec.headers() == {"Authorization": "Bearer sekrit"}
    assert "sekrit" not in repr(spec)
    with pytest.raises(ValueError, match="kind"):
        parse_backend("p", {"kind": "grpc"})
    with pytest.raises(ValueError, match="url"):
        parse_backend("p", {"kind": "llama-server", "url": "ftp://x"})
