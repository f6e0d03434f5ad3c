"""The real bundled model (SmolLM2-135M): loads offline, and speculation is exact on real code."""

from __future__ import annotations

import pytest

from spec_lsp.benchmarks.prompts import bench_prompts
from spec_lsp.engine.api import GenerationRequest
from spec_lsp.engine.loading import is_available_offline
from spec_lsp.engine.weights.compact import Q8Embedding
from spec_lsp.presets import load_preset_engine

pytestmark = pytest.mark.bundled


@pytest.fixture(scope="module")
def bundled():  # type: ignore[no-untyped-def]
    assert is_available_offline("bundled:smollm2-135m-instruct")
    return load_preset_engine("bundled", device="cpu")


def test_bundled_model_loads_offline_and_completes_code(bundled) -> None:  # type: ignore[no-untyped-def]
    result = bundled.generate(
        GenerationRequest(prompt="def fibonacci(n):\n    ", max_new_tokens=12)
    )
    assert result.text.strip()
    assert result.stats.generated_tokens > 0
    # On a CPU the embedding stays the GGUF's Q8_0 blocks (every row checked equal at load).
    assert isinstance(bundled.target.get_input_embeddings(), Q8Embedding)


def test_bundled_speculative_output_equals_target_only_on_real_code(bundled) -> None:  # type: ignore[no-untyped-def]
    for prompt in bench_prompts(count=3, max_chars=1200):
        plain = bundled.generate(
            GenerationRequest(prompt=prompt.text, max_new_tokens=24, method="off")
        )
        for method in bundled.methods[1:]:
            spec = bundled.generate(
                GenerationRequest(prompt=prompt.text, max_new_tokens=24, method=method)
            )
            assert spec.token_ids == plain.token_ids, (prompt.name, method)
