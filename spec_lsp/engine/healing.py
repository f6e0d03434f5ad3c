"""Token healing: a prompt that ends inside what the model would write as one token.

A prompt cut at the cursor ends where the person stopped typing, which is rarely where the
tokenizer would end a token. Qwen's tokenizer writes `_cache(LRUCache` as `_cache`, `(L`, `R`, ...
and `values.append` as `values`, `.append`: a prompt that ends in `_cache(` or `values.` ends in a
token that, in training, is almost never followed by the rest of the word as a token of its own.
The model then answers with a space (` LRUCache`), another name or nothing at all (measured on
`bench repo`'s holes, docs/benchmarks.md). Healing takes the prompt's last token off and lets the
model choose the first token among those whose text begins with it (`(` may become `(L`, `(self`
or stay `(`), then cuts that text off the output: the model writes the boundary it knows, and the
output still begins at the cursor.

Only the first token is constrained, so speculation is unchanged: the first token comes from the
prefill's logits with or without drafting, and every later token is verified as before. A token
whose text no other token extends (most whole words, a newline) is left alone; so are special
tokens (FIM markers) and tokens that are not whole characters on their own (a UTF-8 sequence
split across tokens).

Which prompts end in typed text is the prompt builder's to say (`GenerationRequest.heal`): a
prompt ending in a FIM marker has nothing to heal, and one whose last typed blank the prompt
leaves out (`Prompt.lead`) is already cut at a word's start.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from typing import Any

import torch

LAST_CHAR = "\U0010ffff"  # sorts after every character: a prefix's range ends before it + this


@dataclass(frozen=True)
class Healed:
    """A prompt without its last token, that token's text (cut off the output) and the ids the
    first token may take (each one's text begins with `text`; the cut token among them)."""

    prompt: list[int]
    text: str
    allowed: torch.Tensor


class Healer:
    """The vocabulary's texts sorted (`build`: 1.2 s for Qwen's 151,936 tokens on a 2-core
    Xeon, so loading builds it; else the first prompt healed does), kept for the engine's life."""

    def __init__(self, tokenizer: Any, vocab_limit: int | None = None) -> None:
        self.tokenizer, self.vocab_limit = tokenizer, vocab_limit
        self._texts: list[str] | None = None  # sorted
        self._ids: torch.Tensor | None = None  # in `_texts`' order
        self._text_of: dict[int, str] = {}

    def build(self) -> None:
        tok = self.tokenizer
        size = len(tok)
        if self.vocab_limit is not None:
            size = min(size, self.vocab_limit)
        added = set(getattr(tok, "added_tokens_decoder", {}) or {})
        special = added | set(getattr(tok, "all_special_ids", []) or [])
        ids = [i for i in range(size) if i not in special]
        texts = tok.batch_decode([[i] for i in ids], skip_special_tokens=False)
        pairs = sorted((t, i) for t, i in zip(texts, ids, strict=True) if t and "\ufffd" not in t)
        self._texts = [t for t, _ in pairs]
        self._ids = torch.tensor([i for _, i in pairs], dtype=torch.long)
        self._text_of = {i: t for t, i in pairs}

    def heal(self, prompt: list[int]) -> Healed | None:
        """`prompt` healed (see the module's doc), or None where its last token is whole."""
        if len(prompt) < 2:
            return None
        if self._texts is None:
            self.build()
        assert self._texts is not None and self._ids is not None
        text = self._text_of.get(prompt[-1])
        if text is None:
            return None
        lo = bisect_left(self._texts, text)
        hi = bisect_left(self._texts, text + LAST_CHAR, lo)
        if hi - lo <= 1:  # only the token itself begins with its text
            return None
        return Healed(prompt[:-1], text, self._ids[lo:hi])


def constrain(logits: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """`logits` (one row) with every id outside `allowed` at -inf."""
    out = torch.full_like(logits, float("-inf"))
    keep = allowed[allowed < logits.shape[-1]]
    out[keep] = logits[keep]
    return out
