"""A lean forward for Llama-family decoders (Llama, SmolLM2, Qwen2): what a keystroke's pass runs.

transformers' forward builds masks, position tensors, cache objects and dispatches ~40 small ops a
layer; at one to a dozen new tokens over 30 layers of a 135M model that overhead, not the weights,
sets the cost of a pass once the weights are packed (`quant`). `LeanDecoder` takes the loaded
model's own modules and weights and runs the same mathematics with:

- fused products: q, k and v in one packed product, gate and up in another (codes and scales are
  concatenated as they are, so the numbers are the layers' own); the model's separate layers
  become slices of the fused ones (`compact.FusedSlice`), so each weight is resident once and
  transformers' forward still works;
- rotary embedding as one complex multiplication (the q and k rows of each head are permuted once
  at load so that the pairs rotated together sit side by side; attention scores are unchanged);
- a KV cache of preallocated per-layer tensors that grows in steps (`LeanCache`; rollback after a
  rejected draft only moves its length);
- attention computed one query row at a time over exactly the keys that row sees, in passes of any
  length, so that a row's numbers do not depend on the pass it is in: a verification pass over
  k + 1 tokens gives, row for row, the numbers of k + 1 one-token passes (its greedy tokens are
  those of plain decoding by construction, not by luck of rounding), and a prefill chunk those of
  any other split of the prompt;
- where the engine's own kernels are built (`native`), RMS norm, SiLU-times-up, and the rotation,
  cache writes and attention run in them (one call each instead of several of torch's ops), each
  row on its own in a fixed order, for passes of every length.

With GGUF block layers (row-invariant products, `qblocks`) a prompt prefilled in chunks of 128,
resumed after a cancel, or extended by a few tokens over a reused cache holds bitwise the cache
and logits of a cold prefill of the same prompt (tests/engine/test_prefill_invariance.py); so do
torch's packed int4/int8 formats (`quant`: their packed kernel at every pass length). Dense
float32 layers (torch's GEMM) are not row-invariant at any length.

`LeanDecoder.supports(model)` says whether a loaded model can run here; the engine falls back to
transformers' forward otherwise (`forward.choose_forward`, once at load: a `LeanDecoder` is a
`forward.Forward`, kept by the engine, never on the model). Knows nothing of drafting, documents or
presets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from spec_lsp.engine.weights import compact, fusion, native
from spec_lsp.engine.weights.qblocks import BlockLinear

ARCHITECTURES = ("llama", "qwen2")
ROPE_TYPES = ("default", "linear", "llama3")  # a fixed inv_freq: nothing depends on the length
GROW = 256  # the cache grows by this many positions at a time
KEY_PAD = 32  # positions of padding at the end of each key row (64 bytes in float16)


class LeanCache:
    """Per-layer K [kv_heads, head_dim, capacity + KEY_PAD] (laid out for the score product) and V
    [kv_heads, capacity, head_dim] (float32, or float16: `LeanDecoder.kv_dtype`), and the number of
    positions they hold."""

    def __init__(self, layers: int, kv_heads: int, head_dim: int, dtype: torch.dtype, device: Any):
        self.shape = (layers, kv_heads, head_dim)
        self.dtype, self.device = dtype, device
        self.keys: list[torch.Tensor] = []
        self.values: list[torch.Tensor] = []
        self.length = 0

    @property
    def capacity(self) -> int:
        return self.values[0].shape[1] if self.values else 0

    def reserve(self, length: int) -> None:
        """Makes room for `length` positions (keeps what is held)."""
        if length <= self.capacity:
            return
        layers, kv_heads, head_dim = self.shape
        cap = -(-length // GROW) * GROW
        # Key rows one cache line longer than the capacity: a head's head_dim rows, read side by
        # side by the score product, would otherwise be a power of two apart and share cache sets.
        new = {"k": (kv_heads, head_dim, cap + KEY_PAD), "v": (kv_heads, cap, head_dim)}
        for kind, store in (("k", self.keys), ("v", self.values)):
            for i in range(layers):
                grown = torch.empty(new[kind], dtype=self.dtype, device=self.device)
                if len(store) > i:
                    if self.length and kind == "k":
                        grown[:, :, : self.length] = store[i][:, :, : self.length]
                    elif self.length:
                        grown[:, : self.length] = store[i][:, : self.length]
                    store[i] = grown
                else:
                    store.append(grown)

    def crop(self, count: int) -> None:
        """Drops the last `-count` positions (a negative count, as transformers' `Cache.crop`)."""
        self.length = max(0, self.length + count) if count < 0 else min(self.length, count)

    def get_seq_length(self) -> int:
        return self.length

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (*self.keys, *self.values))


def _out_features(layer: nn.Module) -> int:
    out = getattr(layer, "out_features", None)
    if out is None:  # a dense layer of another kind
        weight = getattr(layer, "weight", None)
        if not isinstance(weight, torch.Tensor):
            raise TypeError(f"cannot tell the output width of {type(layer).__name__}")
        out = weight.shape[0]
    return int(out)


def _pair_order(heads: int, head_dim: int) -> torch.Tensor:
    """Row order that puts each head's rotated pair (j, j + head_dim / 2) side by side."""
    half = head_dim // 2
    within = torch.stack([torch.arange(half), torch.arange(half) + half], dim=1).reshape(-1)
    return (torch.arange(heads)[:, None] * head_dim + within[None, :]).reshape(-1)


@dataclass
class _Layer:
    norm1: torch.Tensor
    qkv: Any
    o: Any
    norm2: torch.Tensor
    gate_up: Any
    down: Any


class Interrupted(Exception):
    """A pass stopped between two layers (`LeanDecoder.interrupt`): its cache holds what it held
    before the pass (the layers run wrote only past its length)."""


@contextmanager
def interruptible(forwards: tuple[Any, ...], stop: Callable[[], bool]) -> Iterator[None]:
    """Within the block, the lean forwards among `forwards` stop a pass between two layers
    once `stop()` holds (`Interrupted`); other forwards run their passes whole."""
    lean = [f for f in forwards if isinstance(f, LeanDecoder)]
    for f in lean:
        f.interrupt = stop
    try:
        yield
    finally:
        for f in lean:
            f.interrupt = None


class LeanDecoder:
    """The forward of a loaded Llama-family causal LM over `LeanCache`s (built once per model:
    it fuses the model's layers in place)."""

    name = "lean"
    # Asked before each layer: True stops the pass there (`Interrupted`). Idle work sets it, so
    # that a request waits a layer, not a whole prefill pass (`engine.quiet`).
    interrupt: Callable[[], bool] | None = None

    def __init__(self, model: Any) -> None:
        if not self.supports(model):
            raise ValueError("LeanDecoder runs Llama-family decoders only (see supports())")
        cfg = model.config
        base = model.model
        self.passes = 0  # forwards run (what a bench counts)
        self.vocab_size = int(cfg.vocab_size)
        self.heads = int(cfg.num_attention_heads)
        self.kv_heads = int(cfg.num_key_value_heads or self.heads)
        self.head_dim = int(getattr(cfg, "head_dim", None) or cfg.hidden_size // self.heads)
        self.hidden = int(cfg.hidden_size)
        self.eps = float(cfg.rms_norm_eps)
        self.scale = self.head_dim**-0.5
        self.dtype = next(model.parameters()).dtype  # the residual stream's dtype
        self.device = next(model.parameters()).device
        self.embed = base.embed_tokens  # an nn.Embedding or a `compact.Q8Embedding`
        rotary = base.rotary_emb
        self.inv_freq = rotary.inv_freq.detach().float().to(self.device)
        self.rope_scale = float(getattr(rotary, "attention_scaling", 1.0))
        self._rope = torch.empty(0, self.head_dim // 2, dtype=torch.complex64, device=self.device)
        order_q = _pair_order(self.heads, self.head_dim)
        order_k = _pair_order(self.kv_heads, self.head_dim)
        self.layers = []
        self._fused: list[nn.Module] = []  # the fused layers whose buffers the kernels read
        for layer in base.layers:
            attn, mlp = layer.self_attn, layer.mlp
            if isinstance(attn.q_proj, compact.FusedSlice):
                raise ValueError("this model's layers are fused already: it has its LeanDecoder")
            q = fusion.permute_rows(attn.q_proj, order_q)
            k = fusion.permute_rows(attn.k_proj, order_k)
            qkv = fusion.concat_rows([q, k, attn.v_proj])
            gate_up = fusion.concat_rows([mlp.gate_proj, mlp.up_proj])
            # The separate layers, now only read by transformers' forward, become slices of
            # the fused ones: one copy of each weight stays resident.
            widths = [_out_features(x) for x in (attn.q_proj, attn.k_proj, attn.v_proj)]
            attn.q_proj, attn.k_proj, attn.v_proj = compact.slices_of(
                qkv, widths, [order_q, order_k, None]
            )
            widths = [_out_features(x) for x in (mlp.gate_proj, mlp.up_proj)]
            mlp.gate_proj, mlp.up_proj = compact.slices_of(gate_up, widths, [None, None])
            self.layers.append(
                _Layer(
                    norm1=layer.input_layernorm.weight,
                    qkv=fusion.kernel(qkv),
                    o=fusion.kernel(attn.o_proj),
                    norm2=layer.post_attention_layernorm.weight,
                    gate_up=fusion.kernel(gate_up),
                    down=fusion.kernel(mlp.down_proj),
                )
            )
            self._fused += [qkv, gate_up]
        self.final_norm = base.norm.weight
        self.lm_head = fusion.kernel(model.lm_head)
        # The small operations of a pass in the engine's own kernels where they are built (one
        # call each instead of several of torch's; each row on its own, in a fixed order).
        self.native = native.available() and self.device.type == "cpu"
        self.kv_dtype = self._cache_dtype()

    def _cache_dtype(self) -> torch.dtype:
        """float16 where the layers are GGUF blocks run by the native kernels (as llama.cpp keeps
        its cache): attention reads half the bytes (a large share of a one-token pass over a long
        context: docs/benchmarks.md), and its rounding is far below the int8 activations'. A
        float32 model keeps a float32 cache."""
        blocks = any(isinstance(layer, BlockLinear) for layer in self._fused)
        return torch.float16 if self.native and blocks else self.dtype

    @staticmethod
    def supports(model: nn.Module) -> bool:
        cfg = getattr(model, "config", None)
        if cfg is None or getattr(cfg, "model_type", None) not in ARCHITECTURES:
            return False
        rope = getattr(cfg, "rope_parameters", None) or getattr(cfg, "rope_scaling", None) or {}
        if rope.get("rope_type", rope.get("type", "default")) not in ROPE_TYPES:
            return False
        if getattr(cfg, "use_sliding_window", False) or getattr(cfg, "hidden_act", "") != "silu":
            return False
        base = getattr(model, "model", None)
        if base is None or not hasattr(base, "rotary_emb") or not hasattr(model, "lm_head"):
            return False
        # The residual stream in float32 (packed layers keep their own formats): the rotary
        # product is complex64 and the cache holds float32.
        return next(model.parameters()).dtype == torch.float32

    def new_cache(self) -> LeanCache:
        return LeanCache(len(self.layers), self.kv_heads, self.head_dim, self.kv_dtype, self.device)

    def _rotation(self, start: int, n: int) -> torch.Tensor:
        """[n, heads + kv_heads, head_dim / 2] complex: the rotation of positions start ..
        start + n - 1 for each q head (with the attention scale folded in) and each k head."""
        end = start + n
        if end > self._rope.shape[0]:
            cap = -(-end // GROW) * GROW
            pos = torch.arange(cap, dtype=torch.float32, device=self.device)
            angles = torch.outer(pos, self.inv_freq)
            rot = torch.polar(torch.full_like(angles, self.rope_scale), angles)
            self._rope = torch.cat(
                [
                    (rot * self.scale)[:, None].expand(-1, self.heads, -1),
                    rot[:, None].expand(-1, self.kv_heads, -1),
                ],
                dim=1,
            ).contiguous()
        return self._rope[start:end]

    @torch.inference_mode()
    def forward(
        self, ids: list[int], cache: LeanCache, keep: int = 1, all_hidden: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """Runs `ids` after the `cache.length` cached positions and appends them to the cache.

        Returns the logits of the last `keep` positions [keep, V] (float32), their final normed
        hidden states [keep, H], and with `all_hidden` those of every fed position [n, H]."""
        n, start = len(ids), cache.length
        self.passes += 1
        cache.reserve(start + n)
        h = self.run_layers(self.embed_ids(ids), cache, start, range(len(self.layers)))
        cache.length = start + n
        normed = self._norm(h, self.final_norm)
        last = normed[-keep:]
        logits = self.lm_head(last).float()
        return logits, last, normed if all_hidden else None

    def embed_ids(self, ids: list[int]) -> torch.Tensor:
        """[n, H]: the residual stream's first value for `ids`."""
        return self.embed(torch.tensor(ids, device=self.device)).to(self.dtype)

    @torch.inference_mode()
    def run_layers(
        self, h: torch.Tensor, cache: LeanCache, start: int, layers: range
    ) -> torch.Tensor:
        """Runs `layers` (consecutive) over h [n, H] at positions start .. start + n - 1, writing
        those positions' keys and values in those layers only, and returns the stream [n, H].

        `cache.length` is left alone (`forward` sets it once every layer holds the positions), and
        its capacity must cover start + n (`LeanCache.reserve`). Each layer attends over the
        positions below start that it holds: a prefix of the layers run over tokens past
        `cache.length` (the target's first layers drafting for it, `self_draft`) writes there
        what a full pass over the same tokens writes in those layers, bitwise, row for row."""
        n = h.shape[0]
        rot = self._rotation(start, n)
        heads, qk_heads = self.heads, self.heads + self.kv_heads
        qk_width, q_width = qk_heads * self.head_dim, heads * self.head_dim
        norm = self._norm
        fused = self.native  # rotation, cache writes and attention: one call (any n)
        rot_pairs = torch.view_as_real(rot) if fused else rot
        for i in layers:
            layer = self.layers[i]
            if self.interrupt is not None and self.interrupt():
                raise Interrupted  # cache.length is unchanged: the pass never happened
            qkv = layer.qkv(norm(h, layer.norm1))
            if fused:
                keys, values = cache.keys[i], cache.values[i]
                attn = torch.ops.spec_lsp.rope_attend(qkv, rot_pairs, keys, values, start, heads)
                h = torch.add(h, layer.o(attn.view(n, q_width)))
                h = torch.add(h, layer.down(self._silu_mul(layer.gate_up(norm(h, layer.norm2)))))
                continue
            qk = torch.view_as_complex(qkv[:, :qk_width].to(self.dtype).view(n, qk_heads, -1, 2))
            qk = torch.view_as_real(qk * rot).view(n, qk_heads, -1)
            keys, values = cache.keys[i], cache.values[i]  # [kv, D, cap] and [kv, cap, D]
            keys[:, :, start : start + n] = qk[:, heads:].permute(1, 2, 0)
            values[:, start : start + n] = (
                qkv[:, qk_width:].view(n, self.kv_heads, -1).transpose(0, 1)
            )
            attn = self._attend(qk[:, :heads], keys, values, start, n)
            h = torch.add(h, layer.o(attn.reshape(n, q_width)))
            gu = layer.gate_up(norm(h, layer.norm2)).to(self.dtype)
            h = torch.add(h, layer.down(self._silu_mul(gu)))
        return h

    def output(self, h: torch.Tensor) -> torch.Tensor:
        """[n, V] float32: the final norm and the output layer over a stream h [n, H] (after
        every layer: the logits; after a prefix of them: an early exit's)."""
        return self.lm_head(self._norm(h, self.final_norm)).float()

    def _norm(self, h: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        if self.native:
            return torch.ops.spec_lsp.rms_norm(h, weight, self.eps)
        return F.rms_norm(h, (self.hidden,), weight, self.eps)

    def _silu_mul(self, gu: torch.Tensor) -> torch.Tensor:
        if self.native:
            return torch.ops.spec_lsp.silu_mul(gu)
        half = gu.shape[1] // 2
        return F.silu(gu[:, :half]) * gu[:, half:]

    def _attend(
        self, q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, start: int, n: int
    ) -> torch.Tensor:
        """q [n, heads, D] (scaled) against cached positions 0 .. start + n - 1: [n, heads, D].

        One row at a time, whatever n: row r runs torch's kernels on the shapes of a one-token pass
        over exactly the keys it sees, so its numbers do not depend on the pass it is in."""
        group = self.heads // self.kv_heads
        if keys.dtype != q.dtype:  # a float16 cache: the positions this pass sees, in float32
            keys, values = keys[:, :, : start + n].to(q.dtype), values[:, : start + n].to(q.dtype)
        qg = q.view(n, self.kv_heads, group, -1)  # row r: [kv_heads, group, D], the query heads
        rows = []  # that share a KV head, stacked
        for r in range(n):
            length = start + r + 1
            scores = torch.bmm(qg[r], keys[:, :, :length]).softmax(-1)
            rows.append(torch.bmm(scores, values[:, :length]))
        return torch.stack(rows).view(n, self.heads, -1)
