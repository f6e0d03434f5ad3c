"""Prompts: a fill-in-the-middle template per model family, and windows within a token budget.

This module owns turning (prefix, suffix, context) into one prompt string. It knows nothing of
LSP, torch or tree-sitter. Two rules keep the engine's per-document KV cache useful while typing:

- The text being typed is the END of the prompt. Families trained with suffix-first layouts
  (StarCoder's SPM variant, Code Llama's suffix-first, Codestral's native order) put the suffix
  before the prefix. Families trained only prefix-suffix-middle (Qwen2.5-Coder, DeepSeek-Coder)
  take the prefix up to an ANCHOR, the suffix, the middle marker, and then the text typed since
  the anchor as the start of the middle (what llama.vim sends as /infill's `prompt`): the anchor
  is the start of the line where typing began, and it stays put while the text before it and the
  suffix stay the same (typing, deleting, accepting a suggestion, new lines), so a keystroke
  prefills only the tokens it changed after the middle marker, not the whole suffix again. It
  moves (a full re-prefill of what follows the change) when the cursor leaves the text typed
  since the anchor, the suffix changes (an edit after the cursor, an auto-inserted bracket), the
  prefix window jumps, or the typed middle outgrows a quarter of the prefix budget. A cursor at
  the start of a line (every HumanEval infilling hole) has an empty middle: the prompt is the
  plain PSM one. The suffix keeps its 1/8 share of the context: cut shorter, it cost
  fill-in-the-middle quality (docs/benchmarks.md, "Fill-in-the-middle quality"), and Qwen's SPM
  order restarts the file instead of filling the hole.
- Everything before the typed text stays byte-identical between keystrokes: the prefix window
  starts on a line boundary that only moves in jumps (a quarter of the budget at a time), and the
  context (imports, enclosing scope headers) is placed first and only when the window does not
  already start at the top of the file.

One rule keeps BPE tokenizers from seeing a token boundary the model never saw in training. A
GPT-2-style pre-tokenizer splits "\n    return" as "\n   " + " return": the last space of an
indentation belongs to the next word. A prompt ending in "\n    " (the cursor after indentation on
an empty line) thus ends in a token that, in training, is followed by a newline, not by code, and
the model answers with a blank line or " return" (one space too many). A prompt that ends in typed
text (the prefix-only layout, or a PSM middle) thus leaves out that last whitespace character
(`Prompt.lead`); the completion must begin with it, and it is removed from what is suggested
(`unlead`). A PSM prefix ends before the middle marker, tokenized apart as in training: kept
whole.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

Layout = Literal["psm", "spm", "prefix"]
CHARS_PER_TOKEN = 3.0  # conservative for code; budgets are in tokens, windows in characters
CLOSED_STARTS = 256  # closed documents whose window start is kept for their reopening
# A window start kept for a closed document (`PromptBuilder.starts`): its line, a digest of that
# line's text, and its PSM anchor (`_anchor_key`: "" for none).
Kept = tuple[int, str, str]


@dataclass(frozen=True)
class FimTemplate:
    family: str
    layout: Layout
    pattern: str  # with {prefix} and {suffix}

    def render(self, prefix: str, suffix: str, middle: str = "") -> str:
        """The prompt; `middle`: text typed after the anchor, after the middle marker (PSM)."""
        if middle and self.layout != "psm":
            raise ValueError(f"{self.family}: only a PSM template takes a typed middle")
        return self.pattern.replace("{suffix}", suffix).replace("{prefix}", prefix) + middle


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
        # The suffix's share: a PSM one sits before the typed middle (`PromptBuilder._anchor`).
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
    middle: str = ""  # PSM: the typed text after the middle marker (its lead left out)
    # The prompt ends in typed text cut inside a word or after a sign (`_cache(`, `self.h`):
    # its last token may be healed (`GenerationRequest.heal`). Not where a lead was left out.
    heal: bool = False


@dataclass(frozen=True)
class _Anchor:
    """Where a document's PSM middle begins: after `before`, the text of the prefix window that
    starts at line `start` up to there, with the suffix `suffix`."""

    start: int
    before: str
    suffix: str


def typed_lead(line_before_cursor: str) -> str:
    """The blank a prompt ending in the cursor's typed line leaves out ("" for none): the last
    character of an indentation-only line, or the one space typed after code (`return `,
    `x = `). Tokenizers join a word to the space before it (` return`, ` x`), so a prompt that
    ends in the space asks for the word without its space, a split the model rarely saw; it
    answers with a comment or a second space instead. Left out, the model writes the space
    itself (the completion must begin with it: `unlead`)."""
    if line_before_cursor and not line_before_cursor.strip(" \t"):
        return line_before_cursor[-1]
    if line_before_cursor.endswith(" ") and not line_before_cursor[-2:-1].isspace():
        return " "
    return ""


def unlead(completion: str, lead: str) -> str | None:
    """`completion` without `lead`: "" while it is still a prefix of `lead`, None if it differs."""
    if completion.startswith(lead):
        return completion[len(lead) :]
    return "" if lead.startswith(completion) else None


class PromptBuilder:
    """Builds prompts for one model family, remembering each document's prefix window start."""

    def __init__(
        self, family: str, context_tokens: int, max_new_tokens: int, keep_chars: int = 0
    ) -> None:
        """`keep_chars`: a document's window start (and PSM anchor) stays while its window
        reaches at most this many characters, where that is more than the budget's (a new start
        is still chosen within the budget). A short window's builder takes the full window's:
        its KV is then reused as text is typed below it, where a start moved to stay within its
        own few hundred tokens would re-prefill it all every line or two."""
        self.template = template_for(family)
        self.budget = Budget.for_model(context_tokens, max_new_tokens, self.template.layout)
        self.keep_chars = keep_chars
        self._starts: dict[str, int] = {}
        self._heads: dict[str, str] = {}  # each document's start line as its last prompt had it
        self._anchors: dict[str, _Anchor] = {}
        # Closed documents' window starts, the most recently closed last (`forget`, `seed`).
        self._closed: OrderedDict[str, Kept] = OrderedDict()

    def forget(self, doc_id: str) -> None:
        """The document is closed. Its window start is kept (`CLOSED_STARTS` of them): reopened
        with the same line there, it starts where it did, so its prompts begin with the tokens
        its KV was kept on disk for (a start chosen afresh at the cursor it reopens at would
        differ once typing had moved the cursor down from where the start was chosen). Its PSM
        anchor too, as digests: reopened with the same text before it and after the cursor,
        its first prompt is its last one (all of it on disk)."""
        start, head = self._starts.pop(doc_id, None), self._heads.pop(doc_id, None)
        anchor = self._anchors.pop(doc_id, None)
        if start is not None and head is not None:
            self._keep_closed(doc_id, (start, _digest(head), _anchor_key(anchor, start)))

    def _keep_closed(self, doc_id: str, kept: Kept) -> None:
        self._closed[doc_id] = kept
        self._closed.move_to_end(doc_id)
        while len(self._closed) > CLOSED_STARTS:
            self._closed.popitem(last=False)

    def starts(self) -> dict[str, Kept]:
        """Every document's window start with its line's digest and its anchor's, the closed
        ones first (what `seed` takes: a restarted server's, or the next builder's)."""
        out = dict(self._closed)
        heads, anchors = self._heads, self._anchors
        out.update(
            (d, (s, _digest(heads[d]), _anchor_key(anchors.get(d), s)))
            for d, s in self._starts.items()
            if d in heads
        )
        return out

    def seed(self, starts: Mapping[str, Kept]) -> None:
        """Window starts of an earlier server or builder (`starts`), kept as closed documents'
        are: a document opened with that line there starts its window there (one open now
        keeps its own)."""
        for doc_id, (start, head, anchor) in starts.items():
            if doc_id not in self._starts:
                self._keep_closed(doc_id, (int(start), str(head), str(anchor)))

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
        document's window start and anchor stay as they were. `files`: other files' text, placed
        first (it changes only on idle), its size taken from the prefix window's budget."""
        previous = self._starts.get(doc_id)
        closed = self._closed.get(doc_id)
        limit = max(self.budget.prefix_chars // 2, self.budget.prefix_chars - len(files))
        start = self._window_start(doc_id, lines, row, col, limit)
        if not remember:
            self._starts.pop(doc_id, None)
            if previous is not None:
                self._starts[doc_id] = previous
        else:
            self._closed.pop(doc_id, None)  # open again: its start is the one kept above
            if start < len(lines):
                self._heads[doc_id] = lines[start]  # digested only when it is kept
        layout = self.template.layout
        window = "\n".join(lines[start:row] + [lines[row][:col]])
        suffix = self._suffix(lines, row, col) if self.budget.suffix_chars else ""
        middle = ""
        if layout == "psm":
            reopened = closed[2] if closed is not None and closed[0] == start else ""
            cut = len(self._anchor(doc_id, start, window, col, suffix, remember, reopened).before)
            window, middle = window[:cut], window[cut:]
        # The lead comes off whatever typed text ends the prompt (the window, or a PSM middle).
        lead = typed_lead(lines[row][:col]) if layout == "prefix" or middle else ""
        if layout == "psm":
            middle = middle[: len(middle) - len(lead)]
        else:
            window = window[: len(window) - len(lead)]
        prefix, context_used = window, False
        if start > 0 and context:
            # Only headers from above the window: one in or below it (the signature being typed,
            # the enclosing def) is in the window already, and its text changes with each
            # keystroke, which would change the prompt's first tokens and re-prefill it all.
            header = _dedupe_context(context, lines[start:])
            if header:
                prefix = header + prefix
                context_used = True
        text = files + self.template.render(prefix, suffix, middle)
        # Every layout ends in the typed line (PSM's middle, SPM's and the plain prefix).
        heal = not lead and lines[row][:col][-1:] not in ("", " ", "\t")
        return Prompt(text, start, context_used, lead, middle=middle, heal=heal)

    def _anchor(
        self,
        doc_id: str,
        start: int,
        window: str,
        col: int,
        suffix: str,
        remember: bool,
        reopened: str = "",
    ) -> _Anchor:
        """The document's anchor if the text before it, the window and the suffix are as they
        were and the middle is not too long; else one at the start of the cursor's line.
        `reopened`: the anchor kept when the document was closed (`_anchor_key`), taken again
        where its digests hold."""
        kept = self._anchors.get(doc_id) or _reopened(reopened, start, window, suffix)
        most = max(self.budget.prefix_chars, self.keep_chars) // 4  # typed since the anchor
        if (
            kept is not None
            and kept.start == start
            and kept.suffix == suffix
            and window.startswith(kept.before)
            and len(window) - len(kept.before) <= most
        ):
            if remember:
                self._anchors[doc_id] = kept
            return kept
        anchor = _Anchor(start, window[: len(window) - col], suffix)
        if remember:
            self._anchors[doc_id] = anchor
        return anchor

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
        if previous is None and (closed := self._closed.get(doc_id)) is not None:
            start, head, _ = closed  # a document reopened: its start, if its line is still there
            previous = start if start < len(lines) and _digest(lines[start]) == head else None
        keep = max(limit, self.keep_chars)
        if previous is not None and previous <= row and _span(lines, previous, row, col) <= keep:
            self._starts[doc_id] = previous  # a reopened document's: its own again
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


def _digest(line: str) -> str:
    """A line's text as a window start's check (stable across processes, not the text)."""
    return hashlib.sha256(line.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _anchor_key(anchor: _Anchor | None, start: int) -> str:
    """A PSM anchor as its length and a digest of its text and suffix ("" for none, or one of
    another window start): what a reopened document's anchor is checked against."""
    if anchor is None or anchor.start != start:
        return ""
    return f"{len(anchor.before)}:{_digest(anchor.before + chr(0) + anchor.suffix)}"


def _reopened(key: str, start: int, window: str, suffix: str) -> _Anchor | None:
    """The anchor `key` (`_anchor_key`) describes, where the window and suffix hold its text."""
    length, _, digest = key.partition(":")
    if not length.isdigit() or int(length) > len(window):
        return None
    before = window[: int(length)]
    if _digest(before + chr(0) + suffix) != digest:
        return None
    return _Anchor(start, before, suffix)


def _span(lines: list[str], start: int, row: int, col: int) -> int:
    return sum(len(line) + 1 for line in lines[start:row]) + col


def _dedupe_context(context: str, window: list[str]) -> str:
    """Context lines not already in the window, ending with a newline (or "")."""
    # Compared without trailing blanks: the line being typed ("    x = ") is in the window as
    # typed, while the syntax layer may name it trimmed ("    x =").
    seen = {line.rstrip() for line in window}
    kept = [line for line in context.splitlines() if line.strip() and line.rstrip() not in seen]
    return "\n".join(kept) + "\n" if kept else ""
