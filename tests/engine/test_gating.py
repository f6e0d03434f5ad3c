"""The draft gate: a draft drafts while it pays on the measured costs and steps aside otherwise.

Costs are injected (a target pass over n tokens costs 10 + (n - 1), a draft step 1), so every
decision is deterministic; nothing here is timed.
"""

from __future__ import annotations

import pytest
import torch

from spec_lsp.engine.api import GenerationRequest, GenerationResult
from spec_lsp.engine.cache import ModelState
from spec_lsp.engine.drafters import ModelDrafter, NgramDrafter
from spec_lsp.engine.gate import AdaptiveK
from spec_lsp.engine.proposal import Proposal

from .conftest import CODE_PROMPTS, make_engine
from .test_head import tiny_head

K_MAX = 8
CURVE = tuple(10.0 + n for n in range(K_MAX + 1))  # [n - 1]: a pass over n tokens
DRAFT_COST = 1.0
PAYING = dict(k_max=K_MAX, verify_cost=CURVE, draft_cost=DRAFT_COST, draft_min_confidence=0.0)


def run(engine, method: str, max_new: int, prompt: str = CODE_PROMPTS[1]) -> GenerationResult:  # type: ignore[no-untyped-def]
    req = GenerationRequest(prompt=prompt, doc_id="doc", max_new_tokens=max_new, method=method)
    return engine.generate(req)


def modeled_cost(result: GenerationResult) -> float:
    """The injected cost of a generation: every target pass at CURVE, every draft step."""
    s = result.stats
    verified = s.target_forwards + s.proposed_tokens  # tokens over all passes: n - 1 extra each
    return (
        CURVE[0] * s.target_forwards
        + (verified - s.target_forwards)
        + DRAFT_COST * (s.draft_forwards)
    )


def test_a_draft_that_is_never_accepted_drafts_rarely_and_costs_about_plain_decoding(
    target, random_draft, tokenizer
) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(target, tokenizer, random_draft, **PAYING)
    plain = run(engine, "off", 200)
    spec = run(engine, "draft", 200)
    assert spec.token_ids == plain.token_ids
    s = spec.stats
    assert s.acceptance is not None and s.acceptance < 0.3
    rounds = s.generated_tokens - 1  # the first token comes from the prefill
    # After one warm-in round the draft only probes, at doubling intervals.
    assert 1 <= s.draft_rounds <= 0.05 * rounds
    assert s.gated_rounds >= 0.9 * rounds
    assert s.target_forwards + s.draft_forwards <= 1.05 * plain.stats.target_forwards
    assert modeled_cost(spec) <= 1.02 * modeled_cost(plain)


def test_a_draft_identical_to_the_target_keeps_drafting_with_growing_k(target, tokenizer) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(target, tokenizer, target, **PAYING)
    gate = engine.gates.begin("doc", "draft")["draft"]
    first_k = gate.k
    plain = run(engine, "off", 80)
    spec = run(engine, "draft", 80)
    assert spec.token_ids == plain.token_ids
    s = spec.stats
    assert s.accepted_tokens == s.proposed_tokens > 0
    assert s.gated_rounds == 0 and s.draft_rounds == s.target_forwards - 1  # all but the prefill
    assert first_k < gate.k == K_MAX
    assert modeled_cost(spec) < 0.5 * modeled_cost(plain)


def test_a_draft_closed_when_a_request_starts_sits_it_out_unprefilled(
    target, random_draft, tokenizer
) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(target, tokenizer, random_draft, **PAYING)
    run(engine, "draft", 40)
    gate = engine.gates.begin("doc", "draft")["draft"]
    state = engine.docs.get("doc")
    assert gate.wait > 0 and state is not None and isinstance(state.draft, ModelState)
    before = list(state.draft.tokens)
    edited = CODE_PROMPTS[1] + "x"
    gate.wait = 1  # its wait ends within the next request, which still does not probe
    held = run(engine, "draft", 20, edited)
    assert held.stats.draft_forwards == 0 and held.stats.gated_rounds == 19
    assert state.draft.tokens == before  # not prefilled with the edit
    probe = run(engine, "draft", 20, edited)  # the next one prefills the draft and probes
    assert probe.stats.draft_forwards >= 1
    assert state.draft.tokens[: len(engine.encode(edited))] == engine.encode(edited)
    assert held.token_ids == probe.token_ids


def test_the_confidence_threshold_ends_a_round_at_the_first_unlikely_token(
    random_draft, tokenizer
) -> None:  # type: ignore[no-untyped-def]
    context = tokenizer(CODE_PROMPTS[0], add_special_tokens=False)["input_ids"]
    free = ModelDrafter(0.0).propose(context, K_MAX, ModelState(random_draft), 0.0, None)
    assert len(free.tokens) == free.steps == K_MAX
    with torch.inference_mode():  # the draft's top-1 probability at each drafted token
        logits = random_draft(torch.tensor([context + free.tokens])).logits[0, len(context) - 1 :]
    top = torch.softmax(logits, dim=-1).max(dim=-1).values.tolist()[:K_MAX]
    # The stop with the widest margin on both sides: every earlier token over, this one under.
    stop = max(range(1, K_MAX), key=lambda i: min(top[:i]) - top[i])
    assert min(top[:stop]) - top[stop] > 0.02
    threshold = (min(top[:stop]) + top[stop]) / 2
    gated = ModelDrafter(threshold).propose(context, K_MAX, ModelState(random_draft), 0.0, None)
    assert gated.tokens == free.tokens[:stop]
    assert gated.steps == stop + 1  # the step that found the unlikely token ran, unused
    first = ModelDrafter(top[0] + 0.01).propose(context, K_MAX, ModelState(random_draft), 0.0, None)
    assert first.tokens == [] and first.steps == 1  # the first token is gated too


def test_the_confidence_threshold_saves_draft_steps_and_keeps_the_output(target, tokenizer) -> None:  # type: ignore[no-untyped-def]
    free = make_engine(target, tokenizer, target, **PAYING)
    options = {**PAYING, "draft_min_confidence": 0.3}
    gated = make_engine(target, tokenizer, target, **options)
    plain = run(free, "off", 60)
    a, b = run(free, "draft", 60), run(gated, "draft", 60)
    assert a.token_ids == b.token_ids == plain.token_ids
    assert a.stats.confidence_stops == 0 and b.stats.confidence_stops > 0
    assert b.stats.proposed_tokens < a.stats.proposed_tokens


def test_a_draft_that_cannot_pay_even_when_always_accepted_is_never_run(target, tokenizer) -> None:  # type: ignore[no-untyped-def]
    # A draft step as dear as a target token, each verified token half of one: like Qwen2.5-Coder
    # 0.5B drafting for the 1.5B on a 2-core CPU.
    steep = tuple(10.0 + 5.0 * n for n in range(K_MAX + 1))
    engine = make_engine(target, tokenizer, target, k_max=K_MAX, verify_cost=steep, draft_cost=6.0)
    assert not engine.draft_pays
    plain = run(engine, "off", 30)
    for method in ("draft", "both"):
        spec = run(engine, method, 30)
        assert spec.token_ids == plain.token_ids
        assert spec.stats.method == "ngram" and spec.stats.draft_forwards == 0
    state = engine.docs.get("doc")
    assert state is not None and state.draft is None  # not even prefilled


def test_both_asks_the_ngram_lookup_first_and_the_draft_only_when_it_finds_nothing(
    target, tokenizer
) -> None:  # type: ignore[no-untyped-def]
    # The plain prompt lookup (`engine._ngram`), which the copy index replaces by default.
    engine = make_engine(target, tokenizer, target, copy_index_tokens=0, **PAYING)
    plain = run(engine, "off", 60, CODE_PROMPTS[0])
    prompt_len = len(engine.encode(CODE_PROMPTS[0]))
    found: list[bool] = []
    model_calls: list[int] = []  # how many lookups preceded each model draft
    model = engine._model_drafter

    class Lookup(NgramDrafter):
        """Finds the target's own continuation every other round, nothing in between."""

        def propose(self, context, k, draft_state, temperature, generator):  # type: ignore[no-untyped-def]
            at = len(context) - prompt_len
            tokens = plain.token_ids[at : at + k] if len(found) % 2 == 0 else []
            found.append(bool(tokens))
            return Proposal(tokens, None, self.name)

    class Model(ModelDrafter):
        def propose(self, context, k, draft_state, temperature, generator):  # type: ignore[no-untyped-def]
            model_calls.append(len(found))
            return model.propose(context, k, draft_state, temperature, generator)

    engine._ngram, engine._model_drafter = Lookup(), Model()
    spec = run(engine, "both", 60, CODE_PROMPTS[0])
    assert spec.token_ids == plain.token_ids
    assert any(found) and model_calls  # both sources drafted in this run
    assert all(not found[n - 1] for n in model_calls)  # the model only after an empty lookup
    assert len(model_calls) == found.count(False)  # and after every empty one


def test_a_losing_source_waits_then_probes_and_waits_longer_after_each_failed_probe() -> None:
    gate = AdaptiveK(4, 1, K_MAX, CURVE, DRAFT_COST, min_gain=1.1, backoff=4, backoff_max=16)
    assert gate.can_pay and not gate.closed
    waits: list[int] = []
    for _ in range(4):
        gate.update(gate.k, 0, gate.k)  # a round whose drafts were all rejected
        assert gate.closed and gate.k == 1  # the probe will be the shortest draft
        waits.append(gate.wait)
        while gate.closed:
            gate.skipped(1)
    assert waits == [4, 8, 16, 16]
    for _ in range(8):  # the draft turns good: the gate stays open and k grows
        gate.update(gate.k, gate.k, gate.k)
    assert not gate.closed and gate.k == K_MAX
    gate.update(gate.k, 0, gate.k)  # a single miss after a good run does not close it
    assert not gate.closed


def test_a_draft_that_stops_itself_at_once_is_priced_as_a_wasted_step() -> None:
    gate = AdaptiveK(4, 1, K_MAX, CURVE, DRAFT_COST, min_gain=1.1)
    assert gate.gain(1, 1.0, 1.0) > gate.gain(1, 1.0, 0.5) > gate.gain(1, 1.0, 0.0)
    assert gate.gain(1, 1.0, 0.0) == pytest.approx(CURVE[0] / (DRAFT_COST + CURVE[0]))
    for _ in range(4):
        gate.update(0, 0, 1)  # a step, no token: the first token was under the threshold
    assert gate.closed


def test_the_draft_step_cost_is_measured_when_the_engine_starts(
    target, random_draft, tokenizer
) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(target, tokenizer, random_draft, k_max=K_MAX, verify_cost=CURVE)
    assert engine.options.draft_cost > 0
    head = tiny_head(target)  # a feature head's step is timed too
    assert (
        make_engine(target, tokenizer, head, k_max=K_MAX, verify_cost=CURVE).options.draft_cost > 0
    )
    assert make_engine(target, tokenizer, random_draft).options.draft_cost == 0  # no curve: no gate


def test_catching_up_a_cold_draft_is_priced_against_what_drafting_saves() -> None:
    gate = AdaptiveK(4, 1, K_MAX, CURVE, DRAFT_COST, 1.1)
    per_token = DRAFT_COST * (CURVE[-1] / len(CURVE)) / CURVE[0]  # 0.2
    gain = gate.best(gate.acceptance, gate.goes_on)[1]
    saved = 64 * CURVE[0] * (1 - 1 / gain)
    assert gate.catch_up_pays(0, 1) and gate.catch_up_pays(int(saved / per_token), 64)
    assert not gate.catch_up_pays(int(saved / per_token) + 2, 64)
    assert AdaptiveK(4, 1, K_MAX).catch_up_pays(10_000, 1)  # no measured curve: no gate


def test_a_lag_cheaper_than_one_plain_step_is_caught_up_even_when_drafting_does_not_pay() -> None:
    """The keys typed since idle work caught the draft up: caught up within the request, so a
    draft whose estimates (its prior too) say it does not pay still gets rounds to learn from."""
    costly = AdaptiveK(4, 1, K_MAX, CURVE, 8.0, 1.1)  # a draft step 0.8 of a target pass
    assert costly.best(costly.acceptance, costly.goes_on)[1] < 1.0  # at its prior: no gain
    per_token = 8.0 * (CURVE[-1] / len(CURVE)) / CURVE[0]
    one_step = int(CURVE[0] / per_token)
    assert one_step >= 1
    assert costly.catch_up_pays(one_step, 64)
    assert not costly.catch_up_pays(one_step + 1, 64)


def test_a_request_leaves_a_cold_draft_aside_and_idle_work_catches_it_up(target, tokenizer) -> None:  # type: ignore[no-untyped-def]
    # Drafting with the target itself pays, but not enough to prefill a whole prompt for 2 tokens.
    engine = make_engine(target, tokenizer, target, **PAYING)
    prompt = "\n".join(CODE_PROMPTS)  # catching up costs more than one plain step (~47 tokens)
    assert len(engine.encode(prompt)) > 60
    cold = run(engine, "draft", 2, prompt)
    state = engine.docs.get("doc")
    assert state is not None and isinstance(state.draft, ModelState)
    assert len(state.draft) == 0 and cold.stats.draft_forwards == 0
    assert cold.stats.draft_lag == len(engine.encode(prompt))  # what idle work would catch up
    assert cold.token_ids == run(engine, "off", 2, prompt).token_ids
    idle = GenerationRequest(
        prompt=prompt, doc_id="doc", max_new_tokens=1, method="draft", idle=True
    )
    engine.generate(idle)
    assert len(state.draft) >= len(engine.encode(prompt)) - 1
    warm = run(engine, "draft", 8, prompt)
    assert warm.stats.draft_forwards > 0 and warm.stats.accepted_tokens > 0
    assert warm.stats.draft_lag == 0
    assert warm.token_ids == run(engine, "off", 8, prompt).token_ids
