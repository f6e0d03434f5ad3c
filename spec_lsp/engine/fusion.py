"""Fusing linear layers of any `quant` format: one layer computing several layers' outputs side by
side (q, k and v; gate and up), and a layer's output features in another order, with the codes,
scales and zero points taken as they are (no re-quantization). What `lean` builds its passes from.
"""

from __future__ import annotations

import torch
from torch import nn

from spec_lsp.engine.quant import CastLinear, Int4Linear, Int8Linear


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
