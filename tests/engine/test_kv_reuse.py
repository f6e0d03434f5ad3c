"""Per-document KV reuse.

Typing re-prefills only the tail, results equal a cold run, memory is bounded."""

from __future__ import annotations

import threading

from spec_lsp.engine.api import CancelToken, GenerationRequest
from spec_lsp.engine.cache import DocumentStates, common_prefix_len

from .conftest import CODE_PROMPTS, make_engine


def request(prompt: str, doc: str | None, method: str = "ngram", **kw) -> GenerationRequest:  # type: ignore[no-untyped-def]
    return GenerationRequest(prompt=prompt, doc_id=doc, max_new_tokens=12, method=method, **kw)


def test_typing_characters_reprefills_only_the_tail_and_equals_a_cold_run(
    target, tokenizer
) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(target, tokenizer, target, k=4)
    base = CODE_PROMPTS[2]
    first = engine.generate(request(base, "doc"))
    assert first.stats.reused_tokens == 0
    prompt = base
    for ch in "get_nam":
        prompt += ch
        warm = engine.generate(request(prompt, "doc", method="both"))
        cold = engine.generate(request(prompt, None, method="both"))
        assert warm.token_ids == cold.token_ids
        assert warm.stats.prefilled_tokens <= 3
        assert warm.stats.reused_tokens >= warm.stats.prompt_tokens - 3


def test_deleting_text_rolls_the_cache_back_and_stays_exact(target, tokenizer) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(target, tokenizer, target, k=4)
    engine.generate(request(CODE_PROMPTS[0] + "    return a * b\n", "doc"))
    warm = engine.generate(request(CODE_PROMPTS[0], "doc", method="draft"))
    cold = engine.generate(request(CODE_PROMPTS[0], None, method="draft"))
    assert warm.token_ids == cold.token_ids
    assert warm.stats.reused_tokens > 0


def test_identical_request_reuses_everything_but_one_token(target, tokenizer) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(target, tokenizer)
    engine.generate(request(CODE_PROMPTS[1], "doc"))
    again = engine.generate(request(CODE_PROMPTS[1], "doc"))
    assert again.stats.prefilled_tokens == 1


def test_document_states_are_bounded_by_count_and_tokens(target, tokenizer) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(target, tokenizer, max_docs=3, max_cached_tokens=200)
    for i in range(10):
        engine.generate(request(f"# file {i}\n" + CODE_PROMPTS[i % 3], f"doc{i}"))
        assert len(engine.docs) <= 3
        assert engine.docs.total_tokens() <= 200
    assert engine.docs.get("doc9") is not None and engine.docs.get("doc0") is None
    engine.forget("doc9")
    assert engine.docs.get("doc9") is None


def test_lru_keeps_the_document_being_served_even_when_it_alone_is_too_long() -> None:
    states = DocumentStates(max_docs=2, max_tokens=10)
    assert common_prefix_len([1, 2, 3], [1, 2, 4]) == 2
    assert common_prefix_len(list(range(200)), list(range(150)) + [0]) == 150
    states.evict(keep="missing")  # nothing to evict: no error
    assert len(states) == 0


def test_cancellation_stops_within_one_step(target, tokenizer) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(target, tokenizer, target, k=2)
    token = CancelToken()
    forwards_at_cancel: list[int] = []
    calls = {"n": 0}
    handle = engine.target.register_forward_hook(lambda *_: calls.__setitem__("n", calls["n"] + 1))
    try:

        def on_text(_: str) -> None:
            if not token.cancelled:
                token.cancel()
                forwards_at_cancel.append(calls["n"])

        result = engine.generate(
            request(CODE_PROMPTS[0], None, method="draft", on_text=on_text, cancel=token)
        )
    finally:
        handle.remove()
    assert result.cancelled
    # The step in flight when cancel arrived finishes emitting; no further target forward runs.
    assert calls["n"] == forwards_at_cancel[0]


def test_cancel_from_another_thread_stops_a_long_generation(target, tokenizer) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(target, tokenizer)
    token = CancelToken()
    started = threading.Event()
    req = GenerationRequest(
        prompt=CODE_PROMPTS[0],
        max_new_tokens=100_000,
        method="off",
        cancel=token,
        on_text=lambda _: started.set(),
    )
    timer = threading.Thread(target=lambda: (started.wait(30), token.cancel()))
    timer.start()
    result = engine.generate(req)
    timer.join()
    assert result.cancelled and result.stats.generated_tokens < 100_000


def test_a_prefill_cancelled_between_chunks_keeps_its_chunks_for_the_next_request(
    target, tokenizer
) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(target, tokenizer, prefill_chunk=8)
    prompt = "".join(CODE_PROMPTS)
    n = len(engine.encode(prompt))
    token = CancelToken()
    chunks = {"n": 0}

    def count(*_: object) -> None:
        chunks["n"] += 1
        if chunks["n"] == 3:  # the user typed again while the third chunk ran
            token.cancel()

    handle = engine.target.register_forward_hook(count)
    try:
        cut = engine.generate(request(prompt, "doc", cancel=token))
    finally:
        handle.remove()
    assert cut.cancelled and cut.token_ids == []
    assert cut.stats.prefilled_tokens == 24  # three chunks of 8, then it stopped
    again = engine.generate(request(prompt + " x", "doc"))
    assert again.stats.reused_tokens >= 24
    assert again.stats.reused_tokens + again.stats.prefilled_tokens == again.stats.prompt_tokens
    cold = make_engine(target, tokenizer).generate(request(prompt + " x", None))
    assert again.token_ids == cold.token_ids
    assert n > 24


def test_a_request_can_prefill_in_shorter_passes_than_the_engine(target, tokenizer) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(target, tokenizer)  # its own chunk: 128 tokens
    prompt = CODE_PROMPTS[0]
    n = len(engine.encode(prompt))
    short = request(prompt, None, prefill_chunk=4)  # a prefetch's passes
    short.max_new_tokens = 1
    result = engine.generate(short)
    assert result.stats.target_forwards == -(-n // 4)  # the prompt in passes of at most 4
    whole = request(prompt, None)
    whole.max_new_tokens = 1
    whole_result = engine.generate(whole)
    assert whole_result.stats.target_forwards == 1
    assert whole_result.token_ids == result.token_ids


def test_a_prompt_longer_than_the_context_is_cut_in_steps_so_typing_still_reuses_kv(
    target, tokenizer
) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(target, tokenizer, context_tokens=64, window_step=16)
    prompt = "".join(CODE_PROMPTS)
    assert len(engine.encode(prompt)) > 80
    engine.generate(request(prompt, "doc"))
    reused = []
    for ch in "total_sum":
        prompt += ch
        warm = engine.generate(request(prompt, "doc"))
        assert warm.stats.prompt_tokens <= 64
        reused.append(warm.stats.reused_tokens)
        cold = make_engine(target, tokenizer, context_tokens=64, window_step=16)
        assert warm.token_ids == cold.generate(request(prompt, None)).token_ids
    # Most keystrokes keep the window's first token, so nearly all of it comes from the cache.
    assert sum(r >= 40 for r in reused) >= len(reused) - 2


def test_a_draft_models_prompt_is_prefilled_in_chunks_that_a_cancel_stops(
    target, tokenizer, random_draft
) -> None:  # type: ignore[no-untyped-def]
    """A draft model's KV for the prompt is computed with the target's prefill (counted in
    prefill_ms, not as decoding), in passes of `prefill_chunk` with a cancel check before each."""
    engine = make_engine(target, tokenizer, random_draft, k=4, prefill_chunk=8)
    prompt = CODE_PROMPTS[2]
    ids = engine.encode(prompt)
    first = engine.generate(
        GenerationRequest(prompt=prompt, doc_id="doc", max_new_tokens=1, method="draft")
    )
    state = engine.docs.get("doc")
    assert state is not None and state.draft is not None
    assert state.draft.tokens == ids  # prefilled, before any draft was asked for
    assert first.stats.generated_tokens == 1

    passes = []
    real_advance = type(state.draft).advance

    def counted(self, tokens, keep=1, hidden=False):  # type: ignore[no-untyped-def]
        doc = engine.docs.get("cold")
        if doc is not None and self is doc.draft:
            passes.append(len(tokens))
            if len(passes) == 2:
                cancel.cancel()  # a keystroke during the draft's prefill
        return real_advance(self, tokens, keep, hidden)

    cancel = CancelToken()
    type(state.draft).advance = counted  # type: ignore[method-assign]
    try:
        result = engine.generate(request(prompt, "cold", method="draft", cancel=cancel))
    finally:
        type(state.draft).advance = real_advance  # type: ignore[method-assign]
    assert result.stats.stop_reason == "cancelled" and result.stats.generated_tokens == 0
    assert passes == [8, 16]  # chunk by chunk, stopped before the third
    warm = engine.generate(request(prompt, "cold", method="draft"))
    cold = engine.generate(request(prompt, None, method="draft"))
    assert warm.token_ids == cold.token_ids
