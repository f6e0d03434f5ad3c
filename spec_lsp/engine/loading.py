"""Putting a target and its draft together into a `SpecEngine`, from plain values (`LoadSpec`).

The app builds a `LoadSpec` from its preset files (`spec_lsp.presets`); the engine reads no preset
file. A draft is one of: a feature head (`head`, sharing the target's embeddings and reading its
features), a distilled decoder (`draft_model`), or any causal LM with the target's vocabulary.
Draft and target must share a vocabulary: a distilled draft stores a hash of its target's
vocabulary and is refused here, with a clear message, when the target's tokenizer hashes
differently; any other draft's own tokenizer is compared with the target's.

Device `auto` picks CUDA (bf16 by default) when present, else CPU (fp32). The weight format per
device (`LoadSpec.weights`: float32, bfloat16, int8, int4; see `quant`) is applied after loading,
to the target and the draft alike; a bundled GGUF's Q4_1 blocks become int4 layers as they are.
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import torch
from transformers import PreTrainedModel

from spec_lsp.engine import draft_model
from spec_lsp.engine.api import FORWARDS
from spec_lsp.engine.draft_vocab import restrict_output
from spec_lsp.engine.engine import EngineOptions, SpecEngine
from spec_lsp.engine.forward import choose_forwards
from spec_lsp.engine.from_source import (
    BUILTIN_TOKENIZER,
    ModelLoadError,
    Progress,
    fetch_bundled,
    is_available_offline,
    is_gguf,
    load_model,
    load_tokenizer,
    pick_device,
    source_path,
    tiny_model,
    vocab_fingerprint,
)
from spec_lsp.engine.head import MODEL_TYPE as HEAD_TYPE
from spec_lsp.engine.head import SpecHead, load_head
from spec_lsp.engine.load_spec import LoadSpec
from spec_lsp.engine.progress import Steps
from spec_lsp.engine.progress import scope as progress_scope
from spec_lsp.engine.sources import origin
from spec_lsp.engine.timing import pass_costs, warm_up
from spec_lsp.engine.vocabulary import check_vocab
from spec_lsp.engine.weight_formats import apply_weights, mapped_models
from spec_lsp.engine.weights import compact, native
from spec_lsp.engine.weights.load_heap import mmapped_temporaries
from spec_lsp.heap import release_free_memory

log = logging.getLogger(__name__)

# Each step's share of a load (what the coder pair takes on a CPU: most of it reading the layers);
# fusing layers from 0.8, measuring the verification cost from 0.86, warming up from 0.93.
TOKENIZER = (0.0, 0.04)
TARGET = (0.04, 0.6)
DRAFT = (0.6, 0.8)

__all__ = [
    "LoadSpec",
    "ModelLoadError",
    "Progress",
    "check_vocab",
    "fetch_bundled",
    "is_available_offline",
    "load_engine",
    "load_model",
    "load_tokenizer",
    "pick_device",
    "source_path",
    "tiny_model",
    "vocab_fingerprint",
]


def draft_kind(source: str) -> str:
    """ "head", "decoder" (a distilled draft) or "model" (any other causal LM). Only a local
    folder is looked into: a hub id is never read from the working directory (`origin`)."""
    folder = origin.explicit_path(source)
    config = folder / "config.json" if folder is not None else None
    if config is None or not config.is_file():
        return "model"
    model_type = json.loads(config.read_text()).get("model_type")
    return {HEAD_TYPE: "head", draft_model.MODEL_TYPE: "decoder"}.get(model_type, "model")


def check_draft_vocab(tokenizer: Any, spec: LoadSpec, progress: Progress | None) -> None:
    """A distilled draft's stored vocabulary hash must be the target tokenizer's; another draft's
    own tokenizer must equal the target's."""
    assert spec.draft is not None
    if spec.draft.startswith("builtin:"):
        return
    if draft_kind(spec.draft) != "model":
        config = json.loads((Path(spec.draft) / "config.json").read_text())
        stored = config.get("target_fingerprint")
        if stored:
            actual = vocab_fingerprint(tokenizer)
            if stored != actual:
                raise ModelLoadError(
                    f"draft {spec.draft} was distilled for a target with another vocabulary "
                    f"(hash {stored}) than the target {spec.target}'s (hash {actual}): "
                    "speculative decoding needs a draft for the same tokenizer; distil one for "
                    "this target with `spec-lsp distill`"
                )
            return
    draft_tok = load_tokenizer(spec.draft, spec.trust_remote_code, progress)
    check_vocab(tokenizer, draft_tok, spec.target, spec.draft)


def load_draft(
    spec: LoadSpec,
    target: PreTrainedModel,
    device: str,
    dtype: torch.dtype,
    progress: Progress | None,
    random_weights: bool,
) -> PreTrainedModel | SpecHead:
    assert spec.draft is not None
    kind = draft_kind(spec.draft)
    if kind == "head":  # small and local: real weights even with random_weights
        # A feature head shares the target's embeddings (no copy) and reads its features.
        embeddings = cast(Any, target.get_input_embeddings()).weight.detach()
        return cast(SpecHead, load_head(Path(spec.draft), embeddings, dtype).to(device))
    if kind == "decoder" and not random_weights:
        decoder = draft_model.load_draft(Path(spec.draft), dtype)
        return cast(PreTrainedModel, cast(Any, decoder).to(device))
    random_config = spec.draft_config if random_weights else None
    return load_model(
        spec.draft,
        device,
        dtype,
        spec.trust_remote_code,
        progress,
        random_config,
        gguf_blocks=spec.keeps_blocks(device),
    )


def timing_tokenizer(spec: LoadSpec, progress: Progress | None = None) -> tuple[Any, str]:
    """For random weights (timing only): the target's tokenizer where this machine has it, else
    the bundled one standing in, without asking a hub (a machine with no hub access times the
    architecture all the same; the engine maps ids past the model's vocabulary back into it).
    Returns it and where it came from."""
    if is_available_offline(spec.target):
        try:
            return load_tokenizer(spec.target, spec.trust_remote_code, progress), spec.target
        except ModelLoadError:
            pass
    log.warning(
        "%s: the tokenizer of %s is not on this machine; the bundled tokenizer stands in "
        "(random weights: timing only)",
        spec.name,
        spec.target,
    )
    return load_tokenizer(BUILTIN_TOKENIZER, False, progress), f"{BUILTIN_TOKENIZER} (stand-in)"


def load_pair(
    spec: LoadSpec,
    tokenizer: Any,
    dev: str,
    dtype: torch.dtype,
    steps: Steps,
    random_weights: bool,
) -> tuple[PreTrainedModel, PreTrainedModel | SpecHead | None]:
    """The target and its draft (or None), the draft's vocabulary checked against the target's.
    Each takes its share of `steps` (`TARGET`, `DRAFT`); a source's own reports (a download, a
    conversion) the first 5% of it, the reading of its layers the rest (`progress.ambient`)."""
    low, high = TARGET if spec.draft else (TARGET[0], DRAFT[1])
    steps(f"loading target {spec.target} on {dev}", low)
    target_cfg = spec.target_config if random_weights else None
    with _step(steps, low, high):
        target = load_model(
            spec.target,
            dev,
            dtype,
            spec.trust_remote_code,
            steps.within(low, low + 0.05 * (high - low)),
            target_cfg,
            gguf_blocks=spec.keeps_blocks(dev),
        )
    release_free_memory()  # the temporaries of packing, before the draft's
    draft = None
    if spec.draft:
        low, high = DRAFT
        if not random_weights:
            check_draft_vocab(tokenizer, spec, steps.within(low, low))
        steps(f"loading draft {spec.draft}", low)
        with _step(steps, low, high):
            draft = load_draft(
                spec,
                target,
                dev,
                dtype,
                steps.within(low, low + 0.05 * (high - low)),
                random_weights,
            )
        release_free_memory()
    return target, draft


def _step(steps: Steps, low: float, high: float) -> Any:
    """The ambient reporter (`progress.scope`) of a model's layers: the last 95% of its share."""
    return progress_scope(steps.within(low + 0.05 * (high - low), high))


def load_models(
    spec: LoadSpec, dev: str, report: Steps, random_weights: bool
) -> tuple[Any, str, PreTrainedModel, PreTrainedModel | SpecHead | None]:
    """The tokenizer (and where it came from), the target and the draft, reported as steps."""
    dtype = spec.torch_dtype(dev)
    report(f"loading tokenizer for {spec.name}", 0.0)
    if random_weights:
        tokenizer, tokenizer_source = timing_tokenizer(spec, report.within(*TOKENIZER))
    else:
        tokenizer = load_tokenizer(spec.target, spec.trust_remote_code, report.within(*TOKENIZER))
        tokenizer_source = spec.target
    if dev == "cpu" and native.wanted() and not native.compiled():
        # Before the layers: whether they stay blocks depends on the kernels.
        report(
            "compiling the engine's CPU kernels (once per machine, under a minute)", TOKENIZER[1]
        )
    native.available()
    target, draft = load_pair(spec, tokenizer, dev, dtype, report, random_weights)
    stored = is_gguf(spec.target) and spec.keeps_blocks(dev) and not random_weights
    report(f"weights: {'as the GGUF file stores them' if stored else spec.weight_format(dev)}", 0.8)
    return tokenizer, tokenizer_source, target, draft


def draft_kind_model(draft: torch.nn.Module) -> bool:
    """Whether a draft is a model of its own (not a feature head, whose output is the target's)."""
    return not isinstance(draft, SpecHead)


def load_engine(
    spec: LoadSpec,
    device: str = "auto",
    progress: Progress | None = None,
    random_weights: bool = False,
    options: EngineOptions | None = None,
) -> SpecEngine:
    """Loads the target and draft once and returns an engine that keeps them resident (the app
    loads a preset's with `spec_lsp.presets.load_preset_engine`)."""
    dev = pick_device(device)
    report = Steps(progress)
    with mmapped_temporaries():  # no freed temporary stays resident (`load_heap`)
        tokenizer, tokenizer_source, target, draft = load_models(spec, dev, report, random_weights)
        weights = apply_weights(spec, target, draft, dev, random_weights)
        if spec.draft_vocab and isinstance(draft, torch.nn.Module) and draft_kind_model(draft):
            kept = restrict_output(draft, tokenizer, spec.draft_vocab)
            log.info("draft output: %s tokens", kept or "all")
        if spec.forward not in FORWARDS:
            raise ModelLoadError(f"{spec.name}: unknown forward {spec.forward!r} ({FORWARDS})")
        if dev == "cpu":  # before `lean` takes references to the tensors
            compact.own_storage(*mapped_models(spec, target, draft, random_weights))
        report("fusing layers", 0.82)
        forwards = choose_forwards(target, draft, spec.forward, dev)  # once: nothing on the models
    if dev == "cpu":
        release_free_memory()  # what the heap still holds of loading's smaller temporaries
    opts = options or EngineOptions(method=spec.method, context_tokens=spec.context_tokens)
    if not opts.verify_cost and spec.measure_verify:
        report("measuring verification cost", 0.86)
        opts = replace(opts, verify_cost=pass_costs(forwards.target, opts.k_max + 1))
    engine = SpecEngine(target, tokenizer, draft, opts, name=spec.name, forwards=forwards)
    engine.weights, engine.tokenizer_source = weights, tokenizer_source
    if random_weights:
        engine.vocab_limit = min(m.config.vocab_size for m in (target, draft) if m is not None)
    report("warming up", 0.93)
    if not random_weights:  # a second for a real vocabulary, not on a first keystroke
        engine.healing().build()
    warm_up(engine)
    report("ready", 1.0)
    return engine
