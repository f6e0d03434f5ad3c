"""Whole-block holes in real code, found with tree-sitter: the spans a person writes at once.

`block_holes(text, language)` lists, inside function bodies, the line spans of
- "body": the whole body of a compound statement (`if`, `for`, `while`, `with`, `try` and their
  `else`/`elif`/`except`/`finally` clauses): the header stays, the body is the hole;
- "tail": the last statements of a function body, from one of them to the body's end.

Each is whole lines (`first`..`last`, 0-based, inclusive) and spans `min_lines` to `max_lines`
lines. What the benchmark does with them (`benchmarks/blocks_holes.py`) is not this module's
business; it knows only the tree.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from spec_lsp.syntax.languages import new_parser, spec_for

FUNCTIONS = frozenset({"function_definition"})
CLAUSES = frozenset(
    {"if_statement", "elif_clause", "else_clause", "for_statement", "while_statement"}
    | {"with_statement", "try_statement", "except_clause", "finally_clause"}
)


@dataclass(frozen=True)
class BlockHole:
    kind: str  # "body" or "tail"
    first: int  # first line of the hole, 0-based
    last: int  # its last line, inclusive


def block_holes(
    text: str, language: str = "python", min_lines: int = 2, max_lines: int = 8
) -> list[BlockHole]:
    """The whole-block holes of `text`, in document order (none without a grammar)."""
    parser = new_parser(spec_for(language))
    if parser is None:
        return []
    root = parser.parse(text.encode("utf-8", "surrogatepass")).root_node
    found: list[BlockHole] = []

    def fits(first: int, last: int) -> bool:
        return min_lines <= last - first + 1 <= max_lines

    def walk(node: Node, in_function: bool) -> None:
        inside = in_function or node.type in FUNCTIONS
        if node.type in FUNCTIONS:
            body = node.child_by_field_name("body")
            statements = [] if body is None else list(body.named_children)
            for child in statements[1:]:  # not the whole body (a docstring may lead it)
                first, last = child.start_point[0], statements[-1].end_point[0]
                if fits(first, last):
                    found.append(BlockHole("tail", first, last))
                    break
        if in_function and node.type in CLAUSES:
            for child in node.named_children:
                first, last = child.start_point[0], child.end_point[0]
                if child.type == "block" and first > node.start_point[0] and fits(first, last):
                    found.append(BlockHole("body", first, last))
        for child in node.named_children:
            walk(child, inside)

    walk(root, False)
    return sorted(set(found), key=lambda h: (h.first, h.last, h.kind))


__all__ = ["BlockHole", "block_holes"]
