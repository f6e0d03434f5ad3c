"""The format a loaded pair's layers run in: a GGUF file's own blocks as they are stored, else the
preset's format per device (`quant`), with a bundled GGUF's Q4_1 / Q8_0 blocks taken as they are;
and which models' tensors may still view a file's mapping (`compact.own_storage`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from spec_lsp.engine.api import FLOAT_FORMATS
from spec_lsp.engine.from_source import bundled_dir, bundled_gguf, is_gguf
from spec_lsp.engine.head import SpecHead
from spec_lsp.engine.weights import compact, quant
from spec_lsp.engine.weights.attention import use_exact_attention
from spec_lsp.engine.weights.gguf import Q8Blocks
from spec_lsp.engine.weights.qblocks import BlockLinear

if TYPE_CHECKING:
    from spec_lsp.engine.load_spec import LoadSpec


def gguf_blocks(source: str) -> dict[str, Any]:
    """A bundled target's quantized GGUF blocks by parameter name (empty for other sources)."""
    if not source.startswith("bundled:"):
        return {}
    from spec_lsp.engine.weights.gguf import read_blocks_cached

    name = source.split(":", 1)[1]
    return dict(
        read_blocks_cached(bundled_gguf(name), bundled_dir(name).parent / "gguf-blocks" / name)
    )


def apply_weights(
    spec: LoadSpec, target: Any, draft: Any, device: str, random_weights: bool
) -> str:
    """Puts the target's and the draft's linear layers in the spec's format; returns what ran.
    A GGUF file's model runs as the file stores it (`gguf_model`): its format is the file's."""
    fmt, out = spec.weight_format(device), spec.output_format(device)
    if not random_weights and is_gguf(spec.target):
        use_exact_attention(target)
        if isinstance(draft, torch.nn.Module):
            if spec.draft and is_gguf(spec.draft):
                use_exact_attention(draft)
            else:
                quant.apply_format(draft, fmt, output=out)
        return stored_format(target)
    if quant.effective_format(fmt, device) in FLOAT_FORMATS and out == fmt:
        return quant.effective_format(fmt, device)
    packed = fmt in ("int4", "int8") and not random_weights
    blocks = gguf_blocks(spec.target) if packed else {}
    label = quant.apply_format(target, fmt, output=out, blocks=blocks)
    if isinstance(draft, SpecHead):  # its fc stays dense: `SpecHead.dtype` reads its weight
        quant.apply_format(draft, fmt, output=out, skip=lambda name: name == "fc")
    elif draft is not None:
        quant.apply_format(draft, fmt, output=out)
    # The embedding as the GGUF's Q8_0 blocks (the same rows, a quarter of the bytes); a feature
    # head reads the target's embedding, so it takes the compact one too.
    embed_blocks = blocks.get("model.embed_tokens.weight")
    compacted = isinstance(embed_blocks, Q8Blocks) and compact.compact_embedding(
        target, embed_blocks
    )
    if compacted and isinstance(draft, SpecHead):
        draft.embed_tokens = target.get_input_embeddings()
    return label


def mapped_models(spec: LoadSpec, target: Any, draft: Any, random_weights: bool) -> list[Any]:
    """The models whose tensors may be views of a file's mapping (`compact.own_storage`): not a
    GGUF file's, built from its blocks into memory of their own (copying them again doubled the
    model's memory for a moment, for nothing)."""
    sources = ((target, spec.target), (draft, spec.draft or ""))
    return [
        m
        for m, source in sources
        if isinstance(m, torch.nn.Module) and (random_weights or not is_gguf(source))
    ]


def stored_format(model: torch.nn.Module) -> str:
    """What a GGUF model's layers run as: the block types the native kernels read, or float."""
    kinds = sorted({m.kind for m in model.modules() if isinstance(m, BlockLinear)})
    dense = any(isinstance(m, torch.nn.Linear) for m in model.modules())
    if not kinds:
        return "gguf, de-quantized (no native kernels)"
    return f"gguf {'+'.join(kinds)}{' + float' if dense else ''}, native kernels"
