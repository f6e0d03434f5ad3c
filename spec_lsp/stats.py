"""What the server counts and measures, reported by `spec-lsp/stats`.

This module owns the counters and latency windows; it knows nothing of LSP or torch. The
scheduler records into it from the event loop only, so it needs no lock.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from spec_lsp.engine.api import GenerationStats

STAGES = ("total", "queue", "prefill", "decode", "typedThrough", "stop")
WINDOW = 2000  # latency samples kept per stage


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list (q in [0, 100])."""
    if not sorted_values:
        return 0.0
    rank = max(0, min(len(sorted_values) - 1, round(q / 100 * (len(sorted_values) - 1))))
    return sorted_values[rank]


@dataclass
class LatencyWindow:
    samples: deque[float] = field(default_factory=lambda: deque(maxlen=WINDOW))

    def add(self, ms: float) -> None:
        self.samples.append(ms)

    def summary(self) -> dict[str, float]:
        values = sorted(self.samples)
        return {
            "p50": round(percentile(values, 50), 3),
            "p90": round(percentile(values, 90), 3),
            "p99": round(percentile(values, 99), 3),
            "n": len(values),
        }


@dataclass
class ServerStats:
    requests: int = 0
    answered: int = 0  # non-empty suggestions returned
    cancelled: int = 0  # superseded, $/cancelRequest, or dropped while debouncing
    stale: int = 0  # computed, then discarded because the document had changed
    empty: int = 0
    generated: int = 0  # requests that ran the model
    failed: int = 0  # model calls a remote engine failed (refused, 5xx, reset...): no latency
    cache_hits: int = 0
    typed_through: int = 0
    early: int = 0  # answered with the complete lines so far while the generation went on
    prefetched: int = 0  # suggestions computed ahead, on idle time, for an accept to come
    prefetch_cancelled: int = 0  # prefetches dropped for a keystroke or a real request
    prefetch_hits: int = 0  # requests answered by a prefetch, with no model call of their own
    warm_ups: int = 0  # documents whose prompts' start was prefilled on idle time (`warm_up`)
    warmed_tokens: int = 0  # tokens those warm-ups prefilled (finished or stopped part-way)
    warm_ups_ended: int = 0  # of the warm-ups started, those ended (done, stopped or failed)
    short_windows: int = 0  # requests answered over a short window: theirs was cold (`cold.py`)
    shown: int = 0
    accepted: int = 0
    partially_accepted: int = 0
    accepted_chars: int = 0
    proposed_tokens: int = 0
    accepted_tokens: int = 0
    prompt_tokens: int = 0
    reused_tokens: int = 0
    restored_tokens: int = 0  # of documents' windows, read from disk (`kvdisk`)
    prefilled_tokens: int = 0
    generated_tokens: int = 0
    decode_tokens: int = 0  # tokens after each generation's first (that one ends the prefill)
    decode_ms: float = 0.0  # the time those took: generation time less prefill
    last_latency_ms: float = 0.0
    latency: dict[str, LatencyWindow] = field(
        default_factory=lambda: {stage: LatencyWindow() for stage in STAGES}
    )
    # Exponential moving average of a model call's total time (drives the adaptive debounce).
    model_ms_ema: float | None = None
    # Prompt tokens prefilled a second (an average over passes of 16 tokens or more, any kind
    # of generation): what sizes a cold window's short one (`plan.Planner`).
    prefill_rate: float | None = None

    def record_generation(self, g: GenerationStats, queue_ms: float) -> None:
        if g.failed:  # a remote engine's failure: its time is not decode latency
            self.failed += 1
            return
        self.generated += 1
        self.short_windows += g.short_window
        self.proposed_tokens += g.proposed_tokens
        self.accepted_tokens += g.accepted_tokens
        self.prompt_tokens += g.prompt_tokens
        self.reused_tokens += g.reused_tokens
        self.restored_tokens += g.restored_tokens
        self.prefilled_tokens += g.prefilled_tokens
        self.generated_tokens += g.generated_tokens
        self.latency["queue"].add(queue_ms)
        self.latency["prefill"].add(g.prefill_ms)
        self.latency["decode"].add(max(0.0, g.total_ms - g.prefill_ms))
        self.decode_tokens += max(0, g.generated_tokens - 1)
        self.decode_ms += max(0.0, g.total_ms - g.prefill_ms)
        if g.stop_reason != "cancelled":
            ema = self.model_ms_ema
            self.model_ms_ema = g.total_ms if ema is None else 0.8 * ema + 0.2 * g.total_ms

    def note_prefill(self, g: GenerationStats) -> None:
        """Folds a generation's prefill (finished or stopped part-way) into `prefill_rate`."""
        if g.prefilled_tokens < 16 or g.prefill_ms <= 0:
            return
        rate = g.prefilled_tokens * 1000 / g.prefill_ms
        old = self.prefill_rate
        self.prefill_rate = rate if old is None else 0.7 * old + 0.3 * rate

    def record_answer(self, total_ms: float, text: str) -> None:
        self.last_latency_ms = total_ms
        self.latency["total"].add(total_ms)
        if text:
            self.answered += 1
        else:
            self.empty += 1

    def to_wire(self, model: dict[str, Any]) -> dict[str, Any]:
        acceptance = self.accepted_tokens / self.proposed_tokens if self.proposed_tokens else None
        return {
            "requests": self.requests,
            "answered": self.answered,
            "cancelled": self.cancelled,
            "stale": self.stale,
            "empty": self.empty,
            "generated": self.generated,
            "failed": self.failed,
            "cacheHits": self.cache_hits,
            "typedThrough": self.typed_through,
            "earlyAnswers": self.early,
            "prefetch": {
                "done": self.prefetched,
                "cancelled": self.prefetch_cancelled,
                "hits": self.prefetch_hits,
            },
            "warmUp": {
                "started": self.warm_ups,
                "running": self.warm_ups - self.warm_ups_ended,
                "prefilledTokens": self.warmed_tokens,
            },
            "shortWindow": self.short_windows,
            "shown": self.shown,
            "accepted": self.accepted,
            "partiallyAccepted": self.partially_accepted,
            "acceptedChars": self.accepted_chars,
            "latencyMs": {stage: w.summary() for stage, w in self.latency.items()},
            "acceptance": acceptance,
            "proposedTokens": self.proposed_tokens,
            "acceptedTokens": self.accepted_tokens,
            "kvReuse": {
                "promptTokens": self.prompt_tokens,
                "reusedTokens": self.reused_tokens,
                "restoredTokens": self.restored_tokens,
                "prefilledTokens": self.prefilled_tokens,
                "prefilledPerRequest": (
                    self.prefilled_tokens / self.generated if self.generated else None
                ),
            },
            "generatedTokens": self.generated_tokens,
            # Requests' decoding speed: what drafting changes (the replay compares methods by it).
            "decode": {
                "tokens": self.decode_tokens,
                "ms": round(self.decode_ms, 1),
                "tokensPerS": (
                    round(1000 * self.decode_tokens / self.decode_ms, 2) if self.decode_ms else None
                ),
            },
            "model": model,
            "lastLatencyMs": round(self.last_latency_ms, 3),
        }
