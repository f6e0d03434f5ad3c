"""The shared copy index: bounded, exact under verification, long runs only where they are sure."""

from __future__ import annotations

import pytest

from spec_lsp.engine.api import GenerationRequest
from spec_lsp.engine.copyindex import (
    GAP,
    Calibration,
    CopyIndex,
    Source,
    bucket,
    walk,
)
from spec_lsp.engine.drafters import IndexDrafter
from spec_lsp.engine.gate import best_run

from .conftest import CODE_PROMPTS, make_engine

AVX2_CURVE = tuple(10.0 + 4.2 * n for n in range(17))  # a row costs ~0.42 of a one-token pass


def test_a_synced_source_indexes_exactly_what_a_fresh_one_does() -> None:
    a = [5, 6, 7, 8, 5, 6, 7, 9, 1, 2]
    b = [5, 6, 7, 8, 5, 3, 3, 7, 5, 6, 7]
    source = Source(a)
    source.ends(0)  # sorted once
    source.sync(b)
    assert source.tokens.tolist() == b
    assert source.keys.tolist() == Source(b).keys.tolist()
    assert source.ends(int(Source([5, 6, 7]).keys[-1])).tolist() == [3, 11]
    source.sync([])
    assert len(source.keys) == 0


def test_the_longest_match_wins_over_the_most_recent_one() -> None:
    index = CopyIndex()
    # "1 2 3 4 -> 50" once, far back; "3 4 -> 60" more recently, a shorter match.
    index.sync("other", [9, 1, 2, 3, 4, 50, 51, 52, 7, 7, 3, 4, 60])
    live = Source([8, 8, 1, 2, 3, 4])
    run = walk(index.candidates(live.tokens.tolist(), live), index.calibration, 3)
    assert [t for t, _ in run] == [50, 51, 52]


def test_one_token_matches_are_looked_for_only_in_the_context_and_only_without_longer_ones() -> (
    None
):
    index = CopyIndex()
    index.sync("other", [1, 2, 3, 40, 9, 3, 41])
    found = index.candidates([7, 1, 2, 3], Source([7, 1, 2, 3]))
    assert [(int(c.tokens[c.at]), c.length) for c in found] == [(40, 3)]
    assert index.candidates([7, 8, 9, 3], Source([7, 8, 9, 3])) == []  # "3", "9 3": too short
    live = Source([3, 50, 9, 3, 51, 8, 9, 3])
    found = index.candidates(live.tokens.tolist(), live)
    assert sorted((int(c.tokens[c.at]), c.length) for c in found) == [(50, 1), (51, 2)]


def test_the_context_being_decoded_is_no_candidate_of_itself() -> None:
    index = CopyIndex()
    live = index.sync("doc", [1, 2, 3])
    assert index.candidates([1, 2, 3], live, "doc") == []


def test_the_budget_evicts_the_oldest_sources_and_forget_drops_a_document() -> None:
    index = CopyIndex(budget=100)
    for i in range(5):
        index.sync(f"doc{i}", list(range(i, i + 40)))
    assert index.tokens <= 100
    assert [key[0] for key in index.sources] == ["doc3", "doc4"]
    index.add_output("doc4", [1, 2], [3, 4, 5])
    assert ("doc4", "outputs") in index.sources
    index.forget("doc4")
    assert [key[0] for key in index.sources] == ["doc3"]
    assert index.tokens == 40
    assert index.nbytes() > 0


def test_outputs_are_kept_once_and_only_the_last_few_per_document() -> None:
    index = CopyIndex()
    for i in range(12):
        index.add_output("doc", [0], [i, i + 1])
        index.add_output("doc", [0], [i, i + 1])  # the same output again: not kept twice
    joined = index.sources[("doc", "outputs")].tokens.tolist()
    assert joined == [t for i in range(4, 12) for t in (0, i, i + 1, GAP)]


def test_a_walk_stops_at_the_end_of_an_output() -> None:
    index = CopyIndex()
    index.add_output("doc", [1, 2], [3, 4])
    index.add_output("doc", [9, 9], [9])
    live = Source([7, 1, 2, 3])
    run = walk(index.candidates(live.tokens.tolist(), live), index.calibration, 8)
    assert [t for t, _ in run] == [4]


def test_run_length_follows_the_calibrated_chance_of_each_token() -> None:
    # Sure tokens: a long run; unsure ones: a short one or none, on the same cost curve.
    assert best_run([0.99] * 12, AVX2_CURVE, 1.1) >= 8
    assert 1 <= best_run([0.9, 0.9, 0.6, 0.5], AVX2_CURVE, 1.1) <= 3
    assert best_run([0.4, 0.99, 0.99], AVX2_CURVE, 1.1) == 0
    assert best_run([0.9, 0.9, 0.2, 0.9], (), 1.1) == 2  # no curve: while P >= RUN_FLOOR


def test_long_frequent_matches_are_proposed_further_than_short_lone_ones() -> None:
    calibration = Calibration()
    long_sure = calibration.prob(bucket(12, 1.0, 3))
    short_lone = calibration.prob(bucket(1, 1.0, 1))
    split = calibration.prob(bucket(4, 0.5, 2))
    assert long_sure > split > short_lone
    for _ in range(50):  # verdicts move a bucket away from its prior
        calibration.verdict(bucket(1, 1.0, 1), True)
    assert calibration.prob(bucket(1, 1.0, 1)) > 0.9


def test_each_walk_is_judged_against_what_the_target_emitted() -> None:
    index = CopyIndex()
    drafter = IndexDrafter(index, None, False, (), 1.0)
    context = [1, 2, 3, 4, 5, 1, 2, 3]
    drafter.propose(context, 4, None, 0.0, None)
    b = bucket(3, 1.0, 1)
    before = index.calibration.trials[b]
    drafter.propose(context + [4, 9], 4, None, 0.0, None)  # "4" then not "5"
    assert index.calibration.trials[b] > before  # one hit (4), then one miss (9 for 5)
    assert index.sources == {}  # a request without a document adds nothing


@pytest.mark.parametrize("curve", [(), AVX2_CURVE])
@pytest.mark.parametrize("method", ["ngram", "both"])
def test_copy_index_output_equals_target_only(target, tokenizer, method, curve) -> None:  # type: ignore[no-untyped-def]
    """Across documents and repeated requests (whose earlier outputs and other documents'
    windows are in the index): token for token the target's."""
    engine = make_engine(target, tokenizer, target, k_max=12, verify_cost=curve)
    plain = [
        engine.generate(GenerationRequest(p, max_new_tokens=40, method="off")).token_ids
        for p in CODE_PROMPTS
    ]
    proposed = 0
    for _ in range(2):
        for i, prompt in enumerate(CODE_PROMPTS):
            r = engine.generate(
                GenerationRequest(prompt, doc_id=f"doc{i}", max_new_tokens=40, method=method)
            )
            assert r.token_ids == plain[i]
            proposed += r.stats.proposed_tokens
    assert proposed > 0
    assert {key[0] for key in engine.copies.sources} == {"doc0", "doc1", "doc2"}
    engine.forget("doc1")
    assert {key[0] for key in engine.copies.sources} == {"doc0", "doc2"}


def test_a_repeated_request_copies_its_earlier_output_in_long_passes(target, tokenizer) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(target, tokenizer, k_max=12, verify_cost=AVX2_CURVE)
    req = GenerationRequest(CODE_PROMPTS[0], doc_id="doc", max_new_tokens=40, method="ngram")
    first = engine.generate(req)
    again = engine.generate(req)
    assert again.token_ids == first.token_ids
    assert again.stats.target_forwards < first.stats.target_forwards
    assert again.stats.accepted_tokens >= len(first.token_ids) // 2


def test_a_request_without_a_document_or_with_copy_index_off_adds_nothing(
    target, tokenizer
) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(target, tokenizer)
    engine.generate(GenerationRequest(CODE_PROMPTS[0], max_new_tokens=16, method="ngram"))
    engine.generate(GenerationRequest(CODE_PROMPTS[0], doc_id="d", max_new_tokens=16, method="off"))
    assert engine.copies.sources == {}
    off = make_engine(target, tokenizer, copy_index_tokens=0)
    off.generate(GenerationRequest(CODE_PROMPTS[0], doc_id="d", max_new_tokens=16, method="ngram"))
    assert off.copies.sources == {}


def test_other_documents_are_joined_once_and_joined_again_only_when_one_of_them_changes() -> None:
    index = CopyIndex()
    index.sync("b", [1, 2, 3, 4, 5])
    index.add_output("b", [1, 2], [3, 9])
    live = index.sync("a", [7, 1, 2, 3])
    found = index.candidates([7, 1, 2, 3], live, "a")
    assert sorted(int(c.tokens[c.at]) for c in found) == [4, 9]
    joined = index.others("a")
    index.sync("a", [7, 1, 2, 3, 4])  # the live document's own changes: the others stay joined
    assert index.others("a") is joined
    index.sync("b", [1, 2, 3, 6])
    assert index.others("a") is not joined
    assert 6 in index.others("a").tokens.tolist() and 7 not in index.others("a").tokens.tolist()
