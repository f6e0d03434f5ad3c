"""The engine's one forward seam: which forward runs each model, and which kernels run its packed
layers, both chosen once at load and kept on the engine (`Forwards`).

A `Forward` runs new token ids after what a cache of its own making (`new_cache`) holds and appends
them to it. Two run here: the engine's lean forward for Llama-family models on a CPU
(`lean.LeanDecoder`, which is one), and transformers' forward wrapped to the same shape
(`TransformersForward`). `choose_forward` picks one per model from the preset's word, the device
and the model; `kernel_family` names the kernels the packed layers run on (the engine's own,
`native`, by their instruction set, or torch's). Nothing is stored on the model object: whoever
runs a model is handed its `Forward` (`cache.ModelState`, `timing`, the bench).

Knows nothing of drafting, documents or preset files.
"""

from __future__ import annotations

import inspect
import os
import platform
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from torch import nn
from transformers import DynamicCache, PreTrainedModel

from spec_lsp.engine.api import FORWARDS
from spec_lsp.engine.head import SpecHead
from spec_lsp.engine.lean import LeanDecoder
from spec_lsp.engine.weights import native

KERNEL_FAMILIES = (
    "native-amx",
    "native-avx512",
    "native-vnni",
    "native-avx2",
    "native-plain",
    "torch",
)
_ISA_FAMILY = {
    "amx+avx512": "native-amx",
    "avx512+vnni": "native-avx512",
    "avx2+vnni": "native-vnni",
    "avx2": "native-avx2",
    "plain": "native-plain",
}


class Forward(Protocol):
    """A model's forward over a KV cache it makes: `LeanDecoder` or `TransformersForward`."""

    name: str  # "lean" or "transformers"
    kv_dtype: torch.dtype  # what its cache holds (the KV budget counts it)
    passes: int  # forwards run (what a bench counts)
    vocab_size: int  # rows of its logits
    device: torch.device

    def new_cache(self) -> Any: ...

    def forward(
        self, ids: list[int], cache: Any, keep: int = 1, all_hidden: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """Runs `ids` after the cached positions and appends them to `cache`: the logits of the
        last `keep` positions [keep, V] (float32), their final normed hidden states [keep, H]
        (None where not computed), and with `all_hidden` those of every fed position [n, H]."""
        ...


def _last_hidden(output: Any) -> torch.Tensor:
    hidden = getattr(output, "last_hidden_state", None)
    return output[0] if hidden is None else hidden


class TransformersForward:
    """transformers' forward of `model` over a `DynamicCache`, in the shape of a `Forward`. The
    final hidden states come from a hook on the base model held for the call only."""

    name = "transformers"

    def __init__(self, model: Any) -> None:
        self.model = model
        self.kv_dtype: torch.dtype = model.dtype
        self.passes = 0
        self.vocab_size = int(model.config.get_text_config().vocab_size)
        self.device: torch.device = model.device
        # transformers 5.x renames `past_key_values` to `cache` (the old name warns until 5.40).
        params = inspect.signature(model.forward).parameters
        self.cache_kw = "cache" if "cache" in params else "past_key_values"

    def new_cache(self) -> DynamicCache:
        return DynamicCache(config=self.model.config)

    @torch.inference_mode()
    def forward(
        self, ids: list[int], cache: Any, keep: int = 1, all_hidden: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        self.passes += 1
        recorded: list[torch.Tensor] = []
        base: nn.Module = self.model.base_model
        handle = base.register_forward_hook(lambda _m, _a, out: recorded.append(_last_hidden(out)))
        try:
            out = self.model(
                input_ids=torch.tensor([ids], dtype=torch.long, device=self.model.device),
                **{self.cache_kw: cache},
                use_cache=True,
                logits_to_keep=keep,
            )
        finally:
            handle.remove()
        every = recorded[0][0].detach()  # [n, H]
        return out.logits[0, -keep:].float(), every[-keep:], every if all_hidden else None


def as_forward(model: Any) -> Forward:
    """`model` itself when it is a `Forward` already, else transformers' forward of it."""
    if isinstance(model, nn.Module):
        return TransformersForward(model)
    return model  # type: ignore[no-any-return]


def choose_forward(model: Any, preset_forward: str, device: str) -> Forward:
    """The forward `model` runs with: the lean one where the preset asks for it and it applies (a
    Llama-family model in float32 on a CPU: `LeanDecoder.supports`), else transformers'. Called
    once per model: the lean forward fuses the model's layers as it is built."""
    if preset_forward not in FORWARDS:
        raise ValueError(f"unknown forward {preset_forward!r} (known: {', '.join(FORWARDS)})")
    on_cpu = torch.device(device).type == "cpu"
    if preset_forward == "lean" and on_cpu and LeanDecoder.supports(model):
        return LeanDecoder(model)
    return TransformersForward(model)


def kernel_family(device: str) -> str:
    """The kernels packed layers run on here: the engine's own (`native`, compiled at the first
    load) by instruction set, or torch's (`SPEC_LSP_KERNELS=torch`, no compiler, not x86-64, or a
    GPU)."""
    if torch.device(device).type != "cpu" or not native.available():
        return "torch"
    return _ISA_FAMILY.get(native.isa(), "torch")


def planned_kernel_family() -> tuple[str, bool]:
    """What `kernel_family("cpu")` would say on this machine, without compiling or loading the
    kernels (the flags their build takes), and whether that build is in the cache already."""
    if os.environ.get("SPEC_LSP_KERNELS") == "torch":
        return "torch", True
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return "torch", True
    flags = native._flags()
    if "-mamx-int8" in flags and native.tiles_supported():  # AMX's int8 tiles for prefill
        family = "native-amx"
    elif "-mavx512bw" in flags:  # the VNNI products in 512-bit registers (`native._flags`)
        family = "native-avx512"
    elif any("vnni" in flag for flag in flags):
        family = "native-vnni"
    else:
        family = "native-avx2" if "-mavx2" in flags else "native-plain"
    return family, native.compiled()


def choose_forwards(target: Any, draft: Any, preset_forward: str, device: str) -> Forwards:
    """The engine's forwards, chosen once at load: the target's and a draft model's by
    `choose_forward` (a distilled draft, not a Llama or Qwen2, keeps transformers'; a feature head
    has none: it runs its own step), and the kernel family of this device."""
    draft_forward: Forward | None = None
    if isinstance(draft, PreTrainedModel):
        draft_forward = choose_forward(draft, preset_forward, device)
    elif draft is not None and not isinstance(draft, SpecHead):
        draft_forward = TransformersForward(draft)
    target_forward = choose_forward(target, preset_forward, device)
    return Forwards(target_forward, draft_forward, kernel_family(device))


@dataclass(frozen=True)
class Forwards:
    """The engine's forwards: the target's, a draft model's (None for a feature head, which runs
    its own step, or no draft), and the kernel family of their packed layers."""

    target: Forward
    draft: Forward | None = None
    kernels: str = "torch"

    @classmethod
    def of(cls, target: Any, draft: Any = None) -> Forwards:
        """transformers' forward for each model (what an engine built without `load_engine`,
        as the tests' and distillation's are, runs), over the kernels of the target's device."""
        model = draft if draft is not None and not isinstance(draft, SpecHead) else None
        kernels = kernel_family(str(target.device))
        return cls(as_forward(target), as_forward(model) if model is not None else None, kernels)

    @property
    def name(self) -> str:
        """The target's forward, and the draft model's where it differs ("lean, draft
        transformers")."""
        draft = self.draft.name if self.draft is not None else self.target.name
        return self.target.name + ("" if draft == self.target.name else f", draft {draft}")
