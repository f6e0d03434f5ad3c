"""The editable region of a next edit, and the file's lines shown around it.

The region is `SPAN_ABOVE` lines above the cursor's line and `SPAN` below; widened to take in
the latest edit's lines and one line either side when that edit is within `NEAR` lines (its
neighbourhood is where the next edit most often is); then moved to syntax boundaries (`snap`: the
syntax layer widens a side that cuts through a statement, by `REACH` lines at most); `MAX_LINES`
lines at most, kept around the cursor. Around it the prompt shows up to `ABOVE` lines before and
`BELOW` after, within `CONTEXT_CHARS` and `BELOW_CHARS` characters, and the recent edits within
`DIFF_CHARS` (`recent_hunks`). Pure functions of lines and rows.
"""

from __future__ import annotations

from collections.abc import Callable

from spec_lsp.completion.history import Hunk

# About ten lines around the cursor (the latest edit's lines added when it is near): the region is
# prefilled again and rewritten at every request, so each line costs latency twice.
SPAN = 6
# Fewer lines above the cursor: the model writes the region from its top, and an edit is shown
# once written (`early.py`), so each line above it is paid before the answer.
SPAN_ABOVE = 5
NEAR = 30
REACH = 6
MAX_LINES = 30
MAX_CHARS = 1800  # the region's characters (~500 tokens of code): its rewrite is the latency
# The file around the region and the recent edits: enough to name what the region uses, small
# enough that the prompt (with the region: ~1,400 tokens at most) stays under the `coder`
# preset's window of 1,536 (a prompt over it is cut at a moving start, and no KV is reused).
ABOVE, BELOW = 40, 12
CONTEXT_CHARS = 1500
BELOW_CHARS = 700
DIFF_CHARS = 1200
STEP = 16

Snap = Callable[[str, int, int, int], "tuple[int, int]"]  # (uri, first, last, reach) -> rows


def editable_region(
    lines: list[str], row: int, last: Hunk | None, snap: Snap | None = None, uri: str = ""
) -> tuple[int, int]:
    """(first, last) line of the region for a cursor on `row` (inclusive)."""
    end = len(lines) - 1
    if end > 0 and lines[end] == "":  # the empty "line" after a final newline is no line
        end -= 1
    first, final = max(0, row - SPAN_ABOVE), min(end, row + SPAN)
    if last is not None and abs(last.start - row) <= NEAR:
        first = max(0, min(first, last.start - 1))
        final = min(end, max(final, last.end))
    if snap is not None:
        first, final = snap(uri, first, final, REACH)
        first, final = max(0, first), min(end, final)
    if final - first + 1 > MAX_LINES:  # keep the cursor, the latest edit and what is between
        near = last is not None and abs(last.start - row) <= NEAR
        lo = min(row, last.start) if near and last is not None else row
        hi = max(row, last.end) if near and last is not None else row
        middle = (lo + hi) // 2
        first = max(first, min(middle - MAX_LINES // 2, final - MAX_LINES + 1))
        final = min(final, first + MAX_LINES - 1)
    while sum(len(s) + 1 for s in lines[first : final + 1]) > MAX_CHARS and first < final:
        if final > row and (final - row >= row - first or first == row):
            final -= 1  # long lines: give up the side farther from the cursor first
        else:
            first += 1
    return first, final


def context_lines(lines: list[str], first: int, last: int) -> tuple[list[str], list[str]]:
    """The lines shown above and below a region, bounded in count and characters. The lines
    above start on a multiple of `STEP`, chosen from the first multiple of `STEP` at or after the
    region's first line, not from the line itself (and dropped in whole steps to fit the
    characters): the region moving by a line or two, as the cursor and the latest edit move it,
    leaves the excerpt's start, and so the KV of the prompt up to the region, as it was."""
    anchor = min(-(-first // STEP) * STEP, len(lines))
    start = max(0, (anchor - ABOVE) // STEP * STEP)
    while start < first and sum(len(s) + 1 for s in lines[start:anchor]) > CONTEXT_CHARS:
        start += STEP
    above = lines[min(start, first) : first]
    below: list[str] = []
    size = 0
    for line in lines[last + 1 : last + 1 + BELOW]:
        size += len(line) + 1
        if size > BELOW_CHARS:
            break
        below.append(line)
    return above, below


def recent_hunks(hunks: list[Hunk]) -> list[Hunk]:
    """The newest of `hunks` (oldest first) whose diffs fit `DIFF_CHARS` (the newest always): the
    prompt's recent edits. Older hunks leave in whole, so the diffs that stay keep their text."""
    kept: list[Hunk] = []
    size = 0
    for hunk in reversed(hunks):
        size += len(hunk.diff())
        if kept and size > DIFF_CHARS:
            break
        kept.append(hunk)
    return kept[::-1]
