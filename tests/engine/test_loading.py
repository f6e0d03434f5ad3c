"""Loading: presets parse, mismatched vocabularies are refused, devices and errors are clear."""

from __future__ import annotations

import pytest

from spec_lsp.engine.loading import (
    ModelLoadError,
    check_vocab,
    is_available_offline,
    pick_device,
)
from spec_lsp.presets import PresetError, list_presets, load_engine, load_preset


class FakeTokenizer:
    def __init__(self, vocab: dict[str, int]) -> None:
        self._vocab = vocab

    def get_vocab(self) -> dict[str, int]:
        return self._vocab


def test_every_shipped_preset_parses_and_names_a_known_fim_family() -> None:
    names = {p.name for p in list_presets()}
    assert {"bundled", "tiny", "qwen2.5-coder-7b", "deepseek-coder-6.7b", "starcoder2-15b"} <= names
    for preset in list_presets():
        assert preset.target and preset.fim


def test_unknown_preset_is_a_clear_error() -> None:
    with pytest.raises(PresetError, match="unknown preset 'nope'"):
        load_preset("nope")


def test_a_draft_with_another_vocabulary_is_refused_with_a_clear_message() -> None:
    target = FakeTokenizer({"a": 0, "b": 1, "c": 2})
    with pytest.raises(ModelLoadError, match="does not share the target"):
        check_vocab(target, FakeTokenizer({"a": 0, "b": 2, "c": 1}), "T", "D")
    check_vocab(target, FakeTokenizer({"a": 0, "b": 1, "c": 2}), "T", "D")  # same: accepted


def test_cuda_without_a_gpu_is_refused_and_auto_falls_back_to_cpu(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert pick_device("auto") == "cpu"
    with pytest.raises(ModelLoadError, match="no CUDA"):
        pick_device("cuda")


def test_a_missing_local_model_is_a_load_error_not_a_crash(tmp_path) -> None:  # type: ignore[no-untyped-def]
    preset = tmp_path / "broken.toml"
    preset.write_text(f'target = "{tmp_path / "nowhere"}"\n')
    assert not is_available_offline(str(tmp_path / "nowhere"))
    with pytest.raises(ModelLoadError):
        load_engine(str(preset), device="cpu")


def test_tiny_preset_loads_a_draft_and_target_with_all_methods() -> None:
    engine = load_engine("tiny", device="cpu")
    assert engine.methods == ["off", "ngram", "draft", "both"]
    assert engine.name == "tiny"


def test_a_preset_picks_the_forward_and_a_wrong_one_is_a_clear_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from spec_lsp.engine.lean import lean_of

    assert lean_of(load_engine("tiny", device="cpu").target) is not None  # the default: lean
    plain = tmp_path / "plain.toml"
    plain.write_text('target = "builtin:tiny-target"\nforward = "transformers"\n')
    assert load_preset(str(plain)).load_spec().forward == "transformers"
    assert lean_of(load_engine(str(plain), device="cpu").target) is None
    wrong = tmp_path / "wrong.toml"
    wrong.write_text('target = "builtin:tiny-target"\nforward = "fast"\n')
    with pytest.raises(PresetError, match="forward must be one of lean, transformers"):
        load_preset(str(wrong))
