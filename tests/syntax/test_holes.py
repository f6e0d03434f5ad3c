"""Whole-block holes found with tree-sitter (`syntax/holes.py`): a compound statement's body and
a function's last statements, whole lines, within the size asked, only inside functions."""

from __future__ import annotations

from spec_lsp.syntax.holes import BlockHole, block_holes

SOURCE = '''\
import os

if os.name:
    TOP = 1
    OTHER = 2


def walk(paths):
    """Doc."""
    seen = set()
    for path in paths:
        if path in seen:
            continue
        seen.add(path)
    return seen
'''


def test_bodies_and_tails_inside_functions_are_found_in_line_order() -> None:
    holes = block_holes(SOURCE, "python", min_lines=2, max_lines=8)
    assert BlockHole("body", 11, 13) in holes  # the loop's body: `if` and `seen.add`
    assert BlockHole("tail", 9, 14) in holes  # from `seen = set()` to the return
    assert [h.first for h in holes] == sorted(h.first for h in holes)
    assert all(h.first >= 7 for h in holes)  # the module-level `if` is no function's


def test_a_hole_spans_whole_lines_within_the_size_asked() -> None:
    lines = SOURCE.split("\n")
    for hole in block_holes(SOURCE, "python", min_lines=2, max_lines=3):
        assert 2 <= hole.last - hole.first + 1 <= 3
        assert lines[hole.first].strip() and lines[hole.last].strip()


def test_no_grammar_no_holes() -> None:
    assert block_holes("some text\n", "no-such-language") == []
