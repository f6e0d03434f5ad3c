"""Tiny GGUF files for tests: a Qwen2 or Llama decoder with random weights, its matrices in the
block types the real pair uses (Q4_K, Q6_K, Q5_0, Q8_0, Q4_1), written with gguf-py's writer.

gguf-py quantizes Q8_0, Q5_0 and Q4_1 from floats; its K-quants have no quantizer, so their blocks
are random bytes with small finite fp16 scales (any such bytes are valid blocks).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import GGUFWriter
from gguf.constants import GGML_QUANT_SIZES
from gguf.quants import quantize

HIDDEN, FFN, HEADS, KV_HEADS, LAYERS, VOCAB = 256, 512, 4, 2, 2, 320
HEAD_DIM = HIDDEN // HEADS

# Which block type each matrix gets: every type the real pair's files use, in one small model.
KINDS = {
    "attn_q": T.Q4_K,
    "attn_k": T.Q4_K,
    "attn_v": T.Q6_K,
    "attn_output": T.Q5_0,
    "ffn_gate": T.Q8_0,
    "ffn_up": T.Q4_1,
    "ffn_down": T.Q6_K,
}


def _f16(values: np.ndarray) -> np.ndarray:
    return values.astype(np.float16).view(np.uint8).reshape(*values.shape, 2)


def random_blocks(kind: T, rows: int, cols: int, rng: np.random.Generator) -> np.ndarray:
    """Rows of `kind` blocks [rows, bytes] for a random matrix [rows, cols]."""
    if kind in (T.Q8_0, T.Q5_0, T.Q4_1):
        return quantize(rng.normal(0, 0.08, (rows, cols)).astype(np.float32), kind)
    block, size = GGML_QUANT_SIZES[kind]
    raw = rng.integers(0, 256, (rows, cols // block, size), dtype=np.uint8)
    if kind == T.Q4_K:  # d, dmin first
        raw[..., 0:2] = _f16(rng.uniform(1e-4, 3e-4, raw.shape[:2]))
        raw[..., 2:4] = _f16(rng.uniform(1e-4, 3e-4, raw.shape[:2]))
    elif kind == T.Q6_K:  # d last
        raw[..., 208:210] = _f16(rng.uniform(1e-5, 3e-5, raw.shape[:2]))
    else:
        raise ValueError(kind)
    return raw.reshape(rows, -1)


def write_tiny(path: Path, arch: str = "qwen2", seed: int = 0, tied: bool = False) -> Path:
    """A 2-layer decoder of `arch` (qwen2: q/k/v biases) as a GGUF file at `path`."""
    rng = np.random.default_rng(seed)
    w = GGUFWriter(str(path), arch)
    w.add_block_count(LAYERS)
    w.add_context_length(2048)
    w.add_embedding_length(HIDDEN)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_freq_base(10000.0 if arch == "llama" else 1000000.0)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_vocab_size(VOCAB)

    def matrix(name: str, kind: T, rows: int, cols: int) -> None:
        w.add_tensor(name, random_blocks(kind, rows, cols, rng), raw_dtype=kind)

    def vector(name: str, n: int, mean: float = 0.0) -> None:
        w.add_tensor(name, (mean + rng.normal(0, 0.05, n)).astype(np.float32))

    matrix("token_embd.weight", T.Q4_K, VOCAB, HIDDEN)
    for i in range(LAYERS):
        p = f"blk.{i}."
        vector(p + "attn_norm.weight", HIDDEN, 1.0)
        vector(p + "ffn_norm.weight", HIDDEN, 1.0)
        widths = {"attn_q": HIDDEN, "attn_k": KV_HEADS * HEAD_DIM, "attn_v": KV_HEADS * HEAD_DIM}
        for part, kind in KINDS.items():
            rows = widths.get(part, HIDDEN if part in ("attn_output", "ffn_down") else FFN)
            cols = FFN if part == "ffn_down" else HIDDEN
            matrix(p + part + ".weight", kind, rows, cols)
            if arch == "qwen2" and part in widths:
                vector(p + part + ".bias", rows)
    vector("output_norm.weight", HIDDEN, 1.0)
    if not tied:
        matrix("output.weight", T.Q6_K, VOCAB, HIDDEN)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
