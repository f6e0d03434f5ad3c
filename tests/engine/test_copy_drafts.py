"""Speculative edits: copy drafts from a reference text leave the output the target's own."""

from __future__ import annotations

import pytest

from spec_lsp.engine.api import GenerationRequest
from spec_lsp.engine.drafters import CopyDrafter

from .conftest import CODE_PROMPTS, make_engine


def rewrite(engine, prompt, reference, method="ngram", max_new=48, doc_id=None):  # type: ignore[no-untyped-def]
    return engine.generate(
        GenerationRequest(
            prompt=prompt, max_new_tokens=max_new, method=method, reference=reference, doc_id=doc_id
        )
    )


@pytest.mark.parametrize("method", ["off", "ngram", "both"])
def test_copy_drafted_output_equals_target_only(target, tokenizer, method):  # type: ignore[no-untyped-def]
    engine = make_engine(target, tokenizer, target)
    for prompt in CODE_PROMPTS:
        plain = engine.generate(GenerationRequest(prompt=prompt, max_new_tokens=48, method="off"))
        # A reference that is the answer itself, one that is its start with a change in the
        # middle, and one unrelated: the output is the target's in every case.
        changed = plain.text[: len(plain.text) // 2] + " zz " + plain.text[len(plain.text) // 2 :]
        for reference in ((plain.text,), (changed, prompt), ("unrelated text\n",)):
            out = rewrite(engine, prompt, reference, method)
            assert out.token_ids == plain.token_ids
            assert out.text == plain.text


def test_a_reference_equal_to_the_answer_is_copied_in_long_passes(target, tokenizer):  # type: ignore[no-untyped-def]
    engine = make_engine(target, tokenizer)
    # Random weights write text whose tokens need not come back from its characters: copy the
    # longest start that does (real code does; the reference is tokenized on its own).
    best = []
    for prompt in CODE_PROMPTS + [p + "\n" for p in CODE_PROMPTS]:
        ids = engine.generate(GenerationRequest(prompt, max_new_tokens=64, method="off")).token_ids
        m = max(n for n in range(len(ids) + 1) if engine.encode(engine.decode(ids[:n])) == ids[:n])
        best.append((m, prompt, ids))
    m, prompt, ids = max(best)
    assert m >= 8
    out = rewrite(engine, prompt, (engine.decode(ids[:m]),), max_new=m)
    assert out.token_ids == ids[:m]
    assert out.stats.rejections == 0  # every pass accepted every copied token
    assert out.stats.target_forwards <= 4  # prefill + passes of 16 and more copied tokens
    assert out.departures == []


def test_off_copies_nothing(target, tokenizer):  # type: ignore[no-untyped-def]
    engine = make_engine(target, tokenizer)
    plain = engine.generate(GenerationRequest(prompt=CODE_PROMPTS[1], max_new_tokens=24))
    out = rewrite(engine, CODE_PROMPTS[1], (plain.text,), method="off", max_new=24)
    assert out.stats.proposed_tokens == 0
    assert out.token_ids == plain.token_ids


def test_a_departure_reports_the_targets_probability(target, tokenizer):  # type: ignore[no-untyped-def]
    engine = make_engine(target, tokenizer)
    prompt = CODE_PROMPTS[2]
    plain = engine.generate(GenerationRequest(prompt=prompt, max_new_tokens=32, method="off"))
    ids = plain.token_ids
    wrong = engine.decode(ids[:5]) + "QQQ unrelated" + engine.decode(ids[5:])
    out = rewrite(engine, prompt, (wrong,), max_new=32)
    assert out.token_ids == ids
    assert out.departures, "the target departed from the altered copy"
    index, p = out.departures[0]
    assert 0 <= index < len(ids) and 0.0 < p <= 1.0


@pytest.mark.parametrize("method", ["ngram", "both"])
def test_departures_do_not_depend_on_the_drafting(target, tokenizer, method):  # type: ignore[no-untyped-def]
    engine = make_engine(target, tokenizer, target)
    for prompt in CODE_PROMPTS:
        plain = engine.generate(GenerationRequest(prompt=prompt, max_new_tokens=40, method="off"))
        ids = plain.token_ids
        # The old text with a word changed, with a line inserted, and with its start dropped:
        # departures where the output leaves it, and after it finds it again.
        for old in (
            engine.decode(ids[:6]) + " zz" + engine.decode(ids[7:]),
            engine.decode(ids[:10]) + "\nnew line\n" + engine.decode(ids[10:]),
            engine.decode(ids[12:]),
        ):
            off = rewrite(engine, prompt, (old,), method="off", max_new=40)
            drafted = rewrite(engine, prompt, (old,), method=method, max_new=40)
            assert drafted.token_ids == off.token_ids == ids
            assert [i for i, _ in drafted.departures] == [i for i, _ in off.departures]
            # (this test model's batched rows differ from one-row passes in the last bits)
            assert [p for _, p in drafted.departures] == pytest.approx(
                [p for _, p in off.departures], rel=1e-4
            )
            assert off.departures, "speculation off reports departures too"


def test_rewrites_keep_their_kv_apart_from_completions(target, tokenizer):  # type: ignore[no-untyped-def]
    engine = make_engine(target, tokenizer)
    prompt = CODE_PROMPTS[0]
    engine.generate(GenerationRequest(prompt=prompt, doc_id="a", max_new_tokens=4))
    rewrite(engine, "something else entirely\n" * 4, ("x",), doc_id="a", max_new=4)
    again = engine.generate(GenerationRequest(prompt=prompt, doc_id="a", max_new_tokens=4))
    assert again.stats.reused_tokens == again.stats.prompt_tokens - 1
    engine.forget("a")
    assert len(engine.docs) == 0 and len(engine.rewrites) == 0


def test_copy_drafter_resynchronizes_after_an_insertion() -> None:
    ref = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    drafter = CopyDrafter([ref], start=2)
    context = [100, 101]
    assert drafter.propose(context, 4, None, 0.0, None).tokens == [1, 2, 3, 4]
    context += [1, 2, 3, 4]  # copied
    assert drafter.propose(context, 3, None, 0.0, None).tokens == [5, 6, 7]
    context += [5, 42, 43]  # the target inserted 42 43 after 5
    assert drafter.propose(context, 3, None, 0.0, None).tokens == []  # nothing matches yet
    context += [6]  # and went on with the old text
    assert drafter.propose(context, 3, None, 0.0, None).tokens == [7, 8, 9]


def test_copy_drafter_takes_the_occurrence_nearest_ahead() -> None:
    ref = [7, 1, 2, 9, 9, 1, 2, 5, 5]
    drafter = CopyDrafter([ref], start=0)
    assert drafter.propose([7, 1, 2, 9, 9], 2, None, 0.0, None).tokens == [1, 2]
    # The output repeats "1 2" with something new before it: the second "1 2" (ahead) wins.
    assert drafter.propose([7, 1, 2, 9, 9, 3, 1, 2], 2, None, 0.0, None).tokens == [5, 5]
