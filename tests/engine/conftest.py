"""Tiny random-weight models for exactness tests (fp32, CPU), sharing the bundled tokenizer."""

from __future__ import annotations

import pytest

from spec_lsp.engine.engine import EngineOptions, SpecEngine
from spec_lsp.engine.loading import load_tokenizer, tiny_model

CODE_PROMPTS = [
    "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\ndef mul(a, b):\n",
    "for i in range(10):\n    total += values[i] * weights[i]\nfor j in range(",
    (
        "class Point:\n    def __init__(self, x, y):\n"
        "        self.x = x\n        self.y = y\n\n    def "
    ),
]


@pytest.fixture(scope="session")
def tokenizer():  # type: ignore[no-untyped-def]
    return load_tokenizer("bundled:smollm2-135m-instruct")


@pytest.fixture(scope="session")
def target():  # type: ignore[no-untyped-def]
    return tiny_model(layers=2, seed=7, vocab_size=49152)


@pytest.fixture(scope="session")
def random_draft():  # type: ignore[no-untyped-def]
    return tiny_model(layers=1, seed=99, vocab_size=49152)


def make_engine(target, tokenizer, draft=None, forwards=None, **options) -> SpecEngine:  # type: ignore[no-untyped-def]
    return SpecEngine(target, tokenizer, draft, EngineOptions(**options), forwards=forwards)
