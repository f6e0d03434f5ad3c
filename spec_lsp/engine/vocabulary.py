"""What the engine reads of a vocabulary beyond encoding: the special tokens that end a
generation, and whether a draft's vocabulary is its target's."""

from __future__ import annotations

from typing import Any

from spec_lsp.engine.from_source import ModelLoadError

# Special tokens that end a generation wherever a vocabulary has them (as llama.cpp's end-of-
# generation set): a FIM model answers a hole and then writes <|endoftext|> or starts another
# FIM section; the GGUF's own eos (Qwen: <|im_end|>) alone would let it run on through them.
END_TOKENS = (
    "<|endoftext|>",
    "<|im_end|>",
    "<|fim_prefix|>",
    "<|fim_suffix|>",
    "<|fim_middle|>",
    "<|fim_pad|>",
    "<|file_sep|>",
    "<|repo_name|>",
    "<|eot_id|>",
    "<|end_of_text|>",
    "<|EOT|>",
    "<EOT>",
)


def end_token_ids(tokenizer: Any) -> set[int]:
    """The ids of `END_TOKENS` that are single special tokens of this vocabulary."""
    get_vocab = getattr(tokenizer, "get_vocab", None)
    vocab = get_vocab() if callable(get_vocab) else {}
    return {vocab[t] for t in END_TOKENS if t in vocab}


def eos_ids(tokenizer: Any, generation_config: Any) -> set[int]:
    """End of text for a model: the tokenizer's EOS, any its generation config names, and the
    vocabulary's end tokens (<|endoftext|>, FIM markers: `END_TOKENS`)."""
    eos = [getattr(tokenizer, "eos_token_id", None)]
    cfg_eos = getattr(generation_config, "eos_token_id", None)
    eos += cfg_eos if isinstance(cfg_eos, list) else [cfg_eos]
    return {i for i in eos if isinstance(i, int)} | end_token_ids(tokenizer)


def check_vocab(target_tok: Any, draft_tok: Any, target: str, draft: str) -> None:
    """Refuses a draft whose tokenizer does not map text to the same ids as the target's."""
    tv, dv = target_tok.get_vocab(), draft_tok.get_vocab()
    if tv != dv:
        only_t = len(set(tv.items()) - set(dv.items()))
        raise ModelLoadError(
            f"draft {draft} does not share the target {target}'s vocabulary "
            f"({len(dv)} vs {len(tv)} tokens, {only_t} target entries differ): "
            "speculative decoding needs a draft from the same model family (same tokenizer)"
        )
