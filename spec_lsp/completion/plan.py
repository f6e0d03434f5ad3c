"""A request's plan: what a generation at one position needs, built in one place.

`Planner.at` builds, for a document (or a text it may come to have: after an accept) and a
cursor, the prompt (other files' chunks first, `prompt.PromptBuilder`), the syntax layer's rules
(`Cut`: with the token cap of the whole-block rule where it holds), the answer cache key and the
anchor a suggestion is made against. A request, the prefetch
after an accept, an explicit request's alternatives and a document's warm-up all take their plan
from here, so each computes exactly what a request at that position would get.

This module owns the prompt builder of the loaded model and the cache key's composition. It knows
nothing of the engine, of running generations or of LSP.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from spec_lsp.completion.editor_definitions import Sent
from spec_lsp.completion.neighbours import Neighbours, markers, render
from spec_lsp.completion.repo import RepoContext
from spec_lsp.completion.reuse import Anchor, CacheKey
from spec_lsp.completion.syntax_port import Block, Cut, SyntaxPort
from spec_lsp.config import Options
from spec_lsp.documents import Document, split_at
from spec_lsp.prompt import Kept, Prompt, PromptBuilder
from spec_lsp.worker import ModelInfo

SHORT_S = 1.5  # a short window is what this machine prefills in about this many seconds,
SHORT_MIN, SHORT_STEP = 96, 64  # at least this many tokens, resized by whole steps of this many
SHORT_FIRST = 128  # tokens before a prefill rate is measured (the `short_window` option at most)
Chunks = list[tuple[str, str]]  # (file name, text) of other files, as the ring gives them
# Tells a backend that sends other files apart (llama-server's input_extra) what they are.
TellFiles = Callable[[str, str, tuple[tuple[str, str], ...]], None]


@dataclass(frozen=True)
class Plan:
    """A generation at one position: its prompt, rules, cache key and the text around it."""

    uri: str
    prompt: Prompt
    cut: Cut
    key: CacheKey
    prefix: str  # the document's text before the cursor (as planned: after an accept, say)
    suffix: str
    # The same prompt over a short window (no other files), answered while the document's KV
    # for `prompt` is cold (`GenerationRequest.short_prompt`); None where there is none.
    short: Prompt | None = None

    @property
    def short_text(self) -> str | None:
        return None if self.short is None else self.short.text

    def anchor(self) -> Anchor:
        """A new anchor for a suggestion made at this position (its text filled when settled)."""
        return Anchor(self.prefix, self.suffix)


class Planner:
    """Plans for the loaded model (`configure` after each load and options change)."""

    def __init__(
        self,
        syntax: SyntaxPort,
        neighbours: Neighbours,
        tell_files: TellFiles,
        prefill_rate: Callable[[], float | None] = lambda: None,
        repo: RepoContext | None = None,
    ) -> None:
        """`prefill_rate()`: prompt tokens the engine prefills a second, measured (None: not
        yet), which sizes the short windows. `repo`: definitions and edits (`repo.py`)."""
        self.syntax, self.neighbours, self._tell = syntax, neighbours, tell_files
        self.repo = repo or RepoContext()
        self._settled: dict[str, int] = {}  # uri -> the ring's `settles` at its last refresh
        self.prompts: PromptBuilder | None = None  # None: no model loaded yet
        self.short: PromptBuilder | None = None  # the short windows' (`short_tokens`)
        self.short_tokens = 0
        self._generation: tuple[object, ...] = ()
        self._block_tokens = 0  # the whole-block rule's cap (0: the rule is off)
        self._cross_file = True  # the `crossFile` option: the ring's chunks go in prompts
        self._rate, self._short_args = prefill_rate, (0, "none", 0, 0)
        self._seed: dict[str, Kept] = {}  # window starts for the first builder

    def window_starts(self) -> dict[str, Kept]:
        """The documents' prompt window starts (`PromptBuilder.starts`): what a restarted server
        or a rebuilt builder takes again (`seed_window_starts`)."""
        return self.prompts.starts() if self.prompts is not None else dict(self._seed)

    def seed_window_starts(self, starts: dict[str, Kept]) -> None:
        """Window starts an earlier server kept (`window_starts`): a document reopened with the
        same line there starts its window there, as its KV kept on disk does."""
        if self.prompts is None:
            self._seed.update(starts)
        else:
            self.prompts.seed(starts)

    def configure(self, info: ModelInfo | None, options: Options) -> None:
        """The prompt format of the model `info` describes (None: none loaded), the options."""
        self._generation = (options.max_tokens, options.speculation, options.block_tokens)
        self._cross_file = options.cross_file
        self.repo.configure(options)
        self._settled.clear()
        # A block's cap, never under one line's (`maxTokens` may be set above `blockTokens`).
        self._block_tokens = options.block_tokens and max(options.block_tokens, options.max_tokens)
        if info is not None:
            kept = self.window_starts()  # the windows stay where they were
            self.prompts = PromptBuilder(info.fim, info.context_tokens, options.max_tokens)
            self.prompts.seed(kept)
            self._short_args = (
                options.short_window,
                info.fim,
                info.context_tokens,
                options.max_tokens,
            )
            self.short, self.short_tokens = None, 0
            self._size_short()

    def _size_short(self) -> None:
        """The short windows' builder for `short_tokens`: what the engine prefills in about
        `SHORT_S` (its measured rate; `SHORT_FIRST` before one is), `SHORT_MIN` at least and the
        `short_window` option at most; rebuilt only when that moves by a step."""
        most, fim, context, max_new = self._short_args
        rate = self._rate()
        if rate is None or most <= 0:  # small until measured: a window grows as typed anyway
            want = min(most, SHORT_FIRST)
        else:
            want = max(SHORT_MIN, min(most, int(rate * SHORT_S)))
        if self.short is not None and abs(want - self.short_tokens) < SHORT_STEP:
            return
        budget = want + max_new + 16  # `prompt.Budget`'s usable tokens: `want`
        # Well under the model's own window; before a rate is measured, judged on the setting's
        # size (as a window of that size would be), whatever the smaller one taken meanwhile
        judged = (most if rate is None else want) + max_new + 16
        useful = want > 0 and 2 * judged <= context
        # Larger windows wanted: the ones there stay (smaller than wanted, their KV is there or
        # cheaper to finish); smaller ones wanted: they move (the machine is slower than thought).
        before = self.short if want > self.short_tokens else None
        self.short = None
        if useful:
            # A short window grows as text is typed below it up to the full window's size (its
            # KV reused keystroke to keystroke), where one kept within its own budget moved
            # every line or two and re-prefilled it all (~0.7-1 s each on 2 cores for the pair);
            # the full window is filled on idle time meanwhile and takes over once warm.
            keep = self.prompts.budget.prefix_chars if self.prompts is not None else 0
            self.short = PromptBuilder(fim, budget, max_new, keep_chars=keep)
            if before is not None:
                self.short.seed(before.starts())
        self.short_tokens = want if useful else 0

    def editor_definitions(self, uri: str, version: int | None, sent: list[Sent]) -> int:
        """`spec-lsp/definitions`: keeps what the editor sent (`repo.editor`); as the plugins
        send it at a pause, the document's next plan refreshes its context as after one (it
        changes only if the cursor wants a definition not shown). How many were kept."""
        kept = self.repo.editor.receive(uri, version, sent, self.repo.options)
        if kept:
            self._settled.pop(uri, None)
        return kept

    def forget(self, uri: str) -> None:
        self._settled.pop(uri, None)
        for builder in (self.prompts, self.short):
            if builder is not None:
                builder.forget(uri)

    def at(
        self,
        doc: Document,
        row: int,
        col: int,
        lines: list[str] | None = None,
        remember: bool = True,
        prefill_only: bool = False,
        invoked: bool = False,
    ) -> Plan | None:
        """The plan at (row, col) of `doc`, or of `lines` (a text the document may come to
        have: its rules come from a scratch copy in the syntax layer); None when nothing is
        suggested there (unless `prefill_only`: a warm-up's prompt is wanted anyway) or no model
        is loaded. `remember=False`: the document's prompt window stays where it was (a plan
        for a text it may never have). `invoked`: the user asked (the whole-block rule holds
        wherever the mode is multi-line, not only where the cursor's block is unwritten)."""
        if self.prompts is None:
            return None
        text_lines = doc.lines if lines is None else lines
        prefix, suffix = split_at(text_lines, row, col)
        uri = doc.uri if lines is None else "plan:" + doc.uri
        if lines is not None:
            self.syntax.open(uri, doc.language_id, "\n".join(lines))
        try:
            cutter = self.syntax.cutter(uri, row, col, prefix, suffix, self._block(invoked))
            suggests = cutter.mode != "none"
            context = self.syntax.context(uri, row, col) if suggests or prefill_only else ""
        finally:
            if lines is not None:
                self.syntax.close(uri)
        if not suggests and not prefill_only:
            return None
        if self._settled.get(doc.uri) != self.neighbours.settles:  # a pause: context may change
            self._settled[doc.uri] = self.neighbours.settles
            self.repo.refresh(doc.uri, text_lines, row, col, self._context_chars() * 2 // 3)
        files, chunks = self.files(doc, text_lines)
        self._tell_files(doc.uri, files, chunks)
        prompt = self.prompts.build(doc.uri, text_lines, row, col, context, remember, files)
        family = self.prompts.template.family
        marks = markers(family, doc.language_id, chunks, doc.uri) if files else ()
        prompt = replace(prompt, markers=marks)
        cap = self._block_tokens if cutter.block else None  # the block's, else `max_tokens`
        cut = Cut(cutter, prompt.lead, prompt.markers, cap, prompt.heal)
        key = (prompt.text, prompt.lead, cut.mode, cutter.block, *self._generation)
        short = None
        if self.prompts is not None and remember:
            self._size_short()
        if self.short is not None:  # the same cursor, lead and rules: only the window differs
            short = self.short.build(doc.uri, text_lines, row, col, context, remember)
            if short.lead != prompt.lead or short.text == prompt.text:
                short = None
        return Plan(doc.uri, prompt, cut, key, prefix, suffix, short)

    def _block(self, invoked: bool) -> Block:
        """Where the whole-block rule may hold (`syntax.block`): nowhere with `blockTokens` 0."""
        return "off" if self._block_tokens <= 0 else "asked" if invoked else "auto"

    def head(self, doc: Document) -> Plan | None:
        """The plan at the furthest cursor whose prompt window starts at the top of `doc`
        (`PromptBuilder.head`): every prompt for a cursor above it begins with its prompt, token
        for token (what a warm-up prefills). The document's window is left as it was."""
        if self.prompts is None:
            return None
        row, col = self.prompts.head(doc.lines, self.files(doc, doc.lines)[0])
        return self.at(doc, row, col, remember=False, prefill_only=True)

    def _context_chars(self) -> int:
        """Characters of other files' context, all kinds together (a third of the prefix's)."""
        return 0 if self.prompts is None else self.prompts.budget.prefix_chars // 3

    def files(self, doc: Document, lines: list[str]) -> tuple[str, Chunks]:
        """Other files' context as the prompt places it first, and its chunks: the ring's (none
        with `crossFile` off), then the definitions and edits `repo` froze at the last pause
        (within two thirds of the budget: the ring's oldest go first when all do not fit)."""
        assert self.prompts is not None
        ring = self.neighbours.chunks(doc.uri, "\n".join(lines)) if self._cross_file else []
        chunks = ring + list(self.repo.chunks(doc.uri))
        family, limit = self.prompts.template.family, self._context_chars()
        return render(family, doc.language_id, chunks, doc.uri, limit), chunks

    def _tell_files(self, uri: str, files: str, chunks: Chunks) -> None:
        kept = tuple(c for c in chunks if f"{c[0]}\n{c[1]}\n" in files)  # those render kept
        self._tell(uri, files, kept)
