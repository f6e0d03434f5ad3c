"""The engine's lean forward: the same mathematics as transformers' forward, a cache that only moves
its length on rollback, and verification passes whose numbers are those of one-token decoding."""

from __future__ import annotations

import torch
from transformers import DynamicCache, GPT2Config, GPT2LMHeadModel

from spec_lsp.engine import lean
from spec_lsp.engine.cache import ModelState, kv_bytes_per_token
from spec_lsp.engine.forward import TransformersForward, choose_forward
from spec_lsp.engine.from_source import tiny_model
from spec_lsp.engine.weights import fusion, native, quant


def _model(fmt: str = "float32", seed: int = 3) -> torch.nn.Module:
    model = tiny_model(2, seed, 256)
    if fmt != "float32":
        quant.apply_format(model, fmt)
    return model


def _ids(n: int, seed: int = 0) -> list[int]:
    return torch.randint(0, 256, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


@torch.inference_mode()
def test_matches_transformers_forward_in_float32() -> None:
    model = _model()
    decoder = lean.LeanDecoder(model)
    ids = _ids(70)
    ref = model(input_ids=torch.tensor([ids])).logits[0]
    cache = decoder.new_cache()
    # A prefill chunk, then decode-sized passes.
    first, _, _ = decoder.forward(ids[:40], cache, keep=40)
    rest = [decoder.forward(ids[i : i + 3], cache, keep=3)[0] for i in range(40, 70, 3)]
    got = torch.cat([first, *rest])
    assert got.shape == ref.shape
    torch.testing.assert_close(got, ref, atol=2e-4, rtol=2e-4)
    assert cache.length == 70


@torch.inference_mode()
def test_hidden_states_are_the_final_normed_ones() -> None:
    model = _model()
    decoder = lean.LeanDecoder(model)
    ids = _ids(12)
    out = model(input_ids=torch.tensor([ids]), output_hidden_states=True)
    _, last, every = decoder.forward(ids, decoder.new_cache(), keep=2, all_hidden=True)
    assert every is not None
    torch.testing.assert_close(every, out.hidden_states[-1][0], atol=2e-4, rtol=2e-4)
    torch.testing.assert_close(last, every[-2:])


def test_verification_pass_equals_one_token_passes_bitwise() -> None:
    """int4 layers round their inputs to bfloat16: a pass over k tokens must still give, row for
    row, exactly the numbers of k one-token passes (what makes speculation exact)."""
    model = _model("int4")
    decoder = lean.LeanDecoder(model)
    # Over GGUF blocks (native kernels) the cache is float16: rows read back what they wrote.
    assert decoder.kv_dtype == (torch.float16 if native.available() else torch.float32)
    ids = _ids(60, seed=1)
    cache = decoder.new_cache()
    decoder.forward(ids[:50], cache)
    one_by_one = torch.cat([decoder.forward([t], cache)[0] for t in ids[50:]])
    cache.crop(-10)
    batch, _, _ = decoder.forward(ids[50:], cache, keep=10)
    assert torch.equal(batch, one_by_one)


def test_cache_grows_across_steps_and_rollback_only_moves_length() -> None:
    model = _model()
    decoder = lean.LeanDecoder(model)
    ids = _ids(lean.GROW + 40, seed=2)
    cache = decoder.new_cache()
    decoder.forward(ids[: lean.GROW - 5], cache)
    assert cache.capacity == lean.GROW
    before = decoder.forward(ids[lean.GROW - 5 : lean.GROW + 10], cache, keep=1)[0]
    assert cache.capacity == 2 * lean.GROW and cache.length == lean.GROW + 10
    cache.crop(-15)
    assert cache.length == lean.GROW - 5 and cache.capacity == 2 * lean.GROW
    again = decoder.forward(ids[lean.GROW - 5 : lean.GROW + 10], cache, keep=1)[0]
    assert torch.equal(before, again)


def test_model_state_runs_the_forward_it_is_given_and_lean_matches_transformers() -> None:
    plain, fast = _model(seed=5), _model(seed=5)
    lean_forward = choose_forward(fast, "lean", "cpu")
    assert isinstance(lean_forward, lean.LeanDecoder)
    a, b = ModelState(plain, features=True), ModelState(lean_forward, features=True)
    ids = _ids(30, seed=4)
    for end in (20, 26, 24, 30):  # grow, roll back, grow again
        ra, rb = a.advance(ids[:end], keep=2), b.advance(ids[:end], keep=2)
        torch.testing.assert_close(rb.logits, ra.logits, atol=2e-4, rtol=2e-4)
        assert (ra.reused, ra.fed) == (rb.reused, rb.fed)
    assert isinstance(b.cache, lean.LeanCache) and isinstance(a.cache, DynamicCache)
    assert a.features is not None and b.features is not None
    torch.testing.assert_close(b.features, a.features, atol=2e-4, rtol=2e-4)


def test_other_architectures_keep_transformers_forward() -> None:
    gpt2 = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=64)).eval()
    assert not lean.LeanDecoder.supports(gpt2)
    forward = choose_forward(gpt2, "lean", "cpu")
    assert isinstance(forward, TransformersForward) and forward.name == "transformers"
    state = ModelState(forward)
    assert state.advance([1, 2, 3]).logits.shape == (1, 64)


def test_fused_rows_compute_each_layer_side_by_side() -> None:
    torch.manual_seed(0)
    x = torch.randn(3, 64)
    dense = [torch.nn.Linear(64, n, bias=False) for n in (32, 64, 96)]
    for make in (quant.Int4Linear.from_weight, quant.Int8Linear.from_weight):
        layers = [make(d.weight) for d in dense]
        fused = fusion.concat_rows(layers)
        assert type(fused) is type(layers[0])
        torch.testing.assert_close(fused(x), torch.cat([layer(x) for layer in layers], dim=-1))
        order = torch.randperm(32)
        torch.testing.assert_close(fusion.permute_rows(layers[0], order)(x), layers[0](x)[:, order])
    mixed = fusion.concat_rows([quant.Int4Linear.from_weight(dense[0].weight), dense[1]])
    assert isinstance(mixed, fusion.RowConcat)
    assert mixed(x).shape == (3, 96)


@torch.inference_mode()
def test_qwen2_with_biases_matches_transformers_and_bfloat16_models_keep_theirs() -> None:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=128,
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(config).eval()
    for proj in ("q_proj", "k_proj", "v_proj"):  # Qwen2's q/k/v biases, made visible
        torch.nn.init.normal_(getattr(model.model.layers[0].self_attn, proj).bias, std=0.5)
    ids = _ids(20)
    ref = model(input_ids=torch.tensor([[i % 128 for i in ids]])).logits[0]
    decoder = lean.LeanDecoder(model)
    got, _, _ = decoder.forward([i % 128 for i in ids], decoder.new_cache(), keep=20)
    torch.testing.assert_close(got, ref, atol=2e-4, rtol=2e-4)
    assert not lean.LeanDecoder.supports(model.to(torch.bfloat16))


def test_the_kv_budget_counts_the_bytes_the_cache_holds() -> None:
    model = _model("int4")
    float32_bytes = kv_bytes_per_token(model)  # transformers' forward: the model's dtype
    decoder = choose_forward(model, "lean", "cpu")
    half = decoder.kv_dtype == torch.float16  # GGUF blocks on the native kernels
    assert half == native.available()
    got = kv_bytes_per_token(model, decoder.kv_dtype)
    assert got == (float32_bytes // 2 if half else float32_bytes)
