"""The feature draft head in the engine: exact output, and its cached drafting equals a from-scratch
computation over the target's features."""

from __future__ import annotations

import pytest
import torch

from spec_lsp.engine.api import GenerationRequest
from spec_lsp.engine.cache import ModelState
from spec_lsp.engine.drafters import HeadDrafter, HeadDraftState
from spec_lsp.engine.head import SpecHead, SpecHeadConfig

from .conftest import CODE_PROMPTS, make_engine


def tiny_head(target, seed: int = 5, vocab: int = 4096) -> SpecHead:  # type: ignore[no-untyped-def]
    keep = {
        k: v
        for k, v in target.config.to_dict().items()
        if k in SpecHeadConfig().to_dict() and k not in ("model_type", "architectures")
    }
    keep["num_hidden_layers"] = 1
    torch.manual_seed(seed)
    head = SpecHead(SpecHeadConfig(draft_vocab_size=vocab, **keep))
    head.init_weights(std=0.3)
    head.embed_tokens.weight = torch.nn.Parameter(
        target.get_input_embeddings().weight.detach(), requires_grad=False
    )
    # The target's own output rows for a spread of ids, so that some drafts are right.
    ids = torch.randperm(target.config.vocab_size, generator=torch.Generator().manual_seed(seed))
    head.vocab_ids.copy_(ids[:vocab].sort().values)
    head.lm_head.weight.data.copy_(target.get_output_embeddings().weight[head.vocab_ids])
    return head.eval()


@pytest.fixture(scope="module")
def head(target):  # type: ignore[no-untyped-def]
    return tiny_head(target)


def reference_drafts(target, head, context: list[int], k: int) -> list[int]:  # type: ignore[no-untyped-def]
    """Greedy drafts recomputed from scratch: the target's features over context[:-1], all pairs
    through the head with no cache, each predicted feature appended as a new pair."""
    with torch.no_grad():
        ids = torch.tensor([context[:-1]])
        feats = target.base_model(input_ids=ids).last_hidden_state[0]  # [M-1, H]
        tokens = list(context[1:])
        out: list[int] = []
        for _ in range(k):
            pos = torch.arange(len(tokens))[None]
            pred, _ = head(feats[None], torch.tensor([tokens]), pos)
            last = pred[0, -1]
            token = int(head.vocab_ids[head.restricted_logits(last).argmax()])
            out.append(token)
            feats = torch.cat([feats, last[None]])
            tokens.append(token)
        return out


def test_cached_head_drafts_equal_a_from_scratch_computation(target, head, tokenizer) -> None:  # type: ignore[no-untyped-def]
    prompt = tokenizer(CODE_PROMPTS[2], add_special_tokens=False)["input_ids"]
    tstate = ModelState(target, features=True)
    hstate = HeadDraftState(head, tstate)
    drafter = HeadDrafter(min_confidence=0.0)
    logits = tstate.advance(prompt).logits
    context = prompt + [int(logits[-1].argmax())]
    for round_ in range(4):
        proposal = drafter.propose(context, 4, hstate, 0.0, None)
        assert proposal.tokens == reference_drafts(target, head, context, 4), round_
        # Verify like the engine: the target sees context + drafts; keep two, then a new token.
        tstate.advance(context + proposal.tokens, keep=len(proposal.tokens) + 1)
        context = context + proposal.tokens[:2] + [int(tokenizer.eos_token_id) + round_ + 7]
        assert hstate.pairs == len(hstate.tokens) - 1
    # A deletion (the user erased text) rolls both states back and stays exact.
    context = context[: len(prompt) - 5] + context[len(prompt) - 3 : len(prompt)]
    tstate.advance(context)
    context = context + [42]
    assert drafter.propose(context, 3, hstate, 0.0, None).tokens == reference_drafts(
        target, head, context, 3
    )


@pytest.mark.parametrize("k", [1, 4])
@pytest.mark.parametrize("method", ["draft", "both"])
def test_head_speculation_equals_target_only(target, head, tokenizer, k, method) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(target, tokenizer, head, k=k, k_max=max(k, 1), head_min_confidence=0.0)
    assert engine.head is head and "draft" in engine.methods
    for prompt in CODE_PROMPTS:
        req = dict(prompt=prompt, max_new_tokens=32, doc_id="d")
        plain = engine.generate(GenerationRequest(method="off", **req))  # type: ignore[arg-type]
        spec = engine.generate(GenerationRequest(method=method, **req))  # type: ignore[arg-type]
        assert spec.token_ids == plain.token_ids
        assert spec.stats.proposed_tokens > 0


def test_head_sampling_runs_and_stays_in_the_vocabulary(target, head, tokenizer) -> None:  # type: ignore[no-untyped-def]
    req = GenerationRequest(
        prompt=CODE_PROMPTS[0], max_new_tokens=16, method="draft", temperature=0.8, seed=1
    )
    # Fresh engines: the adaptive draft length (and so the random draws) carries across requests.
    first = make_engine(target, tokenizer, head, k=3).generate(req)
    again = make_engine(target, tokenizer, head, k=3).generate(req)
    assert first.token_ids == again.token_ids  # seeded
    assert first.stats.proposed_tokens > 0
