"""Where the syntactic unit at the cursor ends inside a completion: the text-only ("hard") cuts.

A `Plan` is built once per request from the text around the cursor; `hard_cut(plan, text)` then
finds, in the completion alone, the first place the unit is over:
- single-line mode: the first newline outside brackets the completion opened;
- a closer or quote that closes something opened before the cursor and already closed right of
  the cursor (the editor's auto-closed pair): cut before it, so it is not repeated;
- multi-line mode: a line that leaves the unit by its indentation (the dedent out of a Python
  block, the `}` of a brace block, the next statement at the same level), or a line equal to the
  line that already follows the cursor.
It runs on every decode step in the streaming form, so it never parses: the parse check that
chooses among the remaining boundaries is in `spec_lsp.syntax.trim`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from spec_lsp.syntax.cursor import Cursor, code_of_line, opens_block
from spec_lsp.syntax.languages import LanguageSpec
from spec_lsp.syntax.lexer import CLOSERS, Line, Scan, indent_width, scan

Mode = Literal["none", "single", "multi"]
Unit = Literal["line", "block", "statement"]

# A line ending in one of these goes on into the next line.
_CONTINUES = ("\\", ",", "+", "-", "*", "/", "=", "&", "|", ".", "?", ":", "(", "[", "{", "<")
# A line starting with one of these continues the statement above it.
_CONTINUATION_STARTS = (".", "?", ":", "&&", "||", "+", "-", "*", "/", "=", ")", "]", "}", "|")


@dataclass(frozen=True)
class Plan:
    spec: LanguageSpec
    mode: Mode
    unit: Unit
    level: int  # block: lines indented <= level end it; statement: the statement's indentation
    first_col: int  # the cursor's column (indentation that the completion's first line sits at)
    start_string: str | None  # the quote of a string the cursor is inside
    suffix_closer: str | None  # the rest of the line right of the cursor, when it starts with a
    # closer or a quote (what the editor auto-closed)
    next_line: str | None  # the first non-blank line after the cursor's line
    blank_line: bool  # only whitespace before the cursor on its line
    line_tail: str | None = None  # the rest of the line when only `;,:` and quotes


@dataclass
class Cut:
    pos: int  # keep text[:pos]
    complete: bool  # the unit ended inside the text (the streaming form may stop)
    scan: Scan
    closer_line: Line | None = None  # the unit's closing line was kept: also try without it
    extra: list[int] = field(default_factory=list)
    stop_at: int | None = None  # where the streaming form stops, when not at `pos`


def make_plan(spec: LanguageSpec, cursor: Cursor, mode: Mode, start_string: str | None) -> Plan:
    rest = cursor.line_suffix.lstrip(" \t")
    closer = rest if rest and (rest[0] in CLOSERS or rest[0] in "\"'`") else None
    code = code_of_line(cursor.line_prefix, spec)
    if not cursor.line_prefix.strip():  # a blank line, or only indentation before the cursor
        first_col = indent_width(cursor.line_prefix)
        prev = cursor.prev_line
        if prev is not None and opens_block(prev, spec):
            unit: Unit = "block"
            level = indent_width(prev)
        else:
            unit, level = "statement", first_col
    else:
        first_col = len(cursor.line_prefix.expandtabs(4))
        if code and opens_block(cursor.line_prefix, spec):
            unit, level = "block", cursor.line_indent
        else:
            unit, level = "statement", cursor.line_indent
    if mode != "multi":
        unit = "line"
    next_line = cursor.next_line if cursor.next_line and cursor.next_line.strip() else None
    blank = not cursor.line_prefix.strip()
    tail = cursor.line_suffix.strip()
    line_tail = tail if tail and all(ch in ";,:\"'`" for ch in tail) else None
    return Plan(
        spec, mode, unit, level, first_col, start_string, closer, next_line, blank, line_tail
    )


def hard_cut(plan: Plan, text: str, final: bool = True) -> Cut:
    """The first end of the unit in `text`; `final` is False while the text is still growing."""
    result = scan(text, plan.spec, plan.start_string)
    cut = Cut(len(text), False, result)
    if plan.mode == "none":
        return Cut(0, True, result)
    first = result.escapes[0] if result.escapes else None
    if (
        first is not None
        and plan.suffix_closer is not None
        and plan.suffix_closer.startswith(first.char)
    ):
        cut.pos, cut.complete = first.pos, True
    if plan.line_tail is not None and (final or "\n" in text):  # `;` already right of the
        # cursor is not suggested again (judged on the whole first line)
        head = text[: min(cut.pos, _first_line_end(text))].rstrip()
        if head.endswith(plan.line_tail):
            cut.pos, cut.complete = len(head) - len(plan.line_tail), True
            cut.stop_at = len(head)  # stopping there lets the final trim cut the tail once
    if plan.unit == "line":
        _cut_line(plan, text, result, cut)
        return cut
    if plan.unit == "statement" and not text[: _first_line_end(text)].strip():
        # The first line is empty: the statement begins on the next line, at its own indentation.
        plan = _replan_statement(plan, result)
    elif plan.unit == "statement" and plan.blank_line:
        plan = replace(plan, level=plan.level + indent_width(text))  # the model may indent it
    _cut_lines(plan, text, result, cut, final)
    return cut


def _cut_line(plan: Plan, text: str, result: Scan, cut: Cut) -> None:
    """Single-line mode: the first line break outside brackets that the completion opened (a
    call or literal spread over lines is one statement). On a blank line, blank lines the model
    writes first are skipped: the line is its first line with code. Inside a string that began
    before the cursor, the line ends at the first line break."""
    lines = result.lines
    first = 0
    if plan.blank_line and plan.start_string is None:
        found = next((i for i, ln in enumerate(lines) if ln.indent is not None), None)
        if found is None:
            return  # only blank lines so far: the line has not begun
        first, line = found, lines[found]
        if first and text[line.start : line.end].rstrip() == plan.next_line:
            cut.pos, cut.complete = 0, line.end < len(text)  # the line that already follows
            return
    for line in lines[first + 1 :]:
        if line.start > cut.pos:
            return
        if plan.start_string is not None or (line.depth <= 0 and not line.in_string):
            cut.pos, cut.complete = line.start - 1, True
            return


def _first_line_end(text: str) -> int:
    end = text.find("\n")
    return len(text) if end < 0 else end


def _replan_statement(plan: Plan, result: Scan) -> Plan:
    for line in result.lines[1:]:
        if line.indent is not None and not line.in_string:
            return replace(plan, level=line.indent)
    return plan


def _cut_lines(plan: Plan, text: str, result: Scan, cut: Cut, final: bool) -> None:
    prev_code = text[: _first_line_end(text)]
    lines = result.lines
    for index in range(1, len(lines)):
        line = lines[index]
        if line.start > cut.pos:
            return
        if line.indent is None or line.in_string:
            continue
        body = text[line.start : line.end]
        whole = final or line.end < len(text)  # the line has all its characters
        if plan.next_line is not None and whole and body.rstrip() == plan.next_line:
            cut.pos, cut.complete = max(line.start - 1, 0), True
            return
        if line.depth <= 0 and _ends_unit(plan, line, body, prev_code, whole):
            _cut_at(plan, text, result, cut, line, whole)
            return
        prev_code = code_of_line(body, plan.spec)


def _ends_unit(plan: Plan, line: Line, body: str, prev_code: str, whole: bool) -> bool:
    assert line.indent is not None
    if plan.unit == "block":
        return line.indent <= plan.level
    if line.indent < plan.level:
        return True
    if line.indent > plan.level:
        return False
    head = body.strip()
    if not whole and any(k.startswith(head) for k in plan.spec.continuation_keywords):
        return False  # may still become `else`, `except`, ...
    word = head.split(maxsplit=1)[0].rstrip(":{") if head else ""
    if word in plan.spec.continuation_keywords or head.startswith(_CONTINUATION_STARTS):
        return False
    previous = prev_code.rstrip()
    return not (previous.endswith(_CONTINUES) or previous.lstrip().startswith("@"))


def _cut_at(plan: Plan, text: str, result: Scan, cut: Cut, line: Line, whole: bool) -> None:
    body = text[line.start : line.end]
    first_char = line.start + len(body) - len(body.lstrip())
    if any(e.pos == first_char and e.char in CLOSERS for e in result.escapes):
        # The line closes the bracket that opened the unit: keep it; the parse check decides
        # whether the file wanted it (the suffix may close the block already).
        cut.pos = min(cut.pos, line.end)
        cut.complete = line.end < len(text)
        cut.closer_line = line
        cut.extra.append(max(line.start - 1, 0))
    else:
        cut.pos, cut.complete = max(line.start - 1, 0), True
