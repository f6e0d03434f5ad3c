"""A causal LM built from any llama-family GGUF file's own blocks (Qwen2, Llama), not de-quantized.

transformers can load a GGUF (`gguf_file=`), but it de-quantizes every tensor to float32 (a 1.5B
model becomes 6 GB, in minutes) and the engine then had to find the file's blocks again. Here the
model is built as the file stores it:

- the config from the file's metadata (`qwen2.*` / `llama.*` keys: layers, widths, heads, rope
  base, norm epsilon; tied output when the file has no `output.weight`);
- the skeleton of transformers' class for that architecture built on the meta device (no weight
  memory), its linear layers replaced by `qblocks.BlockLinear`s holding the file's bytes (Q4_K,
  Q6_K, Q5_0, Q8_0, Q4_1: whatever the native kernels read), norms and biases as float32;
- the token embedding as `BlockEmbedding`: the file's rows, a row de-quantized when looked up;
- llama's q/k rows, which llama.cpp's converter permutes for its rope layout, put back in
  transformers' order (as bytes: rows of blocks move whole). Qwen2 files are not permuted.

Where a block type has no native kernel (or none are built: no compiler, another CPU, a GPU), that
layer is de-quantized to a float32 (or the asked dtype) `nn.Linear` instead: slower and larger, as
exact. The file's tensor index (offsets, types, shapes, metadata) is cached beside the model cache
after the first read: gguf-py parses the 151,936-token vocabulary in ~10 s, the index in ~0.1 s.

Knows nothing of presets or where the file came from (`fetch`): a path in, a module out.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from spec_lsp.engine import progress
from spec_lsp.engine.weights import native, qblocks
from spec_lsp.engine.weights.gguf import LAYER_NAMES, hf_name, unpermute_rows
from spec_lsp.engine.weights.gguf_index import (  # noqa: F401 - read_index, _read_file: this module's API
    FileRows,
    GGUFIndex,
    _read_file,
    read_index,
)

log = logging.getLogger(__name__)


def config_of(index: GGUFIndex) -> Any:
    """transformers' config for the file's architecture, from its metadata."""
    from transformers import AutoConfig

    m = index.meta
    vocab = index.tensors["token_embd.weight"].shape[0]
    kw: dict[str, Any] = dict(
        vocab_size=vocab,
        hidden_size=int(m["embedding_length"]),
        intermediate_size=int(m["feed_forward_length"]),
        num_hidden_layers=int(m["block_count"]),
        num_attention_heads=int(m["attention.head_count"]),
        num_key_value_heads=int(m.get("attention.head_count_kv", m["attention.head_count"])),
        max_position_embeddings=int(m.get("context_length", 4096)),
        rms_norm_eps=float(m.get("attention.layer_norm_rms_epsilon", 1e-6)),
        rope_theta=float(m.get("rope.freq_base", 10000.0)),
        tie_word_embeddings="output.weight" not in index.tensors,
        hidden_act="silu",
    )
    if index.arch == "qwen2":
        kw["use_sliding_window"] = False
    for key, name in (
        ("eos", "eos_token_id"),
        ("bos", "bos_token_id"),
        ("padding", "pad_token_id"),
    ):
        if key in index.tokens:
            kw[name] = index.tokens[key]
    config = AutoConfig.for_model(index.arch, **kw)
    # rope_theta lives in rope_parameters in transformers 5; set both spellings where they exist.
    rope = getattr(config, "rope_parameters", None)
    if isinstance(rope, dict):
        rope["rope_theta"] = kw["rope_theta"]
    return config


class BlockEmbedding(nn.Module):
    """A token embedding [V, H] as the file's rows of blocks; a lookup de-quantizes its rows.

    The rows stay in a read-only map of the file (`rows`, not a buffer: `compact.own_storage`
    copies buffers): a lookup touches the pages of the tokens it reads, and only those count in
    the process's memory (the 1.5B coder's 125 MB embedding, the 0.5B's 89 MB, of which a session
    reads a few MB). The cache's files are replaced atomically, never rewritten in place, so the
    map stays valid while the server runs. A tensor of bytes (tests, a copy) works the same."""

    def __init__(
        self, rows: np.ndarray | torch.Tensor, kind: str, dim: int, dtype: torch.dtype
    ) -> None:
        super().__init__()
        self.kind, self.embedding_dim, self.dtype = kind, dim, dtype
        self.rows = rows  # [V, bytes per row] uint8
        self.num_embeddings = rows.shape[0]

    def raw(self, ids: torch.Tensor | None = None) -> torch.Tensor:
        """The rows of blocks of `ids` (every row when None), copied out of the map."""
        if isinstance(self.rows, torch.Tensor):
            return self.rows if ids is None else self.rows[ids]
        picked = self.rows if ids is None else self.rows[ids.numpy()]
        return torch.from_numpy(np.array(picked))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        flat = ids.reshape(-1).cpu()
        out = qblocks.dequantize_rows(self.raw(flat), self.kind, self.embedding_dim)
        return out.to(self.dtype).view(*ids.shape, self.embedding_dim).to(ids.device)

    @property
    def weight(self) -> torch.Tensor:
        """The whole matrix (built on each access; for code that reads a layer's weight)."""
        return self.forward(torch.arange(self.num_embeddings))

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}, {self.kind}"


def _dense(index: GGUFIndex, path: Path, name: str) -> torch.Tensor:
    """A tensor de-quantized to float32, shaped as the file says."""
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize

    t = index.tensors[name]
    raw = index.matrix(path, name)
    if t.kind in ("F32", "F16", "BF16"):
        dtype = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16}[t.kind]
        flat = np.frombuffer(np.ascontiguousarray(raw).tobytes(), dtype=dtype)
        if t.kind == "BF16":
            bf16 = torch.from_numpy(flat.astype(np.int16)).view(torch.bfloat16)
            return bf16.float().reshape(t.shape)
        return torch.from_numpy(flat.astype(np.float32)).reshape(t.shape)
    values = dequantize(np.ascontiguousarray(raw), GGMLQuantizationType[t.kind])
    return torch.from_numpy(np.ascontiguousarray(values, dtype=np.float32)).reshape(t.shape)


def _row_order(index: GGUFIndex, gguf_name: str, config: Any) -> torch.Tensor | None:
    """The row permutation that undoes llama.cpp's q/k layout (llama files only)."""
    if index.arch != "llama" or not gguf_name.endswith(("attn_q.weight", "attn_k.weight")):
        return None
    heads = config.num_attention_heads
    if gguf_name.endswith("attn_k.weight"):
        heads = config.num_key_value_heads
    n = index.tensors[gguf_name].shape[0]
    return unpermute_rows(torch.arange(n), heads)


def _linear(
    index: GGUFIndex,
    path: Path,
    name: str,
    config: Any,
    device: str,
    dtype: torch.dtype,
    blocks: bool = True,
) -> nn.Module:
    """The layer of a GGUF matrix: its blocks for the native kernels where they read the type,
    else de-quantized."""
    t = index.tensors[name]
    n, k = t.shape
    order = _row_order(index, name, config)
    kind = qblocks.KIND_OF_GGML.get(t.kind)
    fits = kind is not None and k % qblocks.block_weights(kind) == 0
    if blocks and kind is not None and fits and device == "cpu" and native.available():
        # Read a few thousand rows at a time into the packed tensor: no copy of the whole matrix
        # (nor a map of it counting in the resident set) beside the layer being built.
        return qblocks.BlockLinear(FileRows(path, t), k, kind, order)
    weight = _dense(index, path, name)
    if order is not None:
        weight = weight[order]
    layer = nn.Linear(k, n, bias=False, device="meta")
    layer.weight = nn.Parameter(weight.to(device=device, dtype=dtype), requires_grad=False)
    return layer


def _vector(index: GGUFIndex, path: Path, name: str, config: Any) -> torch.Tensor:
    v = _dense(index, path, name)
    order = _row_order(index, name.replace(".bias", ".weight"), config)
    return v[order] if order is not None else v


def load_model(
    path: Path,
    device: str = "cpu",
    dtype: torch.dtype = torch.float32,
    index_cache: Path | None = None,
    blocks: bool = True,
) -> Any:
    """transformers' causal LM for the file's architecture, its layers the file's blocks (with
    `blocks` False: de-quantized to `dtype`, the reference a bench compares the blocks with)."""
    from transformers import AutoModelForCausalLM

    index = read_index(path, index_cache)
    config = config_of(index)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    base = model.model
    report = _reporter(index, path)
    # Matrices first: a bias then goes to the layer that replaced the skeleton's.
    for name in sorted(index.tensors, key=lambda n: n.endswith(".bias")):
        report(name)
        target = hf_name(name)
        parent_name, _, leaf = target.rpartition(".")
        module_name, _, _ = parent_name.rpartition(".")
        if name == "token_embd.weight":
            base.embed_tokens = _embedding(index, path, config, device, dtype)
            continue
        if name == "output.weight":
            model.lm_head = _linear(index, path, name, config, device, dtype, blocks)
            continue
        owner = model.get_submodule(parent_name)
        part = name.split(".")[-2]
        if leaf == "weight" and part in LAYER_NAMES:
            setattr(
                model.get_submodule(module_name),
                parent_name.rsplit(".", 1)[-1],
                _linear(index, path, name, config, device, dtype, blocks),
            )
        elif leaf == "bias" and part in LAYER_NAMES:
            bias = _vector(index, path, name, config).to(device)
            owner.bias = (
                bias if isinstance(owner, qblocks.BlockLinear) else nn.Parameter(bias, False)
            )
        else:  # norms
            owner.weight = nn.Parameter(_vector(index, path, name, config).to(device), False)
    if config.tie_word_embeddings:
        report("output.weight")
        model.lm_head = _linear(index, path, "token_embd.weight", config, device, dtype, blocks)
    report("")
    with torch.device(device):
        base.rotary_emb = type(base.rotary_emb)(config=config)
    left = [n for n, t in (*model.named_parameters(), *model.named_buffers()) if t.is_meta]
    if left:
        raise ValueError(f"{path.name}: tensors missing from the file: {left[:5]}")
    return model.eval()


def _reporter(index: GGUFIndex, path: Path) -> Callable[[str], None]:
    """Reports, through the load's `progress.ambient()`, the share of the file's bytes read once
    each tensor begins (a tied output layer reads the embedding's again), every 2% or so."""
    sizes = {n: t.nbytes for n, t in index.tensors.items()}
    if "output.weight" not in sizes:
        sizes["output.weight"] = sizes["token_embd.weight"]
    total, done, shown = sum(sizes.values()), 0, -1.0
    count, seen, report = len(sizes), 0, progress.ambient()

    def begin(name: str) -> None:  # "": all read
        nonlocal done, shown, seen
        fraction = done / total if name else 1.0
        if fraction - shown >= 0.02 or not name:
            report(f"reading {path.name}: {seen}/{count} tensors", fraction)
            shown = fraction
        done, seen = done + sizes.get(name, 0), seen + bool(name)

    return begin


def _embedding(
    index: GGUFIndex, path: Path, config: Any, device: str, dtype: torch.dtype
) -> nn.Module:
    t = index.tensors["token_embd.weight"]
    kind = qblocks.KIND_OF_GGML.get(t.kind)
    if kind is None or device != "cpu":  # floats, a type the kernels do not read, a GPU
        embed = nn.Embedding(t.shape[0], t.shape[1], device="meta")
        embed.weight = nn.Parameter(_dense(index, path, t.name).to(device, dtype), False)
        return embed
    return BlockEmbedding(index.matrix(path, t.name), kind, t.shape[1], dtype)
