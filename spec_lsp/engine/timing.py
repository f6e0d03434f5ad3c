"""What a target pass costs, measured on the loaded model: the curve adaptive k plans with.

`pass_costs(model, n_max)` times a forward over n = 1..n_max new tokens after a cached context
(the shape of a verification pass), the best of a few runs each, in milliseconds.
`draft_step_cost(draft)` times one draft step the same way (a draft model's pass over one token, or
a feature head's step and output layer): the per-token price the draft gate weighs against the
target's curve.
"""

from __future__ import annotations

import inspect
import time
from typing import Any

import torch
from transformers import DynamicCache

from spec_lsp.engine.head import HeadState, SpecHead
from spec_lsp.engine.lean import LeanDecoder, lean_of


@torch.inference_mode()
def pass_costs(model: Any, n_max: int, context: int = 64, reps: int = 3) -> tuple[float, ...]:
    """[n - 1]: milliseconds of one forward over n new tokens after `context` cached ones."""
    vocab = int(model.config.get_text_config().vocab_size)
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(0, vocab, (1, context + n_max), generator=gen).to(model.device)
    lean = lean_of(model)
    if lean is not None:
        return _lean_costs(lean, ids[0].tolist(), context, n_max, reps)
    cache = DynamicCache(config=model.config)
    # transformers 5.x renames `past_key_values` to `cache` (the old name warns until 5.40).
    kw = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    model(input_ids=ids[:, :context], **{kw: cache}, use_cache=True, logits_to_keep=1)
    costs = []
    for n in range(1, n_max + 1):
        best = float("inf")
        for _ in range(reps):
            if model.device.type == "cuda":
                torch.cuda.synchronize()
            t = time.perf_counter()
            model(
                input_ids=ids[:, context : context + n],
                **{kw: cache},
                use_cache=True,
                logits_to_keep=n,
            )
            if model.device.type == "cuda":
                torch.cuda.synchronize()
            best = min(best, time.perf_counter() - t)
            cache.crop(-n)  # transformers 5: a negative count drops the last n
        costs.append(best * 1000)
    return tuple(costs)


def _lean_costs(
    lean: LeanDecoder, ids: list[int], context: int, n_max: int, reps: int
) -> tuple[float, ...]:
    cache = lean.new_cache()
    lean.forward(ids[:context], cache)
    costs = []
    for n in range(1, n_max + 1):
        best = float("inf")
        for _ in range(reps):
            t = time.perf_counter()
            lean.forward(ids[context : context + n], cache, keep=n)
            best = min(best, time.perf_counter() - t)
            cache.crop(-n)
        costs.append(best * 1000)
    return tuple(costs)


@torch.inference_mode()
def draft_step_cost(draft: Any, context: int = 64, reps: int = 3) -> float:
    """Milliseconds of one draft step after `context` cached tokens, measured like `pass_costs`."""
    if not isinstance(draft, SpecHead):
        return pass_costs(draft, 1, context, reps)[0]
    state = HeadState(draft)
    gen = torch.Generator().manual_seed(0)
    feats = torch.randn(context, draft.config.hidden_size, generator=gen).to(draft.device)
    ids = torch.randint(0, draft.vocab_size, (context,), generator=gen).tolist()
    predicted = state.step(feats, ids, 0)  # [H]
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        out = state.step(predicted[None], [ids[0]], context)
        draft.restricted_logits(out).argmax()
        best = min(best, time.perf_counter() - t)
        state.crop(context)
    return best * 1000
