"""Loading: presets parse, mismatched vocabularies are refused, devices and errors are clear."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spec_lsp.engine.api import GenerationRequest
from spec_lsp.engine.loading import (
    LoadSpec,
    ModelLoadError,
    check_vocab,
    is_available_offline,
    load_engine,
    pick_device,
)
from spec_lsp.presets import PresetError, list_presets, load_preset, load_preset_engine


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
        load_preset_engine(str(preset), device="cpu")


def test_tiny_preset_loads_a_draft_and_target_with_all_methods() -> None:
    engine = load_preset_engine("tiny", device="cpu")
    assert engine.methods == ["off", "ngram", "draft", "both"]
    assert engine.name == "tiny"


def test_a_preset_picks_the_forward_and_a_wrong_one_is_a_clear_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert load_preset_engine("tiny", device="cpu").forward == "lean"  # the default
    plain = tmp_path / "plain.toml"
    plain.write_text('target = "builtin:tiny-target"\nforward = "transformers"\n')
    assert load_preset(str(plain)).load_spec().forward == "transformers"
    assert load_preset_engine(str(plain), device="cpu").forward == "transformers"
    wrong = tmp_path / "wrong.toml"
    wrong.write_text('target = "builtin:tiny-target"\nforward = "fast"\n')
    with pytest.raises(PresetError, match="forward must be one of lean, transformers"):
        load_preset(str(wrong))


def test_random_weights_time_a_pair_whose_tokenizer_is_not_on_this_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--random-weights` (timing only, e.g. `make gpu-check` with no hub access): the target's
    tokenizer is not cached, so the bundled one stands in, without asking the hub; the engine
    maps its ids into the smaller vocabulary and the speculative modes stay exact."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    config = {
        "model_type": "qwen2",
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "num_hidden_layers": 2,
        "vocab_size": 1000,  # under the stand-in's 49,152: ids are mapped into it
        "tie_word_embeddings": True,
    }
    (tmp_path / "target.json").write_text(json.dumps(config))
    (tmp_path / "draft.json").write_text(json.dumps(config | {"num_hidden_layers": 1}))
    source = "spec-lsp-tests/not-a-cached-model"
    assert not is_available_offline(source)
    spec = LoadSpec(
        name="random-pair",
        target=source,
        draft=source + "-draft",
        target_config=tmp_path / "target.json",
        draft_config=tmp_path / "draft.json",
        measure_verify=False,
    )
    engine = load_engine(spec, device="cpu", random_weights=True)
    assert engine.tokenizer_source.endswith("(stand-in)")
    prompt = "def add(a, b):\n    return"
    assert max(engine.encode(prompt)) < 1000
    plain = engine.generate(GenerationRequest(prompt=prompt, max_new_tokens=12, method="off"))
    assert plain.stats.generated_tokens > 0
    for method in ("ngram", "draft"):
        again = engine.generate(GenerationRequest(prompt=prompt, max_new_tokens=12, method=method))
        assert again.text == plain.text
