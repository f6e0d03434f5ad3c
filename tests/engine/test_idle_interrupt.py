"""Idle work stops within a pass: a request cancelling a warm-up waits a layer, not a prefill pass.

A warm-up (`GenerationRequest.idle`) prefills a window in passes of many tokens; on a 2-core CPU a
pass of 32-128 tokens holds the worker for a second or more. Cancelled, it stops between two
layers (`lean.Interrupted`): the stopped pass leaves nothing in the cache, the passes before it
stay, and what follows is exact. A request's own prefill runs its passes whole (the next request
for the document needs them).
"""

from __future__ import annotations

import pytest

from spec_lsp.engine.api import CancelToken, GenerationRequest
from spec_lsp.engine.forward import Forwards
from spec_lsp.engine.from_source import tiny_model
from spec_lsp.engine.lean import LeanDecoder

from .conftest import CODE_PROMPTS, make_engine

PROMPT = "".join(CODE_PROMPTS) * 2  # a few hundred tokens: several passes of 16


class CancelOnRead(CancelToken):
    """Reads as cancelled from its `at`-th read on (the engine reads it between passes, and
    an interruptible pass before each layer)."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at, self.reads = at, 0

    @property
    def cancelled(self) -> bool:
        self.reads += 1
        return self.reads >= self.at


@pytest.fixture
def engine(tokenizer):  # type: ignore[no-untyped-def]
    model = tiny_model(layers=2, seed=7, vocab_size=49152)  # fused in place: not the shared one
    return make_engine(model, tokenizer, forwards=Forwards(LeanDecoder(model)), prefill_chunk=16)


def request(idle: bool, cancel: CancelToken | None = None) -> GenerationRequest:
    return GenerationRequest(
        prompt=PROMPT, doc_id="doc", max_new_tokens=6, method="off", idle=idle, cancel=cancel
    )


def test_a_cancelled_warm_up_stops_between_layers_and_keeps_its_whole_passes(engine) -> None:  # type: ignore[no-untyped-def]
    # Reads: 1 before the passes, 2-3 before pass 1's two layers, 4 after it, 5 before pass 2's
    # first layer, 6 before its second: cancelled there, inside pass 2.
    result = engine.generate(request(idle=True, cancel=CancelOnRead(6)))
    assert result.stats.stop_reason == "cancelled" and result.stats.prefilled_tokens == 16
    state = engine.docs.get("doc")
    assert len(state.target) == 16 and state.target.cache.length == 16  # pass 1 only
    after = engine.generate(request(idle=False))
    cold = engine.generate(GenerationRequest(prompt=PROMPT, max_new_tokens=6, method="off"))
    assert after.stats.reused_tokens == 16 and after.token_ids == cold.token_ids


def test_a_requests_own_prefill_runs_its_passes_whole(engine) -> None:  # type: ignore[no-untyped-def]
    # Reads: 1 before the passes, then one after each pass: cancelled after pass 5.
    result = engine.generate(request(idle=False, cancel=CancelOnRead(6)))
    assert result.stats.stop_reason == "cancelled"
    assert len(engine.docs.get("doc").target) == 5 * 16
    assert engine.forwards.target.interrupt is None  # only idle work sets it, and unsets it
