"""Prompts: a fill-in-the-middle template per model family, and windows within a token budget.

This module owns turning (prefix, suffix, context) into one prompt string. It knows nothing of
LSP, torch or tree-sitter. Two rules keep the engine's per-document KV cache useful while typing:

- The text being typed is the END of the prompt. Families trained with suffix-first layouts
  (StarCoder's SPM variant, Code Llama's suffix-first, Codestral's native order) put the suffix
  before the prefix; families trained only prefix-suffix-middle (Qwen2.5-Coder, DeepSeek-Coder)
  keep a short suffix, which is all that must be prefilled again after each keystroke. How short
  is a quality trade: on Qwen2.5-Coder-1.5B (first 100 HumanEval single-line infilling problems,
  2026-12-04) pass@1 was 96% with the suffix's 1/8 share of the context, 93% with the suffix
  ended at the enclosing top-level definition, 90% with it cut to 80 budget tokens (and 6 of 11
  at 24); a keystroke there re-prefills up to ~180 tokens with the share, ~80 cut. Qwen's SPM
  order restarts the file instead of filling the hole. The share stays: quality first.
- Everything before the typed text stays byte-identical between keystrokes: the prefix window
  starts on a line boundary that only moves in jumps (a quarter of the budget at a time), and the
  context (imports, enclosing scope headers) is placed first and only when the window does not
  already start at the top of the file.

One rule keeps BPE tokenizers from seeing a token boundary the model never saw in training. A
GPT-2-style pre-tokenizer splits "\n    return" as "\n   " + " return": the last space of an
indentation belongs to the next word. A prompt ending in "\n    " (the cursor after indentation on
an empty line) thus ends in a token that, in training, is followed by a newline, not by code, and
the model answers with a blank line or " return" (one space too many). For the prefix-only layout
the prompt leaves out that last whitespace character (`Prompt.lead`); the completion must begin
with it, and it is removed from what is suggested (`unlead`). FIM layouts tokenize prefix and
middle separately in training, so they keep the prefix whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Layout = Literal["psm", "spm", "prefix"]
CHARS_PER_TOKEN = 3.0  # conservative for code; budgets are in tokens, windows in characters


@dataclass(frozen=True)
class FimTemplate:
    family: str
    layout: Layout
    pattern: str  # with {prefix} and {suffix}

    def render(self, prefix: str, suffix: str) -> str:
        return self.pattern.replace("{suffix}", suffix).replace("{prefix}", prefix)


TEMPLATES: dict[str, FimTemplate] = {
    # bigcode Megatron's SPM variant: <fim_prefix><fim_suffix>S<fim_middle>P (trained half the time)
    "starcoder": FimTemplate(
        "starcoder", "spm", "<fim_prefix><fim_suffix>{suffix}<fim_middle>{prefix}"
    ),
    # Qwen2.5-Coder: PSM only.
    "qwen": FimTemplate(
        "qwen", "psm", "<|fim_prefix|>{prefix}<|fim_suffix|>{suffix}<|fim_middle|>"
    ),
    # DeepSeek-Coder: PSM.
    "deepseek": FimTemplate(
        "deepseek", "psm", "<｜fim▁begin｜>{prefix}<｜fim▁hole｜>{suffix}<｜fim▁end｜>"
    ),
    # Code Llama's suffix-first format: "<PRE> <SUF>{suf} <MID> {pre}".
    "codellama": FimTemplate("codellama", "spm", "<PRE> <SUF>{suffix} <MID> {prefix}"),
    # Codestral (mistral-common): [SUFFIX]suffix[PREFIX]prefix.
    "codestral": FimTemplate("codestral", "spm", "[SUFFIX]{suffix}[PREFIX]{prefix}"),
    # Models without FIM (SmolLM2): the prefix alone.
    "none": FimTemplate("none", "prefix", "{prefix}"),
}


def template_for(family: str) -> FimTemplate:
    return TEMPLATES.get(family, TEMPLATES["none"])


@dataclass(frozen=True)
class Budget:
    """Characters for each part of the prompt, from the model's context and generation length."""

    prefix_chars: int
    suffix_chars: int

    @classmethod
    def for_model(cls, context_tokens: int, max_new_tokens: int, layout: Layout) -> Budget:
        usable = max(64, context_tokens - max_new_tokens - 16)  # 16: template tokens
        if layout == "prefix":
            return cls(int(usable * CHARS_PER_TOKEN), 0)
        # PSM prefills the whole suffix again on every keystroke: keep it short.
        share = 0.25 if layout == "spm" else 0.125
        suffix_tokens = int(usable * share)
        return cls(
            int((usable - suffix_tokens) * CHARS_PER_TOKEN), int(suffix_tokens * CHARS_PER_TOKEN)
        )


@dataclass(frozen=True)
class Prompt:
    text: str
    window_start: int  # first line of the prefix window
    context_used: bool
    lead: str = ""  # typed text left out of the prompt: the model's completion must begin with it
    markers: tuple[str, ...] = ()  # other files' block markers in the prompt (`Cut.markers`)


def indentation_lead(line_before_cursor: str) -> str:
    """The last character of an indentation-only line before the cursor ("" otherwise)."""
    if line_before_cursor and not line_before_cursor.strip(" \t"):
        return line_before_cursor[-1]
    return ""


def unlead(completion: str, lead: str) -> str | None:
    """`completion` without `lead`: "" while it is still a prefix of `lead`, None if it differs."""
    if completion.startswith(lead):
        return completion[len(lead) :]
    return "" if lead.startswith(completion) else None


class PromptBuilder:
    """Builds prompts for one model family, remembering each document's prefix window start."""

    def __init__(self, family: str, context_tokens: int, max_new_tokens: int) -> None:
        self.template = template_for(family)
        self.budget = Budget.for_model(context_tokens, max_new_tokens, self.template.layout)
        self._starts: dict[str, int] = {}

    def forget(self, doc_id: str) -> None:
        self._starts.pop(doc_id, None)

    def build(
        self,
        doc_id: str,
        lines: list[str],
        row: int,
        col: int,
        context: str = "",
        remember: bool = True,
        files: str = "",
    ) -> Prompt:
        """`lines` without terminators (joined by "\\n"); (row, col) in characters.
        `remember=False`: a prompt for a text the document may never have (a prefetch); the
        document's window start stays as it was. `files`: other files' text, placed first (it
        changes only on idle), its size taken from the prefix window's budget."""
        previous = self._starts.get(doc_id)
        limit = max(self.budget.prefix_chars // 2, self.budget.prefix_chars - len(files))
        start = self._window_start(doc_id, lines, row, col, limit)
        if not remember:
            self._starts.pop(doc_id, None)
            if previous is not None:
                self._starts[doc_id] = previous
        lead = indentation_lead(lines[row][:col]) if self.template.layout == "prefix" else ""
        prefix = "\n".join(lines[start:row] + [lines[row][: col - len(lead)]])
        context_used = False
        if start > 0 and context:
            # Only headers from above the window: one in or below it (the signature being typed,
            # the enclosing def) is in the window already, and its text changes with each
            # keystroke, which would change the prompt's first tokens and re-prefill it all.
            header = _dedupe_context(context, lines[start:])
            if header:
                prefix = header + prefix
                context_used = True
        suffix = self._suffix(lines, row, col) if self.budget.suffix_chars else ""
        return Prompt(files + self.template.render(prefix, suffix), start, context_used, lead)

    def head(self, lines: list[str], files: str = "") -> tuple[int, int]:
        """The furthest line end whose prompt window starts at the top of the file (with `files`
        first): a prompt there begins as every prompt for a cursor above it does, token for
        token, up to that cursor (what warming a document's KV up computes)."""
        limit = max(self.budget.prefix_chars // 2, self.budget.prefix_chars - len(files))
        target, size = int(limit * 0.75), 0
        for row, line in enumerate(lines):
            if size + len(line) > target:
                return (row - 1, len(lines[row - 1])) if row > 0 else (0, 0)
            size += len(line) + 1
        return len(lines) - 1, len(lines[-1])

    def _window_start(self, doc_id: str, lines: list[str], row: int, col: int, limit: int) -> int:
        previous = self._starts.get(doc_id)
        if previous is not None and previous <= row and _span(lines, previous, row, col) <= limit:
            return previous
        # Jump so that a quarter of the budget is free for growth before the next move.
        target = int(limit * 0.75)
        start, size = row, col
        while start > 0 and size + len(lines[start - 1]) + 1 <= target:
            start -= 1
            size += len(lines[start]) + 1
        self._starts[doc_id] = start
        return start

    def _suffix(self, lines: list[str], row: int, col: int) -> str:
        limit = self.budget.suffix_chars
        parts = [lines[row][col:]]
        size = len(parts[0])
        for line in lines[row + 1 :]:
            if size + len(line) + 1 > limit:
                break
            parts.append(line)
            size += len(line) + 1
        text = "\n".join(parts)
        return text[:limit]


def _span(lines: list[str], start: int, row: int, col: int) -> int:
    return sum(len(line) + 1 for line in lines[start:row]) + col


def _dedupe_context(context: str, window: list[str]) -> str:
    """Context lines not already in the window, ending with a newline (or "")."""
    # Compared without trailing blanks: the line being typed ("    x = ") is in the window as
    # typed, while the syntax layer may name it trimmed ("    x =").
    seen = {line.rstrip() for line in window}
    kept = [line for line in context.splitlines() if line.strip() and line.rstrip() not in seen]
    return "\n".join(kept) + "\n" if kept else ""
