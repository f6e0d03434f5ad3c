"""The feature draft head (EAGLE-style): one decoder layer that drafts from the target's own
last hidden states.

A small decoder that only sees tokens must relearn what the target already computed; a head that
reads the target's final hidden state `f_i` (the vector its output layer turns into the logits of
token `i+1`) only has to extrapolate one step. Pair `i` of the head's input is
`fc([embed(x_{i+1}), f_i])`; one Llama decoder layer with causal attention over earlier pairs (its
own small KV cache) and a final norm predict `f_{i+1}`, whose logits over the `R` most frequent
code tokens give the draft token `x_{i+2}`. Drafting further feeds the predicted feature back in.

The head's files hold only what it trained (fc, layer, norm, restricted output rows, `vocab_ids`)
and its config, which names the target (`embed_source`) and a hash of the target's vocabulary
(`target_fingerprint`) instead of a copy of its tokenizer; the embeddings are the target's, passed
in at load time. Importing this module registers the config type (`model_type` "spec_lsp_head")
with transformers' AutoConfig. `HeadState` is the per-document state the engine keeps beside the
target's `ModelState` (which records the target's features for it). Knows nothing about training,
LSP or the drafting loop's policy.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, cast

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from torch import nn
from transformers import AutoConfig
from transformers.models.llama.modeling_llama import (
    LlamaMLP,
    LlamaRMSNorm,
    LlamaRotaryEmbedding,
    apply_rotary_pos_emb,
)

from spec_lsp.engine.from_source import DistilledConfig, target_embeddings

WEIGHTS = "model.safetensors"
MODEL_TYPE = "spec_lsp_head"


class SpecHeadConfig(DistilledConfig):
    model_type = MODEL_TYPE

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("num_hidden_layers", 1)  # one layer over the target's features
        super().__init__(**kwargs)


AutoConfig.register(MODEL_TYPE, SpecHeadConfig)


class HeadAttention(nn.Module):
    """Causal self-attention with grouped KV heads and an explicit (k, v) cache."""

    def __init__(self, config: SpecHeadConfig) -> None:
        super().__init__()
        self.heads = config.num_attention_heads
        self.kv_heads = config.num_key_value_heads or self.heads
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // self.heads
        h = config.hidden_size
        self.q_proj = nn.Linear(h, self.heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(h, self.kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(h, self.kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.heads * self.head_dim, h, bias=False)

    def forward(
        self,
        x: torch.Tensor,
        cos: torch.Tensor,
        sin: torch.Tensor,
        past: tuple[torch.Tensor, torch.Tensor] | None,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        b, n, _ = x.shape
        q = self.q_proj(x).view(b, n, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, n, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, n, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        if past is not None:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        groups = self.heads // self.kv_heads
        kr = k.repeat_interleave(groups, dim=1) if groups > 1 else k
        vr = v.repeat_interleave(groups, dim=1) if groups > 1 else v
        total = k.shape[2]
        if n == 1:
            out = F.scaled_dot_product_attention(q, kr, vr)
        elif total == n:
            out = F.scaled_dot_product_attention(q, kr, vr, is_causal=True)
        else:  # new queries after a cached prefix: query j sees keys up to total - n + j
            rows = torch.arange(n, device=x.device)[:, None] + (total - n)
            mask = torch.arange(total, device=x.device)[None, :] <= rows
            out = F.scaled_dot_product_attention(q, kr, vr, attn_mask=mask)
        out = out.transpose(1, 2).reshape(b, n, self.heads * self.head_dim)
        return self.o_proj(out), (k, v)


class SpecHead(nn.Module):
    """fc([embed(x_{i+1}), f_i]) -> decoder layer -> norm: the predicted feature f_{i+1}."""

    vocab_ids: torch.Tensor  # [R] full-vocabulary id of each output row (a buffer)

    def __init__(self, config: SpecHeadConfig) -> None:
        super().__init__()
        self.config = config
        h = config.hidden_size
        self.vocab_size = config.vocab_size
        self.embed_tokens = nn.Embedding(config.vocab_size, h)
        self.embed_tokens.weight.requires_grad_(False)
        self.fc = nn.Linear(2 * h, h, bias=True)
        self.input_layernorm = LlamaRMSNorm(h, eps=config.rms_norm_eps)
        self.self_attn = HeadAttention(config)
        self.post_attention_layernorm = LlamaRMSNorm(h, eps=config.rms_norm_eps)
        self.mlp = LlamaMLP(config)
        self.norm = LlamaRMSNorm(h, eps=config.rms_norm_eps)
        self.rotary_emb = LlamaRotaryEmbedding(config=config)
        self.lm_head = nn.Linear(h, config.draft_vocab_size, bias=False)
        self.register_buffer("vocab_ids", torch.arange(config.draft_vocab_size, dtype=torch.long))

    @property
    def device(self) -> torch.device:
        return self.fc.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.fc.weight.dtype

    def init_weights(self, std: float = 0.02) -> None:
        for lin in (self.fc, self.self_attn.q_proj, self.self_attn.k_proj, self.self_attn.v_proj):
            nn.init.normal_(lin.weight, std=std)
        for lin in (
            self.self_attn.o_proj,
            self.mlp.gate_proj,
            self.mlp.up_proj,
            self.mlp.down_proj,
        ):
            nn.init.normal_(lin.weight, std=std / math.sqrt(2))
        nn.init.zeros_(self.fc.bias)

    def forward(
        self,
        features: torch.Tensor,
        next_tokens: torch.Tensor,
        positions: torch.Tensor,
        past: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """[B, L, H] features f_i, [B, L] tokens x_{i+1}, [B, L] positions i -> [B, L, H]
        predicted f_{i+1} and the layer's (k, v) including `past`."""
        emb = self.embed_tokens(next_tokens).to(features.dtype)
        x = self.fc(torch.cat([emb, features], dim=-1))
        cos, sin = self.rotary_emb(x, positions)
        attn, kv = self.self_attn(self.input_layernorm(x), cos, sin, past)
        x = x + attn
        x = x + self.mlp(self.post_attention_layernorm(x))
        return self.norm(x), kv

    def restricted_logits(self, predicted: torch.Tensor) -> torch.Tensor:
        return cast(torch.Tensor, self.lm_head(predicted))

    def scatter_full(self, logits: torch.Tensor) -> torch.Tensor:
        """[..., R] restricted logits -> [..., V] full-vocabulary logits (lowest elsewhere)."""
        full = logits.new_full((*logits.shape[:-1], self.vocab_size), torch.finfo(logits.dtype).min)
        return full.scatter(-1, self.vocab_ids.expand(*logits.shape[:-1], -1), logits)

    def trainable_state(self) -> dict[str, torch.Tensor]:
        return {
            k: v.detach().contiguous().cpu()
            for k, v in self.state_dict().items()
            if not k.startswith(("embed_tokens.", "rotary_emb."))
        }


class HeadState:
    """One document's head KV cache. `tokens` is the context whose pairs 0..len(tokens)-2 the
    cache covers (pair i needs tokens 0..i+1), so the longest common token prefix with a new
    context tells which pairs stay valid, as for a model's `ModelState`."""

    def __init__(self, head: SpecHead) -> None:
        self.head = head
        self.kv: tuple[torch.Tensor, torch.Tensor] | None = None
        self.tokens: list[int] = []

    def __len__(self) -> int:
        return self.pairs

    @property
    def pairs(self) -> int:
        return 0 if self.kv is None else int(self.kv[0].shape[2])

    def reset(self) -> None:
        self.kv, self.tokens = None, []

    def crop(self, pairs: int) -> None:
        if self.kv is None or pairs >= self.pairs:
            return
        if pairs <= 0:
            self.reset()
            return
        self.kv = (self.kv[0][:, :, :pairs], self.kv[1][:, :, :pairs])
        self.tokens = self.tokens[: pairs + 1]

    @torch.inference_mode()
    def step(self, features: torch.Tensor, next_tokens: list[int], start: int) -> torch.Tensor:
        """Feeds pairs start..start+n-1 (the cache must hold exactly `start` pairs); returns the
        predicted feature of the last one [H]."""
        dev = self.head.device
        ids = torch.tensor([next_tokens], dtype=torch.long, device=dev)
        pos = torch.arange(start, start + len(next_tokens), device=dev)[None]
        out, self.kv = self.head(features[None].to(self.head.dtype), ids, pos, self.kv)
        return out[0, -1]


def is_head_dir(path: Path) -> bool:
    cfg = path / "config.json"
    return cfg.is_file() and json.loads(cfg.read_text()).get("model_type") == MODEL_TYPE


def save_head(head: SpecHead, out: Path) -> None:
    """Writes config.json and model.safetensors (no embeddings, no tokenizer)."""
    out.mkdir(parents=True, exist_ok=True)
    save_file(head.trainable_state(), str(out / WEIGHTS), metadata={"format": "pt"})
    head.config.architectures = ["SpecHead"]
    head.config.save_pretrained(out)


def load_head(
    path: Path, embeddings: torch.Tensor | None = None, dtype: torch.dtype | None = None
) -> SpecHead:
    """Loads a head; `embeddings` are the target's input embeddings (shared, not copied), else
    read from `config.embed_source`."""
    config = SpecHeadConfig.from_pretrained(str(path))
    head = SpecHead(config)
    state = load_file(str(path / WEIGHTS))
    missing, unexpected = head.load_state_dict(state, strict=False)
    bad = [k for k in missing if not k.startswith(("embed_tokens.", "rotary_emb."))]
    if bad or unexpected:
        raise ValueError(
            f"{path}: not a spec-lsp head checkpoint (missing {bad}, extra {unexpected})"
        )
    if embeddings is None:
        embeddings = target_embeddings(config.embed_source)
    if tuple(embeddings.shape) != (config.vocab_size, config.hidden_size):
        raise ValueError(
            f"{path}: the head expects embeddings {config.vocab_size}x{config.hidden_size}, "
            f"the target has {tuple(embeddings.shape)}"
        )
    head.embed_tokens.weight = nn.Parameter(embeddings, requires_grad=False)
    if dtype is not None:
        head = head.to(dtype)
    return head.eval()
