"""The server's counters: requests' decoding speed, the figure drafting methods are compared by."""

from __future__ import annotations

from spec_lsp.engine.api import GenerationStats
from spec_lsp.stats import ServerStats


def test_decode_speed_counts_the_tokens_after_the_first_over_the_time_after_prefill() -> None:
    stats = ServerStats()
    assert stats.to_wire({})["decode"] == {"tokens": 0, "ms": 0.0, "tokensPerS": None}
    stats.record_generation(
        GenerationStats(generated_tokens=11, prefill_ms=300.0, total_ms=800.0), 5.0
    )
    stats.record_generation(GenerationStats(generated_tokens=0, prefill_ms=90.0, total_ms=90.0), 0)
    stats.record_generation(  # a remote engine's failure: no decode figure
        GenerationStats(generated_tokens=4, total_ms=100.0, stop_reason="error"), 0.0
    )
    assert stats.to_wire({})["decode"] == {"tokens": 10, "ms": 500.0, "tokensPerS": 20.0}
