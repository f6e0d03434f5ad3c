"""The distilled draft: a few Llama decoder layers over the target's frozen embeddings, with an
output layer restricted to the corpus's most frequent tokens.

On a small target the output projection over the full vocabulary is a large share of a token's
cost, and code uses few of the 49k tokens most of the time. The draft therefore scores only `R`
tokens (`vocab_ids`, full-vocabulary ids) and scatters them back into a full-vocabulary logits row
(every other token gets the dtype's lowest value), so the engine and transformers' assisted
generation use it like any causal LM sharing the target's vocabulary.

The draft's own files hold only what it trained (layers, norm, restricted head, `vocab_ids`) and
its config, which names the target (`embed_source`) and a hash of the target's vocabulary
(`target_fingerprint`) instead of a copy of its tokenizer; the embedding matrix is the target's,
read at load time. Importing this module registers the architecture with transformers' Auto
classes (`model_type` "spec_lsp_draft"). Knows nothing about training or the drafting loop.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import torch
from safetensors.torch import load_file, save_file
from torch import nn
from transformers import AutoConfig, AutoModelForCausalLM, GenerationMixin
from transformers.modeling_outputs import CausalLMOutputWithPast
from transformers.models.llama.modeling_llama import LlamaModel, LlamaPreTrainedModel
from transformers.utils.deprecation import deprecate_kwarg

from spec_lsp.engine.from_source import DistilledConfig, target_embeddings

WEIGHTS = "model.safetensors"
MODEL_TYPE = "spec_lsp_draft"
EMBED_KEY = "model.embed_tokens.weight"


class SpecDraftConfig(DistilledConfig):
    model_type = MODEL_TYPE

    def __init__(self, **kwargs: Any) -> None:  # explicit: config subclasses are dataclass-like
        super().__init__(**kwargs)


class SpecDraftForCausalLM(LlamaPreTrainedModel, GenerationMixin):
    config_class = SpecDraftConfig
    _tied_weights_keys: dict[str, str] = {}
    vocab_ids: torch.Tensor  # [R] full-vocabulary id of each output row (a buffer)

    def __init__(self, config: SpecDraftConfig) -> None:
        super().__init__(config)
        self.model = LlamaModel(config)
        self.vocab_size = config.vocab_size
        self.lm_head = nn.Linear(config.hidden_size, config.draft_vocab_size, bias=False)
        self.register_buffer("vocab_ids", torch.arange(config.draft_vocab_size, dtype=torch.long))
        self.post_init()

    def get_input_embeddings(self) -> nn.Module:
        return self.model.embed_tokens

    def restricted_logits(self, input_ids: torch.Tensor) -> torch.Tensor:
        """[B, L] ids -> [B, L, R] logits over `vocab_ids` (training and evaluation, no cache)."""
        hidden = self.model(input_ids=input_ids, use_cache=False).last_hidden_state
        return self.lm_head(hidden)

    def scatter_full(self, logits: torch.Tensor) -> torch.Tensor:
        """[..., R] restricted logits -> [..., V] full-vocabulary logits (lowest elsewhere)."""
        full = logits.new_full((*logits.shape[:-1], self.vocab_size), torch.finfo(logits.dtype).min)
        index = self.vocab_ids.expand(*logits.shape[:-1], -1)
        return full.scatter(-1, index, logits)

    @deprecate_kwarg("past_key_values", "5.40.0", new_name="cache")
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.LongTensor | None = None,
        cache: Any = None,
        inputs_embeds: torch.Tensor | None = None,
        labels: torch.LongTensor | None = None,
        use_cache: bool | None = None,
        logits_to_keep: int | torch.Tensor = 0,
        **kwargs: Any,
    ) -> CausalLMOutputWithPast:
        out = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids,
            cache=cache,
            inputs_embeds=inputs_embeds,
            use_cache=use_cache,
            **kwargs,
        )
        hidden = out.last_hidden_state  # [B, L, H]
        if isinstance(logits_to_keep, int):
            hidden = hidden[:, -logits_to_keep:] if logits_to_keep > 0 else hidden
        else:
            hidden = hidden[:, logits_to_keep]
        logits = self.scatter_full(self.lm_head(hidden))  # [B, keep, V]
        return CausalLMOutputWithPast(
            logits=logits,
            cache=out.cache,
            hidden_states=out.hidden_states,
            attentions=out.attentions,
        )

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path: Any, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        """What `AutoModelForCausalLM.from_pretrained(dir)` calls: `load_draft`, embeddings too."""
        dtype = kwargs.get("dtype") or kwargs.get("torch_dtype")
        return load_draft(
            Path(pretrained_model_name_or_path), dtype if isinstance(dtype, torch.dtype) else None
        )


AutoConfig.register(MODEL_TYPE, SpecDraftConfig)
AutoModelForCausalLM.register(SpecDraftConfig, SpecDraftForCausalLM)


def save_draft(model: SpecDraftForCausalLM, out: Path) -> None:
    """Writes config.json and model.safetensors (no embeddings, no tokenizer)."""
    out.mkdir(parents=True, exist_ok=True)
    state = {
        k: v.detach().contiguous().cpu() for k, v in model.state_dict().items() if k != EMBED_KEY
    }
    save_file(state, str(out / WEIGHTS), metadata={"format": "pt"})
    model.config.architectures = ["SpecDraftForCausalLM"]
    model.config.save_pretrained(out)


def load_draft(
    path: Path, dtype: torch.dtype | None = None, embeddings: torch.Tensor | None = None
) -> SpecDraftForCausalLM:
    config = SpecDraftConfig.from_pretrained(str(path))
    with torch.device("meta"):
        model = SpecDraftForCausalLM(config)
    state = load_file(str(path / WEIGHTS))
    state[EMBED_KEY] = (
        embeddings if embeddings is not None else target_embeddings(config.embed_source)
    )
    model.load_state_dict(state, strict=True, assign=True)
    model.model.rotary_emb = type(model.model.rotary_emb)(config=config)  # buffers built off meta
    model.model.embed_tokens.weight.requires_grad_(False)
    if dtype is not None:
        model = cast(Any, model).to(dtype)
    return model.eval()
