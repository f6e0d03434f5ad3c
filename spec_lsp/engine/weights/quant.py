"""Weight formats for a loaded model: float32, bfloat16, int8 and int4 weight-only.

A format is a name (`WEIGHT_FORMATS`). `apply_format` swaps a model's `nn.Linear` layers for packed
ones in place and returns the format that actually ran:

- `int4`: 4-bit codes in groups of 32 weights, each group with its own scale and zero point, through
  torch's packed CPU kernel `aten._weight_int4pack_mm_for_cpu` (activations in bfloat16). torch's
  convention is `w = (q - 8) * scale + zero` with q in 0..15; llama.cpp's Q4_1 block is
  `w = d * q + m`, so a Q4_1 block is taken as it is with `scale = d`, `zero = m + 8 d`
  (`Int4Linear.from_blocks`: no de-quantize / re-quantize round trip).
- `int8`: one int8 code per weight and one scale per output row, through
  `torch._weight_int8pack_mm`.
- `bfloat16` / `float32`: plain `nn.Linear` in that dtype.

The packed kernels are CPU kernels here: on another device, `int4` and `int8` run as bfloat16 (the
returned format says so). The rest of the model (embeddings, norms, attention) stays in the dtype
the model was loaded in.

Knows nothing of presets or the engine: modules in, modules out.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import torch
from torch import nn

from spec_lsp.engine.api import FLOAT_FORMATS, WEIGHT_FORMATS
from spec_lsp.engine.weights import qblocks
from spec_lsp.engine.weights.attention import use_exact_attention
from spec_lsp.engine.weights.gguf import BLOCK, Q4Blocks, Q8Blocks

log = logging.getLogger(__name__)

GROUP = BLOCK  # int4 group size: one Q4_1 block
COMPUTE = torch.bfloat16  # activations inside the packed products
# The packed layers here (as `fusion.kernel` and `qblocks`' GGUF blocks) run their packed kernel
# at every pass length, each row of a pass getting the bits of a one-row pass, so a prompt
# prefilled in 128-token chunks holds the cache that decode-sized passes would have written. (A
# pass over more than 32 rows once ran in float32 on the de-quantized weight, whose rounding
# differed, and no faster: a 1024-token prefill of the bundled preset in 128-token passes,
# torch's kernels, 1 thread, 4.9 s -> 4.0 s.) Dense float32 / bfloat16 layers (`nn.Linear`,
# `CastLinear`: torch's GEMM) are not row-invariant at any length; the int8 output layer of a
# packed model is.


def int4_available(device: torch.device | str) -> bool:
    return torch.device(device).type == "cpu" and hasattr(
        torch.ops.aten, "_weight_int4pack_mm_for_cpu"
    )


def int8_available(device: torch.device | str) -> bool:
    return torch.device(device).type == "cpu" and hasattr(torch, "_weight_int8pack_mm")


class Int4Linear(nn.Module):
    """y = x W^T + b with W [N, K] as 4-bit codes in groups of 32 along K."""

    packed: torch.Tensor  # torch's CPU int4 layout of the codes, [N, K / 2] uint8
    # [N, K / 2] uint8 (code 2j in the low nibble, 2j + 1 in the high), kept only where the
    # codes cannot be read back from `packed` (`_unpack`): None otherwise.
    nibbles: torch.Tensor | None
    scales_zeros: torch.Tensor  # [K / 32, N, 2]: scale and zero of each group, bfloat16
    bias: torch.Tensor | None

    def __init__(self, codes: torch.Tensor, scale: torch.Tensor, zero: torch.Tensor) -> None:
        """codes [N, K] in 0..15; scale, zero [N, K / 32] with w = (q - 8) * scale + zero."""
        super().__init__()
        n, k = codes.shape
        if k % GROUP:
            raise ValueError(f"int4 needs in_features divisible by {GROUP}, got {k}")
        self.in_features, self.out_features = k, n
        packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(
            codes.to(torch.int32).contiguous(), 1
        )
        self.register_buffer("packed", packed)
        nibbles = None
        if not _unpack_ok(n, k):  # two codes a byte, for `codes` (fusion) and `dequantized`
            codes8 = codes.to(torch.uint8)
            nibbles = codes8[:, 0::2] | (codes8[:, 1::2] << 4)
        self.register_buffer("nibbles", nibbles)
        sz = torch.stack([scale.t(), zero.t()], dim=-1).to(COMPUTE).contiguous()
        self.register_buffer("scales_zeros", sz)
        self.register_buffer("bias", None)

    @classmethod
    def from_blocks(cls, blocks: Q4Blocks) -> Int4Linear:
        """A Q4_1 matrix as it is: w = d q + m = (q - 8) d + (m + 8 d)."""
        return cls(blocks.codes, blocks.scale, blocks.minimum + 8 * blocks.scale)

    @classmethod
    def from_weight(cls, weight: torch.Tensor) -> Int4Linear:
        """Round-to-nearest asymmetric 4-bit quantization per group of 32 (min/max, as Q4_1)."""
        n, k = weight.shape
        groups = weight.detach().float().reshape(n, k // GROUP, GROUP)
        low, high = groups.amin(-1), groups.amax(-1)
        scale = ((high - low) / 15).clamp(min=1e-8)
        codes = ((groups - low[..., None]) / scale[..., None]).round().clamp(0, 15)
        return cls(codes.reshape(n, k).to(torch.uint8), scale, low + 8 * scale)

    def codes(self) -> torch.Tensor:  # [N, K] uint8 codes in 0..15
        n, k = self.out_features, self.in_features
        if self.nibbles is None:
            return _unpack(self.packed, n, k)
        return torch.stack([self.nibbles & 0x0F, self.nibbles >> 4], dim=-1).view(n, k)

    def dequantized(self) -> torch.Tensor:
        """[N, K] float32: (q - 8) * scale + zero, with the scales the kernel uses."""
        n, k = self.out_features, self.in_features
        sz = self.scales_zeros.float().transpose(0, 1)  # [N, K / 32, 2]
        scale, zero = sz[..., 0:1], sz[..., 1:2] - 8 * sz[..., 0:1]  # w = q * scale + zero
        if self.nibbles is not None:
            q = self.codes().view(n, k // GROUP, GROUP)
            return torch.addcmul(zero, q, scale).reshape(n, k)
        # Straight from the packed layout (see `_unpack`), without an intermediate codes copy.
        packed = self.packed.reshape(n // 32, k, 16)
        shape = (n // 32, 16, k // GROUP, GROUP)
        scale, zero = scale.reshape(n // 32, 2, 16, -1, 1), zero.reshape(n // 32, 2, 16, -1, 1)
        out = torch.empty(n // 32, 2, *shape[1:], device=packed.device)
        for half, q in enumerate((packed & 0x0F, packed >> 4)):
            q = q.permute(0, 2, 1).reshape(shape)
            torch.addcmul(zero[:, half], q, scale[:, half], out=out[:, half])
        return out.view(n, k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        flat = x.reshape(-1, self.in_features)  # the packed kernel at every length
        y = torch.ops.aten._weight_int4pack_mm_for_cpu(
            flat.to(COMPUTE), self.packed, GROUP, self.scales_zeros
        )
        if self.bias is not None:
            y = y + self.bias.to(y.dtype)
        return y.to(x.dtype).reshape(*shape[:-1], self.out_features)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, group={GROUP}"


def _unpack(packed: torch.Tensor, n: int, k: int) -> torch.Tensor:
    """The codes [N, K] in torch's CPU int4 layout: per block of 32 rows, per column, 16 bytes,
    byte j holding row j in its low nibble and row 16 + j in its high one."""
    q = packed.reshape(n // 32, k, 16)
    return torch.cat([q & 0x0F, q >> 4], dim=2).permute(0, 2, 1).reshape(n, k)


_LAYOUT_CHECKED: list[bool] = []


def _unpack_ok(n: int, k: int) -> bool:
    """Whether `_unpack` reads this torch's layout (checked once on a probe) for an [N, K]."""
    if not _LAYOUT_CHECKED:
        probe = torch.randint(0, 16, (64, 64), generator=torch.Generator().manual_seed(0))
        packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(probe.to(torch.int32), 1)
        ok = packed.shape == (64, 32) and torch.equal(_unpack(packed, 64, 64).long(), probe)
        _LAYOUT_CHECKED.append(bool(ok))
    return _LAYOUT_CHECKED[0] and n % 32 == 0


class Int8Linear(nn.Module):
    """y = x W^T + b with W [N, K] as int8 codes and one scale per output row."""

    codes: torch.Tensor  # [N, K] int8
    scales: torch.Tensor  # [N] bfloat16
    bias: torch.Tensor | None

    def __init__(self, codes: torch.Tensor, scales: torch.Tensor) -> None:
        super().__init__()
        self.out_features, self.in_features = codes.shape
        self.register_buffer("codes", codes.to(torch.int8).contiguous())
        self.register_buffer("scales", scales.to(COMPUTE).contiguous())
        self.register_buffer("bias", None)

    @classmethod
    def from_weight(cls, weight: torch.Tensor) -> Int8Linear:
        """Symmetric per-row round-to-nearest: scale = max |w| / 127."""
        w = weight.detach().float()
        scales = (w.abs().amax(dim=1) / 127).clamp(min=1e-8)
        codes = (w / scales[:, None]).round().clamp(-127, 127)
        return cls(codes.to(torch.int8), scales)

    @classmethod
    def from_blocks(cls, blocks: Q8Blocks) -> Int8Linear:
        """A Q8_0 matrix (a scale per 32 weights) with one scale per row: the codes of a row are
        re-scaled to the row's largest block scale (exact where a row's blocks share a scale)."""
        return cls.from_weight(blocks.dequantize())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        flat = x.reshape(-1, self.in_features)  # the packed kernel at every length
        y = torch._weight_int8pack_mm(flat.to(COMPUTE), self.codes, self.scales)
        if self.bias is not None:
            y = y + self.bias.to(y.dtype)
        return y.to(x.dtype).reshape(*shape[:-1], self.out_features)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}"


class CastLinear(nn.Module):
    """A dense layer whose weight has its own dtype (bfloat16 in a float32 model, say): a copy, so
    that a tied embedding keeps its dtype."""

    weight: torch.Tensor
    bias: torch.Tensor | None

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None, dtype: torch.dtype) -> None:
        super().__init__()
        self.out_features, self.in_features = weight.shape
        self.register_buffer("weight", weight.detach().to(dtype, copy=True))
        self.register_buffer("bias", None if bias is None else bias.detach().to(dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = nn.functional.linear(x.to(self.weight.dtype), self.weight, self.bias)
        return y.to(x.dtype)


PackedLinear = Int4Linear | Int8Linear


def packed_linear(linear: nn.Linear, fmt: str) -> nn.Module:
    """The packed counterpart of one linear layer (its bias kept in the product's dtype)."""
    weight = linear.weight
    packed: PackedLinear
    if fmt == "int4" and weight.shape[1] % GROUP == 0:
        packed = Int4Linear.from_weight(weight)
    elif fmt in ("int4", "int8"):
        packed = Int8Linear.from_weight(weight)
    else:
        raise ValueError(f"not a packed format: {fmt!r}")
    if linear.bias is not None:
        packed.bias = linear.bias.detach().to(COMPUTE)
    return packed


def effective_format(fmt: str, device: torch.device | str) -> str:
    """The format that runs on `device` when `fmt` is asked for."""
    if fmt not in WEIGHT_FORMATS:
        raise ValueError(f"unknown weight format {fmt!r} (known: {', '.join(WEIGHT_FORMATS)})")
    if fmt == "int4" and not int4_available(device):
        return "bfloat16"
    if fmt == "int8" and not int8_available(device):
        return "bfloat16"
    return fmt


def apply_format(
    model: nn.Module,
    fmt: str,
    output: str | None = None,
    skip: Callable[[str], bool] | None = None,
    blocks: dict[str, Q4Blocks | Q8Blocks] | None = None,
) -> str:
    """Puts `model`'s linear layers in `fmt` in place and returns the format that ran.

    `output` is the format of the output projection (`lm_head`; default: `fmt`). `blocks` maps
    a parameter name (`model.layers.0.mlp.up_proj.weight`) to its GGUF blocks, taken as they are
    where the format allows (Q4_1 -> int4, Q8_0 -> int8). `skip(name)` keeps a layer as it is."""
    device = next(model.parameters()).device
    fmt = effective_format(fmt, device)
    out_fmt = effective_format(output or fmt, device)
    if fmt in FLOAT_FORMATS and out_fmt == fmt:
        model.to(getattr(torch, fmt))
        return fmt
    blocks = blocks or {}
    native = qblocks.usable(device)
    get_embedding = getattr(model, "get_input_embeddings", None)
    embedding = get_embedding() if callable(get_embedding) else None
    swaps: list[tuple[nn.Module, str, nn.Module]] = []
    for name, module in model.named_modules():
        if not isinstance(module, nn.Linear) or (skip is not None and skip(name)):
            continue
        layer_fmt = out_fmt if name.rsplit(".", 1)[-1] == "lm_head" else fmt
        if layer_fmt in FLOAT_FORMATS:
            dtype = getattr(torch, layer_fmt)
            if module.weight.dtype == dtype:
                continue
            new: nn.Module = CastLinear(module.weight, module.bias, dtype)
            parent_name, _, child = name.rpartition(".")
            swaps.append((model.get_submodule(parent_name) if parent_name else model, child, new))
            continue
        source = blocks.get(f"{name}.weight")
        if source is None and module.weight is getattr(embedding, "weight", None):
            source = blocks.get("model.embed_tokens.weight")  # a tied output layer
        if native and module.weight.shape[1] % BLOCK == 0:
            new = qblocks.block_layer(module, layer_fmt, source)
        elif isinstance(source, Q4Blocks) and layer_fmt == "int4":
            new = Int4Linear.from_blocks(source)
        elif isinstance(source, Q8Blocks) and layer_fmt == "int8":
            new = Int8Linear.from_blocks(source)
        else:
            new = packed_linear(module, layer_fmt)
        if module.bias is not None and isinstance(new, Int4Linear | Int8Linear):
            new.bias = module.bias.detach().to(COMPUTE)
        parent_name, _, child = name.rpartition(".")
        swaps.append((model.get_submodule(parent_name) if parent_name else model, child, new))
    for parent, child, new in swaps:
        setattr(parent, child, new)
    use_exact_attention(model)
    label = fmt if out_fmt == fmt else f"{fmt} (output {out_fmt})"
    if native:
        label += ", native kernels"
    log.info("weights: %s", label)
    return label


def weight_bytes(model: nn.Module) -> int:
    """Bytes of the weights a forward reads (parameters and buffers)."""
    return sum(t.numel() * t.element_size() for t in (*model.parameters(), *model.buffers()))
