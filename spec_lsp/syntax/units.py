"""Where a completion stops being worth showing: the text-only ("hard") cuts, each with a reason.

The default is to keep what the model wrote. A `CutPlan` is built once per request from the text
around the cursor; `hard_cut(plan, text)` then finds, in the completion alone, the first place one
of these rules cuts it:

- "suffix-overlap": the completion runs into the text already right of the cursor (`, 0);`), or
  closes a bracket or quote that the suffix already closes: cut where the overlap begins.
- "suffix-repeat": a line equal to the line that already follows the cursor, or (after the
  completion's first line) beginning with its first `REPEAT_CHARS` characters: cut before it (a
  completion that only repeats that line is dropped).
- "repeated-line": one to three lines equal to the lines right before them (a model going round
  in a loop): cut before the second round.
- "unbalanced-closer": a closing bracket that closes nothing open before the cursor, or the
  wrong kind: cut before it.
- "block-end": a line indented less than the block the cursor is in (outside brackets the
  completion opened; `else`, `except`, `.then(` and the like continue it), or a line that closes
  the enclosing block (`}`, `end`) when the suffix does not already close it: kept, and cut after.
- "unit-complete": in single-line mode, the end of the line (outside brackets the completion
  opened); a string that began before the cursor closed with no closing quote in the suffix.

Multi-line completions, and completions that begin with a line break, are kept whole up to the
first of these. None of the rules parses: they run on every decode step in the streaming form. A
cut is `complete` once the text that decides it has arrived (a line's first character decides a
dedent, a whole line decides a repeat), so the stop callback fires at the token that decides it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from spec_lsp.syntax.cursor import Cursor, opens_block
from spec_lsp.syntax.languages import LanguageSpec
from spec_lsp.syntax.lexer import CLOSERS, Line, Scan, indent_width, scan

Mode = Literal["none", "single", "multi"]
Reason = Literal[
    "none-here",
    "suffix-overlap",
    "suffix-repeat",
    "repeated-line",
    "unbalanced-closer",
    "block-end",
    "unit-complete",
    "header-without-body",
    "parse-errors",
    "empty",
]

# A line starting with one of these continues the statement above it, even when dedented.
CONTINUATION_STARTS = (".", "?", ":", "&&", "||", "+", "-", "*", "/", "=", "|", ")", "]", ",")
_WORD = re.compile(r"\w+")
PREFIX_WINDOW = 8000  # characters of the prefix scanned for the brackets open at the cursor
REPEAT_CHARS = 16  # a later line beginning with this much of the line after the cursor repeats it


@dataclass(frozen=True)
class CutPlan:
    spec: LanguageSpec
    mode: Mode
    start_string: str | None  # the quote of a string the cursor is inside
    line_prefix: str  # the cursor's line up to the cursor
    rest: str  # the rest of the cursor's line, stripped ("" when nothing is there)
    next_line: str | None  # the first non-blank line after the cursor's line (rstripped)
    suffix_start: str  # the suffix's first non-whitespace character ("" when none)
    level: int  # a line indented less than this ends the block the cursor is in
    header: int  # the indentation of that block's header: `else`, `end`, `}` stand there
    open_before: tuple[str, ...]  # brackets open at the cursor, innermost last


@dataclass
class CutPoint:  # where the rules cut a generated text so far, and which rule did
    pos: int  # keep text[:pos]
    complete: bool  # the rule that cut has seen all it needs (the streaming form may stop)
    reason: Reason | None
    scan: Scan

    def at(self, pos: int, complete: bool, reason: Reason) -> None:
        if pos < self.pos or (pos == self.pos and self.reason is None):
            self.pos, self.complete, self.reason = pos, complete, reason


def make_plan(
    spec: LanguageSpec,
    cursor: Cursor,
    mode: Mode,
    start_string: str | None,
    prefix: str,
    suffix: str,
) -> CutPlan:
    level, header = _block_level(spec, cursor, prefix)
    window = prefix[-PREFIX_WINDOW:]
    if len(prefix) > PREFIX_WINDOW:  # start on a line start, so the scan starts in code
        window = window[window.find("\n") + 1 :]
    found = scan(window, spec) if start_string is None else None  # cursor in code: a window
    if found and len(window) < len(prefix) and (found.end_string or found.end_comment):
        found = scan(prefix, spec)  # that ends in a string began inside one (a long docstring)
    open_before = tuple(found.open_brackets) if found else ()
    stripped = suffix.lstrip()
    return CutPlan(
        spec=spec,
        mode=mode,
        start_string=start_string,
        line_prefix=cursor.line_prefix,
        rest=cursor.line_suffix.strip(),
        next_line=cursor.next_line if cursor.next_line and cursor.next_line.strip() else None,
        suffix_start=stripped[:1],
        level=level,
        header=header,
        open_before=open_before,
    )


def _block_level(spec: LanguageSpec, cursor: Cursor, prefix: str) -> tuple[int, int]:
    """(level, header): lines indented below `level` leave the cursor's block, whose header is
    indented `header` (-1: no header found, nothing continues it)."""
    if cursor.line_prefix.strip():
        if opens_block(cursor.line_prefix, spec):
            return cursor.line_indent + 1, cursor.line_indent
        level = cursor.line_indent
    else:
        prev = cursor.prev_line
        if prev is not None and opens_block(prev, spec):
            return indent_width(prev) + 1, indent_width(prev)
        level = indent_width(cursor.line_prefix)
    return level, _header_indent(prefix, level)


def _header_indent(prefix: str, level: int, limit: int = 200) -> int:
    end = prefix.rfind("\n")
    for _ in range(limit):
        if end < 0:
            return -1
        start = prefix.rfind("\n", 0, end) + 1
        line = prefix[start:end]
        if line.strip() and indent_width(line) < level:
            return indent_width(line)
        end = start - 1
    return -1


def hard_cut(plan: CutPlan, text: str, final: bool = True) -> CutPoint:
    """The first cut in `text`; `final` is False while the text is still growing."""
    result = scan(text, plan.spec, plan.start_string)
    cut = CutPoint(len(text), False, None, result)
    if plan.mode == "none":
        cut.at(0, True, "none-here")
        return cut
    _cut_escapes(plan, text, result, cut, final)
    _cut_overlap(plan, text, cut)
    if plan.mode == "single":
        _cut_line(plan, text, result, cut)
    else:
        _cut_lines(plan, text, result, cut, final)
    return cut


def _cut_escapes(plan: CutPlan, text: str, result: Scan, cut: CutPoint, final: bool) -> None:
    """Closers and quotes that close something opened before the cursor."""
    stack = list(plan.open_before)
    for escape in result.escapes:
        if escape.pos >= cut.pos:
            return
        line = _line_at(result, escape.pos)
        if escape.char not in CLOSERS:  # the string the cursor is in ends here
            if plan.rest.startswith(escape.char) or (
                not plan.rest and (plan.next_line or "").lstrip().startswith(escape.char)
            ):
                cut.at(escape.pos, True, "suffix-overlap")
            else:
                cut.at(line.end, final or line.end < len(text), "unit-complete")
            return
        if plan.suffix_start == escape.char:
            cut.at(escape.pos, True, "suffix-overlap")  # the suffix already closes it
            return
        if not stack or CLOSERS[escape.char] != stack[-1]:
            cut.at(escape.pos, True, "unbalanced-closer")
            return
        stack.pop()
        body = text[line.start : line.end]
        first = line.start + len(body) - len(body.lstrip())
        if plan.mode == "multi" and escape.pos == first and line.start > 0:
            after = _depth_after(result, line)
            if after is None or after < line.depth:  # `}` closes the block, `} else {` does not
                if after is not None or final:
                    cut.at(line.end, True, "block-end")
                return


def _line_at(result: Scan, pos: int) -> Line:
    for line in result.lines:
        if line.start <= pos <= line.end:
            return line
    return result.lines[-1]


def _depth_after(result: Scan, line: Line) -> int | None:
    """The bracket depth after `line` (None: it is the last line, still growing)."""
    index = result.lines.index(line)
    if index + 1 < len(result.lines):
        return result.lines[index + 1].depth
    return None


def _cut_overlap(plan: CutPlan, text: str, cut: CutPoint) -> None:
    """The completion runs into the rest of the cursor's line: cut where that begins."""
    rest = plan.rest
    if not rest:
        return
    pos = text.find(rest)
    while 0 <= pos < cut.pos:
        in_word = _word(rest[0]) and pos > 0 and _word(text[pos - 1])
        if not in_word and (plan.start_string is not None or _at_code_level(plan, text, pos, rest)):
            cut.at(pos, True, "suffix-overlap")
            return
        pos = text.find(rest, pos + 1)


def partial_overlap(plan: CutPlan, text: str) -> int | None:
    """Where `text` ends with the beginning of the rest of the line (the model stopped part-way
    through writing it again), or None. Only a final text is judged this way."""
    rest = plan.rest
    if not rest or plan.start_string is not None:
        return None
    kept = text.rstrip()
    for size in range(min(len(rest), len(kept)), 0, -1):
        if size == 1 and (rest[0].isalnum() or rest[0] == "_"):
            break  # one letter is no evidence
        pos = len(kept) - size
        if kept.endswith(rest[:size]) and _at_code_level(plan, kept, pos, rest):
            return pos
    return None


def _at_code_level(plan: CutPlan, text: str, pos: int, rest: str) -> bool:
    if _word(rest[0]) and pos > 0 and _word(text[pos - 1]):
        return False
    head = scan(text[:pos], plan.spec)
    return head.end_string is None and not head.end_comment and head.end_depth <= 0


def _cut_line(plan: CutPlan, text: str, result: Scan, cut: CutPoint) -> None:
    """Single-line mode: the first line break outside brackets the completion opened (a call
    spread over lines is one line's unit); inside a string, the first line break."""
    for line in result.lines[1:]:
        if line.start > cut.pos:
            return
        if plan.start_string is not None or (line.depth <= 0 and not line.in_string):
            cut.at(line.start - 1, True, "unit-complete")
            return


def _cut_lines(plan: CutPlan, text: str, result: Scan, cut: CutPoint, final: bool) -> None:
    escape_starts = {e.pos for e in result.escapes}
    seen: list[tuple[str, int]] = []  # the lines so far (rstripped) and where to cut before each
    for index, line in enumerate(result.lines):
        if line.start > cut.pos:
            return
        if line.indent is None or line.in_string:
            continue
        body = text[line.start : line.end]
        whole = final or line.end < len(text)
        full = plan.line_prefix + body if index == 0 else body
        before = max(line.start - 1, 0)
        if plan.next_line is not None and (
            (whole and _same_line(full, plan.next_line, index))
            or (index > 0 and _begins_like(body, plan.next_line))
        ):
            cut.at(before, True, "suffix-repeat")
            return
        seen.append((full.rstrip(), before))
        repeat = _repeat_start(seen) if whole else None
        if repeat is not None:
            cut.at(repeat, True, "repeated-line")
            return
        if index > 0 and line.depth <= 0:
            first = line.start + len(body) - len(body.lstrip())
            if first in escape_starts:
                continue  # a closing line: `_cut_escapes` decides
            ends = _ends_block(plan, line, body, whole)
            if ends is None:
                return  # not decided until more of the line arrives
            if ends == "after":
                if whole:
                    cut.at(line.end, True, "block-end")
                return
            if ends == "before":
                cut.at(before, True, "block-end")
                return


def _repeat_start(seen: list[tuple[str, int]]) -> int | None:
    """Where a model going round in a loop began its second round: the last one to three lines
    equal to the ones before them (and not only brackets)."""
    for size in (1, 2, 3):
        if len(seen) < 2 * size:
            return None
        block = [line for line, _ in seen[-size:]]
        if block == [line for line, _ in seen[-2 * size : -size]] and _has_word("".join(block)):
            return seen[-size][1]
    return None


def _begins_like(body: str, next_line: str) -> bool:
    """A line that begins like the (longer) line after the cursor: its indentation and first
    `REPEAT_CHARS` characters. Decided as soon as they arrive, so the stop callback does not wait
    for the rest of a line that is already in the file."""
    head = next_line.lstrip()
    if len(head) <= REPEAT_CHARS:
        return False
    return body.startswith(next_line[: len(next_line) - len(head) + REPEAT_CHARS])


def _same_line(full: str, next_line: str, index: int) -> bool:
    if index == 0:  # the cursor's own line: indentation may differ (the editor's, the model's)
        return full.strip() == next_line.strip()
    return full.rstrip() == next_line


def _ends_block(plan: CutPlan, line: Line, body: str, whole: bool) -> str | None:
    """ "before": the line leaves the block; "after": it closes the block (`end`); "": neither;
    None: undecided until more of the line arrives."""
    assert line.indent is not None
    if not plan.spec.dedent_ends or line.indent >= plan.level:
        return ""
    head = body.strip()
    match = _WORD.match(head)
    word = match.group(0) if match else ""
    if line.indent == plan.header:
        words = plan.spec.continuation_keywords | plan.spec.end_words
        if not whole and word and len(word) == len(head) and any(k.startswith(word) for k in words):
            return None  # may still become `else`, `end`, ...
        if word in plan.spec.continuation_keywords:
            return ""
        if word in plan.spec.end_words:
            return "after"
    if head.startswith(CONTINUATION_STARTS):
        return ""
    return "before"


def _has_word(text: str) -> bool:
    return any(ch.isalnum() for ch in text)


def _word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"
