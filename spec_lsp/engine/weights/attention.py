"""Exact attention for transformers' forward of a packed model (`quant.apply_format` installs it).

Packed layers round their inputs (to bfloat16 for torch's kernels, to int8 blocks for the native
ones), which turns the ~1e-6 differences between an attention over 1 query and over k into whole
rounding steps, enough to flip a near-tie of the greedy token. Computed in float64 and rounded
back, those differences vanish, so a verification pass sees what one-token decoding sees, and a
prefill chunk what shorter passes over the same tokens see: at every pass length, as the packed
layers run their packed kernels at every length (`quant`). (The engine's lean forward
attends row by row instead: `lean.py`.)
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

EXACT_ATTENTION = "spec_lsp_exact"


def _exact_attention(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """transformers' SDPA attention computed in float64, its result rounded back."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    mask = attention_mask
    if mask is not None and mask.is_floating_point():
        mask = mask.double()
    out, _ = sdpa_attention_forward(
        module, query.double(), key.double(), value.double(), mask, **kwargs
    )
    return out.to(query.dtype), None


def use_exact_attention(model: nn.Module) -> None:
    """Makes a transformers model attend through `_exact_attention`."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(EXACT_ATTENTION, _exact_attention)
    AttentionMaskInterface.register(EXACT_ATTENTION, sdpa_mask)  # the masks SDPA takes
    config = getattr(model, "config", None)
    if config is not None:
        config._attn_implementation = EXACT_ATTENTION
        for sub in model.modules():
            sub_config = getattr(sub, "config", None)
            if sub_config is not None and sub_config is not config:
                sub_config._attn_implementation = EXACT_ATTENTION
