"""Distilling a feature head (`--arch head`) on the tiny seeded target: it learns, resumes exactly,
and what it writes loads through a preset and drafts exactly."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from spec_lsp.cli import main
from spec_lsp.distill.head_train import HeadConfig, distill_head
from spec_lsp.distill.loop import Teacher, trained_weights
from spec_lsp.engine.api import GenerationRequest
from spec_lsp.engine.engine import EngineOptions
from spec_lsp.engine.from_source import load_tokenizer, vocab_fingerprint
from spec_lsp.engine.head import SpecHead, is_head_dir, load_head
from spec_lsp.engine.loading import ModelLoadError
from spec_lsp.presets import load_preset_engine

from .conftest import TARGET

PROMPTS = [
    "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n",
    "import json\n\n\ndef load(path):\n    with open(path) as f:\n",
]


def head_config(corpus: list[str], out: Path, **overrides: object) -> HeadConfig:
    cfg = HeadConfig(
        target=TARGET,
        corpus=corpus,
        out=str(out),
        steps=40,
        seed=3,
        draft_vocab=49152,  # the random tiny target favours no small set of tokens
        seq_len=32,
        batch=4,
        windows=12,
        lr=1e-2,
        warmup=3,
        eval_every=10,
        checkpoint_every=5,
        heldout_windows=6,
        heldout_every=3,
    )
    return replace(cfg, **overrides)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def trained_head(teacher: Teacher, corpus: list[str], tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    cfg = head_config(corpus, tmp_path_factory.mktemp("head"))
    return cfg, distill_head(cfg, teacher, TARGET, log_every=1)


def test_head_training_lowers_the_loss_and_raises_agreement(trained_head) -> None:  # type: ignore[no-untyped-def]
    _, state = trained_head
    losses = [h["loss"] for h in state.history if "loss" in h]
    evals = [h for h in state.history if "agreement" in h]
    assert sum(losses[-5:]) / 5 < 0.8 * sum(losses[:5]) / 5
    # The tiny target has random weights: there is nothing to generalise to held-out files in
    # 40 steps, but on the windows it trains on the head must come to agree with the target.
    assert evals[-1]["train_agreement"] > evals[0]["train_agreement"] + 0.05
    assert all("agreement2" in h and 0 <= h["agreement"] <= 1 for h in evals)


def test_written_head_holds_no_embeddings_and_loads_through_a_preset_exactly(
    trained_head, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    cfg, _ = trained_head
    out = Path(cfg.out)
    assert is_head_dir(out)
    from safetensors import safe_open

    with safe_open(str(out / "model.safetensors"), framework="pt") as f:
        assert not any("embed_tokens" in k for k in f.keys())  # noqa: SIM118
    preset = tmp_path / "head.toml"
    preset.write_text(f'target = "{TARGET}"\ndraft = "{cfg.out}"\nmethod = "draft"\n')
    # Every draft proposed (no confidence gate), so that verification is exercised.
    options = EngineOptions(method="draft", head_min_confidence=0.0, min_gain=0.0)
    engine = load_preset_engine(str(preset), device="cpu", options=options)
    assert isinstance(engine.draft, SpecHead) and engine.head is engine.draft
    # The head shares the target's embedding matrix rather than holding a copy.
    assert (
        engine.head.embed_tokens.weight.data_ptr()
        == engine.target.get_input_embeddings().weight.data_ptr()
    )
    proposed = 0
    for prompt in PROMPTS:
        plain = engine.generate(GenerationRequest(prompt=prompt, max_new_tokens=24, method="off"))
        for method in ("draft", "both"):
            spec = engine.generate(
                GenerationRequest(prompt=prompt, max_new_tokens=24, method=method)
            )
            assert spec.token_ids == plain.token_ids
            proposed += spec.stats.proposed_tokens
    assert proposed > 0


def test_head_distilled_for_another_tokenizer_is_refused(trained_head, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cfg, _ = trained_head
    other = tmp_path / "other-head"
    shutil.copytree(cfg.out, other, ignore=shutil.ignore_patterns("cache", "*.pt"))
    tok = load_tokenizer(TARGET)
    tok.add_tokens(["<not-in-the-target-vocabulary>"])
    config = json.loads((other / "config.json").read_text())
    config["target_fingerprint"] = vocab_fingerprint(tok)
    (other / "config.json").write_text(json.dumps(config))
    preset = tmp_path / "mismatched.toml"
    preset.write_text(f'target = "{TARGET}"\ndraft = "{other}"\nmethod = "draft"\n')
    with pytest.raises(ModelLoadError, match="vocabulary"):
        load_preset_engine(str(preset), device="cpu")


class _Interrupt(Exception):
    pass


def test_interrupted_head_training_resumes_to_the_same_weights(
    teacher: Teacher, corpus: list[str], tmp_path: Path
) -> None:
    straight = head_config(corpus, tmp_path / "straight", steps=8, eval_every=100, draft_vocab=1024)
    expect = trained_weights(distill_head(straight, teacher, TARGET).model)
    resumed = head_config(corpus, tmp_path / "resumed", steps=8, eval_every=100, draft_vocab=1024)

    def stop_at_five(stage: str, step: int, total: int, record: dict[str, float]) -> None:
        if stage == "train" and step == 5:
            raise _Interrupt

    with pytest.raises(_Interrupt):
        distill_head(resumed, teacher, TARGET, progress=stop_at_five)
    seen: list[int] = []

    def record(stage: str, step: int, total: int, rec: dict[str, float]) -> None:
        if stage == "train":
            seen.append(step)

    got = trained_weights(distill_head(resumed, teacher, TARGET, progress=record).model)
    assert seen == [6, 7, 8]
    assert got.keys() == expect.keys()
    for key in expect:
        assert (got[key] - expect[key]).abs().max() < 1e-5, key
    assert load_head(tmp_path / "resumed") is not None


def test_distill_command_with_the_head_writes_a_report(corpus: list[str], tmp_path: Path) -> None:
    out = tmp_path / "head"
    args = ["--arch", "head", "--draft-vocab", "1024", "--seq-len", "32", "--windows", "8"]
    rc = main(
        ["distill", "--target", TARGET, "--corpus", *corpus, "--out", str(out), "--steps", "3"]
        + args
    )
    assert rc == 0
    for name in ("config.json", "model.safetensors", "report.json"):
        assert (out / name).is_file(), name
    assert not (out / "tokenizer.json").exists()  # the target's tokenizer, by hash only
    summary = json.loads((out / "report.json").read_text())["summary"]
    assert summary["identical_outputs"] is True
    assert summary["steps"] == 3
    assert 0.0 <= summary["heldout_agreement"] <= 1.0
    assert summary["c"] > 0 and summary["expected_speedup"] > 0
