"""Token healing: a prompt cut inside a token has its last token re-chosen by the model, among
those that extend its text, and the output still begins at the cursor; the same with every
drafting method (the first token is the target's alone)."""

from __future__ import annotations

import pytest
import torch

from spec_lsp.engine.api import GenerationRequest
from spec_lsp.engine.healing import Healer, constrain
from spec_lsp.engine.loading import tiny_model

from .conftest import make_engine

CUT = "def area(radius):\n    return math.pi * rad"  # `rad` ends inside `radius`


def test_a_cut_token_is_healed_by_those_that_extend_it(tokenizer) -> None:  # type: ignore[no-untyped-def]
    healer = Healer(tokenizer)
    ids = tokenizer(CUT, add_special_tokens=False)["input_ids"]
    healed = healer.heal(ids)
    assert healed is not None
    assert healed.prompt == ids[:-1]
    assert healed.text == tokenizer.decode(ids[-1:])
    texts = [tokenizer.decode([int(i)]) for i in healed.allowed]
    assert len(texts) > 1
    assert all(t.startswith(healed.text) for t in texts)
    assert ids[-1] in healed.allowed.tolist()  # the token itself stays a choice
    assert healed.text + "ius" in texts or any(t.startswith(healed.text + "i") for t in texts)
    # No special token, whatever its text begins with.
    special = set(tokenizer.all_special_ids) | set(tokenizer.added_tokens_decoder)
    assert not special & set(healed.allowed.tolist())


def test_whole_and_special_tokens_are_left_alone(tokenizer) -> None:  # type: ignore[no-untyped-def]
    healer = Healer(tokenizer)
    eos = tokenizer.eos_token_id
    assert healer.heal([eos, eos]) is None  # a special token: nothing to heal
    assert healer.heal(tokenizer("x", add_special_tokens=False)["input_ids"]) is None  # one
    # A token no other token extends.
    texts = tokenizer.batch_decode([[i] for i in range(len(tokenizer))])
    lonely = next(
        i
        for i, t in enumerate(texts)
        if t.isalpha() and len(t) > 6 and not any(o != t and o.startswith(t) for o in texts)
    )
    assert healer.heal([lonely, lonely]) is None


def test_constrain_keeps_only_the_allowed_ids() -> None:
    logits = torch.tensor([3.0, 9.0, 1.0, 2.0])
    out = constrain(logits, torch.tensor([0, 2, 3, 99]))  # an id past the logits is ignored
    assert int(out.argmax()) == 0
    assert torch.isinf(out[1]) and out[2] == 1.0


def test_healed_output_begins_at_the_cursor(target, tokenizer) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(target, tokenizer)
    healed = engine.generate(GenerationRequest(prompt=CUT, max_new_tokens=12, heal=True))
    cut = tokenizer.decode(tokenizer(CUT, add_special_tokens=False)["input_ids"][-1:])
    first = tokenizer.decode(healed.token_ids[:1])
    assert first.startswith(cut)
    assert healed.text == tokenizer.decode(healed.token_ids)[len(cut) :]
    whole = tokenizer(CUT, add_special_tokens=False)["input_ids"]
    assert healed.stats.prompt_tokens == len(whole) - 1


@pytest.mark.parametrize("method", ["ngram", "draft", "both"])
def test_healing_keeps_speculation_exact(target, tokenizer, method) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(target, tokenizer, target, k=4, k_max=4, draft_min_confidence=0.0)
    prompts = [CUT, "for item in ite", "values = sorted(data, key=lambda p: p.na"]
    for prompt in prompts:
        plain = engine.generate(
            GenerationRequest(prompt=prompt, max_new_tokens=24, method="off", heal=True)
        )
        spec = engine.generate(
            GenerationRequest(
                prompt=prompt, doc_id="doc", max_new_tokens=24, method=method, heal=True
            )
        )
        assert spec.token_ids == plain.token_ids
        assert spec.text == plain.text
        again = engine.generate(  # the document's KV now holds the healed prompt and more
            GenerationRequest(
                prompt=prompt, doc_id="doc", max_new_tokens=24, method=method, heal=True
            )
        )
        assert again.token_ids == plain.token_ids
        assert again.stats.reused_tokens > 0


def test_healing_with_a_restricted_vocabulary(tokenizer) -> None:  # type: ignore[no-untyped-def]
    """Random weights over a vocabulary under the tokenizer's (`vocab_limit`, ids taken modulo
    it): the first token is one the model has, and extends the cut token's text."""
    small = tiny_model(layers=1, seed=3, vocab_size=4000)
    engine = make_engine(small, tokenizer)
    engine.vocab_limit = 4000
    text = "total = sum(values) + len("  # `(`: a low id that others extend
    healed = Healer(tokenizer, 4000).heal(engine.encode(text))
    assert healed is not None and healed.text == "(" and int(healed.allowed.max()) < 4000
    out = engine.generate(GenerationRequest(prompt=text, max_new_tokens=6, heal=True))
    assert out.token_ids[0] < 4000
    assert tokenizer.decode(out.token_ids[:1]).startswith(healed.text)
