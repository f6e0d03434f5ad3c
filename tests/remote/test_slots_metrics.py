"""A stable llama-server slot per document, and the engine's speculative counters from /metrics."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from spec_lsp.engine.api import GenerationRequest
from spec_lsp.remote import RemoteSpec, RemoteSpecError, connect, parse_backend
from spec_lsp.remote.metrics import MetricsPoller, parse_prometheus, spec_figures
from spec_lsp.remote.slots import OFF, Slots
from tests.remote.fake_engine import WAIT_S, FakeEngine, wait_until

VLLM_PAGE = """\
# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="Qwen/Qwen2.5-Coder-7B"} 30.0
vllm:spec_decode_num_drafts_total{engine="1",model_name="Qwen/Qwen2.5-Coder-7B"} 10.0
vllm:spec_decode_num_drafts_created{engine="0",model_name="Qwen/Qwen2.5-Coder-7B"} 1.7e+09
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="Qwen/Qwen2.5-Coder-7B"} 120.0
vllm:spec_decode_num_draft_tokens_total{engine="1",model_name="Qwen/Qwen2.5-Coder-7B"} 40.0
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="Qwen/Qwen2.5-Coder-7B"} 90.0
vllm:spec_decode_num_accepted_tokens_total{engine="1",model_name="Qwen/Qwen2.5-Coder-7B"} 30.0
vllm:num_requests_running{engine="0",model_name="Qwen/Qwen2.5-Coder-7B"} 1.0
"""
LLAMA_PAGE = """\
# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 812
llamacpp:spec_decode_num_draft_tokens_total 64
llamacpp:spec_decode_num_accepted_tokens_total 16
llamacpp:spec_decode_num_drafts_total 20
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="0"} 12
"""


def test_a_document_keeps_its_slot_and_a_new_one_takes_the_least_recently_used() -> None:
    slots = Slots(2)
    assert (slots.slot("a"), slots.slot("b"), slots.slot("a")) == (0, 1, 0)
    assert slots.slot("c") == 1  # b was used least recently
    assert (slots.slot("a"), slots.slot("c")) == (0, 1)
    slots.forget("a")
    assert slots.slot("d") == 0  # a's slot is free again
    assert Slots(0).slot("a") == OFF and Slots(2).slot(None) == OFF


def test_slots_send_a_stable_id_slot_per_document_and_none_when_off() -> None:
    fake = FakeEngine(["x"])
    try:
        on = connect(RemoteSpec(kind="llama-server", url=fake.url, slots=2))
        for doc in ("file:///a.py", "file:///b.py", "file:///a.py", None):
            on.generate(GenerationRequest("p", doc_id=doc))
        connect(RemoteSpec(kind="llama-server", url=fake.url)).generate(
            GenerationRequest("p", doc_id="file:///a.py")
        )
    finally:
        fake.stop()
    assert [body.get("id_slot") for body in fake.bodies] == [0, 1, 0, None, None]


def test_the_preset_reads_slots_and_the_metrics_interval() -> None:
    table = {"kind": "llama-server", "url": "http://h:1", "slots": 4, "metrics_interval_s": 2}
    spec = parse_backend("p", table)
    assert spec is not None and (spec.slots, spec.metrics_interval_s) == (4, 2.0)
    plain = parse_backend("p", {"kind": "llama-server", "url": "http://h:1"})
    assert plain is not None and (plain.slots, plain.metrics_interval_s) == (0, 5.0)
    for bad in (-1, 1.5, "4", True):
        with pytest.raises(RemoteSpecError, match="slots"):
            parse_backend("p", {**table, "slots": bad})


def test_prometheus_series_of_one_counter_are_summed_across_labels() -> None:
    values = parse_prometheus(VLLM_PAGE)
    assert values["vllm:spec_decode_num_draft_tokens_total"] == 160.0
    assert values["vllm:spec_decode_num_drafts_total"] == 40.0  # not the _created series
    assert parse_prometheus('bad line\nx{a="}"} 2\n\n# c 1\ny 3 1700000000\n') == {
        "x": 2.0,
        "y": 3.0,
    }


def test_vllm_and_llama_server_counters_become_drafted_and_accepted() -> None:
    assert spec_figures(parse_prometheus(VLLM_PAGE)) == {
        "source": "vllm",
        "draftTokens": 160,
        "acceptedTokens": 120,
        "drafts": 40,
        "acceptance": 0.75,
    }
    llama = spec_figures(parse_prometheus(LLAMA_PAGE))
    assert llama is not None and llama["source"] == "llamacpp"
    assert (llama["draftTokens"], llama["acceptedTokens"], llama["acceptance"]) == (64, 16, 0.25)
    assert spec_figures(parse_prometheus("llamacpp:prompt_tokens_total 8\n")) is None


@pytest.fixture
def engine() -> Iterator[FakeEngine]:
    fake = FakeEngine(["a", "b"], delay_s=0.001, flavor="openai")
    yield fake
    fake.stop()


def test_a_generation_pokes_a_poll_of_metrics_off_the_request_path(engine: FakeEngine) -> None:
    engine.metrics = VLLM_PAGE
    backend = connect(RemoteSpec(kind="openai-compatible", url=engine.url, model="m"))
    try:
        assert backend.engine_stats() is None and engine.metrics_gets == 0  # nothing polled yet
        backend.generate(GenerationRequest("p"))
        assert wait_until(lambda: backend.engine_stats() is not None)
        figures = backend.engine_stats()
        assert figures is not None and figures["acceptedTokens"] == 120
        for _ in range(5):  # more generations within the interval (5 s): no more polls
            backend.generate(GenerationRequest("p"))
        backend.close()
        assert backend.metrics.join(WAIT_S)  # every poll the pokes asked for has run
        assert engine.metrics_gets == 1
    finally:
        backend.close()


def test_a_missing_metrics_endpoint_leaves_the_figures_absent(engine: FakeEngine) -> None:
    backend = connect(RemoteSpec(kind="llama-server", url=engine.url))
    try:
        backend.metrics.poll()  # llama-server without --metrics answers 501
        assert backend.engine_stats() is None and backend.metrics.polls == 1
        engine.metrics = LLAMA_PAGE
        backend.metrics.poll()
        assert backend.engine_stats() is not None
        engine.metrics = None
        backend.metrics.poll()
        assert backend.engine_stats() is None
    finally:
        backend.close()


def test_an_unreachable_engine_keeps_the_last_figures_and_interval_zero_never_polls() -> None:
    figures: dict[str, object] = {"draftTokens": 1}
    calls: list[int] = []

    def unreachable() -> object:
        import httpx

        calls.append(1)
        raise httpx.ConnectError("refused")

    poller = MetricsPoller(unreachable, interval_s=0)  # type: ignore[arg-type]
    poller.figures = figures
    poller.poke()
    poller.stop()
    assert poller.join(WAIT_S)  # no thread was started: nothing can poll later
    assert calls == [] and poller.figures is figures  # 0: never polls by itself
    poller.poll()
    assert calls == [1] and poller.figures is figures
