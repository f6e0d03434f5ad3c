"""The native kernels of the GGUF blocks Q4_K, Q6_K and Q5_0 (engine/weights/native/kquants.cpp,
engine/weights/kblocks.py): the file's bytes taken and given back as they are, gguf-py's
de-quantization bit for bit, products that are the block mathematics, rows of a pass bitwise those
of one-row passes (what keeps verification exact), and the same bits from every path (plain C++,
AVX2, VNNI in 256 or 512 bits, AMX tiles)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import gguf
import numpy as np
import pytest
import torch
from gguf import GGMLQuantizationType, quants

from spec_lsp.engine.weights import fusion, kblocks, native, qblocks
from spec_lsp.engine.weights.qblocks import BlockLinear

pytestmark = pytest.mark.skipif(not native.available(), reason="native kernels not built here")

NEW_KINDS = ["q5_0", "q4_k", "q6_k"]
AMX_ROWS = 28  # the fewest rows of a pass the AMX tiles take by default (`kq_amx_rows`)
GGML_OF_KIND = {kind: GGMLQuantizationType[g] for g, kind in qblocks.KIND_OF_GGML.items()}
DUMP = "SPEC_LSP_KQ_DUMP"  # where a run of another path writes `_fixed_outputs()`


def _random_blocks(kind: str, n: int, k: int, seed: int) -> torch.Tensor:
    """Rows [n, K / B * bytes] of random valid blocks: random bytes, the fp16 scales small."""
    rng = np.random.default_rng(seed)
    weights, size = gguf.GGML_QUANT_SIZES[GGML_OF_KIND[kind]]
    assert (weights, size) == qblocks.BLOCKS[kind]
    raw = rng.integers(0, 256, (n, k // weights, size), dtype=np.uint8)
    at = {"q4_1": [0, 2], "q8_0": [0], "q5_0": [0], "q4_k": [0, 2], "q6_k": [208]}[kind]
    for i in at:
        scale = (rng.random(raw.shape[:2]) * 0.02 - 0.005).astype(np.float16)
        raw[..., i : i + 2] = scale.view(np.uint8).reshape(*raw.shape[:2], 2)
    return torch.from_numpy(raw.reshape(n, -1))


def _gguf_dequantized(raw: torch.Tensor, kind: str, k: int) -> torch.Tensor:
    out = quants.dequantize(raw.numpy(), GGML_OF_KIND[kind])
    return torch.from_numpy(np.ascontiguousarray(out)).reshape(raw.shape[0], k)


def _reference(x: torch.Tensor, raw: torch.Tensor, kind: str) -> torch.Tensor:
    """The kernels' mathematics in float64: activations quantized per block of 32 to int8
    (d = max|x| / 127), times the weights gguf-py de-quantizes."""
    m, k = x.shape
    xb = x.view(m, k // 32, 32)
    amax = xb.abs().amax(-1)
    d_x = (amax / 127).double()
    inv = torch.where(amax > 0, 127 / amax, torch.zeros_like(amax))
    q_x = torch.round(xb * inv[..., None]).double()  # float32 product, as C
    acts = (q_x * d_x[..., None]).view(m, k)
    return acts @ _gguf_dequantized(raw, kind, k).double().T


@pytest.mark.parametrize("kind", NEW_KINDS)
def test_products_are_the_block_mathematics(kind: str) -> None:
    n, k = 100, 512  # 12 groups of 8 rows and 4 rows in a padded 13th
    layer = BlockLinear(_random_blocks(kind, n, k, 1), k, kind)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(6, k, generator=gen)
    x[2, :32] = 0  # an all-zero block quantizes to zeros
    y = layer(x)
    assert y.dtype == torch.float32 and y.shape == (6, n)
    ref = _reference(x, layer.raw(), kind)
    torch.testing.assert_close(y.double(), ref, rtol=1e-5, atol=1e-5 * ref.abs().max().item())


@pytest.mark.parametrize("kind", NEW_KINDS)
def test_the_files_bytes_come_back_and_a_last_group_is_padded(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    n, k = 100, 512
    raw = _random_blocks(kind, n, k, 2)
    layer = BlockLinear(raw, k, kind)
    assert layer.packed.shape == (13, k // qblocks.block_weights(kind), qblocks.PACKED[kind])
    assert torch.equal(layer.raw(), raw)
    assert torch.equal(
        layer.dequantized()[n - 4 :], BlockLinear(raw[n - 4 :], k, kind).dequantized()
    )
    monkeypatch.setattr(qblocks, "PACK_ROWS", 16)  # packed and given back 16 rows at a time
    assert torch.equal(qblocks.pack(raw, kind), layer.packed)
    assert torch.equal(qblocks.unpack(layer.packed, n, kind), raw)


@pytest.mark.parametrize("kind", NEW_KINDS)
def test_dequantized_is_gguf_pys_bit_for_bit(kind: str) -> None:
    k = 768
    raw = _random_blocks(kind, 37, k, 3)
    ref = _gguf_dequantized(raw, kind, k)
    assert torch.equal(BlockLinear(raw, k, kind).dequantized(), ref)
    codes = BlockLinear(raw, k, kind).codes()
    bits = {"q5_0": 5, "q4_k": 4, "q6_k": 6}[kind]
    assert codes.dtype == torch.uint8 and int(codes.max()) < 2**bits
    if kind == "q5_0":  # d (q - 16)
        d = raw.view(37, -1, 22)[..., :2].contiguous().view(torch.float16).float()
        w = d * (codes.view(37, -1, 32).float() - 16)
        assert torch.equal(w.view(37, k), ref)


@pytest.mark.parametrize("kind", ["q4_1", "q8_0", *NEW_KINDS])
def test_rows_for_an_embedding_are_gguf_pys(kind: str) -> None:
    k = 512
    raw = _random_blocks(kind, 20, k, 10)
    assert torch.equal(
        qblocks.dequantize_rows(raw[5:9], kind, k), _gguf_dequantized(raw, kind, k)[5:9]
    )


def test_gguf_pys_q5_0_quantization_is_taken_as_it_is() -> None:
    gen = torch.Generator().manual_seed(4)
    weight = torch.randn(24, 256, generator=gen) * 0.05
    raw = torch.from_numpy(quants.quantize(weight.numpy(), GGMLQuantizationType.Q5_0))
    layer = BlockLinear(raw, 256, "q5_0")
    assert torch.equal(layer.raw(), raw)
    torch.testing.assert_close(layer.dequantized(), weight, atol=0.01, rtol=0)
    x = torch.randn(3, 256, generator=gen)
    torch.testing.assert_close(layer(x).double(), _reference(x, raw, "q5_0"), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", NEW_KINDS)
def test_rows_of_a_pass_are_bitwise_those_of_one_row_passes(kind: str) -> None:
    k = 512
    layer = BlockLinear(_random_blocks(kind, 60, k, 5), k, kind)
    x = torch.randn(40, k, generator=torch.Generator().manual_seed(5))
    singles = torch.cat([layer(x[i : i + 1]) for i in range(x.shape[0])])
    for rows in (2, 3, 4, 5, 7, 8, 9, 17, 32, 40):
        assert torch.equal(layer(x[:rows]), singles[:rows]), rows
    assert torch.equal(layer(x[3:11]), singles[3:11])  # rows at other places in the tiles


@pytest.mark.parametrize("kind", NEW_KINDS)
def test_rows_and_concat_keep_each_layers_numbers(kind: str) -> None:
    k = 256
    a = BlockLinear(_random_blocks(kind, 40, k, 6), k, kind)
    b = BlockLinear(_random_blocks(kind, 20, k, 7), k, kind)
    b.bias = torch.randn(20)
    x = torch.randn(3, k, generator=torch.Generator().manual_seed(6))
    fused = fusion.concat_rows([a, b])
    assert isinstance(fused, BlockLinear) and fused.kind == kind
    assert torch.equal(fused(x), torch.cat([a(x), b(x)], dim=-1))
    order = torch.randperm(40, generator=torch.Generator().manual_seed(7))
    assert torch.equal(a.rows(order)(x), a(x)[:, order])


def test_kinds_and_blocks_for_a_loader() -> None:
    assert qblocks.KIND_OF_GGML == {
        "Q4_1": "q4_1",
        "Q8_0": "q8_0",
        "Q4_K": "q4_k",
        "Q6_K": "q6_k",
        "Q5_0": "q5_0",
    }
    assert [qblocks.block_weights(k) for k in ("q4_1", "q8_0", "q5_0", "q4_k", "q6_k")] == [
        32,
        32,
        32,
        256,
        256,
    ]
    for kind, (weights, size, packed) in kblocks.SPECS.items():
        assert gguf.GGML_QUANT_SIZES[GGML_OF_KIND[kind]] == (weights, size)
        assert packed >= 8 * size and packed <= 8 * size * 1.03  # the file's bytes, +3% at most
    with pytest.raises(ValueError, match="in_features"):
        BlockLinear(_random_blocks("q4_k", 8, 256, 8), 128, "q4_k")


def _fixed_outputs() -> dict[str, torch.Tensor]:
    """Products of every kind for a fixed input, passes of 1 to 61 rows (every tile size of every
    path), compared across the kernels' paths."""
    gen = torch.Generator().manual_seed(9)
    x = torch.randn(128, 512, generator=gen)
    outputs = {}
    for kind in ["q4_1", "q8_0", *NEW_KINDS]:
        layer = BlockLinear(_random_blocks(kind, 44, 512, 9), 512, kind)
        for rows in (1, 5, 9, 20, 61, 128):
            outputs[f"{kind} {rows}"] = layer(x[:rows])
    return outputs


@pytest.mark.skipif(DUMP not in os.environ, reason="written for another path's run")
def test_write_the_fixed_outputs() -> None:
    torch.save(_fixed_outputs(), os.environ[DUMP])


def _run_path(mode: str, tmp_path: Path, args: list[str]) -> dict[str, torch.Tensor]:
    out = tmp_path / f"{mode}.pt"
    env = {**os.environ, "SPEC_LSP_KERNELS": mode, "SPEC_LSP_CACHE": str(tmp_path), DUMP: str(out)}
    run = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", *args]
    done = subprocess.run(run, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    return torch.load(out)


@pytest.mark.skipif(os.environ.get("SPEC_LSP_KERNELS") == "plain", reason="the run it starts")
def test_the_plain_cpp_kernels_pass_these_tests_with_the_same_bits(tmp_path: Path) -> None:
    """The plain C++ path (a CPU without AVX2), built here, runs this file and gives bitwise the
    numbers of this run's path (Q4_1 and Q8_0 too)."""
    theirs = _run_path("plain", tmp_path, [__file__])
    for kind, y in _fixed_outputs().items():
        assert torch.equal(theirs[kind], y), kind


def test_the_512_bit_path_is_built_where_the_cpu_has_it() -> None:
    mode = os.environ.get("SPEC_LSP_KERNELS")
    wide = native._cpu_flags() >= native.AVX512 and mode not in ("plain", "avx2", "avx2+vnni")
    assert (native.vector_bits() == 512) == (wide and native.simd())
    tiles = wide and native._cpu_flags() >= native.AMX and mode != "avx512+vnni"
    amx = native.isa() == "amx+avx512"
    assert amx == (tiles and native.simd() and torch.ops.spec_lsp.kq_amx_rows(0) == AMX_ROWS)
    if tiles and not amx:  # built, but the kernel refused the tiles' permission: the zmm path
        assert native.isa() == "avx512+vnni" and torch.ops.spec_lsp.kq_amx_rows(0) == -1


@pytest.mark.skipif(not native.available() or native.isa() != "amx+avx512", reason="no AMX")
@pytest.mark.parametrize("kind", NEW_KINDS)
def test_the_amx_tiles_give_the_512_bit_paths_bits(kind: str) -> None:
    """Passes of 1 to 130 rows (whole tiles of 16, padded ones, a rest by the vectors), 13 groups
    (a last one alone in its pair of tiles) and 6, Q5_0 with an odd number of blocks of 32 (25),
    through the AMX tiles and through the 512-bit VNNI path (`kq_amx_rows`: the fewest rows the
    tiles take), in one process: the same bits."""
    amx_rows = torch.ops.spec_lsp.kq_amx_rows
    assert amx_rows(0) == AMX_ROWS
    gen = torch.Generator().manual_seed(12)
    for n, k in ((100, 512), (44, 800 if kind == "q5_0" else 768)):
        layer = BlockLinear(_random_blocks(kind, n, k, 12), k, kind)
        x = torch.randn(130, k, generator=gen)
        x[3, :32] = 0
        try:
            for rows in range(1, 131):
                amx_rows(1)
                tiles = layer(x[:rows])
                amx_rows(1 << 30)
                assert torch.equal(tiles, layer(x[:rows])), (n, k, rows)
        finally:
            amx_rows(AMX_ROWS)


@pytest.mark.skipif(not native.available() or native.vector_bits() != 512, reason="no AVX-512")
@pytest.mark.parametrize("kind", NEW_KINDS)
def test_the_wide_tiles_give_the_pair_paths_bits(kind: str) -> None:
    """Passes of 1 to 40 rows (tiles of 16 and a rest), 13 groups (a last one alone, outside the
    pairs) and 6 (a padded last group), Q5_0 with an odd number of blocks of 32, through the wide
    tiles (two groups a zmm) and the pair-of-rows path (`kq_wide_rows`: the fewest rows the wide
    tiles take), in one process: the same bits, and each row that of a one-row pass."""
    wide_rows = torch.ops.spec_lsp.kq_wide_rows
    assert wide_rows(0) == 2
    gen = torch.Generator().manual_seed(13)
    for n, k in ((100, 512), (44, 800 if kind == "q5_0" else 768)):
        layer = BlockLinear(_random_blocks(kind, n, k, 13), k, kind)
        x = torch.randn(40, k, generator=gen)
        x[3, :32] = 0
        singles = torch.cat([layer(x[i : i + 1]) for i in range(x.shape[0])])
        try:
            for rows in range(2, 41):
                wide_rows(2)
                wide = layer(x[:rows])
                wide_rows(1 << 30)
                assert torch.equal(wide, layer(x[:rows])), (n, k, rows)
                assert torch.equal(wide, singles[:rows]), (n, k, rows)
        finally:
            wide_rows(2)


@pytest.mark.parametrize("mode", ["avx2", "avx2+vnni", "avx512+vnni"])
def test_the_narrower_paths_give_the_wider_paths_bits(mode: str, tmp_path: Path) -> None:
    """On a machine with VNNI: the AVX2 path (and, where the default is AVX-512, the 256-bit VNNI
    path; where it is AMX, the 512-bit VNNI path without tiles) gives bitwise this run's numbers."""
    isa, wide = native.isa(), native.vector_bits() == 512
    vnni = isa in ("avx2+vnni", "avx512+vnni", "amx+avx512")
    wider = {"avx2": True, "avx2+vnni": wide, "avx512+vnni": isa == "amx+avx512"}[mode]
    if not (vnni and wider) or os.environ.get("SPEC_LSP_KERNELS") is not None:
        pytest.skip(f"a machine whose default path is wider than {mode}")
    theirs = _run_path(mode, tmp_path, [f"{__file__}::test_write_the_fixed_outputs"])
    for kind, y in _fixed_outputs().items():
        assert torch.equal(theirs[kind], y), kind


def test_rows_for_an_embedding_without_the_native_kernels() -> None:
    code = (
        "import torch, sys; sys.path.insert(0, 'tests/engine/weights'); "
        "from test_kquants import _random_blocks, _gguf_dequantized; "
        "from spec_lsp.engine.weights import native, qblocks; "
        "raw = _random_blocks('q6_k', 6, 512, 11); "
        "print(native.available(), torch.equal(qblocks.dequantize_rows(raw, 'q6_k', 512), "
        "_gguf_dequantized(raw, 'q6_k', 512)))"
    )
    env = {**os.environ, "SPEC_LSP_KERNELS": "torch"}
    root = Path(__file__).parents[3]
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["False", "True"]
