"""Counting parse errors of the file with a candidate completion inserted at the cursor.

The file without the completion is parsed once (or its tree comes from the open document); each
candidate is an insertion at the cursor, applied to a copy of that tree with `Tree.edit` and
reparsed with the old tree, so tree-sitter reuses everything outside the edited region. In a large
file an insertion that breaks the code can still make tree-sitter re-run error recovery over much
of it, so there the check parses a window instead: the largest syntax node around the cursor that
fits in `WINDOW_BYTES` (the same window for the file with and without each candidate).
"""

from __future__ import annotations

from tree_sitter import Node, Parser, Point, Tree

WINDOW_BYTES = 16_000


def count_errors(node: Node) -> int:
    """ERROR and MISSING nodes in the tree; walks only subtrees that contain an error."""
    if not node.has_error:
        return 0
    total, stack = 0, [node]
    while stack:
        current = stack.pop()
        if current.is_error or current.is_missing:
            total += 1
        stack.extend(child for child in current.children if child.has_error or child.is_missing)
    return total


def end_point(start: Point | tuple[int, int], inserted: bytes) -> Point:
    """Where an insertion of `inserted` at `start` ends, as (row, byte column)."""
    row, column = start
    lines = inserted.count(b"\n")
    if lines == 0:
        return Point(row, column + len(inserted))
    return Point(row + lines, len(inserted) - inserted.rfind(b"\n") - 1)


class ErrorProbe:
    """Parse errors of `prefix + middle + suffix` for many `middle`s."""

    def __init__(
        self, parser: Parser, prefix: bytes, suffix: bytes, tree: Tree | None = None
    ) -> None:
        self._parser = parser
        self._prefix, self._suffix = prefix, suffix
        self._tree = tree if tree is not None else parser.parse(self._prefix + self._suffix)
        self._at = end_point((0, 0), self._prefix)
        self.baseline = count_errors(self._tree.root_node)
        self._cache: dict[str, int] = {"": self.baseline}

    def errors(self, middle: str) -> int:
        if middle in self._cache:
            return self._cache[middle]
        inserted = middle.encode("utf-8", "surrogatepass")
        tree = self._tree.copy()
        start = len(self._prefix)
        tree.edit(
            start_byte=start,
            old_end_byte=start,
            new_end_byte=start + len(inserted),
            start_point=self._at,
            old_end_point=self._at,
            new_end_point=end_point(self._at, inserted),
        )
        new = self._parser.parse(self._prefix + inserted + self._suffix, old_tree=tree)
        self._cache[middle] = count_errors(new.root_node)
        return self._cache[middle]


def make_probe(parser: Parser, prefix: str, suffix: str, tree: Tree | None) -> ErrorProbe:
    """A probe over the whole file when it is small, else over a window around the cursor."""
    pre = prefix.encode("utf-8", "surrogatepass")
    suf = suffix.encode("utf-8", "surrogatepass")
    if len(pre) + len(suf) <= WINDOW_BYTES:
        return ErrorProbe(parser, pre, suf, tree)
    source = pre + suf
    start, end = window(source, len(pre), tree)
    return ErrorProbe(parser, pre[start:], suf[: max(0, end - len(pre))])


def window(source: bytes, at: int, tree: Tree | None, limit: int = WINDOW_BYTES) -> tuple[int, int]:
    """(start, end) byte offsets of whole lines around `at`: the largest node holding the code
    before the cursor that fits in `limit`, else about 200 lines before and 60 after."""
    anchor = max(0, len(source[:at].rstrip()) - 1)
    best: tuple[int, int] | None = None
    node: Node | None = tree.root_node.descendant_for_byte_range(anchor, anchor) if tree else None
    while node is not None and node.parent is not None:
        if node.end_byte - node.start_byte > limit:
            break
        line_start = source.rfind(b"\n", 0, node.start_byte) + 1
        if not source[line_start : node.start_byte].strip():
            best = (line_start, node.end_byte)
        node = node.parent
    if best is None:
        return _line_back(source, at, 200), _line_forward(source, at, 60)
    start = min(best[0], source.rfind(b"\n", 0, at) + 1)
    return start, _line_forward(source, max(best[1], at), 3)


def _line_back(source: bytes, at: int, lines: int) -> int:
    pos = at
    for _ in range(lines):
        pos = source.rfind(b"\n", 0, pos)
        if pos < 0:
            return 0
    return pos + 1


def _line_forward(source: bytes, at: int, lines: int) -> int:
    pos = at
    for _ in range(lines):
        pos = source.find(b"\n", pos + 1) if pos < len(source) else -1
        if pos < 0:
            return len(source)
    return pos + 1
