"""The replayer's document model: LSP positions in each encoding, and edits."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from spec_lsp.replay.document import ReplayDocument, diff_edit, offset_of, position_of

TEXT = "a😀b\nxé\n"


def test_positions_count_code_units_of_the_negotiated_encoding() -> None:
    after_emoji = TEXT.index("b")
    assert position_of(TEXT, after_emoji, "utf-16") == {"line": 0, "character": 3}
    assert position_of(TEXT, after_emoji, "utf-8") == {"line": 0, "character": 5}
    assert position_of(TEXT, after_emoji, "utf-32") == {"line": 0, "character": 2}
    assert offset_of(TEXT, 0, 3, "utf-16") == after_emoji
    assert offset_of(TEXT, 1, 3, "utf-8") == TEXT.index("\n", 3) + 3


def test_positions_past_the_end_of_a_line_clamp_to_it() -> None:
    assert offset_of(TEXT, 1, 99) == TEXT.index("\n", 3) + 3
    assert offset_of(TEXT, 9, 0) == len(TEXT)


@given(st.text(alphabet="ab😀\n", max_size=12), st.data())
def test_offset_and_position_are_inverse(text: str, data: st.DataObject) -> None:
    offset = data.draw(st.integers(0, len(text)))
    for encoding in ("utf-8", "utf-16", "utf-32"):
        pos = position_of(text, offset, encoding)
        assert offset_of(text, pos["line"], pos["character"], encoding) == offset


@given(st.text(alphabet="abc\n", max_size=10), st.text(alphabet="abc\n", max_size=10))
def test_diff_edit_turns_the_old_text_into_the_new(old: str, new: str) -> None:
    edit = diff_edit(old, new)
    assert old[: edit.start] + edit.text + old[edit.start + edit.old_len :] == new


def test_incremental_and_full_changes_apply_in_order() -> None:
    doc = ReplayDocument("u", "python", 1, "def f():\n    pass\n")
    edits = doc.apply(
        [
            {
                "range": {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 8}},
                "text": "return 1",
            },
            {
                "range": {"start": {"line": 0, "character": 4}, "end": {"line": 0, "character": 5}},
                "text": "g",
            },
        ],
        version=2,
    )
    assert doc.text == "def g():\n    return 1\n" and doc.version == 2
    assert [(e.start, e.old_len, e.text) for e in edits] == [(13, 4, "return 1"), (4, 1, "g")]
    doc.apply([{"text": "x"}], version=3)
    assert doc.text == "x"
