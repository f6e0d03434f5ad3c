"""Whether to complete at the cursor, and how much: "none" (in the middle of a word, or in a
comment when those are off), "single" (within the line, whose rest is already there) or "multi"
(anything else: the default is to keep what the model wrote).
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node, Tree

from spec_lsp.syntax.cursor import CLOSING_CHARS, Cursor
from spec_lsp.syntax.languages import LanguageSpec
from spec_lsp.syntax.lexer import scan
from spec_lsp.syntax.units import Mode


@dataclass(frozen=True)
class Inside:
    comment: bool = False
    string: str | None = None  # the quote of the string the cursor is in


def inside(spec: LanguageSpec, cursor: Cursor, tree: Tree | None, at_byte: int) -> Inside:
    """Whether the cursor is in a comment or a string: the line's text first, then the tree for
    strings and comments that began on an earlier line."""
    line = scan(cursor.line_prefix, spec)
    if line.end_comment:
        return Inside(comment=True)
    if tree is not None and line.end_string is not None and _in_substitution(tree, at_byte):
        return Inside()  # `${...}` in a template string, `{...}` in an f-string: code
    if line.end_string is not None:
        return Inside(string=line.end_string)
    if tree is None:
        return Inside()
    node: Node | None = tree.root_node.descendant_for_byte_range(at_byte, at_byte)
    while node is not None:
        if node.start_byte < at_byte:
            if node.type in spec.comment_types and _comment_open(node, at_byte):
                return Inside(comment=True)
            if node.type in spec.string_types and at_byte < node.end_byte:
                return Inside(string=_quote_of(spec, node))
        node = node.parent
    return Inside()


def _in_substitution(tree: Tree, at_byte: int) -> bool:
    node: Node | None = tree.root_node.descendant_for_byte_range(at_byte, at_byte)
    while node is not None:
        if node.type in _SUBSTITUTIONS and node.start_byte < at_byte:
            return True
        if "string" in node.type and node.type not in _SUBSTITUTIONS:
            return False
        node = node.parent
    return False


_SUBSTITUTIONS = frozenset({"template_substitution", "interpolation"})


def _comment_open(node: Node, at_byte: int) -> bool:
    text = node.text or b""
    if at_byte < node.end_byte:
        return True
    return not text.endswith(b"*/")  # a line comment runs to the end of its line


def _quote_of(spec: LanguageSpec, node: Node) -> str | None:
    text = (node.text or b"").decode("utf-8", "replace").lstrip("rRbBfFuUlL#@$")
    for quote in spec.quotes:
        if text.startswith(quote):
            return quote
    return None


def mode_of(spec: LanguageSpec, cursor: Cursor, where: Inside, comments: bool = True) -> Mode:
    """Multi-line unless the rest of the cursor's line is already there (code right of the
    cursor, a one-line string or comment): a block, a list, a mapping, a multi-line string, the
    end of a line the model may continue on the next lines."""
    before, after = cursor.line_prefix, cursor.line_suffix
    if where.comment:
        return "single" if comments else "none"
    if before and after and _word(before[-1]) and _word(after[0]):
        return "none"  # in the middle of a word
    if where.string is not None:
        return "multi" if where.string in spec.multiline_quotes else "single"
    if any(ch not in CLOSING_CHARS for ch in after):
        return "single"  # the rest of the line is there: complete within it
    return "multi"


def _word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"
