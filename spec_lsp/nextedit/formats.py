"""Next-edit prompt formats, one per model family: how a region, the file around it and the recent
edits are put to a model, and how its rewrite of the region is read back.

- `qwen-chat` (the default, for the `coder` pair's Qwen2.5-Coder Instruct models; our design):
  Qwen's chat template with a short instruction; the file excerpt with the region's place marked
  by `<region/>` (its lines are not repeated there), then the recent edits as unified diffs,
  oldest first, then the region between `<region>` and `</region>`; the answer is prefilled with
  `<region>` and a newline, so the model writes the region's new text and `</region>`. What the
  user's typing changes comes last: a keystroke inside the region changes the newest diff and the
  region, never the excerpt, so the rewrite's KV (kept per document by the engine) holds the
  instruction, the excerpt and the older diffs from one request to the next, and only the newest
  diff and the region are prefilled again.
- `sweep`: Sweep's next-edit models (Qwen2.5-Coder-based GGUF files a user downloads): the file
  and each recent edit as `original:`/`updated:` blocks after `<|file_sep|>` markers, then the
  region as it was before the recent edits, the region now, and `updated/<path>`, after which the
  model writes the updated region. Written from Sweep's published description of its format; not
  run here (no weights can be downloaded in this project's tests).
- `zeta`: Zed's Zeta: `### Instruction`, `### User Edits` (diffs), `### User Excerpt` with
  `<|editable_region_start|>`, `<|user_cursor_is_here|>` and `<|editable_region_end|>`, and
  `### Response`. Written from Zed's published description (our instruction's words); not run
  here either.

Each format gives the texts the rewrite should mostly copy (`EditPrompt.reference`: the region
with the format's end marker, then the text the recent edits inserted): the engine drafts them.
This module knows nothing of documents, LSP or models.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from spec_lsp.completion.history import Hunk

FORMATS = ("none", "qwen-chat", "sweep", "zeta")


@dataclass(frozen=True)
class EditContext:
    path: str  # the file's name as the prompt shows it
    language: str  # the LSP language id
    above: list[str]  # lines before the region (already bounded)
    region: list[str]  # the editable region's lines
    below: list[str]  # lines after it (bounded)
    hunks: list[Hunk] = field(default_factory=list)  # recent edits, oldest first
    cursor: tuple[int, int] = (0, 0)  # (row in the region, column)
    first_line: int = 0  # the document line of the region's first line

    def original_region(self) -> list[str]:
        """The region with the recent edits inside it undone (newest first), where they fit."""
        lines = list(self.region)
        for hunk in reversed(self.hunks):
            at, n = hunk.start - self.first_line, len(hunk.new)
            if at >= 0 and at + n <= len(lines) and lines[at : at + n] == hunk.new:
                lines[at : at + n] = hunk.old
        return lines


@dataclass(frozen=True)
class EditPrompt:
    text: str
    reference: tuple[str, ...]  # what the rewrite copies (`GenerationRequest.reference`)
    stop: tuple[str, ...]  # the end of the rewrite


class Format(Protocol):
    name: str

    def render(self, ctx: EditContext) -> EditPrompt: ...


def inserted(hunks: list[Hunk]) -> tuple[str, ...]:
    """The text the recent edits inserted, newest first: a rewrite often repeats it."""
    return tuple("\n".join(h.new) + "\n" for h in reversed(hunks) if any(s.strip() for s in h.new))


def diffs(ctx: EditContext) -> str:
    return "".join(h.diff() for h in ctx.hunks)


def _join(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


class QwenChat:
    name = "qwen-chat"
    SYSTEM = (
        "You predict a programmer's next edit. From their recent edits, rewrite the region "
        "between <region> and </region> as they will edit it next: carry a change through to "
        "the places that need it (a renamed name's other uses, a new parameter at its calls, a "
        "changed pattern where it repeats). Keep every other character as it is. If no edit "
        "follows from the recent edits, repeat the region unchanged."
    )
    END = "</region>"
    PLACE = "<region/>"  # where the region sits in the file excerpt

    def render(self, ctx: EditContext) -> EditPrompt:
        fence = "```"
        user = (
            f"The file {ctx.path}, the region's place marked <region/>:\n{fence}{ctx.language}\n"
            f"{_join(ctx.above)}{self.PLACE}\n{_join(ctx.below)}{fence}\n\n"
            f"My recent edits, oldest first:\n{fence}diff\n{diffs(ctx)}{fence}\n\n"
            f"The region:\n<region>\n{_join(ctx.region)}{self.END}\n\n"
            "Rewrite the region with the edit that follows from my recent edits."
        )
        text = (
            f"<|im_start|>system\n{self.SYSTEM}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
            "<|im_start|>assistant\n<region>\n"
        )
        reference = (_join(ctx.region) + self.END, *inserted(ctx.hunks))
        return EditPrompt(text, reference, (self.END, "<|im_end|>"))


class Sweep:
    name = "sweep"
    SEP = "<|file_sep|>"

    def render(self, ctx: EditContext) -> EditPrompt:
        sep = self.SEP
        parts = [f"{sep}{ctx.path}\n{_join(ctx.above + ctx.region + ctx.below)}"]
        for h in ctx.hunks:
            parts.append(f"{sep}{ctx.path}.diff\noriginal:\n{_join(h.old)}updated:\n{_join(h.new)}")
        parts.append(f"{sep}original/{ctx.path}\n{_join(ctx.original_region())}")
        parts.append(f"{sep}current/{ctx.path}\n{_join(ctx.region)}")
        parts.append(f"{sep}updated/{ctx.path}\n")
        reference = (_join(ctx.region) + sep, *inserted(ctx.hunks))
        return EditPrompt("".join(parts), reference, (sep, "<|endoftext|>"))


class Zeta:
    name = "zeta"
    START, END = "<|editable_region_start|>", "<|editable_region_end|>"
    CURSOR = "<|user_cursor_is_here|>"

    def render(self, ctx: EditContext) -> EditPrompt:
        region = list(ctx.region)
        row, col = ctx.cursor
        if 0 <= row < len(region):
            region[row] = region[row][:col] + self.CURSOR + region[row][col:]
        edits = "".join(f'User edited "{ctx.path}":\n```diff\n{h.diff()}```\n\n' for h in ctx.hunks)
        text = (
            "### Instruction:\nRewrite the editable region of the excerpt with the edit that "
            "follows from the user's recent edits, taking the cursor into account.\n\n"
            f"### User Edits:\n\n{edits}### User Excerpt:\n\n```{ctx.path}\n"
            f"{_join(ctx.above)}{self.START}\n{_join(region)}{self.END}\n{_join(ctx.below)}```\n\n"
            f"### Response:\n{self.START}\n"
        )
        reference = (_join(ctx.region) + self.END, *inserted(ctx.hunks))
        return EditPrompt(text, reference, (self.END,))


def format_for(name: str) -> Format | None:
    """The format of a preset's `next_edit` name; None for "none" (no next edit)."""
    found: dict[str, Format] = {"qwen-chat": QwenChat(), "sweep": Sweep(), "zeta": Zeta()}
    return found.get(name)


def region_lines(output: str) -> list[str]:
    """A rewrite's text (up to its end marker) as the region's new lines."""
    lines = output.split("\n")
    return lines[:-1] if output.endswith("\n") else lines
