"""Open documents: text as lines, versions, and positions in the negotiated encoding.

This module owns the server's copy of each open document and the conversion between LSP
positions (UTF-16 code units by default, UTF-8 or UTF-32 when negotiated) and (row, col) in Python
characters, the unit the syntax layer and the prompt builder use (the unit arithmetic itself is
`positions.py`'s). It knows nothing of pygls.
"""

from __future__ import annotations

from dataclasses import dataclass

from spec_lsp.positions import Encoding, col_from_units


@dataclass
class Document:
    uri: str
    language_id: str
    version: int
    lines: list[str]  # without line terminators; the text is "\n".join(lines)

    @classmethod
    def from_text(cls, uri: str, language_id: str, version: int, text: str) -> Document:
        return cls(uri, language_id, version, text.split("\n"))

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def position(self, line: int, character: int, encoding: Encoding) -> tuple[int, int] | None:
        """(row, col) in characters, or None when the line is past the end of the document."""
        if line < 0 or character < 0 or line >= len(self.lines):
            return None
        return line, col_from_units(self.lines[line], character, encoding)

    def clamp(self, line: int, character: int, encoding: Encoding) -> tuple[int, int]:
        if line >= len(self.lines):
            return len(self.lines) - 1, len(self.lines[-1])
        return max(0, line), col_from_units(self.lines[max(0, line)], max(0, character), encoding)

    def apply(self, start: tuple[int, int], end: tuple[int, int], new_text: str) -> None:
        """Replaces the text between two (row, col) character positions."""
        (r1, c1), (r2, c2) = sorted((start, end))
        head = self.lines[r1][:c1]
        tail = self.lines[r2][c2:]
        self.lines[r1 : r2 + 1] = (head + new_text + tail).split("\n")

    def prefix_suffix(self, row: int, col: int) -> tuple[str, str]:
        return split_at(self.lines, row, col)


def split_at(lines: list[str], row: int, col: int) -> tuple[str, str]:
    """The text of `lines` (joined by "\\n") before and after (row, col)."""
    prefix = "\n".join(lines[:row] + [lines[row][:col]])
    suffix = "\n".join([lines[row][col:]] + lines[row + 1 :])
    return prefix, suffix


class DocumentStore:
    def __init__(self) -> None:
        self._docs: dict[str, Document] = {}

    def open(self, uri: str, language_id: str, version: int, text: str) -> Document:
        doc = Document.from_text(uri, language_id, version, text)
        self._docs[uri] = doc
        return doc

    def get(self, uri: str) -> Document | None:
        return self._docs.get(uri)

    def close(self, uri: str) -> Document | None:
        return self._docs.pop(uri, None)

    def uris(self) -> list[str]:
        return list(self._docs)

    def __len__(self) -> int:
        return len(self._docs)
