"""Distillation on a tiny seeded target: it learns, it resumes exactly, it refuses what it must,
and what it writes is a draft the engine loads and verifies exactly."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from spec_lsp.distill.loop import DistillError, Teacher
from spec_lsp.distill.train import distill
from spec_lsp.engine.api import GenerationRequest
from spec_lsp.engine.draft_model import SpecDraftForCausalLM, load_draft
from spec_lsp.engine.engine import EngineOptions
from spec_lsp.engine.from_source import load_tokenizer, vocab_fingerprint
from spec_lsp.engine.loading import ModelLoadError
from spec_lsp.presets import load_preset_engine

from .conftest import TARGET, small_config

PROMPTS = [
    "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n",
    "import json\n\n\ndef load(path):\n    with open(path) as f:\n",
]


def test_distill_lowers_the_loss_and_raises_heldout_agreement(trained) -> None:  # type: ignore[no-untyped-def]
    _, state = trained
    losses = [h["loss"] for h in state.history if "loss" in h]
    agreement = [h["agreement"] for h in state.history if "agreement" in h]
    assert sum(losses[-5:]) / 5 < sum(losses[:5]) / 5
    assert agreement[-1] > agreement[0]


def test_written_draft_has_no_embeddings_and_reloads_identically(trained, teacher: Teacher) -> None:  # type: ignore[no-untyped-def]
    cfg, state = trained
    draft = load_draft(Path(cfg.out))
    assert isinstance(draft, SpecDraftForCausalLM)
    from safetensors import safe_open

    with safe_open(str(Path(cfg.out) / "model.safetensors"), framework="pt") as f:
        assert not any("embed_tokens" in k for k in f.keys())  # noqa: SIM118
    ids = torch.tensor([[5, 17, 900, 42, 7]])
    expect = state.model.eval()(input_ids=ids).logits
    assert torch.allclose(draft(input_ids=ids).logits, expect)
    assert torch.equal(
        draft.get_input_embeddings().weight, teacher.model.get_input_embeddings().weight
    )


def test_preset_with_distilled_draft_keeps_greedy_equality(trained, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cfg, _ = trained
    preset = tmp_path / "distilled.toml"
    preset.write_text(f'target = "{TARGET}"\ndraft = "{cfg.out}"\nmethod = "draft"\n')
    # Drafting forced on (no confidence stop, no cost gate): a draft of a tiny target never pays
    # on a CPU, and the gate would rightly step it aside; equality is what is tested here.
    options = EngineOptions(method="draft", draft_min_confidence=0.0, min_gain=0.0)
    engine = load_preset_engine(str(preset), device="cpu", options=options)
    assert isinstance(engine.draft, SpecDraftForCausalLM)
    for prompt in PROMPTS:
        plain = engine.generate(GenerationRequest(prompt=prompt, max_new_tokens=24, method="off"))
        for method in ("draft", "both"):
            spec = engine.generate(
                GenerationRequest(prompt=prompt, max_new_tokens=24, method=method)
            )
            assert spec.token_ids == plain.token_ids
            assert spec.text == plain.text
        assert spec.stats.proposed_tokens > 0


def _other_tokenizer(tmp_path: Path):  # type: ignore[no-untyped-def]
    tok = load_tokenizer(TARGET)
    tok.add_tokens(["<not-in-the-target-vocabulary>"])
    return tok


def test_written_draft_keeps_a_hash_of_the_target_vocabulary_not_its_tokenizer(
    trained, teacher: Teacher
) -> None:  # type: ignore[no-untyped-def]
    cfg, _ = trained
    out = Path(cfg.out)
    assert not list(out.glob("tokenizer*")) and not (out / "chat_template.jinja").exists()
    config = json.loads((out / "config.json").read_text())
    assert config["target_fingerprint"] == vocab_fingerprint(teacher.tokenizer)


def test_draft_distilled_for_another_tokenizer_is_refused_with_a_clear_message(
    trained, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    cfg, _ = trained
    other = tmp_path / "other-draft"
    shutil.copytree(cfg.out, other, ignore=shutil.ignore_patterns("cache", "checkpoint.pt"))
    config = json.loads((other / "config.json").read_text())
    config["target_fingerprint"] = vocab_fingerprint(_other_tokenizer(tmp_path))
    (other / "config.json").write_text(json.dumps(config))
    preset = tmp_path / "mismatched.toml"
    preset.write_text(f'target = "{TARGET}"\ndraft = "{other}"\nmethod = "draft"\n')
    with pytest.raises(ModelLoadError, match="distilled for a target with another vocabulary"):
        load_preset_engine(str(preset), device="cpu")


def test_resuming_with_a_target_of_another_tokenizer_is_refused(
    trained, teacher: Teacher, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    cfg, _ = trained
    out = tmp_path / "resume"
    shutil.copytree(cfg.out, out)
    tok = _other_tokenizer(tmp_path)
    other = Teacher(teacher.model, tok, vocab_fingerprint(tok))
    cfg2 = small_config(cfg.corpus, out, steps=cfg.steps + 1)
    with pytest.raises(DistillError, match="different tokenizer"):
        distill(cfg2, other, TARGET)


class _Interrupt(Exception):
    pass


def test_interrupted_distill_resumes_from_its_checkpoint_to_the_same_weights(
    teacher: Teacher, corpus: list[str], tmp_path: Path
) -> None:
    straight = small_config(corpus, tmp_path / "straight", steps=8, eval_every=100)
    expect = distill(straight, teacher, TARGET).model.state_dict()

    resumed = small_config(corpus, tmp_path / "resumed", steps=8, eval_every=100)

    def stop_at_five(step: int, total: int, record: dict[str, float]) -> None:
        if step == 5:
            raise _Interrupt

    with pytest.raises(_Interrupt):
        distill(resumed, teacher, TARGET, progress=stop_at_five)
    seen: list[int] = []
    got = distill(
        resumed, teacher, TARGET, progress=lambda s, t, r: seen.append(s)
    ).model.state_dict()
    assert seen == [6, 7, 8]  # continued after the step-5 checkpoint, did not start over
    for key, value in expect.items():
        assert torch.allclose(got[key], value, atol=1e-6), key
