"""A next edit's region moves to syntax boundaries: never starts or ends inside a statement."""

from __future__ import annotations

from spec_lsp.syntax.service import SyntaxService

SOURCE = """import os

def area(width, height):
    return width * height


def call(a,
         b,
         c):
    x = foo(a,
            b)
    return x
"""


def region(first: int, last: int, reach: int = 6) -> tuple[int, int]:
    service = SyntaxService()
    service.open("file:///a.py", "python", SOURCE)
    return service.region("file:///a.py", first, last, reach)


def test_a_side_inside_a_statement_moves_to_its_edge() -> None:
    assert region(7, 9) == (6, 11)  # the def's arguments above, the call's below
    assert region(10, 10) == (6, 11)


def test_a_side_on_a_boundary_stays_and_far_edges_are_left_cut() -> None:
    assert region(2, 3) == (2, 3)
    assert region(9, 9, reach=1) == (9, 10)  # the def is 3 lines up: too far; the call is not


def test_an_unknown_document_or_language_is_left_as_given() -> None:
    service = SyntaxService()
    assert service.region("file:///none.py", 3, 5, 6) == (3, 5)
    service.open("file:///a.txt", "plaintext", SOURCE)
    assert service.region("file:///a.txt", 7, 9, 6) == (7, 9)
