"""Position encodings: LSP code units (UTF-8, UTF-16, UTF-32) to and from Python characters.

The one place that knows how wide a character is on the wire. LSP positions count UTF-16 code
units unless the client negotiated UTF-8 (bytes) or UTF-32 (code points); inside spec-lsp, columns
and offsets count Python str characters. Used by the server's documents (`documents.py`) and by
the replayer (`replay/document.py`). It imports nothing, so any room may use it.
"""

from __future__ import annotations

Encoding = str  # "utf-16" | "utf-8" | "utf-32"


def char_units(ch: str, encoding: Encoding) -> int:
    """Code units of one character in `encoding`."""
    cp = ord(ch)
    if encoding == "utf-32":
        return 1
    if encoding == "utf-8":
        return 1 if cp < 0x80 else 2 if cp < 0x800 else 3 if cp < 0x10000 else 4
    return 2 if cp > 0xFFFF else 1


def units_len(text: str, encoding: Encoding) -> int:
    """Length of `text` in the encoding's code units."""
    if encoding == "utf-32" or text.isascii():
        return len(text)
    return sum(char_units(ch, encoding) for ch in text)


def col_from_units(line: str, units: int, encoding: Encoding) -> int:
    """Character column of `units` code units into `line`, clamped to the line (0..len(line)).

    A position inside a surrogate pair (or a UTF-8 sequence) rounds down to the character start.
    """
    units = max(0, units)
    if encoding == "utf-32" or line.isascii():
        return min(units, len(line))
    seen = 0
    for i, ch in enumerate(line):
        width = char_units(ch, encoding)
        if seen + width > units:
            return i
        seen += width
    return len(line)
