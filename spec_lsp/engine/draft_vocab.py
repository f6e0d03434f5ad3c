"""A draft model's output layer over part of the vocabulary (`draft_vocab` in a preset).

A draft only proposes: the target verifies every token, so what the draft cannot say costs
acceptance, never exactness. Its output layer is a large share of its pass: the coder pair's 0.5B
scores 151,936 tokens with 145 MB of Q8_0 rows (~37% of the bytes a one-token pass reads) and 113
MB of them are tokens code rarely uses. `restrict_output` keeps the rows of the tokenizer's first
`rows` ids and of its added and special tokens (FIM markers, end of text): byte-level BPE
vocabularies (Qwen's, Llama 3's, GPT-2's) number their tokens in merge order, so the first ids are
the ones merged first, the most frequent in the tokenizer's training text. docs/benchmarks.md
gives the share of code tokens each cut covers, as measured.

`RestrictedOutput` then scores only those rows and returns a full-vocabulary row in which every
other token has the dtype's lowest value (probability 0 after a softmax), so the drafters,
sampling's rejection step and transformers' forward read it as any output layer. Knows nothing of
presets or drafting: a model and a tokenizer in, the model with a smaller head out.
"""

from __future__ import annotations

import logging
from typing import Any

import torch
from torch import nn

from spec_lsp.engine.weights.qblocks import BlockLinear

log = logging.getLogger(__name__)


class RestrictedOutput(nn.Module):
    """logits [..., V] from the rows `ids` of an output layer (the rest: the lowest float)."""

    ids: torch.Tensor  # [R] int64, ascending: the full-vocabulary id of each kept row

    def __init__(self, layer: nn.Module, ids: torch.Tensor, vocab_size: int) -> None:
        super().__init__()
        self.vocab_size = vocab_size
        self.register_buffer("ids", ids.to(torch.long))
        if isinstance(layer, BlockLinear):
            self.rows: nn.Module = layer.rows(self.ids)
        elif isinstance(layer, nn.Linear):
            self.rows = nn.Linear(layer.in_features, len(ids), bias=layer.bias is not None)
            self.rows.weight = nn.Parameter(layer.weight.detach()[self.ids].clone(), False)
            if layer.bias is not None:
                self.rows.bias = nn.Parameter(layer.bias.detach()[self.ids].clone(), False)
        else:
            raise TypeError(f"cannot restrict an output layer of type {type(layer).__name__}")

    @property
    def out_features(self) -> int:
        return self.vocab_size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        kept = self.rows(x)  # [..., R]
        full = kept.new_full((*kept.shape[:-1], self.vocab_size), torch.finfo(kept.dtype).min)
        full[..., self.ids] = kept
        return full

    def extra_repr(self) -> str:
        return f"{len(self.ids)} of {self.vocab_size} tokens"


def kept_ids(tokenizer: Any, rows: int, vocab_size: int) -> torch.Tensor:
    """The ids a restricted output scores: 0 .. rows - 1, and every added or special token of
    `tokenizer` (ascending, within the model's vocabulary)."""
    special = set(getattr(tokenizer, "added_tokens_decoder", {}) or {})
    special |= set(getattr(tokenizer, "all_special_ids", []) or [])
    ids = set(range(min(rows, vocab_size))) | {i for i in special if 0 <= i < vocab_size}
    return torch.tensor(sorted(ids), dtype=torch.long)


def restrict_output(model: nn.Module, tokenizer: Any, rows: int) -> int:
    """Replaces `model`'s output layer by a `RestrictedOutput` over `kept_ids`; returns the rows
    it kept (0: left whole: `rows` covers the vocabulary, or the layer is of another kind)."""
    head = getattr(model, "lm_head", None)
    vocab_size = int(getattr(getattr(model, "config", None), "vocab_size", 0) or 0)
    if head is None or isinstance(head, RestrictedOutput) or rows <= 0 or rows >= vocab_size:
        return 0
    if not isinstance(head, BlockLinear | nn.Linear):
        log.warning("draft_vocab: output layer %s left whole", type(head).__name__)
        return 0
    if getattr(head, "out_features", vocab_size) != vocab_size:
        log.warning("draft_vocab: the output layer is not the vocabulary's width; left whole")
        return 0
    ids = kept_ids(tokenizer, rows, vocab_size)
    model.lm_head = RestrictedOutput(head, ids, vocab_size)
    return len(ids)
