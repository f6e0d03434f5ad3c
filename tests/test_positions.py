"""spec_lsp/positions.py: columns in UTF-16 or UTF-8 code units, as the client counts them."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from spec_lsp.positions import col_from_units, units_len

text_st = st.text(alphabet=st.sampled_from(list("ab \té日本😀🎉\n")), max_size=40)


@given(text_st, st.integers(0, 50))
def test_utf16_columns_match_python_encoding(line: str, units: int) -> None:
    line = line.replace("\n", "")
    col = col_from_units(line, units, "utf-16")
    assert units_len(line[:col], "utf-16") <= units
    if col < len(line):
        assert units_len(line[: col + 1], "utf-16") > units
    assert units_len(line, "utf-16") == len(line.encode("utf-16-le")) // 2
    assert units_len(line, "utf-8") == len(line.encode("utf-8"))
