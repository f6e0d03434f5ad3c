"""Greedy speculative decoding is token-for-token the target's own greedy decoding."""

from __future__ import annotations

import pytest

from spec_lsp.engine.api import GenerationRequest

from .conftest import CODE_PROMPTS, make_engine


def run(engine, prompt, method, max_new=40):  # type: ignore[no-untyped-def]
    return engine.generate(GenerationRequest(prompt=prompt, max_new_tokens=max_new, method=method))


@pytest.mark.parametrize("k", [1, 3, 8])
@pytest.mark.parametrize("method", ["ngram", "draft", "both"])
@pytest.mark.parametrize("draft_kind", ["self", "random"])
def test_speculative_output_equals_target_only(
    target, random_draft, tokenizer, k, method, draft_kind
):  # type: ignore[no-untyped-def]
    draft = target if draft_kind == "self" else random_draft
    options = dict(k=k, k_max=max(k, 1), draft_min_confidence=0.0)  # every draft verified
    engine = make_engine(target, tokenizer, draft, **options)
    for prompt in CODE_PROMPTS:
        plain = run(engine, prompt, "off")
        spec = run(engine, prompt, method)
        assert spec.token_ids == plain.token_ids
        assert spec.text == plain.text
        assert spec.stats.target_forwards <= plain.stats.target_forwards


@pytest.mark.parametrize("confidence", [0.0, 0.3])
@pytest.mark.parametrize("method", ["ngram", "draft", "both"])
@pytest.mark.parametrize("draft_kind", ["self", "random"])
def test_gated_speculation_output_equals_target_only(
    target, random_draft, tokenizer, confidence, method, draft_kind
):  # type: ignore[no-untyped-def]
    """With measured costs the gate decides each round (the random draft is soon stood aside,
    the self draft drafts ever longer, the threshold cuts rounds short): output unchanged."""
    draft = target if draft_kind == "self" else random_draft
    curve = tuple(10.0 + n for n in range(9))  # a pass over n tokens: 10 + (n - 1)
    engine = make_engine(
        target,
        tokenizer,
        draft,
        k_max=8,
        verify_cost=curve,
        draft_cost=1.0,
        draft_min_confidence=confidence,
    )
    for prompt in CODE_PROMPTS:
        plain = run(engine, prompt, "off")
        spec = engine.generate(
            GenerationRequest(prompt=prompt, doc_id="doc", max_new_tokens=40, method=method)
        )
        assert spec.token_ids == plain.token_ids
        assert spec.text == plain.text
        assert spec.stats.target_forwards <= plain.stats.target_forwards


def test_self_draft_accepts_every_proposed_token(target, tokenizer):  # type: ignore[no-untyped-def]
    engine = make_engine(target, tokenizer, target, k=4, draft_min_confidence=0.0)
    result = run(engine, CODE_PROMPTS[0], "draft")
    assert result.stats.proposed_tokens > 0
    assert result.stats.accepted_tokens == result.stats.proposed_tokens
    # Each verify pass yields k+1 tokens, so forwards shrink well below one per token.
    assert result.stats.target_forwards < result.stats.generated_tokens / 2


def test_random_draft_is_mostly_rejected_but_output_is_exact(target, random_draft, tokenizer):  # type: ignore[no-untyped-def]
    engine = make_engine(target, tokenizer, random_draft, k=4, draft_min_confidence=0.0)
    plain = run(engine, CODE_PROMPTS[1], "off")
    spec = run(engine, CODE_PROMPTS[1], "draft")
    assert spec.token_ids == plain.token_ids
    assert spec.stats.acceptance is not None and spec.stats.acceptance < 0.5


def test_eos_inside_a_draft_stops_exactly_where_the_target_stops(target, tokenizer):  # type: ignore[no-untyped-def]
    engine = make_engine(target, tokenizer, target, k=8, draft_min_confidence=0.0)
    plain = run(engine, CODE_PROMPTS[2], "off", max_new=30)
    ids = plain.token_ids
    # Pick a token of the target's own output, first seen at index >= 3, and call it EOS.
    cut = next(i for i in range(3, len(ids)) if ids[i] not in ids[:i])
    engine.eos_ids = {ids[cut]}
    for method in ("off", "draft", "ngram", "both"):
        result = run(engine, CODE_PROMPTS[2], method, max_new=30)
        assert result.token_ids == ids[:cut], method
        assert result.stats.stop_reason == "eos"


def test_max_tokens_inside_a_draft_is_respected_exactly(target, tokenizer):  # type: ignore[no-untyped-def]
    engine = make_engine(target, tokenizer, target, k=8, draft_min_confidence=0.0)
    full = run(engine, CODE_PROMPTS[0], "off", max_new=20)
    for n in (1, 2, 5, 9):
        for method in ("draft", "ngram", "both"):
            result = run(engine, CODE_PROMPTS[0], method, max_new=n)
            assert result.token_ids == full.token_ids[:n]
            assert result.stats.stop_reason == "max_tokens"


def test_stop_strings_and_callback_cut_identically_with_and_without_drafting(target, tokenizer):  # type: ignore[no-untyped-def]
    engine = make_engine(target, tokenizer, target, k=6, draft_min_confidence=0.0)
    full = run(engine, CODE_PROMPTS[0], "off", max_new=30).text
    stop = full[len(full) // 2 : len(full) // 2 + 2]
    assert stop.strip()

    def cb(text: str) -> int | None:
        return len(text) - 1 if len(text) > 10 else None

    for method in ("off", "draft", "both"):
        req = GenerationRequest(
            prompt=CODE_PROMPTS[0], max_new_tokens=30, method=method, stop_strings=(stop,)
        )
        assert engine.generate(req).text == full[: full.find(stop)]
        req = GenerationRequest(
            prompt=CODE_PROMPTS[0], max_new_tokens=30, method=method, stop_callback=cb
        )
        out = engine.generate(req)
        assert out.stats.stop_reason == "callback"
        assert full.startswith(out.text) and len(out.text) >= 10
