"""The engine's one forward seam: the forward and the kernel family are chosen once at load, kept on
the engine, and nothing of spec-lsp's is attached to transformers' model objects; greedy output
is the same whichever forward runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel

from spec_lsp.engine import lean
from spec_lsp.engine.api import GenerationRequest
from spec_lsp.engine.engine import SpecEngine
from spec_lsp.engine.forward import (
    KERNEL_FAMILIES,
    TransformersForward,
    choose_forward,
    choose_forwards,
    kernel_family,
    planned_kernel_family,
)
from spec_lsp.engine.from_source import tiny_model
from spec_lsp.engine.weights import native
from spec_lsp.presets import load_preset_engine
from tests.engine.gguf_files import VOCAB, write_tiny

from .conftest import CODE_PROMPTS


def _ours(model: torch.nn.Module) -> list[str]:
    """spec-lsp's attributes on a model or any of its modules, and forward hooks left on them."""
    found = []
    for name, module in model.named_modules():
        found += [f"{name}.{attr}" for attr in vars(module) if attr.startswith("_spec_lsp")]
        found += [f"{name}: forward hook" for _ in module._forward_hooks]
    return found


def _greedy(engine: SpecEngine, method: str) -> list[list[int]]:
    return [
        engine.generate(GenerationRequest(prompt=p, max_new_tokens=24, method=method)).token_ids
        for p in CODE_PROMPTS
    ]


def _preset(path: Path, forward: str = "lean", **keys: str) -> str:
    lines = [f'{k} = "{v}"' for k, v in {**keys, "forward": forward}.items()]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.fixture(scope="module")
def tiny_engines(tmp_path_factory: pytest.TempPathFactory) -> dict[str, SpecEngine]:
    plain = tmp_path_factory.mktemp("presets") / "tiny-transformers.toml"
    spec = {"target": "builtin:tiny-target", "draft": "builtin:tiny-draft", "method": "both"}
    return {
        "lean": load_preset_engine("tiny", device="cpu"),
        "transformers": load_preset_engine(_preset(plain, "transformers", **spec), device="cpu"),
    }


def test_the_tiny_preset_chooses_its_forwards_once_and_keeps_them_on_the_engine(
    tiny_engines: dict[str, SpecEngine],
) -> None:
    engine = tiny_engines["lean"]
    assert engine.forward == "lean" and engine.forwards.name == "lean"
    assert isinstance(engine.forwards.target, lean.LeanDecoder)
    assert isinstance(engine.forwards.draft, lean.LeanDecoder)
    assert engine.kernels == kernel_family("cpu") and engine.kernels in KERNEL_FAMILIES
    plain = tiny_engines["transformers"]
    assert plain.forward == "transformers"
    assert isinstance(plain.forwards.target, TransformersForward)


def test_nothing_of_spec_lsp_is_attached_to_the_models_before_or_after_generating(
    tiny_engines: dict[str, SpecEngine],
) -> None:
    for engine in tiny_engines.values():
        models = [m for m in (engine.target, engine.draft) if isinstance(m, torch.nn.Module)]
        assert all(_ours(m) == [] for m in models)
        engine.generate(GenerationRequest(prompt=CODE_PROMPTS[0], doc_id="d", max_new_tokens=8))
        assert all(_ours(m) == [] for m in models)


def test_greedy_output_is_the_same_through_the_lean_and_transformers_forwards(
    tiny_engines: dict[str, SpecEngine],
) -> None:
    fast, plain = tiny_engines["lean"], tiny_engines["transformers"]
    reference = _greedy(plain, "off")
    assert _greedy(fast, "off") == reference
    assert _greedy(fast, "both") == reference
    assert _greedy(plain, "both") == reference


@pytest.mark.parametrize("arch", ["qwen2", "llama"])
def test_a_gguf_file_runs_the_lean_forward_leaves_its_model_bare_and_decodes_alike(
    tmp_path: Path, arch: str, tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    gguf = write_tiny(tmp_path / f"{arch}.gguf", arch)
    # The tiny file carries no vocabulary: the bundled tokenizer stands in, ids mapped into it.
    monkeypatch.setattr("spec_lsp.engine.loading.load_tokenizer", lambda *_a, **_k: tokenizer)
    engines = {}
    for forward in ("lean", "transformers"):
        preset = _preset(tmp_path / f"{forward}.toml", forward, target=str(gguf))
        engine = load_preset_engine(preset, device="cpu")
        engine.vocab_limit = VOCAB
        assert engine.forward == forward and engine.kernels == kernel_family("cpu")
        engine.generate(GenerationRequest(prompt=CODE_PROMPTS[1], doc_id="d", max_new_tokens=8))
        assert _ours(engine.target) == []
        engines[forward] = engine
    assert isinstance(engines["lean"].forwards.target, lean.LeanDecoder)
    assert isinstance(engines["transformers"].forwards.target, TransformersForward)
    # The file's blocks run the same kernels under either forward (its float16 KV cache and row
    # by row attention round otherwise): the greedy tokens agree.
    assert _greedy(engines["lean"], "off") == _greedy(engines["transformers"], "off")


def test_a_model_the_lean_forward_cannot_run_keeps_transformers_and_says_so() -> None:
    gpt2 = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=64)).eval()
    forwards = choose_forwards(tiny_model(1, 0, 64), gpt2, "lean", "cpu")
    assert forwards.target.name == "lean" and isinstance(forwards.draft, TransformersForward)
    assert forwards.name == "lean, draft transformers"
    with pytest.raises(ValueError, match="unknown forward 'fast'"):
        choose_forward(gpt2, "fast", "cpu")


def test_models_list_predicts_the_kernel_family_a_load_chooses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    family, built = planned_kernel_family()
    if built and native.available():
        assert family == kernel_family("cpu")
    monkeypatch.setenv("SPEC_LSP_KERNELS", "torch")
    assert planned_kernel_family() == ("torch", True)
