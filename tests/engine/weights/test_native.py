"""The native block kernels (engine/weights/native, engine/weights/qblocks): the products they
compute, bitwise equality across batch sizes (what makes verification exact), GGUF blocks taken as
they are, and the fallback to torch's kernels."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from spec_lsp.engine.from_source import tiny_model
from spec_lsp.engine.weights import fusion, native, qblocks, quant
from spec_lsp.engine.weights.gguf import Q4Blocks, Q8Blocks
from spec_lsp.engine.weights.qblocks import BlockLinear

pytestmark = pytest.mark.skipif(not native.available(), reason="native kernels not built here")


def _reference(x: torch.Tensor, layer: BlockLinear) -> torch.Tensor:
    """The kernels' mathematics in float64: activations quantized per block of 32 to int8
    (d = max|x| / 127), integer dot products, `d_w d_x sum(q_w q_x) + m_w d_x sum(q_x)`."""
    m, k = x.shape
    g = k // 32
    xb = x.double().view(m, g, 32)
    amax = xb.abs().amax(-1)
    d_x = (amax.float() / 127).double()
    inv = torch.where(amax > 0, (127 / amax.float()).double(), torch.zeros_like(amax))
    q_x = torch.round((xb.float() * inv.float()[..., None]).double())  # float32 product, as C
    raw = layer.raw().view(layer.out_features, g, -1)
    d_w = raw[..., 0:2].contiguous().view(torch.float16)[..., 0].double()
    codes = layer.codes().double().view(layer.out_features, g, 32)
    dots = torch.einsum("ngk,mgk->mng", codes, q_x)
    y = (dots * d_w[None] * d_x[:, None]).sum(-1)
    if layer.kind == "q4_1":
        m_w = raw[..., 2:4].contiguous().view(torch.float16)[..., 0].double()
        y = y + (m_w[None] * (d_x * q_x.sum(-1))[:, None]).sum(-1)
    return y


@pytest.mark.parametrize("kind", ["q4_1", "q8_0"])
def test_products_are_the_block_mathematics(kind: str) -> None:
    gen = torch.Generator().manual_seed(1)
    layer = BlockLinear.from_weight(torch.randn(96, 160, generator=gen) * 0.1, kind)
    x = torch.randn(5, 160, generator=gen)
    x[2, :32] = 0  # an all-zero block quantizes to zeros
    y = layer(x)
    assert y.dtype == torch.float32 and y.shape == (5, 96)
    torch.testing.assert_close(y.double(), _reference(x, layer), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["q4_1", "q8_0"])
def test_rows_of_a_pass_are_bitwise_those_of_one_row_passes(kind: str) -> None:
    gen = torch.Generator().manual_seed(2)
    layer = BlockLinear.from_weight(torch.randn(200, 256, generator=gen), kind)
    x = torch.randn(67, 256, generator=gen)
    singles = torch.cat([layer(x[i : i + 1]) for i in range(x.shape[0])])
    # prefill chunks too: a prefill's KV holds the numbers decoding would have computed
    for rows in (2, 3, 5, 8, 9, 32, x.shape[0]):
        assert torch.equal(layer(x[:rows]), singles[:rows]), rows


def test_gguf_blocks_are_taken_as_they_are() -> None:
    gen = torch.Generator().manual_seed(3)
    codes = torch.randint(0, 16, (64, 96), generator=gen, dtype=torch.uint8)
    scale = (torch.rand(64, 3, generator=gen) * 0.01).half().float()
    minimum = (-torch.rand(64, 3, generator=gen) * 0.1).half().float()
    q4 = Q4Blocks(codes, scale, minimum)
    layer = BlockLinear.from_q4(q4)
    assert torch.equal(layer.codes(), codes)
    assert torch.equal(layer.dequantized(), q4.dequantize())
    codes8 = torch.randint(-128, 128, (64, 96), generator=gen, dtype=torch.int8)
    q8 = Q8Blocks(codes8, scale)
    layer8 = BlockLinear.from_q8(q8)
    assert torch.equal(layer8.codes(), codes8)
    assert torch.equal(layer8.dequantized(), q8.dequantize())
    with pytest.raises(ValueError, match="float16"):
        BlockLinear.from_q4(Q4Blocks(codes, scale + 1e-9, minimum))


@pytest.mark.parametrize("kind", ["q4_1", "q8_0"])
def test_packing_by_8_rows_round_trips_and_pads_a_last_partial_group(kind: str) -> None:
    gen = torch.Generator().manual_seed(5)
    n, k = 100, 96  # 12 groups of 8 rows and 4 rows in a padded 13th
    layer = BlockLinear.from_weight(torch.randn(n, k, generator=gen), kind)
    raw = layer.raw()
    assert layer.packed.shape == (13, 3, qblocks.PACKED[kind])
    assert torch.equal(qblocks.unpack(qblocks.pack(raw, kind), n, kind), raw)
    x = torch.randn(3, k, generator=gen)
    torch.testing.assert_close(layer(x).double(), _reference(x, layer), rtol=1e-5, atol=1e-5)
    assert torch.equal(
        layer.dequantized()[n - 4 :], BlockLinear(raw[n - 4 :], k, kind).dequantized()
    )


def test_fusion_keeps_each_layers_numbers() -> None:
    gen = torch.Generator().manual_seed(4)
    a = BlockLinear.from_weight(torch.randn(64, 96, generator=gen), "q4_1")
    b = BlockLinear.from_weight(torch.randn(32, 96, generator=gen), "q4_1")
    b.bias = torch.randn(32, generator=gen)
    x = torch.randn(3, 96, generator=gen)
    fused = fusion.concat_rows([a, b])
    assert isinstance(fused, BlockLinear)
    assert torch.equal(fused(x), torch.cat([a(x), b(x)], dim=-1))
    order = torch.randperm(64, generator=gen)
    assert torch.equal(fusion.permute_rows(a, order)(x), a(x)[:, order])


def test_apply_format_takes_the_native_kernels_and_the_tied_output_blocks() -> None:
    model = tiny_model(2, 0, 128)  # tied embedding and output
    weight = model.get_input_embeddings().weight
    embed = BlockLinear.from_weight(weight, "q8_0")  # stands for the GGUF's Q8_0 embedding
    codes = embed.codes()
    d = embed.raw().view(128, 2, 34)[..., :2].contiguous().view(torch.float16)[..., 0].float()
    blocks = {"model.embed_tokens.weight": Q8Blocks(codes, d)}
    label = quant.apply_format(model, "int4", output="int8", blocks=blocks)
    assert label == "int4 (output int8), native kernels"
    assert isinstance(model.lm_head, BlockLinear) and model.lm_head.kind == "q8_0"
    assert torch.equal(model.lm_head.raw(), embed.raw())  # the file's blocks, not re-quantized
    assert isinstance(model.model.layers[0].mlp.up_proj, BlockLinear)
    ids = torch.tensor([[1, 2, 3, 4]])
    assert torch.isfinite(model(ids).logits).all()


def test_the_build_is_the_one_asked_for() -> None:
    plain = os.environ.get("SPEC_LSP_KERNELS") == "plain"
    avx2 = torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512")
    assert native.simd() == (avx2 and not plain)


@pytest.mark.skipif(os.environ.get("SPEC_LSP_KERNELS") == "plain", reason="the run it starts")
def test_the_plain_cpp_kernels_pass_these_tests_too(tmp_path: Path) -> None:
    """The kernels' plain C++ path (a CPU without AVX2), built here and run through this file."""
    env = {**os.environ, "SPEC_LSP_KERNELS": "plain", "SPEC_LSP_CACHE": str(tmp_path)}
    run = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", __file__]
    done = subprocess.run(run, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and "skipped" in done.stdout  # it ran, and skipped itself


def test_torch_kernels_when_native_ones_are_off() -> None:
    code = (
        "from spec_lsp.engine.weights import native, qblocks; "
        "print(native.available(), qblocks.usable('cpu'))"
    )
    env = {**os.environ, "SPEC_LSP_KERNELS": "torch"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["False", "False"]


@pytest.mark.parametrize(
    ("group", "d", "dtype", "pad"),
    [(3, 64, torch.float32, 0), (3, 64, torch.float16, 32), (7, 48, torch.float16, 8)],
)
def test_attention_rows_are_those_of_one_row_passes_and_softmax_attention(
    group: int, d: int, dtype: torch.dtype, pad: int
) -> None:
    """Register blocks and tails of keys and features, both parts of each row's keys, query heads
    3 at a time and a remainder, float16 caches, key rows padded past the capacity."""
    gen = torch.Generator().manual_seed(5)
    kv, cap, start, n = 3, 256, 137, 9  # 138 .. 146 keys
    keys = torch.randn(kv, d, cap + pad, generator=gen).to(dtype)
    values = torch.randn(kv, cap, d, generator=gen).to(dtype)
    q = torch.randn(n, kv * group, d, generator=gen) * 0.2
    out = torch.ops.spec_lsp.attend(q, keys, values, start)
    for r in range(n):  # row r alone, as one-token decoding computes it
        one = torch.ops.spec_lsp.attend(q[r : r + 1], keys, values, start + r)
        assert torch.equal(one[0], out[r]), r
    for r in range(n):
        length = start + r + 1
        qr = q[r].view(kv, group, d)
        ref = torch.bmm(qr.double(), keys[:, :, :length].double()).softmax(-1)
        ref = torch.bmm(ref, values[:, :length].double()).reshape(kv * group, d)
        torch.testing.assert_close(out[r].double(), ref, rtol=1e-5, atol=1e-5)
    first = torch.ops.spec_lsp.attend(q[:1], keys, values, 0)  # one key: one part is empty
    torch.testing.assert_close(first[0], values[:, :1].float().repeat_interleave(group, 0)[:, 0])


def test_norm_and_gated_product_match_torch() -> None:
    gen = torch.Generator().manual_seed(6)
    x, w = torch.randn(5, 100, generator=gen), torch.randn(100, generator=gen)
    ref = torch.nn.functional.rms_norm(x, (100,), w, 1e-5)
    torch.testing.assert_close(torch.ops.spec_lsp.rms_norm(x, w, 1e-5), ref)
    gu = torch.randn(4, 2 * 96, generator=gen) * 4
    ref = torch.nn.functional.silu(gu[:, :96]) * gu[:, 96:]
    torch.testing.assert_close(torch.ops.spec_lsp.silu_mul(gu), ref)


def test_the_gated_product_of_a_row_does_not_depend_on_the_rows_beside_it() -> None:
    """Chunks of the threads' split start mid-row (97 columns): each row is the same bits alone
    or among 70 others."""
    gen = torch.Generator().manual_seed(7)
    gu = torch.randn(70, 2 * 97, generator=gen) * 4
    together = torch.ops.spec_lsp.silu_mul(gu)
    for r in range(70):
        assert torch.equal(together[r : r + 1], torch.ops.spec_lsp.silu_mul(gu[r : r + 1])), r
