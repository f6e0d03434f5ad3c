"""Trimming a raw completion to what is worth showing, and its streaming form.

`Trimmer` is built once per request (language, text around the cursor, mode). `trim(text)` keeps
what the model wrote up to the first hard cut of `spec_lsp.syntax.units` (each has a named
reason), then:
- "suffix-overlap": a completion that ends part-way into the rest of the line loses that part;
- "unit-complete" (languages with a grammar only): when the text adds parse errors to the file,
  the longest line boundary that adds none is kept; when none does, the text stays;
- "header-without-body": a last line that opens a block or bracket with nothing in it, here or
  below the cursor, is dropped (and so on up).
Trailing whitespace goes; an empty result is None ("show nothing"). `trim(text, growing=True)`
is for the complete lines of a generation that goes on (an early answer): last lines that open a
block stay, though they fail the last two steps, as their bodies are still to come.
`trim(text, capped=True)` is for a generation its token cap stopped: under the whole-block rule
(`block.py`: an explicit request, or a blank line whose block is unwritten) its last line, cut
inside, goes first. `stop(text)` is the engine's stop callback: the hard cut, as soon as the text
that decides it has arrived. The final steps above depend only on the text before the cut, so
stopping there gives the same suggestion as generating on and trimming after. The result is a
prefix of the completion.
"""

from __future__ import annotations

from tree_sitter import Parser, Tree

from spec_lsp.syntax.block import Block, applies, block_plan, without_last_line
from spec_lsp.syntax.cursor import code_of_line, cursor_of, opens_block
from spec_lsp.syntax.languages import LanguageSpec, new_parser
from spec_lsp.syntax.lexer import indent_width, scan
from spec_lsp.syntax.mode import inside, mode_of
from spec_lsp.syntax.parsecheck import ErrorProbe, make_probe
from spec_lsp.syntax.units import (
    REPEAT_CHARS,
    CutPlan,
    Mode,
    Reason,
    hard_cut,
    make_plan,
    partial_overlap,
)

MAX_CANDIDATES = 64
_TRIGGERS = frozenset("\n)]}\"'`")


class Trimmer:
    def __init__(
        self,
        spec: LanguageSpec,
        prefix: str,
        suffix: str,
        mode: Mode | None = None,
        *,
        tree: Tree | None = None,
        parser: Parser | None = None,
        comments: bool = True,
        block: Block = "off",
    ) -> None:
        """`block`: whether the whole-block rule may hold here (`block.Block`)."""
        self.spec = spec
        self._prefix, self._suffix = prefix, suffix
        self._parser = parser if parser is not None else new_parser(spec)
        self._tree = tree
        cursor = cursor_of(prefix, suffix)
        if self._parser is not None and self._tree is None:
            self._tree = self._parser.parse(_encode(prefix + suffix))
        where = inside(spec, cursor, self._tree, len(_encode(prefix)) if self._tree else 0)
        self.mode: Mode = mode if mode is not None else mode_of(spec, cursor, where, comments)
        self.plan: CutPlan = make_plan(spec, cursor, self.mode, where.string, prefix, suffix)
        # The whole-block rule: the block is generated to its end (`block.py`).
        self.block = applies(block, spec, cursor, self.mode)
        if self.block:
            self.plan = block_plan(self.plan, spec, cursor, prefix)
        self._probe: ErrorProbe | None = None
        self._seen = ""  # the text of the previous stop call

    # -- the final trim ------------------------------------------------------------------------

    def trim(self, completion: str, growing: bool = False, capped: bool = False) -> str | None:
        """The suggestion in `completion`. `growing`: it is the complete lines of a generation
        that goes on (an early answer): last lines that open blocks stay, their bodies to come.
        `capped`: the generation stopped at its token cap (under the whole-block rule its last
        line, cut inside, goes)."""
        if capped and self.block and not growing:
            completion = without_last_line(completion)
        text = self.explain(completion)[0]
        if growing and (headers := self._with_open_headers(completion, text)) is not None:
            return headers
        return text

    def _with_open_headers(self, completion: str, trimmed: str | None) -> str | None:
        """`completion` whole when what the final rules cut from it is only its last lines that
        open blocks (they lack a body, so they fail the parse check and the header rule): the
        lines before them kept as written, no hard cut in the headers. None otherwise."""
        whole = completion.rstrip()
        if self.mode != "multi" or not whole.strip() or (trimmed or "") == whole:
            return None
        head = whole
        while head:
            start = head.rfind("\n") + 1
            line = head[start:] if start else self.plan.line_prefix + head
            if not opens_block(line, self.spec) or code_of_line(line, self.spec).endswith(
                ("(", "[")
            ):
                break  # an open bracket is no block: its arguments or items are the rest
            head = head[:start].rstrip()
        if head == whole or partial_overlap(self.plan, whole) is not None:
            return None
        if hard_cut(self.plan, whole, final=False).pos < len(whole):
            return None
        if head.strip() and self.explain(head)[0] != head:
            return None
        return whole

    def explain(self, completion: str) -> tuple[str | None, Reason | None]:
        """The suggestion, and the reason for the last cut made (None: kept as written)."""
        if self.mode == "none":
            return None, "none-here"
        cut = hard_cut(self.plan, completion, final=True)
        text, reason = completion[: cut.pos].rstrip(), cut.reason
        overlap = partial_overlap(self.plan, text)
        if overlap is not None:
            text, reason = text[:overlap].rstrip(), "suffix-overlap"
        end = self._parse_boundary(text)
        if end is not None:
            text, reason = text[:end].rstrip(), "unit-complete"
        while (bare := self._without_bare_header(text)) is not None:
            text, reason = bare, "header-without-body"
        if not text.strip():
            return None, reason or "empty"
        return text, reason

    def _without_bare_header(self, text: str) -> str | None:
        """`text` without its last line when that line opens a block that has no body, neither
        in the completion nor right below the cursor; None when there is no such line."""
        start = text.rfind("\n") + 1
        line = text[start:] if start else self.plan.line_prefix + text
        if self.mode != "multi" or (not start and self.plan.line_prefix.strip()):
            return None  # within a line, or the cursor's own line: the user writes the body next
        if not opens_block(line, self.spec):
            return None
        below = self.plan.next_line
        if below is not None and indent_width(below) > indent_width(line):
            return None  # the body is already there
        return text[:start].rstrip()

    def _parse_boundary(self, text: str) -> int | None:
        """When `text` adds parse errors to the file: the longest boundary that adds none."""
        if self._parser is None or not text.strip():
            return None
        probe = self._get_probe()
        if probe.errors(text) <= probe.baseline:
            return None
        result = scan(text, self.spec, self.plan.start_string)
        ends = {line.end for line in result.lines}
        candidates = sorted((e for e in ends if e < len(text) and text[:e].strip()), reverse=True)
        for end in candidates[:MAX_CANDIDATES]:
            if probe.errors(text[:end].rstrip()) <= probe.baseline:
                return end
        return None

    def _get_probe(self) -> ErrorProbe:
        if self._probe is None:
            assert self._parser is not None
            self._probe = make_probe(self._parser, self._prefix, self._suffix, self._tree)
        return self._probe

    # -- the streaming stop callback -----------------------------------------------------------

    def _may_decide(self, text: str) -> bool:
        """Cheap test: could the text that just arrived decide a cut? A closer, quote or line
        break can; so can the first characters of a line (a dedent, `else`, `end`) and, when the
        rest of the cursor's line is there, anything (it may run into it)."""
        old, self._seen = self._seen, text
        if self.plan.rest or not text.startswith(old):
            return True
        new = text[len(old) :]
        if any(ch in _TRIGGERS for ch in new):
            return True
        head = old[old.rfind("\n") + 1 :].strip()
        if self.plan.next_line is not None and len(head) < REPEAT_CHARS:
            return True  # the line may begin like the line after the cursor
        return bool(new.strip()) and (not head or head.isidentifier())

    def stop(self, text: str) -> int | None:
        """How much of `text` to keep once a cut is decided, else None (keep generating)."""
        if self.mode == "none":
            return 0
        if not self._may_decide(text):
            return None
        cut = hard_cut(self.plan, text, final=False)
        if cut.reason is None or not cut.complete:
            return None
        return len(text[: cut.pos].rstrip())


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


__all__ = ["Trimmer"]
