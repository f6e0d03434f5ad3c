"""A draft whose output layer scores part of the vocabulary (`draft_vocab`): its logits are the full
layer's on the rows it keeps and nothing elsewhere, and the target's output stays exact."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from spec_lsp.engine.api import GenerationRequest
from spec_lsp.engine.draft_vocab import RestrictedOutput, kept_ids, restrict_output
from spec_lsp.engine.loading import LoadSpec, load_engine
from spec_lsp.engine.weights import native
from spec_lsp.engine.weights.qblocks import BlockLinear

from .conftest import CODE_PROMPTS, make_engine


def _check_rows(
    full: nn.Module, restricted: RestrictedOutput, x: torch.Tensor, bitwise: bool = True
) -> None:
    want, got = full(x), restricted(x)
    assert got.shape == want.shape
    ids = restricted.ids
    if bitwise:  # the same rows' products
        assert torch.equal(got[..., ids], want[..., ids])
    else:
        torch.testing.assert_close(got[..., ids], want[..., ids], rtol=1e-6, atol=1e-6)
    others = torch.ones(want.shape[-1], dtype=torch.bool)
    others[ids] = False
    assert bool((got[..., others] == torch.finfo(got.dtype).min).all())
    probs = torch.softmax(got, dim=-1)
    assert float(probs[..., others].max()) == 0.0


def test_a_dense_output_keeps_its_rows_and_scores_nothing_else() -> None:
    torch.manual_seed(0)
    layer = nn.Linear(32, 200, bias=True)
    ids = torch.tensor([0, 1, 2, 7, 150, 199])
    # torch's dense product blocks its columns by how many there are, so 6 rows of 200 agree to
    # rounding, not bitwise, on some CPUs (an AVX2-only EPYC); the block layers' own kernels
    # compute each row alone (bitwise, below). A draft's logits only choose what it proposes:
    # the target verifies every token either way.
    _check_rows(layer, RestrictedOutput(layer, ids, 200), torch.randn(3, 5, 32), bitwise=False)


@pytest.mark.skipif(not native.available(), reason="the native kernels are not built here")
@pytest.mark.parametrize("kind", ["q8_0", "q4_1"])
def test_a_block_output_keeps_its_rows_bitwise(kind: str) -> None:
    torch.manual_seed(1)
    layer = BlockLinear.from_weight(torch.randn(300, 64), kind)
    ids = torch.cat([torch.arange(40), torch.tensor([41, 99, 256, 299])])
    restricted = RestrictedOutput(layer, ids, 300)
    assert restricted.rows.out_features == len(ids)
    for rows in (1, 3, 17):  # decode, verify and prefill lengths
        _check_rows(layer, restricted, torch.randn(rows, 64))


def test_kept_ids_are_the_first_ids_and_every_special_token(tokenizer) -> None:  # type: ignore[no-untyped-def]
    specials = {i for i in tokenizer.added_tokens_decoder if i < 49152}
    assert max(specials) >= 5  # SmolLM2's: ids 0 .. 16
    assert kept_ids(tokenizer, 5, 49152).tolist() == sorted(set(range(5)) | specials)
    assert kept_ids(tokenizer, 10**6, 49152).tolist() == list(range(49152))


def test_restricting_covers_only_the_output_layers_it_knows(tokenizer, random_draft) -> None:  # type: ignore[no-untyped-def]
    model = copy.deepcopy(random_draft)
    assert restrict_output(model, tokenizer, 0) == 0  # 0: the whole vocabulary
    assert restrict_output(model, tokenizer, 49152) == 0
    kept = restrict_output(model, tokenizer, 1000)
    assert isinstance(model.lm_head, RestrictedOutput) and kept == len(model.lm_head.ids) >= 1000
    assert restrict_output(model, tokenizer, 500) == 0  # once


def _generate(engine, prompt: str, method: str):  # type: ignore[no-untyped-def]
    return engine.generate(GenerationRequest(prompt=prompt, max_new_tokens=24, method=method))


def test_a_restricted_self_draft_proposes_what_the_target_says_where_it_can(
    target, tokenizer
) -> None:  # type: ignore[no-untyped-def]
    """The target as its own draft, its output cut to the ids its greedy answers use: every
    draft is accepted, as with the whole vocabulary. Cut to fewer ids: fewer drafts, same output."""
    plain_engine = make_engine(target, tokenizer, k=4, draft_min_confidence=0.0)
    answers = {p: _generate(plain_engine, p, "off") for p in CODE_PROMPTS}
    used = max(max(a.token_ids) for a in answers.values()) + 1
    for rows, all_accepted in ((used, True), (used // 4, False)):
        draft = copy.deepcopy(target)
        restrict_output(draft, tokenizer, rows)
        engine = make_engine(target, tokenizer, draft, k=4, draft_min_confidence=0.0)
        for prompt, plain in answers.items():
            spec = _generate(engine, prompt, "draft")
            assert spec.token_ids == plain.token_ids
            assert spec.stats.proposed_tokens > 0
            if all_accepted:
                assert spec.stats.accepted_tokens == spec.stats.proposed_tokens


def test_a_preset_draft_vocab_runs_through_the_lean_forward_and_stays_exact() -> None:
    spec = LoadSpec(
        name="cut",
        target="builtin:tiny-target",
        draft="builtin:tiny-draft",
        method="both",
        draft_vocab=2000,
        measure_verify=False,
    )
    engine = load_engine(spec, device="cpu")
    assert isinstance(engine.draft.lm_head, RestrictedOutput)
    assert engine.forward == "lean"
    for prompt in CODE_PROMPTS:
        plain = _generate(engine, prompt, "off")
        for method in ("draft", "both"):
            assert _generate(engine, prompt, method).token_ids == plain.token_ids


def test_a_preset_names_its_draft_vocab_and_a_wrong_one_is_a_clear_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from spec_lsp.presets import PresetError, load_preset

    good = tmp_path / "good.toml"
    good.write_text(
        'target = "builtin:tiny-target"\ndraft = "builtin:tiny-draft"\ndraft_vocab = 300\n'
    )
    assert load_preset(str(good)).load_spec().draft_vocab == 300
    assert load_preset("coder").draft_vocab == 49152  # the default pair's 0.5B
    for wrong in ("-1", '"all"', "true", "1.5"):
        bad = tmp_path / "bad.toml"
        bad.write_text(f'target = "builtin:tiny-target"\ndraft_vocab = {wrong}\n')
        with pytest.raises(PresetError, match="draft_vocab must be a whole number"):
            load_preset(str(bad))
