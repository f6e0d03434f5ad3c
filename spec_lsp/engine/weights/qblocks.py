"""Linear layers whose weights are GGUF blocks, run by the native kernels (`native`).

`BlockLinear` holds a matrix [N, K] as Q4_1 blocks (32 weights: fp16 scale `d`, fp16 minimum `m`,
16 bytes of 4-bit codes, weight `d q + m`) or Q8_0 blocks (fp16 scale, 32 int8 codes), or as the
file's Q5_0, Q4_K or Q6_K blocks (`kblocks`, `KIND_OF_GGML`): a GGUF model's layers are the
file's own blocks, taken as they are. A layer of another source is quantized the way llama.cpp
quantizes (per block of 32: min/max for Q4_1, max |w| / 127 for Q8_0).

The blocks are kept interleaved by groups of 8 output rows (`pack`; `raw` gives back the file's
row layout): per group and block, the 8 rows' scales side by side, then their codes 4 by 4, so the
kernel computes 8 output rows in the 8 lanes of one vector (tests/engine/weights/test_native.py).
The same bytes, in another order: no memory is added.

Passes of any length run the integer kernels: decode and verification, and prefill chunks too,
where they beat float32 products by the de-quantized matrix, de-quantizing included
(docs/benchmarks.md, "Kernels"); a prefill's KV is then computed with the very numbers decoding
uses. Rows permute and
concatenate as bytes (`fusion`). Knows nothing of presets or the engine: modules in, modules out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
import torch
from torch import nn

from spec_lsp.engine.weights import kblocks, native
from spec_lsp.engine.weights.gguf import BLOCK, Q4Blocks, Q8Blocks

KINDS = {"q4_1": 20, "q8_0": 34}  # bytes per block of 32 weights (q4.cpp's kinds)
GROUP = 8  # output rows interleaved together (the kernel's vector lanes)
# bytes per group and block (GROUP blocks, packed)
PACKED = {"q4_1": 160, "q8_0": 272} | {k: v[2] for k, v in kblocks.SPECS.items()}
# kind -> (weights per block, bytes per block in the file)
BLOCKS = {"q4_1": (32, 20), "q8_0": (32, 34)} | {k: v[:2] for k, v in kblocks.SPECS.items()}
KIND_OF_GGML = {"Q4_1": "q4_1", "Q8_0": "q8_0", "Q4_K": "q4_k", "Q6_K": "q6_k", "Q5_0": "q5_0"}
PACK_ROWS = 8192  # rows packed at a time (bounds the temporaries of a 151936-row output layer)


class Rows(Protocol):
    """Rows of a matrix's blocks [N, bytes]: a tensor, an array, a map of the file or rows read
    from it on demand (`gguf_index.FileRows`); `rows[i:j]` (and `rows[indices]` where `order` is
    given) gives those rows."""

    @property
    def shape(self) -> Sequence[int]: ...

    @property
    def dtype(self) -> Any: ...

    def __getitem__(self, rows: Any, /) -> Any: ...


def block_weights(kind: str) -> int:
    """Weights per block of `kind` (32, or 256 for the K-quants): K must be a multiple of it."""
    return BLOCKS[kind][0]


def dequantize_rows(raw: torch.Tensor, kind: str, in_features: int) -> torch.Tensor:
    """A few rows of the file's blocks [n, bytes] -> float32 [n, K] (an embedding lookup): the
    native kernels' de-quantization where they run, else gguf-py's (the same numbers)."""
    if native.available():
        return BlockLinear(raw, in_features, kind).dequantized()
    from gguf import GGMLQuantizationType, quants

    name = next(g for g, k in KIND_OF_GGML.items() if k == kind)
    out = quants.dequantize(raw.numpy(), GGMLQuantizationType[name])
    return torch.from_numpy(out).reshape(raw.shape[0], in_features)


def _f16_bytes(values: torch.Tensor) -> torch.Tensor:
    """[N, G] float32 holding float16 values -> [N, G, 2] bytes (raises if one is not)."""
    half = values.to(torch.float16)
    if not torch.equal(half.float(), values.float()):
        raise ValueError("block scales must be float16 values")
    return half.contiguous().view(torch.uint8).view(*values.shape, 2)


def pack(raw: Rows, kind: str, order: torch.Tensor | None = None) -> torch.Tensor:
    """The file's rows of blocks of `kind` (rows `order` of them, when given) -> packed by groups
    of 8 rows ([ceil(N / 8), K / B, PACKED[kind]]). PACK_ROWS rows at a time are copied out of
    `raw` (a tensor, or a map of the file) and packed straight into the result: no whole copy of
    the matrix is made beside it."""
    n = raw.shape[0] if order is None else order.shape[0]
    chosen = None if order is None else order.numpy()
    out: torch.Tensor | None = None
    for i in range(0, n, PACK_ROWS):
        j = min(n, i + PACK_ROWS)
        rows = raw[i:j] if chosen is None else raw[chosen[i:j]]
        chunk = rows if isinstance(rows, torch.Tensor) else torch.from_numpy(np.array(rows))
        part = _pack_one(chunk, kind)
        if out is None:
            out = torch.empty((-(-n // GROUP), *part.shape[1:]), dtype=torch.uint8)
        out[i // GROUP : i // GROUP + part.shape[0]] = part
    if out is None:
        raise ValueError("pack: no rows")
    return out


def unpack(packed: torch.Tensor, n: int, kind: str) -> torch.Tensor:
    """`pack`'s inverse: the first `n` rows of the file's blocks [n, K / B * BLOCKS[kind][1]],
    PACK_ROWS at a time into the result."""
    step = PACK_ROWS // GROUP
    out: torch.Tensor | None = None
    for g in range(0, packed.shape[0], step):
        part = _unpack_one(packed[g : g + step], min(n - g * GROUP, PACK_ROWS), kind)
        if out is None:
            out = torch.empty((n, part.shape[1]), dtype=torch.uint8)
        out[g * GROUP : g * GROUP + part.shape[0]] = part
    assert out is not None
    return out


class PackedRows:
    """A layer's rows of blocks in the file's layout, unpacked on demand from its packed groups
    (`rows[i:j]`, `rows[indices]`): `BlockLinear.rows` packs its new layer from them a slice at a
    time, never unpacking the whole matrix beside it (the draft's 151,936-row output layer)."""

    dtype = torch.uint8

    def __init__(self, layer: BlockLinear) -> None:
        self.layer = layer
        weights, size = BLOCKS[layer.kind]
        self.shape = (layer.out_features, layer.in_features // weights * size)

    def __getitem__(self, rows: slice | np.ndarray | torch.Tensor) -> torch.Tensor:
        ids = (
            torch.arange(self.shape[0])[rows] if isinstance(rows, slice) else torch.as_tensor(rows)
        )
        groups = torch.unique(ids // GROUP)  # sorted
        raw = _unpack_one(self.layer.packed[groups], groups.numel() * GROUP, self.layer.kind)
        return raw[torch.searchsorted(groups, ids // GROUP) * GROUP + ids % GROUP]


def _pack_one(raw: torch.Tensor, kind: str) -> torch.Tensor:
    """Rows of GGUF blocks [N, K / 32 * KINDS[kind]] -> [ceil(N / 8), K / 32, PACKED[kind]]: per
    group of 8 rows (the last one padded with zero blocks) and block, the 8 fp16 scales (Q4_1: then
    the 8 fp16 minimums), then 32-byte vectors of 4 consecutive codes of each row (Q4_1: codes
    4k .. 4k + 3 in the low nibbles of vector k, 4k + 16 .. 4k + 19 in the high ones, k < 4).
    Other kinds: `kblocks.pack`."""
    if kind in kblocks.SPECS:
        return kblocks.pack(raw, kind)
    n, kb = raw.shape[0], KINDS[kind]
    g = raw.shape[1] // kb
    groups = -(-n // GROUP)
    r = raw.view(n, g, kb)
    if groups * GROUP > n:
        r = torch.cat([r, r.new_zeros(groups * GROUP - n, g, kb)])
    r = r.view(groups, GROUP, g, kb).transpose(1, 2)  # [groups, g, row, bytes]
    scales = [r[..., 0:2].reshape(groups, g, 2 * GROUP)]
    if kind == "q8_0":
        codes = r[..., 2:]
    else:
        scales.append(r[..., 2:4].reshape(groups, g, 2 * GROUP))
        qs = r[..., 4:]  # byte j: code j low nibble, code j + 16 high nibble
        codes = torch.cat([qs & 0x0F, qs >> 4], dim=-1)
    steps = codes.reshape(groups, g, GROUP, 8, 4).transpose(2, 3)  # [groups, g, step, row, 4]
    if kind == "q4_1":
        steps = steps[:, :, :4] | (steps[:, :, 4:] << 4)
    return torch.cat([*scales, steps.reshape(groups, g, -1)], dim=-1).contiguous()


def _unpack_one(packed: torch.Tensor, n: int, kind: str) -> torch.Tensor:
    """`_pack_one`'s inverse: the first `n` rows of GGUF blocks [n, K / 32 * KINDS[kind]]."""
    if kind in kblocks.SPECS:
        return kblocks.unpack(packed, n, kind)
    groups, g, _ = packed.shape
    parts = [packed[..., 0:16].reshape(groups, g, GROUP, 2)]
    if kind == "q8_0":
        steps = packed[..., 16:].reshape(groups, g, 8, GROUP, 4)
    else:
        parts.append(packed[..., 16:32].reshape(groups, g, GROUP, 2))
        nibbles = packed[..., 32:].reshape(groups, g, 4, GROUP, 4)
        steps = torch.cat([nibbles & 0x0F, nibbles >> 4], dim=2)
    codes = steps.transpose(2, 3).reshape(groups, g, GROUP, 32)  # [groups, g, row, code]
    if kind == "q4_1":
        codes = codes[..., :16] | (codes[..., 16:] << 4)
    rows = torch.cat([*parts, codes], dim=-1).transpose(1, 2)  # [groups, row, g, bytes]
    return rows.reshape(groups * GROUP, -1)[:n].contiguous()


class BlockLinear(nn.Module):
    """y = x W^T + b with W [N, K] as GGUF blocks (`kind`: one of BLOCKS), packed by 8 rows."""

    packed: torch.Tensor  # [ceil(N / 8), K / B, PACKED[kind]] uint8
    bias: torch.Tensor | None

    def __init__(
        self,
        blocks: Rows,
        in_features: int,
        kind: str,
        order: torch.Tensor | None = None,
    ) -> None:
        """`blocks`: rows of GGUF blocks [N, K / B * bytes] (the file's layout, `BLOCKS[kind]`), a
        tensor or a map of the file (read a few thousand rows at a time); with `order`, the layer
        of those rows in that order."""
        super().__init__()
        if kind not in BLOCKS or in_features % BLOCKS[kind][0]:
            raise ValueError(f"BlockLinear: kind {kind!r}, in_features {in_features}")
        weights, size = BLOCKS[kind]
        uint8 = str(blocks.dtype) in ("torch.uint8", "uint8")  # a tensor, an array, the file
        if not uint8 or blocks.shape[1] != in_features // weights * size:
            raise ValueError(f"BlockLinear: {tuple(blocks.shape)} is not rows of {kind} blocks")
        self.kind, self.in_features = kind, in_features
        self.out_features = blocks.shape[0] if order is None else order.shape[0]
        self.register_buffer("packed", pack(blocks, kind, order))
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
        new = BlockLinear(PackedRows(self), self.in_features, self.kind, order)
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
        new = BlockLinear(torch.cat([x.raw() for x in layers]), first.in_features, first.kind)
        if any(x.bias is not None for x in layers):
            new.bias = torch.cat(
                [x.bias if x.bias is not None else torch.zeros(x.out_features) for x in layers]
            ).float()
        return new

    # -- products -----------------------------------------------------------------------------
    def raw(self) -> torch.Tensor:
        """The blocks as rows in the GGUF file's layout [N, K / B * bytes] (a copy)."""
        return unpack(self.packed, self.out_features, self.kind)

    def dequantized(self) -> torch.Tensor:
        """[N, K] float32, the weights the blocks hold."""
        if self.kind in kblocks.SPECS:
            kind = kblocks.KIND_ID[self.kind]
            return torch.ops.spec_lsp.kq_dequant(
                self.packed, self.out_features, self.in_features, kind
            )
        op = torch.ops.spec_lsp.q4_dequant if self.kind == "q4_1" else torch.ops.spec_lsp.q8_dequant
        return op(self.packed, self.out_features, self.in_features)

    def codes(self) -> torch.Tensor:
        """[N, K] codes (uint8 0..15 for q4_1, int8 for q8_0; others: `kblocks.codes`)."""
        if self.kind in kblocks.SPECS:
            return kblocks.codes(self.raw(), self.kind)
        n, g = self.out_features, self.in_features // BLOCK
        raw = self.raw().view(n, g, KINDS[self.kind])
        if self.kind == "q8_0":
            return raw[..., 2:].contiguous().view(torch.int8).reshape(n, -1)
        qs = raw[..., 4:]
        return torch.cat([qs & 0x0F, qs >> 4], dim=-1).reshape(n, -1)

    def product(self) -> Callable[[torch.Tensor], torch.Tensor]:
        """x [M, K] -> x W^T [M, N] through the integer kernel (no bias)."""
        if self.kind in kblocks.SPECS:
            kq, kind = torch.ops.spec_lsp.kq_mm, kblocks.KIND_ID[self.kind]
            packed_k, n_k = self.packed, self.out_features
            return lambda x: kq(x, packed_k, n_k, kind)
        op = torch.ops.spec_lsp.q4_mm if self.kind == "q4_1" else torch.ops.spec_lsp.q8_mm
        packed, n = self.packed, self.out_features
        return lambda x: op(x, packed, n)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        flat = x.reshape(-1, self.in_features)
        y = self.product()(flat)
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
