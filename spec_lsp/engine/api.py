"""The engine's contract: a request in, streamed text and stats out, a cancellation token.

This module owns the small types every backend shares. It imports no torch, so the server and
protocol-only tests can use them without loading a model. A remote backend (vLLM, llama.cpp's
server) stands in for the local engine by implementing `Backend`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Literal, Protocol

DraftMethod = Literal["off", "ngram", "draft", "both"]

# The stop callback, defined here once for every layer: called with the text generated so far,
# it returns the length of text to keep when the syntactic unit is complete (generation stops
# there), or None to go on.
StopFn = Callable[[str], "int | None"]
# Called with each new piece of decoded text as it is generated.
TextCallback = Callable[[str], None]


class CancelToken:
    """Set by the scheduler when a request is superseded; checked by the engine between steps."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()


@dataclass
class GenerationRequest:
    prompt: str  # the full prompt text (template applied by the prompt builder)
    doc_id: str | None = None  # KV state is kept per document; None disables reuse
    max_new_tokens: int = 64
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    stop_strings: tuple[str, ...] = ()
    stop_callback: StopFn | None = None
    on_text: TextCallback | None = None
    cancel: CancelToken | None = None
    method: str | None = None  # a DraftMethod; None: the engine's default
    reuse_kv: bool = True
    # The first token is the target's `first_rank`-th most likely instead (0: as decoded): the
    # branches of an explicit request's alternatives; the rest is decoded as usual.
    first_rank: int = 0
    # Prefill in passes of at most this many tokens (None: the engine's own chunk): a prefetch's
    # short passes let a real request that cancels it wait one short pass at most.
    prefill_chunk: int | None = None


@dataclass
class GenerationStats:
    prompt_tokens: int = 0
    reused_tokens: int = 0  # prompt tokens whose KV came from the document's cached state
    prefilled_tokens: int = 0  # prompt tokens run through the target for this request
    generated_tokens: int = 0
    prefill_ms: float = 0.0
    draft_ms: float = 0.0
    verify_ms: float = 0.0
    total_ms: float = 0.0
    target_forwards: int = 0
    proposed_tokens: int = 0
    accepted_tokens: int = 0
    rejections: int = 0  # draft rounds that ended on a rejected token
    draft_rounds: int = 0  # rounds that verified drafted tokens
    gated_rounds: int = 0  # rounds decoded plainly because drafting would not pay (the gate)
    draft_forwards: int = 0  # draft model (or head) passes, the ones whose tokens went unused too
    confidence_stops: int = 0  # rounds whose draft stopped under its confidence threshold
    method: str = "off"
    stop_reason: str = ""  # max_tokens | eos | stop_string | callback | cancelled
    tokens_per_s: float = 0.0

    @property
    def acceptance(self) -> float | None:
        return self.accepted_tokens / self.proposed_tokens if self.proposed_tokens else None

    @property
    def token_acceptance(self) -> float | None:
        """Chance that a drafted token is accepted given that the ones before it were: the
        per-token rate `a` of the speedup formula (accepted / (accepted + rejections))."""
        seen = self.accepted_tokens + self.rejections
        return self.accepted_tokens / seen if seen else None

    def to_dict(self) -> dict[str, object]:
        d: dict[str, object] = asdict(self)
        d["acceptance"] = self.acceptance
        d["token_acceptance"] = self.token_acceptance
        return d


@dataclass
class GenerationResult:
    text: str
    token_ids: list[int] = field(default_factory=list)
    stats: GenerationStats = field(default_factory=GenerationStats)

    @property
    def cancelled(self) -> bool:
        return self.stats.stop_reason == "cancelled"


class Backend(Protocol):
    """What the server needs from an engine; the local speculative engine is one."""

    def generate(self, request: GenerationRequest) -> GenerationResult:
        """Blocking; call from a worker thread. Stops within one step of `cancel`."""
        ...

    def count_tokens(self, text: str) -> int: ...

    def forget(self, doc_id: str) -> None:
        """Drops a document's cached KV state (on didClose)."""
        ...
