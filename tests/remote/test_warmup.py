"""Prompt-only warm-ups (`spec_lsp/remote/warmup.py`) against the fake engine: a request closed
before its first token is sent again once, prompt-only; a superseding keystroke does not cancel
it; a newer prompt replaces a waiting one; failures are counted and reported, never raised."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from spec_lsp.engine.api import CancelToken, GenerationRequest, GenerationResult
from spec_lsp.remote import RemoteSpec, connect, parse_backend
from spec_lsp.remote.stream import RemoteBackend
from tests.remote.fake_engine import WAIT_S, Clock, FakeEngine, wait_until

pytestmark = pytest.mark.timeout(60)

PIECES = ["r.width", " * r.height"]


@pytest.fixture
def fake() -> Iterator[FakeEngine]:
    engine = FakeEngine(PIECES, delay_s=0.001)
    engine.prefill_s = 1.0  # every stream is silent for 1 s: its prompt is being evaluated
    yield engine
    engine.stop()


def backend_for(fake: FakeEngine, clock: Clock | None = None, **kw: object) -> RemoteBackend:
    spec = RemoteSpec(kind="llama-server", url=fake.url, read_timeout_s=5.0, **kw)  # type: ignore[arg-type]
    return connect(spec) if clock is None else connect(spec, clock)


def held(fake: FakeEngine) -> threading.Event:
    """Warm-ups stay in flight on the engine until the returned event is set."""
    fake.warm_gate = threading.Event()
    return fake.warm_gate


def superseded(
    backend: RemoteBackend, fake: FakeEngine, prompt: str, doc: str = "file:///a.py"
) -> GenerationResult:
    """A request cancelled, as a keystroke does, once the engine has it (in its silent prefill)."""
    token = CancelToken()
    seen = len(fake.bodies)

    def keystroke() -> None:
        wait_until(lambda: len(fake.bodies) > seen, timeout=WAIT_S)
        token.cancel()

    threading.Thread(target=keystroke, daemon=True).start()
    return backend.generate(GenerationRequest(prompt, doc_id=doc, cancel=token))


def test_a_request_closed_before_its_first_token_is_warmed_once(fake: FakeEngine) -> None:
    backend = backend_for(fake, slots=2)
    result = superseded(backend, fake, "x = 1\n" * 40)
    assert result.cancelled and result.text == ""
    assert wait_until(lambda: fake.warm_done == 1)
    assert backend.warmer is not None and wait_until(backend.warmer.idle)
    (warm,) = fake.warm_bodies
    stream = fake.bodies[0]
    assert warm["prompt"] == stream["prompt"] and fake.paths == ["/completion", "/completion"]
    assert (warm["n_predict"], warm["stream"], warm["cache_prompt"]) == (0, False, True)
    assert warm["id_slot"] == stream["id_slot"] == 0  # the same slot as the request it follows
    assert "stop" not in warm and "timings_per_token" not in warm
    assert backend.warmup_stats() == {
        "done": 1,
        "failed": 0,
        "replaced": 0,
        "dropped": 0,
        "waiting": 0,
        "inFlight": 0,
        "evaluatedTokens": len(warm["prompt"]) // 3,
    }
    assert backend.status()["available"] is True


def test_no_warm_up_once_text_streamed_or_when_it_ran_to_its_end(fake: FakeEngine) -> None:
    fake.prefill_s = 0.0
    backend = backend_for(fake)
    assert backend.generate(GenerationRequest("p", doc_id="d")).text == "".join(PIECES)
    fake.hold_after = 1  # the second piece is not sent while the test runs
    token = CancelToken()
    request = GenerationRequest("p", doc_id="d", cancel=token, on_text=lambda _t: token.cancel())
    assert backend.generate(request).cancelled  # closed after its first token: prompt done
    # A warm-up is offered, if at all, before `generate` returns: it would be waiting, in
    # flight or counted by now.
    assert backend.warmer is not None and backend.warmer.idle()
    assert backend.warmup_stats() == dict.fromkeys(
        ("done", "failed", "replaced", "dropped", "waiting", "inFlight", "evaluatedTokens"), 0
    )


def test_a_superseding_keystroke_does_not_cancel_the_warm_up(fake: FakeEngine) -> None:
    gate = held(fake)
    backend = backend_for(fake)
    superseded(backend, fake, "first")
    assert wait_until(lambda: len(fake.warm_bodies) == 1)  # in flight
    # The next keystrokes' requests run (and are closed) while it is in flight; the editor side
    # never waits for it: a request that finishes comes back while the warm-up is held.
    superseded(backend, fake, "first and more")
    fake.prefill_s = 0.0
    assert backend.generate(GenerationRequest("first and more", doc_id="file:///a.py")).text
    assert fake.warm_done == 0 and not gate.is_set()
    gate.set()
    assert wait_until(lambda: fake.warm_done == 2)  # the first completed, then the newer one
    assert [b["prompt"] for b in fake.warm_bodies] == ["first", "first and more"]
    assert wait_until(lambda: fake.closed == 2)  # the two superseded streams, never a warm-up


def test_a_newer_prompt_replaces_a_waiting_one_never_piling_up(fake: FakeEngine) -> None:
    gate = held(fake)
    backend = backend_for(fake)
    superseded(backend, fake, "p1")
    assert wait_until(lambda: len(fake.warm_bodies) == 1)  # p1 in flight
    for prompt in ("p2", "p3", "p4"):
        superseded(backend, fake, prompt)
    superseded(backend, fake, "other doc", doc="file:///b.py")
    assert backend.warmer is not None and backend.warmer.waiting() == 2  # one per document
    gate.set()
    assert wait_until(lambda: fake.warm_done == 3, timeout=WAIT_S)
    assert wait_until(backend.warmer.idle)
    assert [b["prompt"] for b in fake.warm_bodies] == ["p1", "p4", "other doc"]
    stats = backend.warmup_stats()
    assert stats is not None and (stats["done"], stats["replaced"]) == (3, 2)


def test_a_closed_document_drops_its_waiting_warm_up(fake: FakeEngine) -> None:
    gate = held(fake)
    backend = backend_for(fake)
    superseded(backend, fake, "p1")
    assert wait_until(lambda: len(fake.warm_bodies) == 1)
    superseded(backend, fake, "p2")
    backend.forget("file:///a.py")
    gate.set()
    assert backend.warmer is not None and wait_until(backend.warmer.idle)
    assert [b["prompt"] for b in fake.warm_bodies] == ["p1"]
    assert backend.warmup_stats()["dropped"] == 1  # type: ignore[index]


def test_a_failed_warm_up_is_counted_and_reported_like_any_failure(fake: FakeEngine) -> None:
    fake.warm_mode = "5xx"
    clock = Clock()
    backend = backend_for(fake, clock)
    superseded(backend, fake, "p1")
    assert backend.warmer is not None
    assert wait_until(lambda: backend.warmer is not None and backend.warmer.failed == 1)
    status = backend.status()
    assert status["available"] is False
    assert "HTTP 503 from /completion (warm-up)" in str(status["message"])
    # Backing off, as after any failure: a request is answered empty without reaching the engine,
    # and a warm-up offered meanwhile is dropped, not sent.
    # The clock stands still: the back-off lasts as long as this test needs.
    calls = len(fake.bodies)
    assert backend.generate(GenerationRequest("p", doc_id="file:///a.py")).stats.stop_reason == (
        "error"
    )
    backend.warmer.offer("file:///a.py", "/completion", {"prompt": "p2", "stream": False})
    assert wait_until(lambda: backend.warmer is not None and backend.warmer.dropped == 1)
    assert len(fake.bodies) == calls
    # The engine answers again: the next request after the delay recovers.
    fake.warm_mode, fake.prefill_s = "ok", 0.0
    clock.advance(0.5)  # the back-off after one failure
    assert backend.generate(GenerationRequest("p", doc_id="file:///a.py")).text
    assert backend.status()["available"] is True


def test_an_engine_gone_makes_a_warm_up_fail_with_a_reason(fake: FakeEngine) -> None:
    backend = backend_for(fake)
    assert backend.warmer is not None
    fake.stop()  # nothing listens any more
    backend.warmer.offer("d", "/completion", {"prompt": "p", "stream": False})
    assert wait_until(lambda: backend.warmer is not None and backend.warmer.failed == 1)
    assert "connection refused" in str(backend.status()["message"])
    backend.close()


def test_warm_ups_are_llama_server_only_and_can_be_switched_off(fake: FakeEngine) -> None:
    assert backend_for(fake, warmup=False).warmup_stats() is None
    openai = connect(RemoteSpec(kind="openai-compatible", url=fake.url, model="m"))
    assert openai.warmer is None and openai.warmup_stats() is None
    spec = parse_backend("p", {"kind": "llama-server", "url": fake.url, "warmup": False})
    assert spec is not None and spec.warmup is False
    with pytest.raises(ValueError, match="warmup"):
        parse_backend("p", {"kind": "llama-server", "url": fake.url, "warmup": "yes"})
    off = backend_for(fake, warmup=False)
    superseded(off, fake, "p")
    assert off.warmer is None  # nothing that could send one later
    assert fake.warm_bodies == []
