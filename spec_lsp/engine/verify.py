"""Acceptance of drafted tokens: greedy matching and rejection sampling. Tensors in, tokens out.

Greedy (temperature 0): accept drafts while each equals the target's argmax at its position; the
first mismatch is replaced by the target's argmax, and when all drafts pass the target's next
argmax is a free bonus token. The output is therefore exactly the target's greedy decoding.

Sampling (temperature > 0), after Leviathan et al. / Chen et al.: draft token x_i drawn from q_i is
kept with probability min(1, p_i(x_i) / q_i(x_i)); on the first rejection the replacement is drawn
from norm(max(p_i - q_i, 0)), which makes the emitted token distributed exactly as p_i. A drafter
without a distribution (n-gram lookup) proposes deterministically: q_i is one-hot on x_i.
"""

from __future__ import annotations

import torch


def probs_from_logits(logits: torch.Tensor, temperature: float, top_p: float = 1.0) -> torch.Tensor:
    """[n, V] logits -> [n, V] probabilities at `temperature` with nucleus `top_p`."""
    probs = torch.softmax(logits.float() / max(temperature, 1e-6), dim=-1)
    if top_p < 1.0:
        sorted_p, idx = probs.sort(dim=-1, descending=True)
        cum = sorted_p.cumsum(dim=-1)
        drop = cum - sorted_p > top_p  # keep the smallest set whose mass reaches top_p
        sorted_p = sorted_p.masked_fill(drop, 0.0)
        probs = torch.zeros_like(probs).scatter(-1, idx, sorted_p)
        probs = probs / probs.sum(dim=-1, keepdim=True)
    return probs


def greedy_accept(draft: list[int], target_logits: torch.Tensor) -> tuple[int, list[int]]:
    """draft: k tokens; target_logits: [k+1, V] at the positions that predict them and the next.

    Returns (accepted count m, emitted tokens = draft[:m] + [target's token at position m]).
    """
    target = target_logits.argmax(dim=-1).tolist()  # [k+1]
    m = 0
    while m < len(draft) and draft[m] == target[m]:
        m += 1
    return m, draft[:m] + [target[m]]


def _pad(q: torch.Tensor, size: int) -> torch.Tensor:
    """Pads the draft's vocabulary dimension to the target's (extra ids have zero probability)."""
    if q.shape[-1] == size:
        return q
    out = q.new_zeros(*q.shape[:-1], size)
    n = min(size, q.shape[-1])
    out[..., :n] = q[..., :n]
    return out


def rejection_accept(
    draft: list[int],
    draft_probs: torch.Tensor | None,  # [k, Vd] the distributions the drafts were drawn from
    target_probs: torch.Tensor,  # [k+1, V]
    generator: torch.Generator | None,
) -> tuple[int, list[int]]:
    """Speculative sampling: returns (accepted count m, emitted tokens, at most k+1)."""
    vocab = target_probs.shape[-1]
    q = _pad(draft_probs, vocab) if draft_probs is not None else None
    for i, x in enumerate(draft):
        p_i = target_probs[i]  # [V]
        q_x = float(q[i, x]) if q is not None else 1.0
        p_x = float(p_i[x]) if x < vocab else 0.0
        u = float(torch.rand((), generator=generator))
        if q_x > 0 and u < min(1.0, p_x / q_x):
            continue  # keep x
        # Rejected: draw from the residual max(p - q, 0), renormalised.
        if q is not None:
            residual = (p_i - q[i]).clamp(min=0.0)
        else:
            residual = p_i.clone()
            residual[x] = 0.0
        total = float(residual.sum())
        residual = residual / total if total > 0 else p_i
        token = int(torch.multinomial(residual, 1, generator=generator))
        return i, draft[:i] + [token]
    bonus = int(torch.multinomial(target_probs[len(draft)], 1, generator=generator))
    return len(draft), list(draft) + [bonus]
