"""The replayer's copy of each open document: text, version, and LSP positions in any encoding.

Positions on the wire count UTF-16 code units by default (or UTF-8 bytes / code points when the
session says so); inside, offsets count Python str characters. The unit arithmetic is
`spec_lsp.positions`'s, shared with the server's documents.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from spec_lsp.positions import Encoding, col_from_units, units_len


def offset_of(text: str, line: int, character: int, encoding: Encoding = "utf-16") -> int:
    """The str offset of an LSP position; positions past a line's end clamp to it."""
    start = 0
    for _ in range(line):
        nl = text.find("\n", start)
        if nl < 0:
            return len(text)
        start = nl + 1
    end = text.find("\n", start)
    end = len(text) if end < 0 else end
    return start + col_from_units(text[start:end], character, encoding)


def position_of(text: str, offset: int, encoding: Encoding = "utf-16") -> dict[str, int]:
    """The LSP position of a str offset."""
    line = text.count("\n", 0, offset)
    line_start = text.rfind("\n", 0, offset) + 1
    return {"line": line, "character": units_len(text[line_start:offset], encoding)}


@dataclass(frozen=True)
class Edit:
    """One change in str offsets: `old_len` characters at `start` replaced by `text`."""

    start: int
    old_len: int
    text: str

    @property
    def end_after(self) -> int:
        return self.start + len(self.text)


def diff_edit(old: str, new: str) -> Edit:
    """The smallest single edit turning `old` into `new` (for full-text changes)."""
    prefix = 0
    limit = min(len(old), len(new))
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    return Edit(prefix, len(old) - prefix - suffix, new[prefix : len(new) - suffix])


@dataclass
class ReplayDocument:
    """A document as a replay knows it: the text its recorded edits apply to."""

    uri: str
    language_id: str
    version: int
    text: str
    encoding: str = "utf-16"

    def offset(self, position: dict[str, Any]) -> int:
        return offset_of(
            self.text, int(position["line"]), int(position["character"]), self.encoding
        )

    def apply(self, changes: list[dict[str, Any]], version: int) -> list[Edit]:
        """Applies a didChange's contentChanges in order; returns them as str-offset edits."""
        edits = []
        for change in changes:
            if "range" in change and change["range"] is not None:
                start = self.offset(change["range"]["start"])
                end = max(start, self.offset(change["range"]["end"]))
                edit = Edit(start, end - start, change["text"])
            else:
                edit = diff_edit(self.text, change["text"])
            self.text = self.text[: edit.start] + edit.text + self.text[edit.start + edit.old_len :]
            edits.append(edit)
        self.version = version
        return edits
