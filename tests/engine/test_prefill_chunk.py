"""A prefill pass sized from the measured verify curve (`cache.prefill_chunk_for`): a
cancellation waits one pass at most, so a slow model prefills in short passes."""

from spec_lsp.engine.cache import prefill_chunk_for


def test_nothing_measured_keeps_the_configured_chunk() -> None:
    assert prefill_chunk_for((), 250.0, 128) == 128
    assert prefill_chunk_for((0.0,), 250.0, 128) == 128


def test_a_slow_model_prefills_in_short_passes() -> None:
    # The 1.5B coder on a 2-core CPU: 192 ms for 13 tokens, ~14.8 ms a token.
    curve = tuple(50.0 + 11.0 * n for n in range(13))
    chunk = prefill_chunk_for(curve, 250.0, 128)
    assert chunk == 16
    assert chunk * curve[-1] / len(curve) <= 250.0


def test_a_fast_model_keeps_the_longest_chunk_and_the_chunk_is_a_multiple_of_8() -> None:
    assert prefill_chunk_for(tuple(1.0 + 0.5 * n for n in range(13)), 250.0, 128) == 128
    for ms in (40.0, 90.0, 170.0, 333.0):
        chunk = prefill_chunk_for((ms,) * 13, 250.0, 128)
        assert chunk % 8 == 0 and 8 <= chunk <= 128


def test_a_very_slow_model_still_prefills_8_tokens_a_pass() -> None:
    assert prefill_chunk_for((5000.0,), 250.0, 128) == 8
