"""What a target pass costs, measured on the loaded model: the curve adaptive k plans with.

`pass_costs(forward, n_max)` times a model's forward (the one the engine runs it with) over
n = 1..n_max new tokens after a cached context (the shape of a verification pass), the best of a
few runs each, in milliseconds.
`draft_step_cost(draft)` times one draft step the same way (a draft model's pass over one token, or
a feature head's step and output layer): the per-token price the draft gate weighs against the
target's curve. `warm_up(engine)` runs each model's first pass at load.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch

from spec_lsp.engine.forward import as_forward
from spec_lsp.engine.head import HeadState, SpecHead


@torch.inference_mode()
def pass_costs(
    model: Any,
    n_max: int,
    context: int = 64,
    reps: int = 3,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[float, ...]:
    """[n - 1]: milliseconds of one forward over n new tokens after `context` cached ones.
    `model` is the `forward.Forward` the engine runs it with (a bare model: transformers');
    `clock` in seconds (`time.thread_time`: the CPU time of a one-thread run)."""
    forward = as_forward(model)
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(0, forward.vocab_size, (context + n_max,), generator=gen).tolist()
    cuda = forward.device.type == "cuda"
    cache = forward.new_cache()
    forward.forward(ids[:context], cache)
    costs = []
    for n in range(1, n_max + 1):
        best = float("inf")
        for _ in range(reps):
            if cuda:
                torch.cuda.synchronize()
            t = clock()
            forward.forward(ids[context : context + n], cache, keep=n)
            if cuda:
                torch.cuda.synchronize()
            best = min(best, clock() - t)
            cache.crop(-n)  # transformers 5: a negative count drops the last n
        costs.append(best * 1000)
    return tuple(costs)


@torch.inference_mode()
def draft_step_cost(draft: Any, context: int = 64, reps: int = 3) -> float:
    """Milliseconds of one draft step after `context` cached tokens, measured like `pass_costs`
    (`draft`: a feature head, or a draft model's forward)."""
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


@torch.inference_mode()
def warm_up(engine: Any) -> None:
    """One short pass of each of a `SpecEngine`'s models through the forward it runs with (or the
    feature head's step), so that the first keystroke's pass finds them warm."""
    ids = [1, 2, 3, 4]
    for forward in (engine.forwards.target, engine.forwards.draft):
        if forward is not None:
            forward.forward(ids, forward.new_cache(), keep=4)
    if engine.head is not None:
        device = engine.target.device
        feats = torch.zeros(
            1, 4, engine.head.config.hidden_size, device=device, dtype=engine.head.dtype
        )
        engine.head(feats, torch.tensor([ids], device=device), torch.arange(4, device=device)[None])
