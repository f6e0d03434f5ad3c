"""Counting parse errors of the file with a candidate completion inserted at the cursor.

The file without the completion is parsed once (or its tree comes from the open document); each
candidate is an insertion at the cursor, applied to a copy of that tree with `Tree.edit` and
reparsed with the old tree, so tree-sitter reuses everything outside the edited region.
"""

from __future__ import annotations

from tree_sitter import Node, Parser, Point, Tree


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

    def __init__(self, parser: Parser, prefix: str, suffix: str, tree: Tree | None = None) -> None:
        self._parser = parser
        self._prefix = prefix.encode("utf-8", "surrogatepass")
        self._suffix = suffix.encode("utf-8", "surrogatepass")
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
