"""A prompt's KV cache and logits do not depend on the passes it was prefilled in.

The engine prefills in chunks of 128 tokens, a cancelled prefill resumes where it stopped, and a
prompt that shares a prefix with a cached one prefills only its new tokens: all of these must leave
bitwise the cache of one cold prefill, or the same prompt gets another greedy answer depending on
the typing that came before it. Each pass of the lean forward computes every row on its own, in an
order that does not depend on how many rows the pass has (attention included).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from spec_lsp.engine import lean
from spec_lsp.engine.from_source import tiny_model
from spec_lsp.engine.weights import fusion, gguf_model, native, quant
from tests.engine.gguf_files import write_tiny

PASSES = (128, 64, 33, 32, 7, 1)  # the engine's chunk, longer and shorter than 32 rows, decoding
TOKENS = 200

needs_native = pytest.mark.skipif(not native.available(), reason="native kernels not built here")


def _ids(vocab: int) -> list[int]:
    return torch.randint(0, vocab, (TOKENS,), generator=torch.Generator().manual_seed(0)).tolist()


def _prefill(
    decoder: lean.LeanDecoder, ids: list[int], step: int
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """The last position's logits, and each layer's held keys and values, after `ids` in passes
    of `step` tokens."""
    cache = decoder.new_cache()
    for i in range(0, len(ids), step):
        logits, _, _ = decoder.forward(ids[i : i + step], cache)
    n = cache.length
    held = [k[:, :, :n] for k in cache.keys] + [v[:, :n] for v in cache.values]
    return logits, held


def _assert_invariant(make: Callable[[], lean.LeanDecoder], vocab: int) -> None:
    ids = _ids(vocab)
    cold_logits, cold_cache = _prefill(make(), ids, PASSES[0])
    for step in PASSES[1:]:
        logits, cache = _prefill(make(), ids, step)
        assert torch.equal(logits, cold_logits), f"logits after passes of {step} tokens"
        for i, (got, want) in enumerate(zip(cache, cold_cache, strict=True)):
            assert torch.equal(got, want), f"cache tensor {i} after passes of {step} tokens"


def _llama(fmt: str) -> lean.LeanDecoder:
    model = tiny_model(3, 11, 256)
    quant.apply_format(model, fmt)
    return lean.LeanDecoder(model)


@needs_native
@pytest.mark.parametrize("fmt", ["int4", "int8"])  # Q4_1 and Q8_0 blocks
def test_native_prefill_of_block_layers_is_the_same_in_passes_of_any_length(fmt: str) -> None:
    assert _llama(fmt).kv_dtype == torch.float16
    _assert_invariant(lambda: _llama(fmt), 256)


@needs_native
def test_native_prefill_of_a_gguf_qwen2_is_the_same_in_passes_of_any_length(
    tmp_path: Path,
) -> None:
    """Every block type the coder pair's files use (Q4_K, Q6_K, Q5_0, Q8_0, Q4_1), q/k/v biases."""
    path = write_tiny(tmp_path / "qwen2.gguf", "qwen2", seed=3)

    def make() -> lean.LeanDecoder:
        return lean.LeanDecoder(gguf_model.load_model(path, index_cache=tmp_path / "index.json"))

    _assert_invariant(make, 320)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_torch_attention_of_a_row_is_the_same_in_passes_of_any_length(dtype: torch.dtype) -> None:
    """torch's attention (no native kernels) over a float32 or float16 cache, row for row."""
    decoder = _llama("int4")
    gen = torch.Generator().manual_seed(1)
    q = torch.randn(TOKENS, decoder.heads, decoder.head_dim, generator=gen)  # [n, heads, D]
    kv, dim = decoder.kv_heads, decoder.head_dim
    keys = torch.randn(kv, dim, TOKENS, generator=gen).to(dtype)  # [kv, D, cap]
    values = torch.randn(kv, TOKENS, dim, generator=gen).to(dtype)  # [kv, cap, D]

    def attend(step: int) -> torch.Tensor:
        parts = [
            decoder._attend(q[i : i + step], keys, values, i, len(q[i : i + step]))
            for i in range(0, TOKENS, step)
        ]
        return torch.cat(parts)

    cold = attend(PASSES[0])
    for step in PASSES[1:]:
        assert torch.equal(attend(step), cold), f"passes of {step} rows"


@pytest.mark.parametrize("fmt", ["int4", "int8"])
def test_torch_packed_layers_give_each_row_the_bits_of_a_one_row_pass(fmt: str) -> None:
    """torch's int4 and int8 layers, as a module and as `fusion.kernel` (what the lean forward
    runs), on passes shorter and longer than 32 rows: one packed kernel at every length."""
    gen = torch.Generator().manual_seed(4)
    weight = torch.randn(96, 128, generator=gen)
    layer = (
        quant.Int4Linear.from_weight(weight)
        if fmt == "int4"
        else quant.Int8Linear.from_weight(weight)
    )
    layer.bias = torch.randn(96, generator=gen).to(quant.COMPUTE)
    x = torch.randn(TOKENS, 128, generator=gen)
    for run in (layer, fusion.kernel(layer)):
        singles = torch.cat([run(x[i : i + 1]) for i in range(TOKENS)])
        for step in PASSES:
            got = torch.cat([run(x[i : i + step]) for i in range(0, TOKENS, step)])
            assert torch.equal(got, singles), f"{type(run).__name__}, passes of {step} rows"


@pytest.mark.parametrize("fmt", ["int4", "int8"])
def test_torch_fallback_prefill_is_the_same_in_passes_of_any_length(
    fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the native kernels: torch's int4 (output int4) or int8 layers through
    `fusion.kernel`, torch's norms and attention, float32 cache, passes up to 128 rows: the
    packed kernels run at every length."""
    monkeypatch.setattr(native, "available", lambda: False)

    packed = quant.Int4Linear if fmt == "int4" else quant.Int8Linear

    def make() -> lean.LeanDecoder:
        model = tiny_model(3, 11, 256)
        quant.apply_format(model, fmt)
        assert all(isinstance(m, packed) for m in model.modules() if _linear(m))
        decoder = lean.LeanDecoder(model)
        assert not decoder.native and decoder.kv_dtype == torch.float32
        return decoder

    _assert_invariant(make, 256)


def _linear(module: torch.nn.Module) -> bool:
    return isinstance(module, torch.nn.Linear | quant.Int4Linear | quant.Int8Linear)
