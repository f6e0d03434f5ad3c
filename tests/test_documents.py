"""spec_lsp/documents.py: incremental edits in the client's encoding, positions out of range."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from spec_lsp.documents import Document
from spec_lsp.positions import units_len

text_st = st.text(alphabet=st.sampled_from(list("ab \té日本😀🎉\n")), max_size=40)


@given(text_st, st.data())
def test_incremental_edits_in_utf16_equal_editing_the_string(
    text: str, data: st.DataObject
) -> None:
    doc = Document.from_text("file:///t", "plaintext", 1, text)
    offsets = sorted(data.draw(st.lists(st.integers(0, len(text)), min_size=2, max_size=2)))
    new = data.draw(st.text(alphabet=st.sampled_from(list("x😀\n")), max_size=4))

    def lsp(offset: int) -> tuple[int, int]:
        before = text[:offset]
        line = before.count("\n")
        return line, units_len(before.split("\n")[-1], "utf-16")

    (l1, c1), (l2, c2) = lsp(offsets[0]), lsp(offsets[1])
    start, end = doc.clamp(l1, c1, "utf-16"), doc.clamp(l2, c2, "utf-16")
    doc.apply(start, end, new)
    assert doc.text == text[: offsets[0]] + new + text[offsets[1] :]


def test_a_position_past_the_last_line_is_out_of_range() -> None:
    doc = Document.from_text("file:///t", "python", 1, "a\nb")
    assert doc.position(5, 0, "utf-16") is None
    assert doc.position(1, 99, "utf-16") == (1, 1)
