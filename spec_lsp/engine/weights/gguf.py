"""Reading a llama-family GGUF file's quantized blocks as they are, without de-quantizing them.

`Q4_1` blocks (32 weights: fp16 scale `d`, fp16 minimum `m`, 16 bytes of 4-bit codes `q`, the
weight being `d * q + m`) become codes [N, K] plus per-group scales and minimums [N, K / 32], ready
for `quant.Int4Linear.from_codes`; `Q8_0` blocks (fp16 scale, 32 int8 codes) become int8 codes and
per-block scales. Tensor names are mapped to transformers' Llama names, and the rows of q/k, which
llama.cpp's converter permutes for its rope layout, are put back in transformers' order (the same
row permutation transformers applies when it de-quantizes the file).

Knows nothing of nn.Module: plain tensors in, plain tensors out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

BLOCK = 32  # weights per block, for both Q4_1 and Q8_0
BLOCKS_FILE = "blocks.safetensors"  # in `read_blocks_cached`'s cache entry

LAYER_NAMES = {
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}


@dataclass(frozen=True)
class Q4Blocks:
    """A Q4_1 matrix [N, K]: weight[n, k] = scale[n, k // 32] * codes[n, k] + min[n, k // 32]."""

    codes: torch.Tensor  # [N, K] uint8 in 0..15
    scale: torch.Tensor  # [N, K / 32] float32 (exact fp16 values)
    minimum: torch.Tensor  # [N, K / 32] float32 (exact fp16 values)

    def dequantize(self) -> torch.Tensor:
        n, k = self.codes.shape
        w = self.codes.float().view(n, k // BLOCK, BLOCK) * self.scale[..., None]
        return (w + self.minimum[..., None]).view(n, k)


@dataclass(frozen=True)
class Q8Blocks:
    """A Q8_0 matrix [N, K]: weight[n, k] = scale[n, k // 32] * codes[n, k]."""

    codes: torch.Tensor  # [N, K] int8
    scale: torch.Tensor  # [N, K / 32] float32 (exact fp16 values)

    def dequantize(self) -> torch.Tensor:
        n, k = self.codes.shape
        return (self.codes.float().view(n, k // BLOCK, BLOCK) * self.scale[..., None]).view(n, k)


def q4_1_blocks(raw: np.ndarray) -> Q4Blocks:
    """Rows of Q4_1 bytes [N, K / 32 * 20] -> codes and per-block scale and minimum."""
    n = raw.shape[0]
    blocks = np.ascontiguousarray(raw).reshape(n, -1, 20)  # [N, G, 20]
    d = blocks[..., 0:2].copy().view(np.float16)[..., 0].astype(np.float32)
    m = blocks[..., 2:4].copy().view(np.float16)[..., 0].astype(np.float32)
    packed = blocks[..., 4:]  # [N, G, 16]: byte j holds code j (low nibble) and j + 16 (high)
    codes = np.concatenate([packed & 0x0F, packed >> 4], axis=-1)  # [N, G, 32]
    return Q4Blocks(
        torch.from_numpy(codes.reshape(n, -1).copy()), torch.from_numpy(d), torch.from_numpy(m)
    )


def q8_0_blocks(raw: np.ndarray) -> Q8Blocks:
    """Rows of Q8_0 bytes [N, K / 32 * 34] -> int8 codes and per-block scale."""
    n = raw.shape[0]
    blocks = np.ascontiguousarray(raw).reshape(n, -1, 34)
    d = blocks[..., 0:2].copy().view(np.float16)[..., 0].astype(np.float32)
    codes = blocks[..., 2:].copy().view(np.int8)
    return Q8Blocks(torch.from_numpy(codes.reshape(n, -1).copy()), torch.from_numpy(d))


def unpermute_rows(rows: torch.Tensor, heads: int) -> torch.Tensor:
    """Undoes llama.cpp's q/k row permutation (rope halves interleaved per head)."""
    dim = rows.shape[0] // heads // 2
    return rows.reshape(heads, dim, 2, *rows.shape[1:]).transpose(1, 2).reshape(rows.shape)


@dataclass(frozen=True)
class GGUFWeights:
    """A llama GGUF's quantized matrices by transformers name, other tensors as float32."""

    q4: dict[str, Q4Blocks]
    q8: dict[str, Q8Blocks]
    dense: dict[str, torch.Tensor]


def read_llama(path: Path) -> GGUFWeights:
    """Reads every tensor of a llama-architecture GGUF; Q4_1 and Q8_0 stay as blocks."""
    from gguf import GGMLQuantizationType, GGUFReader
    from gguf.quants import dequantize

    reader = GGUFReader(str(path))
    arch = bytes(reader.fields["general.architecture"].parts[-1]).decode()
    if arch != "llama":
        raise ValueError(f"{path.name}: GGUF architecture {arch!r}, only 'llama' is read here")
    heads = int(reader.fields["llama.attention.head_count"].parts[-1][0])
    kv_field = reader.fields.get("llama.attention.head_count_kv")
    kv_heads = int(kv_field.parts[-1][0]) if kv_field is not None else heads
    out = GGUFWeights({}, {}, {})
    for t in reader.tensors:
        name = hf_name(t.name)
        row_heads = heads if t.name.endswith("attn_q.weight") else kv_heads
        permuted = t.name.endswith(("attn_q.weight", "attn_k.weight"))
        if t.tensor_type == GGMLQuantizationType.Q4_1:
            b = q4_1_blocks(t.data)
            if permuted:
                b = Q4Blocks(*(unpermute_rows(x, row_heads) for x in (b.codes, b.scale, b.minimum)))
            out.q4[name] = b
        elif t.tensor_type == GGMLQuantizationType.Q8_0:
            b8 = q8_0_blocks(t.data)
            if permuted:
                b8 = Q8Blocks(*(unpermute_rows(x, row_heads) for x in (b8.codes, b8.scale)))
            out.q8[name] = b8
        else:
            shape = tuple(int(s) for s in reversed(t.shape))
            w = torch.from_numpy(np.array(dequantize(t.data, t.tensor_type), dtype=np.float32))
            w = w.reshape(shape)
            out.dense[name] = unpermute_rows(w, row_heads) if permuted else w
    return out


def hf_name(name: str) -> str:
    """GGUF tensor name -> transformers Llama parameter name."""
    if name == "token_embd.weight":
        return "model.embed_tokens.weight"
    if name == "output.weight":
        return "lm_head.weight"
    if name == "output_norm.weight":
        return "model.norm.weight"
    match = re.fullmatch(r"blk\.(\d+)\.(\w+)\.(weight|bias)", name)
    if match is None:
        return name
    layer, part, kind = match.groups()
    norms = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm"}
    module = LAYER_NAMES.get(part) or norms.get(part, part)
    return f"model.layers.{layer}.{module}.{kind}"


def read_blocks(path: Path, name: str) -> Q4Blocks | Q8Blocks:
    """One Q4_1 or Q8_0 tensor of a GGUF by its GGUF name (rows as stored, not un-permuted)."""
    from gguf import GGMLQuantizationType, GGUFReader

    for t in GGUFReader(str(path)).tensors:
        if t.name == name:
            if t.tensor_type == GGMLQuantizationType.Q4_1:
                return q4_1_blocks(t.data)
            if t.tensor_type == GGMLQuantizationType.Q8_0:
                return q8_0_blocks(t.data)
            raise ValueError(f"{name} is {t.tensor_type.name}, not Q4_1 or Q8_0")
    raise KeyError(name)


def read_blocks_cached(path: Path, cache: Path) -> dict[str, Q4Blocks | Q8Blocks]:
    """The quantized matrices of `read_llama(path)`, kept in the cache entry folder `cache` after
    the first read (parsing a GGUF's tokenizer metadata with gguf-py takes 10-50 s here): built
    under a lock, checked at each load, built again once if it fails to load (`cache_entry`)."""
    from safetensors.torch import load_file, save_file

    from spec_lsp.engine.sources import cache_entry

    def build(folder: Path) -> None:
        read, flat = read_llama(path), dict[str, torch.Tensor]()
        for name, b in read.q4.items():
            nibbles = b.codes[:, 0::2] | (b.codes[:, 1::2] << 4)  # two codes a byte
            flat |= {f"q4:{name}:codes": nibbles, f"q4:{name}:scale": b.scale}
            flat[f"q4:{name}:minimum"] = b.minimum
        for name, b8 in read.q8.items():
            flat |= {f"q8:{name}:codes": b8.codes, f"q8:{name}:scale": b8.scale}
        save_file(flat, str(folder / BLOCKS_FILE))

    st = path.stat()
    return cache_entry.load(
        cache,
        build,
        lambda folder: _unflatten(load_file(str(folder / BLOCKS_FILE))),
        stamp=f"{st.st_size}-{st.st_mtime_ns}",
    )


def _unflatten(flat: dict[str, torch.Tensor]) -> dict[str, Q4Blocks | Q8Blocks]:
    out: dict[str, Q4Blocks | Q8Blocks] = {}
    for key, value in flat.items():
        kind, _, rest = key.partition(":")
        name, _, part = rest.rpartition(":")
        if kind == "q4" and part == "codes":
            codes = torch.stack([value & 0x0F, value >> 4], dim=-1).reshape(value.shape[0], -1)
            out[name] = Q4Blocks(codes, flat[f"q4:{name}:scale"], flat[f"q4:{name}:minimum"])
        elif kind == "q8" and part == "codes":
            out[name] = Q8Blocks(value, flat[f"q8:{name}:scale"])
    return out
