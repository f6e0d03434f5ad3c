"""The GGUF blocks Q4_K, Q6_K and Q5_0 interleaved by groups of 8 output rows, for the native
kernels (`native/kquants.cpp`); `qblocks.BlockLinear` holds them as it holds Q4_1 and Q8_0.

The file's blocks (gguf-py's `gguf.quants` has their bit layouts):
- Q5_0: 32 weights in 22 bytes: fp16 d, 4 bytes qh (bit i: code i's 5th bit), 16 bytes qs (byte
  j: code j low nibble, code j + 16 high); w = d (q - 16).
- Q4_K: 256 weights in 144 bytes: fp16 d, fp16 dmin, 12 bytes of 6-bit scales sc and mins m of 8
  sub-blocks of 32, 128 bytes qs (byte 32c + i: code i of sub-block 2c low, of 2c + 1 high);
  w = d sc_j q - dmin m_j.
- Q6_K: 256 weights in 210 bytes: ql[128] (byte 64h + i: weight 128h + i low, 128h + 64 + i
  high), qh[64] (byte 32h + i, bits 2t: weight 128h + 32t + i's top 2 bits), int8 scales[16]
  (one per 16 weights), fp16 d; w = d sc_(i/16) (q - 32).

Packed, per group of 8 rows and block (the last group padded with zero blocks), the 8 rows' fp16
scales side by side, then the codes as 32-byte vectors holding 4 consecutive codes of each of the
8 rows (byte 4 l + e of vector k: code 4k + e of row l), so that one AVX2 vector computes 8 rows:
- Q5_0 (176 = 8 x 22 bytes): 8 d; 4 vectors of nibbles (vector q: codes 4q + e low, 4q + 16 + e
  high: the file's qs bytes, 4 at a time); 32 bytes of 5th bits (byte 4l + e, bit k: code 4k + e).
- Q4_K (1184 = 8 x 144 + 32 bytes, 4.625 bits a weight): 8 d, 8 dmin; sc and m as bytes (byte 8j
  + l: sub-block j of row l; the 6-bit fields unpacked, the 12 file bytes rebuilt by `unpack`);
  per pair of sub-blocks 2c, 2c + 1, 8 vectors of nibbles (the file's qs bytes, 4 at a time).
- Q6_K (1680 = 8 x 210 bytes): 8 d; scales (byte 8i + l); per pair of blocks of 32 (2c, 2c + 1),
  8 vectors of low nibbles (block 2c low, 2c + 1 high); per 4 blocks of 32 (4s .. 4s + 3), 8
  vectors of top 2 bits (bits 2t: block 4s + t).
The same bytes in another order (Q4_K: 2.8% more), so `unpack` gives the file's bytes back.
"""

from __future__ import annotations

import torch

# kind -> (weights per block, bytes per block in the file, bytes per packed group of 8 blocks)
SPECS = {"q5_0": (32, 22, 176), "q4_k": (256, 144, 1184), "q6_k": (256, 210, 1680)}
KIND_ID = {"q5_0": 0, "q4_k": 1, "q6_k": 2}  # kquants.cpp's `kind`
GROUP = 8


def _bits(x: torch.Tensor) -> torch.Tensor:
    """[..., n] bytes -> [..., 8n] bits, little-endian (bit i of the whole)."""
    shifts = torch.arange(8, dtype=torch.uint8)
    return ((x[..., None] >> shifts) & 1).reshape(*x.shape[:-1], -1)


def _join_bits(bits: torch.Tensor) -> torch.Tensor:
    """`_bits`' inverse: [..., 8n] bits -> [..., n] bytes."""
    b = bits.reshape(*bits.shape[:-1], -1, 8)
    out = b[..., 0].clone()
    for i in range(1, 8):
        out |= b[..., i] << i
    return out


def _vectors(codes: torch.Tensor) -> torch.Tensor:
    """[g, nb, 8 rows, 32 k] -> [g, nb, 32 * k]: 4 consecutive of each row per 32-byte vector."""
    g, nb = codes.shape[:2]
    return codes.reshape(g, nb, GROUP, -1, 4).transpose(2, 3).reshape(g, nb, -1)


def _rows(vectors: torch.Tensor) -> torch.Tensor:
    """`_vectors`' inverse: [g, nb, 32 * k] -> [g, nb, 8 rows, 4 * k]."""
    g, nb = vectors.shape[:2]
    return vectors.reshape(g, nb, -1, GROUP, 4).transpose(2, 3).reshape(g, nb, GROUP, -1)


def _scale_min(s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Q4_K's 12 bytes [..., 12] -> 6-bit scales and mins [..., 8] each."""
    a, b, c = s[..., 0:4], s[..., 4:8], s[..., 8:12]
    sc = torch.cat([a & 63, (c & 15) | ((a >> 2) & 48)], dim=-1)
    m = torch.cat([b & 63, (c >> 4) | ((b >> 2) & 48)], dim=-1)
    return sc, m


def _scale_min_bytes(sc: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    """`_scale_min`'s inverse (every one of the 96 bits is one of the 16 six-bit fields)."""
    a = (sc[..., :4] & 63) | ((sc[..., 4:] >> 4) << 6)
    b = (m[..., :4] & 63) | ((m[..., 4:] >> 4) << 6)
    c = (sc[..., 4:] & 15) | ((m[..., 4:] & 15) << 4)
    return torch.cat([a, b, c], dim=-1)


def _q6_codes(r: torch.Tensor) -> torch.Tensor:
    """Q6_K blocks [..., 210] -> their codes [..., 256] (0 .. 63)."""
    ql = r[..., 0:128].reshape(*r.shape[:-1], 2, 64)
    qh = r[..., 128:192].reshape(*r.shape[:-1], 2, 32)
    low = torch.stack([ql & 15, ql >> 4], dim=-2).reshape(*r.shape[:-1], 256)
    high = torch.stack([(qh >> (2 * t)) & 3 for t in range(4)], dim=-2)
    return low | (high.reshape(*r.shape[:-1], 256) << 4)


def _q6_bytes(q: torch.Tensor) -> torch.Tensor:
    """`_q6_codes`' inverse: codes [..., 256] -> ql [..., 128] and qh [..., 64], side by side."""
    low = (q & 15).reshape(*q.shape[:-1], 2, 2, 64)
    high = (q >> 4).reshape(*q.shape[:-1], 2, 4, 32)
    ql = low[..., 0, :] | (low[..., 1, :] << 4)
    qh = high[..., 0, :] | (high[..., 1, :] << 2) | (high[..., 2, :] << 4) | (high[..., 3, :] << 6)
    return torch.cat([ql.flatten(-2), qh.flatten(-2)], dim=-1)


def _pack_q5_0(r: torch.Tensor) -> torch.Tensor:
    g, nb = r.shape[:2]
    bits = _bits(r[..., 2:6]).reshape(g, nb, GROUP, 8, 4).transpose(-1, -2)  # [.., l, e, k]
    high = bits[..., 0].clone()
    for k in range(1, 8):
        high |= bits[..., k] << k
    return torch.cat(
        [r[..., 0:2].reshape(g, nb, -1), _vectors(r[..., 6:22]), high.reshape(g, nb, -1)], -1
    )


def _unpack_q5_0(p: torch.Tensor) -> torch.Tensor:
    g, nb = p.shape[:2]
    high = p[..., 144:176].reshape(g, nb, GROUP, 4)
    shifts = torch.arange(8, dtype=torch.uint8)
    bits = ((high[..., None] >> shifts) & 1).transpose(-1, -2).reshape(g, nb, GROUP, 32)
    d = p[..., 0:16].reshape(g, nb, GROUP, 2)
    return torch.cat([d, _join_bits(bits), _rows(p[..., 16:144])], dim=-1)


def _pack_q4_k(r: torch.Tensor) -> torch.Tensor:
    g, nb = r.shape[:2]
    sc, m = _scale_min(r[..., 4:16])  # [g, nb, l, j]
    parts = [r[..., 0:2], r[..., 2:4], sc.transpose(-1, -2), m.transpose(-1, -2)]
    parts = [x.reshape(g, nb, -1) for x in parts]
    codes = r[..., 16:144].reshape(g, nb, GROUP, 4, 32).transpose(2, 3)  # [.., c, l, 32]
    chunks = [_vectors(codes[:, :, c]) for c in range(4)]
    return torch.cat([*parts, *chunks], dim=-1)


def _unpack_q4_k(p: torch.Tensor) -> torch.Tensor:
    g, nb = p.shape[:2]
    d = p[..., 0:16].reshape(g, nb, GROUP, 2)
    dmin = p[..., 16:32].reshape(g, nb, GROUP, 2)
    sc = p[..., 32:96].reshape(g, nb, 8, GROUP).transpose(-1, -2)
    m = p[..., 96:160].reshape(g, nb, 8, GROUP).transpose(-1, -2)
    chunks = [_rows(p[..., 160 + 256 * c : 416 + 256 * c]) for c in range(4)]
    return torch.cat([d, dmin, _scale_min_bytes(sc, m), *chunks], dim=-1)


def _pack_q6_k(r: torch.Tensor) -> torch.Tensor:
    g, nb = r.shape[:2]
    q = _q6_codes(r).reshape(g, nb, GROUP, 8, 32)  # [.., l, block of 32, code]
    low, high = q & 15, q >> 4
    lows = [_vectors(low[:, :, :, 2 * c] | (low[:, :, :, 2 * c + 1] << 4)) for c in range(4)]
    highs = [
        _vectors(
            high[:, :, :, 4 * s]
            | (high[:, :, :, 4 * s + 1] << 2)
            | (high[:, :, :, 4 * s + 2] << 4)
            | (high[:, :, :, 4 * s + 3] << 6)
        )
        for s in range(2)
    ]
    scales = r[..., 192:208].transpose(-1, -2).reshape(g, nb, -1)
    return torch.cat([r[..., 208:210].reshape(g, nb, -1), scales, *lows, *highs], dim=-1)


def _unpack_q6_k(p: torch.Tensor) -> torch.Tensor:
    g, nb = p.shape[:2]
    blocks = []
    for j in range(8):
        low = _rows(p[..., 144 + 256 * (j // 2) : 400 + 256 * (j // 2)]) >> (4 * (j % 2))
        high = _rows(p[..., 1168 + 256 * (j // 4) : 1424 + 256 * (j // 4)]) >> (2 * (j % 4))
        blocks.append((low & 15) | ((high & 3) << 4))
    q = torch.cat(blocks, dim=-1)  # [g, nb, l, 256]
    scales = p[..., 16:144].reshape(g, nb, 16, GROUP).transpose(-1, -2)
    return torch.cat([_q6_bytes(q), scales, p[..., 0:16].reshape(g, nb, GROUP, 2)], dim=-1)


_PACK = {"q5_0": _pack_q5_0, "q4_k": _pack_q4_k, "q6_k": _pack_q6_k}
_UNPACK = {"q5_0": _unpack_q5_0, "q4_k": _unpack_q4_k, "q6_k": _unpack_q6_k}


def pack(raw: torch.Tensor, kind: str) -> torch.Tensor:
    """Rows of the file's blocks [N, K / B * bytes] (N a multiple of 8 but for the last call of a
    chunked pass) -> [ceil(N / 8), K / B, packed bytes]."""
    weights, size, _ = SPECS[kind]
    n, nb = raw.shape[0], raw.shape[1] // size
    groups = -(-n // GROUP)
    r = raw.reshape(n, nb, size)
    if groups * GROUP > n:
        r = torch.cat([r, r.new_zeros(groups * GROUP - n, nb, size)])
    r = r.reshape(groups, GROUP, nb, size).transpose(1, 2)  # [groups, nb, row, bytes]
    return _PACK[kind](r).contiguous()


def unpack(packed: torch.Tensor, n: int, kind: str) -> torch.Tensor:
    """`pack`'s inverse: the first `n` rows of the file's blocks."""
    groups, nb, _ = packed.shape
    rows = _UNPACK[kind](packed).transpose(1, 2)  # [groups, row, nb, bytes]
    return rows.reshape(groups * GROUP, -1)[:n].contiguous()


def codes(raw: torch.Tensor, kind: str) -> torch.Tensor:
    """Rows of the file's blocks -> their codes [N, K] (uint8: Q5_0 0 .. 31, Q4_K 0 .. 15, Q6_K
    0 .. 63; the weight is d (q - 16), d sc q - dmin m, d sc (q - 32))."""
    _, size, _ = SPECS[kind]
    n = raw.shape[0]
    r = raw.reshape(n, -1, size)
    if kind == "q6_k":
        return _q6_codes(r).reshape(n, -1)
    if kind == "q4_k":
        qs = r[..., 16:144].reshape(n, -1, 4, 1, 32)
        return torch.cat([qs & 15, qs >> 4], dim=-2).reshape(n, -1)
    qs = r[..., 6:22]
    low = torch.cat([qs & 15, qs >> 4], dim=-1)  # code j, j < 32: its low 4 bits
    return (low | (_bits(r[..., 2:6]) << 4)).reshape(n, -1)
