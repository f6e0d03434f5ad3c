"""One generation's mutable state, and the stop conditions applied token by token.

`Decoding` is what the engine's loop (`engine.py`) carries through a generation; `emit` appends
tokens the target approved, one at a time, stopping at the first EOS, stop string, stop
callback's cut or token cap, so the output is token for token the target's own decoding however
many tokens a round approved. Knows nothing of drafting, KV or models.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from spec_lsp.engine import api
from spec_lsp.engine.api import GenerationRequest, GenerationStats


@dataclass
class Decoding:
    """Mutable state of one generation."""

    request: GenerationRequest
    stats: GenerationStats
    generated: list[int] = field(default_factory=list)
    text: str = ""
    done: bool = False
    departures: list[tuple[int, float]] = field(default_factory=list)
    # A healed prompt's cut token text (`healing.py`): the output's first token begins with it,
    # and it is no part of the text (which begins at the cursor).
    skip: str = ""


def emit(
    run: Decoding, decode: Callable[[list[int]], str], eos: Collection[int], tokens: list[int]
) -> None:
    """Appends target-approved tokens one by one, applying every stop condition per token."""
    req, stats = run.request, run.stats
    for token in tokens:
        if token in eos:
            stats.stop_reason = "eos"
            run.done = True
            break
        run.generated.append(token)
        stats.generated_tokens = len(run.generated)
        text = decode(run.generated)[len(run.skip) :]
        if text.endswith("\ufffd"):  # an incomplete UTF-8 sequence: wait for the next token
            if len(run.generated) >= req.max_new_tokens:
                stats.stop_reason = "max_tokens"
                run.done = True
                break
            continue
        reason, text = stop_reason(text, req)
        if req.on_text is not None and len(text) > len(run.text) and text.startswith(run.text):
            req.on_text(text[len(run.text) :])
        run.text = text
        if reason is None and len(run.generated) >= req.max_new_tokens:
            reason = "max_tokens"
        if reason is not None:
            stats.stop_reason = reason
            run.done = True
            break


def stop_reason(text: str, req: GenerationRequest) -> tuple[api.StopReason | None, str]:
    """The first stop condition `text` meets (a stop string, the stop callback's cut), and the
    text kept before it."""
    for s in req.stop_strings:
        at = text.find(s)
        if s and at >= 0:
            return "stop_string", text[:at]
    if req.stop_callback is not None:
        keep = req.stop_callback(text)
        if keep is not None:
            return "callback", text[: max(0, keep)]
    return None, text
