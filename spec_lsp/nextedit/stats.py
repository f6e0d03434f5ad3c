"""Next edit's counters and figures, reported by `spec-lsp/stats` as `nextEdit`.

Knows nothing of LSP or models; recorded from the event loop only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from spec_lsp.engine.api import GenerationStats
from spec_lsp.stats import LatencyWindow


@dataclass
class NextEditStats:
    requests: int = 0
    answered: int = 0  # an edit returned
    empty: int = 0  # nothing to suggest (or not serving)
    stale: int = 0  # computed for a version that moved on: dropped
    cancelled: int = 0  # generations stopped by an edit or a completion request
    failed: int = 0
    unsure: int = 0  # rewrites dropped for a departure under MIN_CONFIDENCE
    early: int = 0  # answered with a settled edit while the rewrite went on (`early.py`)
    shown: int = 0
    accepted: int = 0
    rejected: int = 0
    rewrites: int = 0  # generations that finished
    decode_tokens: int = 0  # tokens after each rewrite's first
    decode_ms: float = 0.0
    target_forwards: int = 0  # the rewrites' target passes after their prefill
    prefill_ms: float = 0.0
    prefilled_tokens: int = 0
    proposed_tokens: int = 0
    accepted_tokens: int = 0
    cpu_ms: float = 0.0  # the server's CPU time (all its threads) while requests were answered
    # The latest rewrite's confidence: the least probability the target gave a departure from
    # the old text (1.0 without one); None until a rewrite of the latest request was read.
    confidence: float | None = None
    latency: LatencyWindow = field(default_factory=LatencyWindow)

    def record(self, g: GenerationStats) -> None:
        self.rewrites += 1
        if g.generated_tokens > 1:
            self.decode_tokens += g.generated_tokens - 1
            self.decode_ms += max(0.0, g.total_ms - g.prefill_ms)
            self.target_forwards += max(0, g.target_forwards - g.prefill_forwards)
        self.prefill_ms += g.prefill_ms
        self.prefilled_tokens += g.prefilled_tokens
        self.proposed_tokens += g.proposed_tokens
        self.accepted_tokens += g.accepted_tokens

    def to_wire(self) -> dict[str, Any]:
        per_s = self.decode_tokens / (self.decode_ms / 1000) if self.decode_ms > 0 else 0.0
        passes = self.target_forwards
        return {
            "requests": self.requests,
            "answered": self.answered,
            "empty": self.empty,
            "stale": self.stale,
            "cancelled": self.cancelled,
            "failed": self.failed,
            "unsure": self.unsure,
            "early": self.early,
            "shown": self.shown,
            "accepted": self.accepted,
            "rejected": self.rejected,
            "latency": self.latency.summary(),
            "cpuMs": round(self.cpu_ms, 1),
            "confidence": None if self.confidence is None else round(self.confidence, 4),
            "decode": {
                "rewrites": self.rewrites,
                "tokens": self.decode_tokens,
                "ms": round(self.decode_ms, 1),
                "tokensPerS": round(per_s, 2),
                "targetForwards": passes,
                "tokensPerPass": round(self.decode_tokens / passes, 2) if passes else None,
                "proposedTokens": self.proposed_tokens,
                "acceptedTokens": self.accepted_tokens,
                "prefillMs": round(self.prefill_ms, 1),
                "prefilledTokens": self.prefilled_tokens,
            },
        }
