"""A tiny seeded teacher (the `builtin:tiny-target` model) and a small real corpus (the `json`
package's source from the running Python), shared by the distillation tests."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from spec_lsp.distill.loop import Teacher
from spec_lsp.distill.train import DistillConfig, distill
from spec_lsp.engine.from_source import load_model, load_tokenizer, vocab_fingerprint

TARGET = "builtin:tiny-target"


@pytest.fixture(scope="session")
def teacher() -> Teacher:
    tokenizer = load_tokenizer(TARGET)
    model = load_model(TARGET, "cpu", torch.float32).requires_grad_(False)
    return Teacher(model, tokenizer, vocab_fingerprint(tokenizer))


@pytest.fixture(scope="session")
def corpus() -> list[str]:
    return [str(Path(json.__file__).parent)]


def small_config(corpus: list[str], out: Path, **overrides: object) -> DistillConfig:
    """A one-layer draft over the full vocabulary, every window scored by the teacher."""
    cfg = DistillConfig(
        target=TARGET,
        corpus=corpus,
        out=str(out),
        steps=30,
        seed=3,
        layers=1,
        draft_vocab=49152,
        seq_len=32,
        batch=4,
        teacher_rows=4,
        ce_weight=0.0,
        lr=3e-3,
        warmup=3,
        eval_every=10,
        checkpoint_every=5,
        heldout_windows=8,
        heldout_every=3,
    )
    return replace(cfg, **overrides)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def trained(teacher: Teacher, corpus: list[str], tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    cfg = small_config(corpus, tmp_path_factory.mktemp("draft"))
    state = distill(cfg, teacher, TARGET, log_every=1)
    return cfg, state
