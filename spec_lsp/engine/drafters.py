"""Drafters: propose the next k tokens cheaply; the target verifies them in one pass.

- `NgramDrafter`: prompt lookup. Finds the most recent earlier occurrence of the context's last n
  tokens (longest n first) and proposes what followed it. No model; strong on code, which repeats
  identifiers, call shapes and whole lines.
- `ModelDrafter`: a small draft model sharing the target's vocabulary, run autoregressively on its
  own per-document KV state. Stops early when its confidence drops.
- `CombinedDrafter`: n-gram first, the draft model when lookup finds nothing.

`AdaptiveK` grows the draft length after fully accepted drafts and shrinks it after rejections.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch

from spec_lsp.engine.cache import ModelState
from spec_lsp.engine.verify import probs_from_logits


@dataclass
class Proposal:
    tokens: list[int]
    probs: torch.Tensor | None = None  # [k, Vd] draft distributions; None: deterministic proposal
    source: str = ""


class Drafter(Protocol):
    name: str

    def propose(
        self,
        context: list[int],
        k: int,
        draft_state: ModelState | None,
        temperature: float,
        generator: torch.Generator | None,
    ) -> Proposal: ...


class AdaptiveK:
    """Draft length from recent acceptance: +2 after a fully accepted draft, -1 after a miss."""

    def __init__(self, k: int, k_min: int = 1, k_max: int = 16) -> None:
        self.k_min, self.k_max = k_min, k_max
        self.k = max(k_min, min(k, k_max))

    def update(self, proposed: int, accepted: int) -> None:
        if proposed == 0:
            return
        if accepted == proposed:
            self.k = min(self.k + 2, self.k_max)
        else:
            self.k = max(self.k - 1, self.k_min)


class NgramDrafter:
    name = "ngram"

    def __init__(self, max_ngram: int = 4, min_ngram: int = 1, window: int = 4096) -> None:
        self.max_ngram, self.min_ngram, self.window = max_ngram, min_ngram, window

    def lookup(self, context: list[int], k: int) -> list[int]:
        hay = context[-self.window :]
        n_ctx = len(hay)
        for n in range(min(self.max_ngram, n_ctx - 1), self.min_ngram - 1, -1):
            pattern = hay[-n:]
            first = pattern[0]
            # Most recent earlier occurrence whose continuation is non-empty.
            for start in range(n_ctx - n - 1, -1, -1):
                if hay[start] == first and hay[start : start + n] == pattern:
                    follow = hay[start + n : start + n + k]
                    if follow:
                        return follow
        return []

    def propose(
        self,
        context: list[int],
        k: int,
        draft_state: ModelState | None,
        temperature: float,
        generator: torch.Generator | None,
    ) -> Proposal:
        return Proposal(self.lookup(context, k), None, self.name)


class ModelDrafter:
    name = "draft"

    def __init__(self, min_confidence: float = 0.3) -> None:
        self.min_confidence = min_confidence

    def propose(
        self,
        context: list[int],
        k: int,
        draft_state: ModelState | None,
        temperature: float,
        generator: torch.Generator | None,
    ) -> Proposal:
        if draft_state is None or k <= 0:
            return Proposal([], None, self.name)
        tokens: list[int] = []
        dists: list[torch.Tensor] = []
        seq = list(context)
        for _ in range(k):
            logits = draft_state.advance(seq, keep=1).logits[-1]  # [Vd]
            if temperature > 0:
                q = probs_from_logits(logits[None], temperature)[0]
                token = int(torch.multinomial(q, 1, generator=generator))
                dists.append(q)
            else:
                q = torch.softmax(logits, dim=-1)
                token = int(q.argmax())
                # Low confidence: the target would likely reject; stop (keep at least one).
                if tokens and float(q[token]) < self.min_confidence:
                    break
            tokens.append(token)
            seq.append(token)
        probs = torch.stack(dists) if dists else None
        return Proposal(tokens, probs, self.name)


class CombinedDrafter:
    name = "both"

    def __init__(self, ngram: NgramDrafter, model: ModelDrafter) -> None:
        self.ngram, self.model = ngram, model

    def propose(
        self,
        context: list[int],
        k: int,
        draft_state: ModelState | None,
        temperature: float,
        generator: torch.Generator | None,
    ) -> Proposal:
        found = self.ngram.lookup(context, k)
        if found:
            return Proposal(found, None, self.ngram.name)
        return self.model.propose(context, k, draft_state, temperature, generator)
