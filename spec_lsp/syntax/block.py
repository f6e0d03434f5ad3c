"""The whole-block rule: where a person is about to write a block whole, and where it ends.

A cursor on a blank line whose block has nothing written below it is where a person writes the
rest of that block: the line above opens a block, or is inside one, and the next non-blank line
is indented less than that block (or there is none), as in

    for x in xs:
        █
    return total

So is any position of an explicit request (the user asked: `Block = "asked"`). In both the
completion side gives the generation a cap sized for a block instead of one line's worth
(`Planner`: the `blockTokens` setting), and the trim ends the block where the suffix says it ends:

- the indentation of the suffix's first non-blank line is where the hole ends: where the block
  is unwritten, a line back at that indentation or less (the next `def` beside the suffix's);
  in the middle of a block, a line indented less than it (`level`; the cursor's own block end,
  where it is deeper, is kept). A blank line at column 0 (every HumanEval hole) otherwise has no
  indentation to go by, and a generation there ran on until the cap;
- a line that is the suffix's first line ends it too, dropped (`units`' "suffix-repeat");
- a generation that stopped at the cap ends inside a line: that line is dropped (`capped`; not
  the first line, which is judged as without the rule), and then any block header left without
  a body (`trim`'s "header-without-body").

This module knows only text: the cursor's lines and the prefix.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from spec_lsp.syntax.cursor import Cursor, opens_block
from spec_lsp.syntax.languages import LanguageSpec
from spec_lsp.syntax.lexer import indent_width
from spec_lsp.syntax.units import CutPlan, _header_indent

# "off": never (the `blockTokens` setting is 0); "auto": where the cursor's block is unwritten;
# "asked": an explicit request, wherever the mode is multi-line.
Block = Literal["off", "auto", "asked"]


def unwritten(spec: LanguageSpec, cursor: Cursor) -> bool:
    """Whether the cursor sits on a blank line inside a block (the line above opens one or is
    indented) and nothing more of that block is written below it: the next non-blank line is
    indented less than the block's body, or there is none."""
    if not cursor.blank_line or not spec.dedent_ends or cursor.prev_line is None:
        return False
    prev = cursor.prev_line
    body = indent_width(prev) + (1 if opens_block(prev, spec) else 0)
    if body == 0:
        return False  # the top level: no block to finish
    return cursor.next_line is None or indent_width(cursor.next_line) < body


def applies(block: Block, spec: LanguageSpec, cursor: Cursor, mode: str) -> bool:
    """Whether the whole-block rule holds at this cursor."""
    if block == "off" or mode != "multi":
        return False
    return block == "asked" or unwritten(spec, cursor)


def block_plan(plan: CutPlan, spec: LanguageSpec, cursor: Cursor, prefix: str) -> CutPlan:
    """`plan` with the hole's end where the suffix says it is, on a blank line: where the block
    is unwritten (`unwritten`), a line back at the suffix's first line's indentation or less
    ends it (a new `def` beside the next one); in the middle of a block, a line indented less
    than that line. Never looser than `plan`'s own end (the cursor's indentation, a header's
    body); `header` is the new level's header, where `else` and the like continue it."""
    if not cursor.blank_line or cursor.next_line is None or not plan.spec.dedent_ends:
        return plan
    level = indent_width(cursor.next_line) + (1 if unwritten(spec, cursor) else 0)
    if level <= plan.level:
        return plan
    return replace(plan, level=level, header=_header_indent(prefix, level))


def without_last_line(text: str) -> str:
    """`text` up to its last line break (a generation cut by its token cap ends inside a line),
    when a line with code comes before it; else `text` as it is (the first line, judged as
    without the rule)."""
    head = text[: text.rfind("\n")] if "\n" in text else ""
    return head if head.strip() else text


__all__ = ["Block", "applies", "block_plan", "unwritten", "without_last_line"]
