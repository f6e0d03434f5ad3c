"""How far a target in a packed weight format is from the same target in float32: top-1 agreement
of the greedy next token at every position of held-out code (standard-library files that the
bench prompts do not use), computed as decoding computes it."""

from __future__ import annotations

from typing import Any

import torch

from spec_lsp.benchmarks.prompts import STDLIB_FILES, stdlib_dir

SCORE_ROWS = 32  # tokens a scoring pass runs (its logits: rows x vocabulary floats)
HELD_OUT = ("ast.py", "dataclasses.py", "inspect.py", "typing.py", "functools.py", "enum.py")


def held_out_texts(count: int = 6, chars: int = 3000) -> list[str]:
    texts = []
    for name in HELD_OUT:
        path = stdlib_dir() / name
        if name not in STDLIB_FILES and path.is_file():
            texts.append(path.read_text(encoding="utf-8", errors="replace")[:chars])
    return texts[:count]


@torch.inference_mode()
def top1_agreement(model: Any, reference: Any, encode: Any, max_tokens: int = 512) -> float | None:
    """Share of positions where both models' greedy next token is the same (`model`: the forward
    the engine runs it with, or a bare model)."""
    same = total = 0
    for text in held_out_texts():
        ids = torch.tensor([encode(text)[:max_tokens]], device=model.device)
        if ids.shape[1] < 2:
            continue
        a = _greedy(model, ids)
        b = reference(input_ids=ids.to(reference.device)).logits[0].argmax(-1).to(a.device)
        same += int((a == b).sum())
        total += a.numel()
    return round(same / total, 4) if total else None


def _greedy(model: Any, ids: torch.Tensor) -> torch.Tensor:
    """The model's greedy next token at every position of `ids` [1, n], computed the way decoding
    computes it: with the engine's lean forward, in passes of decode size (the packed kernels and
    row-by-row attention that a keystroke's passes run), else one transformers forward."""
    from spec_lsp.engine.forward import TransformersForward, as_forward

    decoder = as_forward(model)  # the engine's forward of the model, or transformers'
    if isinstance(decoder, TransformersForward):
        return decoder.model(input_ids=ids).logits[0].argmax(-1)
    tokens, cache, out = ids[0].tolist(), decoder.new_cache(), []
    for start in range(0, len(tokens), SCORE_ROWS):
        chunk = tokens[start : start + SCORE_ROWS]
        out.append(decoder.forward(chunk, cache, keep=len(chunk))[0].argmax(-1))
    return torch.cat(out)
