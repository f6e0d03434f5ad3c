"""`LeanDecoder.run_layers` and `output`: a pass run as a prefix of the layers then the rest is the
whole pass, and a prefix run past the cache's length (a self-draft) writes the keys and values a
whole pass writes in those layers."""

from __future__ import annotations

import torch

from spec_lsp.engine import lean
from spec_lsp.engine.from_source import tiny_model


def _ids(n: int, seed: int = 0) -> list[int]:
    return torch.randint(0, 256, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


@torch.inference_mode()
def test_layers_run_in_two_parts_give_the_whole_pass_bitwise() -> None:
    decoder = lean.LeanDecoder(tiny_model(4, 5, 256))
    ids = _ids(24)
    whole = decoder.new_cache()
    decoder.forward(ids[:20], whole)
    logits, _, _ = decoder.forward(ids[20:], whole, keep=4)
    split = decoder.new_cache()
    decoder.forward(ids[:20], split)
    split.reserve(24)
    h = decoder.run_layers(decoder.embed_ids(ids[20:]), split, 20, range(0, 3))
    h = decoder.run_layers(h, split, 20, range(3, 4))
    assert torch.equal(decoder.output(h), logits)


@torch.inference_mode()
def test_a_prefix_past_the_length_writes_the_whole_pass_keys_and_leaves_the_length() -> None:
    decoder = lean.LeanDecoder(tiny_model(4, 6, 256))
    ids = _ids(18, seed=1)
    whole = decoder.new_cache()  # float32 products are not row-invariant: the same passes
    decoder.forward(ids[:15], whole)
    for position in range(15, 18):
        decoder.forward([ids[position]], whole)
    part = decoder.new_cache()
    decoder.forward(ids[:15], part)
    part.reserve(18)
    for position in range(15, 18):  # one token at a time, as a draft runs
        decoder.run_layers(decoder.embed_ids([ids[position]]), part, position, range(2))
    assert part.length == 15
    for layer in range(2):
        assert torch.equal(part.keys[layer][:, :, :18], whole.keys[layer][:, :, :18])
        assert torch.equal(part.values[layer][:, :18], whole.values[layer][:, :18])
    assert not torch.equal(part.values[2][:, 15:18], whole.values[2][:, 15:18])
