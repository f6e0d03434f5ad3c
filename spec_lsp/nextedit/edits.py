"""From a region's old and new lines to the smallest edits of the document, and which to show.

`region_edits` diffs the lines (difflib), then trims each changed block to the characters that
differ (common start and end), so an edit replaces `self.count` -> `self.total` as the word, not
the line; a block of lines removed is one edit whose text is empty, lines added one whose range is
empty. `reverts` tells an edit that would undo one of the user's own recent edits (a model
"fixing" code the user just changed back to what it was): such an edit is never shown, nor one
that only moves whitespace (`cosmetic`), nor one far from every recent edit that touches none of
the words they changed (`unrelated`). `choose`
picks the edit to show: the first at or below the cursor's line, else the nearest above.
Positions are (row, col) in characters of the document's lines. Knows nothing of LSP or models.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from spec_lsp.completion.history import Hunk

FAR = 30  # lines between an edit and every recent hunk past which it must touch a changed word
WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Replacement:
    start: tuple[int, int]
    end: tuple[int, int]
    text: str

    def apply(self, lines: list[str]) -> list[str]:
        """`lines` with this edit made (a new list)."""
        (r1, c1), (r2, c2) = self.start, self.end
        out = lines[:r1] + (lines[r1][:c1] + self.text + lines[r2][c2:]).split("\n")
        return out + lines[r2 + 1 :]


def _offset_to_pos(lines: list[str], first: int, offset: int) -> tuple[int, int]:
    """The (row, col) of character `offset` in `lines` joined by newlines, rows from `first`."""
    for i, line in enumerate(lines):
        if offset <= len(line):
            return first + i, offset
        offset -= len(line) + 1
    return first + len(lines) - 1, len(lines[-1]) if lines else 0


def _trimmed(doc: list[str], row: int, old: list[str], new: list[str]) -> Replacement | None:
    """The edit replacing whole lines `old` (at document line `row`) by `new`, trimmed to the
    characters that differ."""
    if not old:  # an insertion of whole lines before `row`
        if row < len(doc):
            return Replacement((row, 0), (row, 0), "".join(line + "\n" for line in new))
        last = len(doc) - 1
        return Replacement(
            (last, len(doc[last])), (last, len(doc[last])), "".join("\n" + s for s in new)
        )
    a, b = "\n".join(old), "\n".join(new)
    if not new:  # whole lines removed, with their line break
        end_row = row + len(old)
        if end_row < len(doc):
            return Replacement((row, 0), (end_row, 0), "")
        if row == 0:
            return Replacement((0, 0), (end_row - 1, len(doc[end_row - 1])), "")
        return Replacement((row - 1, len(doc[row - 1])), (end_row - 1, len(doc[end_row - 1])), "")
    p = 0
    while p < min(len(a), len(b)) and a[p] == b[p]:
        p += 1
    s = 0
    while s < min(len(a), len(b)) - p and a[-1 - s] == b[-1 - s]:
        s += 1
    if p == len(a) == len(b):
        return None
    # Whole words: `width` -> `w` replaces the word, not its tail (`idth` deleted).
    while p > 0 and _word(a[p - 1]) and (_word(a[p]) if p < len(a) else True):
        p -= 1
    while s > 0 and _word(a[len(a) - s]) and (len(a) - s - 1 < p or _word(a[len(a) - s - 1])):
        s -= 1
    start = _offset_to_pos(old, row, p)
    end = _offset_to_pos(old, row, len(a) - s)
    return Replacement(start, end, b[p : len(b) - s])


def _word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def region_edits(doc: list[str], first: int, old: list[str], new: list[str]) -> list[Replacement]:
    """The edits that turn the region `old` (document lines from `first`) into `new`, in
    document order."""
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    edits = []
    for tag, a1, a2, b1, b2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if tag == "replace" and a2 - a1 == b2 - b1:  # line for line: an edit per line
            blocks = [(a, b, 1) for a, b in zip(range(a1, a2), range(b1, b2), strict=True)]
        else:
            blocks = [(a1, b1, 0)]
        for a, b, one in blocks:
            old_lines = old[a : a + one] if one else old[a1:a2]
            new_lines = new[b : b + one] if one else new[b1:b2]
            edit = _trimmed(doc, first + a, old_lines, new_lines)
            if edit is not None:
                edits.append(edit)
    return edits


def reverts(edit: Replacement, doc: list[str], hunks: list[Hunk]) -> bool:
    """Whether making `edit` puts back the old text of one of the user's recent hunks."""
    after = edit.apply(doc)
    delta = len(after) - len(doc)
    for hunk in hunks[-3:]:
        if hunk.old == hunk.new or doc[hunk.start : hunk.end] != hunk.new:
            continue
        if edit.end[0] < hunk.start - 1 or edit.start[0] > hunk.end:
            continue  # away from the hunk: it cannot be undone by this edit
        window = after[hunk.start : hunk.start + len(hunk.old)]
        if window == hunk.old and delta == len(hunk.old) - len(hunk.new):
            return True
    return False


def replaced(edit: Replacement, doc: list[str]) -> str:
    """The document text an edit replaces."""
    (r1, c1), (r2, c2) = edit.start, edit.end
    if r1 == r2:
        return doc[r1][c1:c2]
    return "\n".join([doc[r1][c1:], *doc[r1 + 1 : r2], doc[r2][:c2]])


def cosmetic(edit: Replacement, doc: list[str]) -> bool:
    """Whether an edit only moves whitespace (a blank line, an indent, a trailing space): a
    small model's slip more often than anyone's next edit; never shown."""
    return "".join(replaced(edit, doc).split()) == "".join(edit.text.split())


def changed_names(hunks: list[Hunk]) -> set[str]:
    """The words the recent hunks took out or put in (a renamed name's old and new spelling)."""
    names: set[str] = set()
    for hunk in hunks:
        names |= set(WORDS.findall("\n".join(hunk.old))) ^ set(WORDS.findall("\n".join(hunk.new)))
    return names


def unrelated(edit: Replacement, doc: list[str], hunks: list[Hunk]) -> bool:
    """Whether an edit lies more than `FAR` lines from every recent hunk and touches none of the
    words they changed. Far from the user's edits a next edit carries their change through (a
    renamed name's other uses, a new argument at a call); anything else there "improves" code
    nobody touched, a small model's habit more often than anyone's next edit. Never shown."""
    r1, r2 = edit.start[0], edit.end[0]
    if any(r1 <= hunk.end + FAR and r2 >= hunk.start - FAR for hunk in hunks):
        return False
    touched = set(WORDS.findall(replaced(edit, doc))) | set(WORDS.findall(edit.text))
    return not touched & changed_names(hunks)


def choose(edits: list[Replacement], row: int) -> Replacement | None:
    """The edit to show for a cursor on `row`: the first at or below it, else the last above."""
    below = [e for e in edits if e.end[0] >= row]
    if below:
        return below[0]
    return edits[-1] if edits else None
