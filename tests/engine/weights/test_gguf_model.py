"""A model built from a GGUF file's own blocks computes what transformers' de-quantized load of the
same file computes: bitwise where the layers are de-quantized, within int8-activation rounding
where the native kernels run the blocks; Llama's permuted q/k rows and tied outputs included."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from spec_lsp.engine.weights import gguf_model, native
from tests.engine.gguf_files import VOCAB, write_tiny

IDS = torch.tensor([[1, 5, 7, 9, 100, 200, 17, 3]])


def _reference(path: Path) -> torch.Tensor:
    from transformers import AutoModelForCausalLM

    ref = AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=torch.float32
    )
    with torch.inference_mode():
        return ref(input_ids=IDS).logits[0]


@pytest.mark.parametrize(("arch", "tied"), [("qwen2", False), ("llama", False), ("llama", True)])
def test_de_quantized_layers_equal_transformers_load_of_the_same_file(
    tmp_path: Path, arch: str, tied: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_tiny(tmp_path / f"{arch}.gguf", arch, tied=tied)
    monkeypatch.setattr(native, "available", lambda: False)
    model = gguf_model.load_model(path, index_cache=tmp_path / "index.json")
    assert model.config.vocab_size == VOCAB
    assert model.config.tie_word_embeddings == tied
    with torch.inference_mode():
        logits = model(input_ids=IDS).logits[0]
    assert torch.equal(logits, _reference(path))


def test_native_kernels_run_every_block_type_of_the_file(tmp_path: Path) -> None:
    if not native.available():
        pytest.skip("native kernels not built on this machine")
    from spec_lsp.engine.weights import qblocks

    path = write_tiny(tmp_path / "qwen2.gguf", "qwen2")
    model = gguf_model.load_model(path)
    kinds = {m.kind for m in model.modules() if isinstance(m, qblocks.BlockLinear)}
    assert kinds == {"q4_k", "q6_k", "q5_0", "q8_0", "q4_1"}
    assert not any(isinstance(m, torch.nn.Linear) for m in model.modules())
    with torch.inference_mode():
        logits = model(input_ids=IDS).logits[0]
    ref = _reference(path)
    # int8 activations per block of 32: close to the float product, the same greedy tokens.
    assert (logits - ref).abs().max() < 0.05 * ref.abs().max()
    assert torch.equal(logits.argmax(-1), ref.argmax(-1))


def test_index_cache_is_used_for_the_same_file_and_rebuilt_for_a_changed_one(
    tmp_path: Path,
) -> None:
    path = write_tiny(tmp_path / "m.gguf", "qwen2")
    cache = tmp_path / "index.json"
    first = gguf_model.read_index(path, cache)
    assert cache.is_file()
    cached = gguf_model.read_index(path, cache)
    assert cached == first
    write_tiny(path, "qwen2", seed=1, tied=True)  # another file at the same path
    again = gguf_model.read_index(path, cache)
    assert "output.weight" not in again.tensors
    cache.write_text("{not json")
    assert gguf_model.read_index(path, cache).tensors.keys() == again.tensors.keys()


def test_a_file_of_another_architecture_is_refused_clearly(tmp_path: Path) -> None:
    from gguf import GGUFWriter

    path = tmp_path / "gpt2.gguf"
    w = GGUFWriter(str(path), "gpt2")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(ValueError, match="architecture 'gpt2'"):
        gguf_model.load_model(path)


def test_a_preset_naming_float32_weights_gets_the_file_de_quantized(tmp_path: Path) -> None:
    from spec_lsp.engine.from_source import load_model
    from spec_lsp.engine.loading import LoadSpec
    from spec_lsp.engine.weights import qblocks

    path = write_tiny(tmp_path / "m.gguf", "qwen2")
    spec = LoadSpec(name="t", target=str(path), weights={"cpu": "float32"})
    assert not spec.keeps_blocks("cpu") and LoadSpec(name="t", target=str(path)).keeps_blocks("cpu")
    model = load_model(str(path), "cpu", torch.float32, gguf_blocks=spec.keeps_blocks("cpu"))
    assert not any(isinstance(m, qblocks.BlockLinear) for m in model.modules())
    with torch.inference_mode():
        assert torch.equal(model(input_ids=IDS).logits[0], _reference(path))


def test_float_tensors_of_every_width_read_back_shaped_as_the_file_says(tmp_path: Path) -> None:
    import numpy as np
    from gguf import GGMLQuantizationType, GGUFWriter

    values = np.arange(12, dtype=np.float32).reshape(3, 4) / 8  # exact in every width
    path = tmp_path / "floats.gguf"
    w = GGUFWriter(str(path), "qwen2")
    w.add_tensor("a.f32", values)
    w.add_tensor("a.f16", values.astype(np.float16))
    bf16 = (values.view(np.uint32) >> 16).astype(np.uint16)
    w.add_tensor("a.bf16", bf16, raw_dtype=GGMLQuantizationType.BF16)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    index = gguf_model._read_file(path)
    for name in ("a.f32", "a.f16", "a.bf16"):
        assert torch.equal(gguf_model._dense(index, path, name), torch.from_numpy(values)), name


def test_the_block_embedding_reads_the_files_rows_in_place(tmp_path: Path) -> None:
    import numpy as np

    from spec_lsp.engine.weights import compact

    path = write_tiny(tmp_path / "qwen2.gguf", "qwen2")
    model = gguf_model.load_model(path)
    embed = model.get_input_embeddings()
    if not isinstance(embed, gguf_model.BlockEmbedding):
        pytest.skip("the file's embedding is not in a block type the kernels read")
    assert isinstance(embed.rows, np.memmap)  # a map of the file, not a copy
    compact.own_storage(model)  # copies buffers and parameters: the map is neither
    assert isinstance(embed.rows, np.memmap)
    copy = gguf_model.BlockEmbedding(
        torch.from_numpy(np.array(embed.rows)), embed.kind, embed.embedding_dim, embed.dtype
    )
    assert torch.equal(embed(IDS), copy(IDS))
    assert torch.equal(embed.weight[IDS[0]], embed(IDS)[0])
