"""`bench engine`'s per-mode summary: the figures, and a digest of the token ids that says whether
two runs (two commits, two machines) produced the same outputs (issue 40: behaviour unchanged)."""

from __future__ import annotations

from spec_lsp.benchmarks.engine_bench import ModeResult


def test_the_digest_is_equal_for_the_same_token_ids_and_differs_for_others() -> None:
    ids = [[1, 2, 3], [4, 5]]
    one = ModeResult(outputs=ids, seconds=1.0).summary(ids)
    two = ModeResult(outputs=[list(o) for o in ids], seconds=2.0).summary(None)
    other = ModeResult(outputs=[[1, 2, 3], [4, 6]], seconds=1.0).summary(ids)
    split = ModeResult(outputs=[[1, 2], [3, 4, 5]], seconds=1.0).summary(ids)
    assert one["outputs_sha256"] == two["outputs_sha256"]
    assert len({one["outputs_sha256"], other["outputs_sha256"], split["outputs_sha256"]}) == 3
    assert one["identical_to_target"] and not other["identical_to_target"]
    assert one["generated_tokens"] == 5 and one["tokens_per_s"] == 5.0
