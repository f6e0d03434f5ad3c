"""spec_lsp/syntax/lexer.py: per-line bracket depth relative to the text's start, closers and
quotes that escape into the prefix, strings and comments skipped, what is still open at the end;
and it never fails on any text."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from spec_lsp.syntax.languages import spec_for
from spec_lsp.syntax.lexer import indent_width, scan

PY, JS, RUST = spec_for("python"), spec_for("javascript"), spec_for("rust")


def test_each_line_starts_at_the_bracket_depth_the_lines_before_left() -> None:
    out = scan("f(a,\n  [b,\n   c])\nx", PY)
    assert [line.depth for line in out.lines] == [0, 1, 2, 0]
    assert [line.indent for line in out.lines] == [0, 2, 3, 0]
    assert out.end_depth == 0 and out.open_brackets == [] and out.escapes == []


def test_a_closer_without_its_opener_in_the_text_escapes_into_the_prefix() -> None:
    out = scan("x)\ny]", PY)  # the cursor was inside "f(" and "[" opened before the text
    assert [(e.pos, e.char) for e in out.escapes] == [(1, ")"), (4, "]")]
    assert out.escaped_brackets == 2 and out.end_depth == -2
    assert [line.depth for line in out.lines] == [0, -1]


def test_brackets_inside_strings_and_comments_do_not_count() -> None:
    out = scan('s = "(("  # ))\nt = [', PY)
    assert out.escapes == [] and out.open_brackets == ["["] and out.end_depth == 1
    js = scan("a /* ) */ + b // ]\n", JS)
    assert js.escapes == [] and js.end_depth == 0


def test_a_string_opened_before_the_text_ends_at_its_quote_as_an_escape() -> None:
    out = scan('world")\n', PY, start_string='"')
    assert [(e.pos, e.char) for e in out.escapes] == [(5, '"'), (6, ")")]
    assert out.lines[0].in_string and out.end_string is None


def test_what_is_still_open_at_the_end_is_reported() -> None:
    assert scan('x = "abc', PY).end_string == '"'
    assert scan("x = 1  # note", PY).end_comment
    assert scan("a /* b", JS).end_comment
    assert scan("f(g[", PY).open_brackets == ["(", "["]
    assert scan('"""doc\nmore', PY).lines[1].in_string  # a multi-line string spans lines


def test_a_one_line_string_ends_with_its_line() -> None:
    out = scan('x = "abc\ny = (', PY)
    assert out.end_string is None and out.open_brackets == ["("]


def test_statement_ends_are_boundaries_in_code_only() -> None:
    out = scan('f(a); s = ";"; g()', JS)
    assert out.boundaries == [4, 5, 14, 18]


def test_a_rust_lifetime_is_no_string_and_a_char_literal_is() -> None:
    assert scan("fn f<'a>(x: &'a str) {", RUST).open_brackets == ["{"]
    assert scan("let c = '(';", RUST).open_brackets == []


def test_tabs_count_four_columns_and_blank_lines_have_no_indent() -> None:
    assert indent_width("\t  x") == 6 and indent_width("x") == 0
    assert [line.indent for line in scan("a\n   \n\tb", PY).lines] == [0, None, 4]


@given(st.text(alphabet=st.sampled_from(list("ab ()[]{};'\"`#/*\\\n\t")), max_size=80))
def test_any_text_scans_with_one_line_record_per_line_covering_the_text(text: str) -> None:
    for spec in (PY, JS, RUST):
        out = scan(text, spec)
        assert len(out.lines) == text.count("\n") + 1
        assert out.lines[0].start == 0 and out.lines[-1].end == len(text)
        assert all(0 <= e.pos < len(text) for e in out.escapes)
        assert out.end_depth == len(out.open_brackets) - out.escaped_brackets
