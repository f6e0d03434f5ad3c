"""What to load, as plain values (`LoadSpec`): the app builds one from its preset files, `loading`
puts the models together from it, and `weight_formats` reads the formats it asks for.

Its own module so that `loading` and `weight_formats` import it, not each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch

from spec_lsp.engine.api import FLOAT_FORMATS, DraftMethod
from spec_lsp.engine.from_source import ModelLoadError


@dataclass(frozen=True)
class LoadSpec:
    """What to load, as plain values. Sources are `bundled:<name>`, `builtin:tiny-*`, a local
    directory or a hub id (the app resolves its relative paths before)."""

    name: str
    target: str
    draft: str | None = None
    method: DraftMethod = "ngram"  # the engine's default drafting method
    context_tokens: int = 2048
    draft_vocab: int = 0  # the draft's output over this many first ids (`draft_vocab`); 0: all
    dtype: dict[str, str] = field(default_factory=lambda: {"cpu": "float32", "cuda": "bfloat16"})
    # Weight format per device (`quant.WEIGHT_FORMATS`); a device not named loads in its dtype.
    weights: dict[str, str] = field(default_factory=dict)
    output_weights: str | None = None  # the output projection's format; default: int8 with int4
    measure_verify: bool = True  # time target passes over 1..k_max+1 tokens for adaptive k
    # "lean": the engine's own forward for Llama-family models on a CPU (`lean`), where it applies;
    # "transformers": the model's own forward everywhere.
    forward: str = "lean"
    # config.json files of the architectures, for `random_weights` (timing only).
    target_config: Path | None = None
    draft_config: Path | None = None
    trust_remote_code: bool = False

    def torch_dtype(self, device: str) -> torch.dtype:
        name = self.dtype.get(device.split(":")[0], "float32")
        dtype = getattr(torch, name, None)
        if not isinstance(dtype, torch.dtype):
            raise ModelLoadError(f"{self.name}: unknown dtype {name!r}")
        return dtype

    def weight_format(self, device: str) -> str:
        """The format asked for on `device` (what runs there: `quant.effective_format`)."""
        kind = device.split(":")[0]
        return self.weights.get(kind) or self.dtype.get(kind, "float32")

    def keeps_blocks(self, device: str) -> bool:
        """Whether a GGUF source runs its own blocks on `device`: unless the preset names a float
        format there (`[weights] cpu = "float32"`: de-quantized, e.g. a bench's reference)."""
        return self.weights.get(device.split(":")[0]) not in FLOAT_FORMATS

    def output_format(self, device: str) -> str:
        fmt = self.weight_format(device)
        # int4 for the output too costs top-1 agreement (its rows are Q8_0 in the bundled GGUF).
        return self.output_weights or ("int8" if fmt == "int4" else fmt)
