"""One open document: its text and its parse tree, kept in step edit by edit.

Positions are (row, col) with col in Python str characters. Each edit is described to tree-sitter
in bytes and (row, byte column) points (`Tree.edit`), then the document is reparsed with the old
tree, so only the edited region is parsed again.
"""

from __future__ import annotations

from tree_sitter import Parser, Point, Tree

from spec_lsp.syntax.languages import LanguageSpec, new_parser
from spec_lsp.syntax.parsecheck import end_point


def encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def byte_len(text: str) -> int:
    return len(text) if text.isascii() else len(encode(text))


class ParsedDocument:
    """A document's text and its tree-sitter tree (none for a language without a grammar)."""

    def __init__(self, spec: LanguageSpec, text: str) -> None:
        self.spec = spec
        self.text = text
        self.parser: Parser | None = new_parser(spec)
        self.tree: Tree | None = self.parser.parse(encode(text)) if self.parser else None
        self._line_starts: list[int] | None = None

    # -- positions --------------------------------------------------------------------------

    def line_starts(self) -> list[int]:
        if self._line_starts is None:
            starts, pos = [0], self.text.find("\n")
            while pos >= 0:
                starts.append(pos + 1)
                pos = self.text.find("\n", pos + 1)
            self._line_starts = starts
        return self._line_starts

    def clamp(self, row: int, col: int) -> tuple[int, int]:
        """The nearest valid position: rows past the end go to the end, cols to the line end."""
        starts = self.line_starts()
        if row < 0:
            return 0, 0
        if row >= len(starts):
            row = len(starts) - 1
            return row, len(self.text) - starts[row]
        end = starts[row + 1] - 1 if row + 1 < len(starts) else len(self.text)
        return row, max(0, min(col, end - starts[row]))

    def offset(self, row: int, col: int) -> int:
        row, col = self.clamp(row, col)
        return self.line_starts()[row] + col

    def point(self, row: int, col: int) -> Point:
        row, col = self.clamp(row, col)
        start = self.line_starts()[row]
        return Point(row, byte_len(self.text[start : start + col]))

    def byte_offset(self, offset: int) -> int:
        return byte_len(self.text[:offset])

    # -- edits ------------------------------------------------------------------------------

    def apply_edit(self, start: tuple[int, int], end: tuple[int, int], new_text: str) -> None:
        start_off, end_off = self.offset(*start), self.offset(*end)
        if end_off < start_off:
            start, end, start_off, end_off = end, start, end_off, start_off
        start_point, old_end_point = self.point(*start), self.point(*end)
        start_byte = self.byte_offset(start_off)
        old_end_byte = start_byte + byte_len(self.text[start_off:end_off])
        inserted = encode(new_text)
        self.text = self.text[:start_off] + new_text + self.text[end_off:]
        self._line_starts = None
        if self.parser is None or self.tree is None:
            return
        self.tree.edit(
            start_byte=start_byte,
            old_end_byte=old_end_byte,
            new_end_byte=start_byte + len(inserted),
            start_point=start_point,
            old_end_point=old_end_point,
            new_end_point=end_point(start_point, inserted),
        )
        self.tree = self.parser.parse(encode(self.text), old_tree=self.tree)

    def replace(self, text: str) -> None:
        self.text = text
        self._line_starts = None
        if self.parser is not None:
            self.tree = self.parser.parse(encode(text))

    def split(self, row: int, col: int) -> tuple[str, str]:
        """(prefix, suffix) around a position."""
        at = self.offset(row, col)
        return self.text[:at], self.text[at:]
