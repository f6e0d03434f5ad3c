"""Fusing linear layers of any `quant` format: one layer computing several layers' outputs side by
side (q, k and v; gate and up), and a layer's output features in another order, with the codes,
scales and zero points taken as they are (no re-quantization), and each format's kernel as a plain
function (`kernel`). What `lean` builds its passes from.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from spec_lsp.engine.weights.qblocks import BlockLinear
from spec_lsp.engine.weights.quant import COMPUTE, CastLinear, Int4Linear, Int8Linear


class RowConcat(nn.Module):
    """Layers of different formats over the same input, their outputs side by side."""

    def __init__(self, parts: list[nn.Module]) -> None:
        super().__init__()
        self.parts = nn.ModuleList(parts)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        outs = [part(x) for part in self.parts]
        dtype = outs[0].dtype
        return torch.cat([o.to(dtype) for o in outs], dim=-1)


def permute_rows(layer: nn.Module, order: torch.Tensor) -> nn.Module:
    """The layer whose output feature i is `layer`'s feature `order[i]` (weights as they are)."""
    if isinstance(layer, BlockLinear):
        return layer.rows(order)
    if isinstance(layer, Int4Linear):
        sz = layer.scales_zeros.float()[:, order]  # [K / 32, N, 2]
        new: nn.Module = Int4Linear(layer.codes()[order], sz[..., 0].t(), sz[..., 1].t())
    elif isinstance(layer, Int8Linear):
        new = Int8Linear(layer.codes[order], layer.scales[order])
    elif isinstance(layer, nn.Linear | CastLinear):
        new = CastLinear(layer.weight[order], None, layer.weight.dtype)
    else:
        raise TypeError(f"cannot permute the rows of {type(layer).__name__}")
    bias = getattr(layer, "bias", None)
    if bias is not None:
        new.bias = bias.detach()[order].clone()  # type: ignore[assignment]
    return new


def concat_rows(layers: list[nn.Module]) -> nn.Module:
    """One layer computing `layers`' outputs side by side: their codes, scales and zero points
    concatenated as they are when all share a packed format (one kernel call instead of several),
    else a `RowConcat`."""
    kinds = {type(layer) for layer in layers}
    biases = [getattr(layer, "bias", None) for layer in layers]
    new: nn.Module
    if kinds == {BlockLinear}:
        blocks = [layer for layer in layers if isinstance(layer, BlockLinear)]
        if len({(b.kind, b.in_features) for b in blocks}) == 1:
            return BlockLinear.concat(blocks)
        return RowConcat(layers)
    if kinds == {Int4Linear}:
        parts = [layer for layer in layers if isinstance(layer, Int4Linear)]
        sz = torch.cat([p.scales_zeros.float() for p in parts], dim=1)
        codes = torch.cat([p.codes() for p in parts])
        new = Int4Linear(codes, sz[..., 0].t(), sz[..., 1].t())
    elif kinds == {Int8Linear}:
        parts8 = [layer for layer in layers if isinstance(layer, Int8Linear)]
        new = Int8Linear(
            torch.cat([p.codes for p in parts8]), torch.cat([p.scales for p in parts8])
        )
    elif len(kinds) == 1 and kinds <= {nn.Linear, CastLinear}:
        weights = [cast_weight(layer) for layer in layers]
        if len({w.dtype for w in weights}) != 1:
            return RowConcat(layers)
        new = CastLinear(torch.cat(weights), None, weights[0].dtype)
    else:
        return RowConcat(layers)
    if any(b is not None for b in biases):
        filled = [
            b.detach() if b is not None else torch.zeros(getattr(layer, "out_features", 0))
            for b, layer in zip(biases, layers, strict=True)
        ]
        dtype = next(b.dtype for b in biases if b is not None)
        new.bias = torch.cat([f.to(dtype) for f in filled])  # type: ignore[assignment]
    return new


def cast_weight(layer: nn.Module) -> torch.Tensor:
    weight = layer.weight
    assert isinstance(weight, torch.Tensor)
    return weight.detach()


def kernel(layer: nn.Module) -> Any:
    """x [n, K] -> x W^T [n, N] for a linear layer of any format: a packed layer's kernel itself
    (no per-call reshapes or casts beyond the kernel's own input dtype), at every pass length, so
    that each row of a pass gets the bits of a one-row pass (GGUF blocks and torch's int4 / int8
    alike); a dense layer's float32 / bfloat16 GEMM, whose rounding may depend on the rows."""
    product = _packed_product(layer)
    if product is not None:
        bias = getattr(layer, "bias", None)

        def packed(x: torch.Tensor) -> torch.Tensor:
            y = product(x)
            return y if bias is None else y + bias

        return packed
    weight = getattr(layer, "weight", None)
    if not isinstance(weight, torch.Tensor):  # a `RowConcat`
        return layer
    dense_bias = getattr(layer, "bias", None)

    def dense(x: torch.Tensor) -> torch.Tensor:
        b = None if dense_bias is None else dense_bias.to(weight.dtype)
        return F.linear(x.to(weight.dtype), weight, b)

    return dense


def _packed_product(layer: nn.Module) -> Callable[[torch.Tensor], torch.Tensor] | None:
    """x -> x W^T (no bias) through a packed layer's kernel; None for a layer of another kind."""
    if isinstance(layer, BlockLinear):
        return layer.product()
    if isinstance(layer, Int4Linear):
        packed, sz = layer.packed, layer.scales_zeros
        int4 = torch.ops.aten._weight_int4pack_mm_for_cpu
        return lambda x: int4(x.to(COMPUTE), packed, 32, sz)
    if isinstance(layer, Int8Linear):
        codes, scales = layer.codes, layer.scales
        return lambda x: torch._weight_int8pack_mm(x.to(COMPUTE), codes, scales)
    return None
