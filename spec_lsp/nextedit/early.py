"""The first edit of a rewrite still being written: shown before the rewrite ends.

Only one edit is shown at a time, and the model writes the region top to bottom, so an edit is
known as soon as the rewrite has written it and then `SETTLE_LINES` lines of the old region
again, unchanged: the rewrite is back in step with the old text after it. `settled_edits` finds
the edits of the complete lines streamed so far that are settled that way; the service answers
with the first at or below the cursor and lets the rewrite go on (its rest answers the next
request). Pure functions of lines.
"""

from __future__ import annotations

import difflib

from spec_lsp.nextedit.edits import Replacement, region_edits

SETTLE_LINES = 2  # unchanged old lines written after an edit that settle it


def complete_lines(streamed: str) -> list[str] | None:
    """The complete lines of a rewrite's text so far (None before the first)."""
    end = streamed.rfind("\n")
    return None if end < 0 else streamed[:end].split("\n")


def settled_edits(
    doc: list[str], first: int, old: list[str], written: list[str]
) -> list[Replacement]:
    """The edits among `written` (the rewrite's complete lines so far) that are settled: each
    changed block is followed by at least SETTLE_LINES lines equal to the old lines after it."""
    matcher = difflib.SequenceMatcher(a=old, b=written, autojunk=False)
    ops = matcher.get_opcodes()
    out: list[Replacement] = []
    for n, (tag, a1, a2, b1, b2) in enumerate(ops):
        if tag == "equal":
            continue
        after = ops[n + 1] if n + 1 < len(ops) else None
        if after is None or after[0] != "equal" or after[2] - after[1] < SETTLE_LINES:
            break  # the rewrite may still be inside this change
        out += region_edits(doc, first + a1, old[a1:a2], written[b1:b2])
    return out
