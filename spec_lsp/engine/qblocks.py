"""Linear layers whose weights are GGUF blocks, run by the native kernels (`native`).

`BlockLinear` holds a matrix [N, K] as rows of Q4_1 blocks (32 weights: fp16 scale `d`, fp16
minimum `m`, 16 bytes of 4-bit codes, weight `d q + m`) or Q8_0 blocks (fp16 scale, 32 int8 codes):
the layout of the GGUF file itself, so a bundled model's layers are its bytes, taken as they are.
A layer of another source is quantized the way llama.cpp quantizes (per block of 32: min/max for
Q4_1, max |w| / 127 for Q8_0).

Passes of up to `quant.PREFILL_ROWS` rows (decode and verification) run the integer kernels;
longer ones (a prefill chunk) multiply in float32 by the de-quantized matrix. Rows permute and
concatenate as bytes (`fusion`). Knows nothing of presets or the engine: modules in, modules out.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from spec_lsp.engine import native
from spec_lsp.engine.gguf import BLOCK, Q4Blocks, Q8Blocks

KINDS = {"q4_1": 20, "q8_0": 34}  # bytes per block of 32 weights
PREFILL_ROWS = 32  # = quant.PREFILL_ROWS (quant imports this module)


def _f16_bytes(values: torch.Tensor) -> torch.Tensor:
    """[N, G] float32 holding float16 values -> [N, G, 2] bytes (raises if one is not)."""
    half = values.to(torch.float16)
    if not torch.equal(half.float(), values.float()):
        raise ValueError("block scales must be float16 values")
    return half.contiguous().view(torch.uint8).view(*values.shape, 2)


class BlockLinear(nn.Module):
    """y = x W^T + b with W [N, K] as rows of GGUF blocks (`kind`: q4_1 or q8_0)."""

    blocks: torch.Tensor  # [N, K / 32 * KINDS[kind]] uint8
    bias: torch.Tensor | None

    def __init__(self, blocks: torch.Tensor, in_features: int, kind: str) -> None:
        super().__init__()
        if kind not in KINDS or in_features % BLOCK:
            raise ValueError(f"BlockLinear: kind {kind!r}, in_features {in_features}")
        if blocks.dtype != torch.uint8 or blocks.shape[1] != in_features // BLOCK * KINDS[kind]:
            raise ValueError(f"BlockLinear: {tuple(blocks.shape)} is not rows of {kind} blocks")
        self.kind, self.in_features, self.out_features = kind, in_features, blocks.shape[0]
        self.register_buffer("blocks", blocks.contiguous())
        self.register_buffer("bias", None)

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def from_q4(cls, q: Q4Blocks) -> BlockLinear:
        n, k = q.codes.shape
        codes = q.codes.to(torch.uint8).view(n, k // BLOCK, BLOCK)
        qs = codes[..., :16] | (codes[..., 16:] << 4)  # byte j: code j low, code j + 16 high
        raw = torch.cat([_f16_bytes(q.scale), _f16_bytes(q.minimum), qs], dim=-1)
        return cls(raw.view(n, -1), k, "q4_1")

    @classmethod
    def from_q8(cls, q: Q8Blocks) -> BlockLinear:
        n, k = q.codes.shape
        codes = q.codes.to(torch.int8).view(n, k // BLOCK, BLOCK).view(torch.uint8)
        raw = torch.cat([_f16_bytes(q.scale), codes], dim=-1)
        return cls(raw.view(n, -1), k, "q8_0")

    @classmethod
    def from_weight(cls, weight: torch.Tensor, kind: str) -> BlockLinear:
        """Round-to-nearest per block of 32, with float16 scales (as llama.cpp's Q4_1 / Q8_0)."""
        n, k = weight.shape
        groups = weight.detach().float().reshape(n, k // BLOCK, BLOCK)
        if kind == "q8_0":
            d = (groups.abs().amax(-1) / 127).half().float()
            inv = torch.where(d > 0, 1 / d, torch.zeros_like(d))
            codes = (groups * inv[..., None]).round().clamp(-127, 127).to(torch.int8)
            return cls.from_q8(Q8Blocks(codes.view(n, k), d))
        low, high = groups.amin(-1), groups.amax(-1)
        d, m = ((high - low) / 15).half().float(), low.half().float()
        inv = torch.where(d > 0, 1 / d, torch.zeros_like(d))
        codes = ((groups - m[..., None]) * inv[..., None]).round().clamp(0, 15)
        return cls.from_q4(Q4Blocks(codes.to(torch.uint8).view(n, k), d, m))

    # -- rows ---------------------------------------------------------------------------------
    def rows(self, order: torch.Tensor) -> BlockLinear:
        """The layer whose output feature i is this one's feature `order[i]`."""
        new = BlockLinear(self.blocks[order], self.in_features, self.kind)
        if self.bias is not None:
            new.bias = self.bias[order].clone()
        return new

    @staticmethod
    def concat(layers: list[BlockLinear]) -> BlockLinear:
        """One layer computing `layers`' outputs side by side (same kind and input width)."""
        kinds = {(layer.kind, layer.in_features) for layer in layers}
        if len(kinds) != 1:
            raise ValueError("BlockLinear.concat: layers of different kinds or widths")
        first = layers[0]
        new = BlockLinear(torch.cat([x.blocks for x in layers]), first.in_features, first.kind)
        if any(x.bias is not None for x in layers):
            new.bias = torch.cat(
                [x.bias if x.bias is not None else torch.zeros(x.out_features) for x in layers]
            ).float()
        return new

    # -- products -----------------------------------------------------------------------------
    def dequantized(self) -> torch.Tensor:
        """[N, K] float32, the weights the blocks hold."""
        op = torch.ops.spec_lsp.q4_dequant if self.kind == "q4_1" else torch.ops.spec_lsp.q8_dequant
        return op(self.blocks, self.in_features)

    def codes(self) -> torch.Tensor:
        """[N, K] codes (uint8 0..15 for q4_1, int8 for q8_0)."""
        n, g = self.out_features, self.in_features // BLOCK
        raw = self.blocks.view(n, g, KINDS[self.kind])
        if self.kind == "q8_0":
            return raw[..., 2:].contiguous().view(torch.int8).reshape(n, -1)
        qs = raw[..., 4:]
        return torch.cat([qs & 0x0F, qs >> 4], dim=-1).reshape(n, -1)

    def kernel(self) -> torch._ops.OpOverloadPacket:
        return torch.ops.spec_lsp.q4_mm if self.kind == "q4_1" else torch.ops.spec_lsp.q8_mm

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        flat = x.reshape(-1, self.in_features)
        if flat.shape[0] > PREFILL_ROWS:
            y = F.linear(flat.float(), self.dequantized())
        else:
            y = self.kernel()(flat, self.blocks)
        if self.bias is not None:
            y = y + self.bias
        return y.to(x.dtype).reshape(*shape[:-1], self.out_features)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, {self.kind}"


def usable(device: torch.device | str) -> bool:
    """Whether block layers can run on `device` (the native kernels are CPU kernels)."""
    return torch.device(device).type == "cpu" and native.available()


def block_layer(linear: nn.Linear, fmt: str, source: object) -> BlockLinear:
    """`linear` as GGUF blocks for the native kernels (`fmt` int4: Q4_1, int8: Q8_0): the file's
    own blocks (`source`) where they are of that kind, else quantized per block of 32."""
    kind = "q4_1" if fmt == "int4" else "q8_0"
    if isinstance(source, Q4Blocks) and kind == "q4_1":
        new = BlockLinear.from_q4(source)
    elif isinstance(source, Q8Blocks) and kind == "q8_0":
        new = BlockLinear.from_q8(source)
    else:
        new = BlockLinear.from_weight(linear.weight, kind)
    if linear.bias is not None:
        new.bias = linear.bias.detach().float().clone()
    return new
