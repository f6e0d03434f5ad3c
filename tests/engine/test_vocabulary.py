"""A vocabulary's end-of-generation tokens: those of END_TOKENS it has as single tokens."""

from __future__ import annotations

from spec_lsp.engine.vocabulary import end_token_ids


class Vocab:
    def __init__(self, vocab: dict[str, int]) -> None:
        self.vocab = vocab

    def get_vocab(self) -> dict[str, int]:
        return self.vocab


def test_qwen_fim_markers_and_endoftext_end_a_generation_besides_the_files_eos() -> None:
    qwen = {"<|endoftext|>": 151643, "<|im_end|>": 151645, "<|fim_prefix|>": 151659}
    qwen |= {"<|fim_middle|>": 151660, "<|fim_suffix|>": 151661, "<|file_sep|>": 151664, "def": 750}
    assert end_token_ids(Vocab(qwen)) == {151643, 151645, 151659, 151660, 151661, 151664}


def test_a_vocabulary_without_them_adds_nothing() -> None:
    assert end_token_ids(Vocab({"a": 0, "b": 1})) == set()
