"""Resident memory of a packed model: weights kept once, in their smallest exact form.

Two kinds of copy would otherwise stay resident beside what the forward reads:

- The token embedding. A bundled GGUF stores it as Q8_0 blocks (int8 codes, one fp16 scale per 32
  weights); loaded, it is a float32 matrix four times that size (113 MB for SmolLM2's 49152 x 576),
  read one row per token. `Q8Embedding` keeps the blocks and builds the rows a lookup asks for:
  `float32(code) * float32(scale)` is the very product the float32 matrix was made of, so every
  row is bitwise the loaded one (tests/engine/weights/test_compact.py checks all of them).
- The layers `lean` fuses. q, k and v (and gate and up) run as one packed product whose codes are
  the layers' own, concatenated; the separate layers are then only read by transformers' forward,
  a fallback. `FusedSlice` stands in for each: the fused product, then its own output features (in
  their original order), so the fallback still computes the same function from the one copy.

Knows nothing of presets, drafting or the engine: modules in, modules out.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from spec_lsp.engine.weights.gguf import BLOCK, Q8Blocks


class Q8Embedding(nn.Module):
    """A token embedding [V, H] as Q8_0 blocks: rows[v] = codes[v] * scale[v, block]."""

    codes: torch.Tensor  # [V, H] int8
    scales: torch.Tensor  # [V, H / 32] float16 (the GGUF's own scales, exact)

    def __init__(self, blocks: Q8Blocks, dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim = blocks.codes.shape
        self.dtype = dtype
        self.register_buffer("codes", blocks.codes.to(torch.int8).contiguous())
        scales = blocks.scale.to(torch.float16)
        if not torch.equal(scales.float(), blocks.scale.float()):
            raise ValueError("Q8_0 scales must be float16 values")
        self.register_buffer("scales", scales.contiguous())

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """ids [...] -> rows [..., H] in `dtype`."""
        codes = self.codes[ids].float()  # [..., H]
        scales = self.scales[ids].float()  # [..., H / 32]
        groups = codes.view(*ids.shape, -1, BLOCK) * scales[..., None]
        return groups.view(*ids.shape, self.embedding_dim).to(self.dtype)

    @property
    def weight(self) -> torch.Tensor:
        """The whole matrix [V, H] (built on each access: for code that reads a layer's weight)."""
        return self.forward(torch.arange(self.num_embeddings, device=self.codes.device))

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}, q8_0"


def compact_embedding(model: nn.Module, blocks: Q8Blocks | None) -> bool:
    """Replaces `model`'s float32 input embedding by its Q8_0 `blocks` where they are the same
    matrix (checked on every row); returns whether it did. A tied output layer must already have
    been packed (its own copy): the float32 matrix is then no longer referenced."""
    get = getattr(model, "get_input_embeddings", None)
    embedding = get() if get is not None else None
    if blocks is None or not isinstance(embedding, nn.Embedding):
        return False
    weight = embedding.weight
    if weight.dtype != torch.float32 or weight.shape != blocks.codes.shape:
        return False
    compact = Q8Embedding(blocks).to(weight.device)
    ids = torch.arange(compact.num_embeddings, device=weight.device)
    for chunk in ids.split(4096):  # bounded temporaries
        if not torch.equal(compact(chunk), weight[chunk]):
            return False
    lm_head = getattr(model, "lm_head", None)
    if getattr(lm_head, "weight", None) is weight:  # still tied: keep the float32 matrix
        return False
    model.set_input_embeddings(compact)  # type: ignore[operator]
    return True


class FusedSlice(nn.Module):
    """One layer's outputs taken from a fused layer: fused(x)[..., rows]."""

    rows: torch.Tensor | None  # the features' indices where they are not one run

    def __init__(self, fused: nn.Module, rows: torch.Tensor) -> None:
        super().__init__()
        self.fused = fused  # shared by the slices of one fusion (parameters() counts it once)
        self.start, self.out_features = int(rows[0]), int(rows.numel())
        run = torch.equal(rows, torch.arange(self.start, self.start + self.out_features))
        self.register_buffer("rows", None if run else rows.to(torch.int32), persistent=False)
        self.in_features = int(getattr(fused, "in_features", 0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fused(x)
        if self.rows is None:
            return y.narrow(-1, self.start, self.out_features)
        return y.index_select(-1, self.rows)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, fused"


def slices_of(fused: nn.Module, widths: list[int], orders: list[torch.Tensor | None]) -> list:
    """`FusedSlice`s for the layers concatenated (in this order, each of `widths[i]` features) into
    `fused`, layer i's rows having been permuted by `orders[i]` (None: not permuted)."""
    out, start = [], 0
    for width, order in zip(widths, orders, strict=True):
        rows = torch.arange(start, start + width)
        if order is not None:  # fused feature start + j is the layer's feature order[j]
            rows = start + torch.argsort(order)
        out.append(FusedSlice(fused, rows))
        start += width
    return out


def own_storage(*models: nn.Module) -> int:
    """Copies into memory of their own every parameter and buffer of `models`. safetensors loads
    a tensor as a view of the checkpoint file's private mapping, and the mapping, with every page
    of the file that loading read, stays resident while any one of its tensors lives (a norm's
    weight keeps the pages of a whole float32 checkpoint, a GGUF block's scales those of the
    blocks file). Tensors that shared memory (a draft reading the target's embedding, tied
    weights) share their copy. Returns the bytes copied."""
    data: dict[tuple[Any, ...], torch.Tensor] = {}  # one copy per distinct view
    params: dict[int, nn.Parameter] = {}  # one new Parameter per old one
    for model in models:
        for module in model.modules():
            for kind in ("_parameters", "_buffers"):
                table = getattr(module, kind)
                for name, tensor in table.items():
                    if tensor is None or tensor.device.type != "cpu":
                        continue
                    key = (tensor.data_ptr(), tensor.dtype, tuple(tensor.shape), tensor.stride())
                    if key not in data:
                        data[key] = tensor.detach().clone()
                    if not isinstance(tensor, nn.Parameter):
                        table[name] = data[key]
                        continue
                    if id(tensor) not in params:
                        params[id(tensor)] = nn.Parameter(data[key], tensor.requires_grad)
                    table[name] = params[id(tensor)]
    return sum(t.numel() * t.element_size() for t in data.values())
