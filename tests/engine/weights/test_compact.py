"""Resident memory of a packed model: the embedding as its Q8_0 blocks gives the loaded rows
bitwise; fused layers stand in for the layers they fused; no tensor stays a view of a file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from torch import nn

from spec_lsp.engine import lean
from spec_lsp.engine.forward import choose_forward
from spec_lsp.engine.from_source import load_model, tiny_model
from spec_lsp.engine.weights import compact, quant
from spec_lsp.engine.weights.gguf import Q8Blocks
from spec_lsp.engine.weights.qblocks import BlockLinear


def _blocks(rows: int = 300, dim: int = 64, seed: int = 0) -> Q8Blocks:
    gen = torch.Generator().manual_seed(seed)
    codes = torch.randint(-127, 128, (rows, dim), generator=gen, dtype=torch.int8)
    scales = (torch.rand(rows, dim // 32, generator=gen) / 50).half().float()
    return Q8Blocks(codes, scales)


def test_q8_embedding_rows_are_the_dequantized_rows_bitwise() -> None:
    blocks = _blocks()
    full = blocks.dequantize()
    embedding = compact.Q8Embedding(blocks)
    ids = torch.tensor([[0, 5, 299], [7, 7, 1]])
    assert torch.equal(embedding(ids), full[ids])
    assert torch.equal(embedding.weight, full)
    assert embedding.codes.nbytes + embedding.scales.nbytes < full.nbytes / 3


def _tied_model(blocks: Q8Blocks) -> nn.Module:
    model = tiny_model(2, 3, blocks.codes.shape[0])
    hidden = model.config.hidden_size
    assert blocks.codes.shape[1] == hidden
    with torch.no_grad():
        model.get_input_embeddings().weight.copy_(blocks.dequantize())
    return model


def test_compact_embedding_replaces_only_the_same_untied_matrix() -> None:
    blocks = _blocks(256, 64)
    model = _tied_model(blocks)
    if model.lm_head.weight is model.get_input_embeddings().weight:
        assert not compact.compact_embedding(model, blocks)  # the output still reads it
    quant.apply_format(model, "int4", output="int8")  # the output packed: its own copy
    other = Q8Blocks(blocks.codes.clone(), blocks.scale.clone())
    other.codes[17, 3] += 1
    assert not compact.compact_embedding(model, other)  # one weight differs: kept as it is
    ids = torch.tensor([[1, 2, 3, 200]])
    before = model(input_ids=ids).logits
    assert compact.compact_embedding(model, blocks)
    assert isinstance(model.get_input_embeddings(), compact.Q8Embedding)
    assert torch.equal(model(input_ids=ids).logits, before)


@torch.inference_mode()
def test_fused_slices_keep_transformers_forward_and_drop_the_copies() -> None:
    model = tiny_model(2, 5, 256)
    quant.apply_format(model, "int4")
    ids = torch.randint(0, 256, (1, 9), generator=torch.Generator().manual_seed(1))
    before = model(input_ids=ids).logits
    bytes_before = quant.weight_bytes(model)
    decoder = choose_forward(model, "lean", "cpu")
    assert isinstance(decoder, lean.LeanDecoder)
    attn = model.model.layers[0].self_attn
    assert isinstance(attn.q_proj, compact.FusedSlice)
    assert isinstance(model.model.layers[0].mlp.up_proj, compact.FusedSlice)
    torch.testing.assert_close(model(input_ids=ids).logits, before, atol=1e-5, rtol=1e-5)
    # The separate layers are gone: only the fused ones (and the q/k slices' row indices) stay.
    separate = ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj")
    for name, module in model.named_modules():
        packed = isinstance(module, quant.Int4Linear | BlockLinear)
        assert not (name.endswith(separate) and packed), name
    assert quant.weight_bytes(model) < 1.1 * bytes_before
    with pytest.raises(ValueError, match="fused already"):  # one LeanDecoder per model
        lean.LeanDecoder(model)
    # The lean forward computes the same function (its KV cache in float32 here: in float16, as
    # it keeps it over GGUF blocks, the rounding moves this random model's int8 activations).
    half = decoder.kv_dtype
    decoder.kv_dtype = torch.float32
    logits, _, _ = decoder.forward(ids[0].tolist(), decoder.new_cache(), keep=9)
    torch.testing.assert_close(logits, before[0], atol=2e-2, rtol=2e-2)
    decoder.kv_dtype = half
    logits, _, _ = decoder.forward(ids[0].tolist(), decoder.new_cache(), keep=9)
    assert torch.equal(logits.argmax(-1), before[0].argmax(-1))


def _file_mappings() -> list[tuple[int, int]]:
    spans = []
    for line in Path(f"/proc/{os.getpid()}/maps").read_text().splitlines():
        fields = line.split()
        if len(fields) >= 6 and fields[5].startswith("/"):
            start, end = (int(x, 16) for x in fields[0].split("-"))
            spans.append((start, end))
    return spans


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc/<pid>/maps")
def test_own_storage_leaves_no_tensor_in_a_checkpoint_mapping(tmp_path: Path) -> None:
    tiny_model(2, 4, 256).save_pretrained(tmp_path)
    model = load_model(str(tmp_path), "cpu", torch.float32)
    tensors = [*model.parameters(), *model.buffers()]

    def in_file(t: torch.Tensor) -> bool:
        ptr = t.untyped_storage().data_ptr()
        return any(a <= ptr < b for a, b in _file_mappings())

    if not any(in_file(t) for t in tensors):
        pytest.skip("this safetensors build copies on load: nothing to test")
    tied = model.lm_head.weight is model.get_input_embeddings().weight
    assert compact.own_storage(model) > 0
    assert not any(in_file(t) for t in [*model.parameters(), *model.buffers()])
    assert (model.lm_head.weight is model.get_input_embeddings().weight) == tied
