"""Edit history: each open document's recent edits, coalesced into hunks as a person makes them.

A `Hunk` is a run of whole lines before and after an edit, placed at its first line in the
document as it is now. Each `didChange` content change is recorded with the lines it touched
before it was applied (`EditHistory.record`): a change on the lines of the document's latest hunk,
within `BURST_S` of it, is the same hunk (a burst of typing on one line is one hunk, and so is a
line broken in two and typed on); any other change, the next line's included, starts a new one
(a rename carried to the next line is two edits, the model sees both). A hunk whose text ends as
it began (typed, then deleted) is dropped. Hunks below a change move with the lines it added or
removed.

Bounded: `MAX_HUNKS` hunks per document, `MAX_HUNK_CHARS` characters of each side of a hunk (a
longer side is kept as its first lines), `MAX_DOCS` documents; a document's history is forgotten
on close. The caller never records a file that `privateFiles`/`exclude` names (the service checks).

This is the input of next edit (`spec_lsp.nextedit`), rendered as unified diffs (`Hunk.diff`),
and of completion prompts (other documents' edits: `completion/repo.py`). It knows nothing of
LSP, prompts or models.
"""

from __future__ import annotations

import difflib
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

BURST_S = 30.0  # a change this soon after the latest hunk, next to it, extends it
MAX_HUNKS = 16
MAX_HUNK_CHARS = 2000
MAX_DOCS = 64
MAX_FULL_DIFF_LINES = 5000  # a whole-text change of a longer document is recorded as nothing


@dataclass
class Hunk:
    start: int  # first line of `new` in the document now (0-based)
    old: list[str]  # the lines before the edit
    new: list[str]  # the lines after it
    at: float = 0.0  # when it last changed (the history's clock)

    @property
    def end(self) -> int:
        """One past the last line of `new` in the document now."""
        return self.start + len(self.new)

    def touches(self, first: int, last: int) -> bool:
        """Whether lines first..last (of the document before a change) are among its lines
        (for a hunk that removed its lines, the lines either side of where they were)."""
        if not self.new:
            return first <= self.start and last >= self.start - 1
        return first < self.end and last >= self.start

    def diff(self, path: str = "") -> str:
        """The hunk as a unified diff, without file headers unless `path` is given."""
        head = f"--- a/{path}\n+++ b/{path}\n" if path else ""
        old_start = self.start + 1 if self.old else self.start
        new_start = self.start + 1 if self.new else self.start
        lines = [f"@@ -{old_start},{len(self.old)} +{new_start},{len(self.new)} @@"]
        lines += ["-" + line for line in self.old] + ["+" + line for line in self.new]
        return head + "\n".join(lines) + "\n"


def _bounded(lines: list[str]) -> list[str]:
    """The first lines of `lines` within MAX_HUNK_CHARS characters (at least one, cut)."""
    out: list[str] = []
    size = 0
    for line in lines:
        size += len(line) + 1
        if size > MAX_HUNK_CHARS:
            if not out:
                out.append(line[:MAX_HUNK_CHARS])
            break
        out.append(line)
    return out


@dataclass
class _Doc:
    hunks: list[Hunk] = field(default_factory=list)


class EditHistory:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._docs: OrderedDict[str, _Doc] = OrderedDict()

    def hunks(self, uri: str) -> list[Hunk]:
        """The document's hunks, oldest first (a copy of the list)."""
        doc = self._docs.get(uri)
        return list(doc.hunks) if doc is not None else []

    def documents(self) -> list[str]:
        """The documents with hunks, the one edited last at the end."""
        return [uri for uri, doc in self._docs.items() if doc.hunks]

    def last(self, uri: str) -> Hunk | None:
        doc = self._docs.get(uri)
        return doc.hunks[-1] if doc is not None and doc.hunks else None

    def forget(self, uri: str) -> None:
        self._docs.pop(uri, None)

    def record(self, uri: str, old: list[str], first: int, after: list[str], added: int) -> None:
        """A change replaced the lines `old` (from line `first`, read before it was applied) by
        `added` + 1 lines, starting at `first` of `after` (the document's lines once applied)."""
        last = first + len(old) - 1
        new = after[first : first + added + 1]
        delta = added + 1 - len(old)
        doc = self._docs.pop(uri, None) or _Doc()
        self._docs[uri] = doc
        while len(self._docs) > MAX_DOCS:
            self._docs.popitem(last=False)
        now = self.clock()
        latest = doc.hunks[-1] if doc.hunks else None
        if latest is not None and now - latest.at <= BURST_S and latest.touches(first, last):
            doc.hunks.pop()
            lo, hi = min(first, latest.start), max(last, latest.end - 1)
            # Before the change, the latest hunk's lines were its `new`: its `old` widens by the
            # lines this change replaced around it (they lie in `old`), then the union's lines
            # come from `after`.
            head = old[: max(0, latest.start - first)]
            tail = old[latest.end - first :] if hi >= latest.end else []
            old = head + latest.old + tail
            new = after[lo : hi + 1 + delta]
            first = lo
        for hunk in doc.hunks:  # older hunks below the change move with its lines
            if hunk.start > last:
                hunk.start += delta
        if old != new:
            doc.hunks.append(Hunk(first, _bounded(old), _bounded(new), now))
        del doc.hunks[:-MAX_HUNKS]

    def record_whole(self, uri: str, before: list[str], after: list[str]) -> None:
        """A change that replaced the whole text: its line hunks, from a diff (nothing for a
        document over MAX_FULL_DIFF_LINES lines)."""
        if max(len(before), len(after)) > MAX_FULL_DIFF_LINES:
            return
        matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
        doc = self._docs.pop(uri, None) or _Doc()
        self._docs[uri] = doc
        now = self.clock()
        for tag, a1, a2, b1, b2 in matcher.get_opcodes():
            if tag != "equal":
                doc.hunks.append(Hunk(b1, _bounded(before[a1:a2]), _bounded(after[b1:b2]), now))
        del doc.hunks[:-MAX_HUNKS]
