"""Where an editable region may begin and end: at syntax boundaries, not inside a statement.

`snap_rows(tree, first, last, reach)` moves a region's first line up to the start of any syntax
node that crosses it (begins above `first` and ends on or below it), and its last line down to the
end of any node that crosses that one, as long as the move stays within `reach` lines; a node that
would move it further (a whole class around a method) is left cut, its inner nodes still counted.
So a region never starts in the middle of a call's arguments or ends halfway through a small
function, and a next-edit model rewrites whole statements. Works on a tree-sitter Tree and rows.
"""

from __future__ import annotations

from tree_sitter import Node, Tree


def snap_rows(tree: Tree, first: int, last: int, reach: int) -> tuple[int, int]:
    """(first, last) widened to the boundaries of the nodes that cross them, within `reach`."""
    root = tree.root_node
    top = first
    for node in _crossing(root, first, above=True):
        if first - node.start_point.row <= reach:
            top = min(top, node.start_point.row)
    bottom = last
    for node in _crossing(root, last, above=False):
        if node.end_point.row - last <= reach:
            bottom = max(bottom, node.end_point.row)
    return top, bottom


def _crossing(root: Node, row: int, above: bool) -> list[Node]:
    """The named nodes that cross line `row`'s edge: begin above it and end on or below it
    (`above`), or begin on or above it and end below it."""
    out: list[Node] = []
    stack = [root]
    while stack:
        node = stack.pop()
        start, end = node.start_point.row, node.end_point.row
        if end < row or start > row:
            continue
        crosses = start < row <= end if above else start <= row < end
        if node is not root and node.is_named and crosses:
            out.append(node)
        stack.extend(node.named_children)
    return out
