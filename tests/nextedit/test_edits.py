"""From a region's old and new lines to the smallest edits; which one is shown; reverts refused."""

from __future__ import annotations

import pytest

from spec_lsp.completion.history import Hunk
from spec_lsp.nextedit.edits import Replacement, choose, region_edits, reverts
from spec_lsp.nextedit.formats import EditContext, QwenChat, Sweep, Zeta, region_lines
from spec_lsp.nextedit.region import MAX_LINES, editable_region

DOC = [
    "def area(w, height):",
    "    return width * height",
    "",
    "def perimeter(width, height):",
    "    return 2 * (width + height)",
]


def apply_all(lines: list[str], edits: list[Replacement]) -> list[str]:
    for edit in reversed(edits):  # bottom up: earlier positions stay valid
        lines = edit.apply(lines)
    return lines


@pytest.mark.parametrize(
    "new",
    [
        [
            DOC[0],
            "    return w * height",
            "",
            "def perimeter(w, height):",
            "    return 2 * (w + height)",
        ],
        [DOC[0], DOC[1], "", DOC[3], "    total = 2 * (width + height)", "    return total"],
        [DOC[0], DOC[3], DOC[4]],  # lines removed
        ["# shapes", *DOC],  # a line added at the top
        [*DOC, "", "def volume(w, h, d):", "    return w * h * d"],  # lines added at the end
        [],  # everything removed
    ],
)
def test_the_edits_turn_the_old_region_into_the_new(new: list[str]) -> None:
    edits = region_edits(DOC, 0, DOC, new)
    assert apply_all(DOC, edits) == (new or [""])


def test_an_edit_is_a_whole_word_and_each_line_its_own() -> None:
    new = [DOC[0], "    return w * height", "", "def perimeter(w, height):", DOC[4]]
    edits = region_edits(DOC, 0, DOC, new)
    assert edits == [Replacement((1, 11), (1, 16), "w"), Replacement((3, 14), (3, 19), "w")]


def test_an_edit_inside_a_region_lower_in_the_document_is_placed_there() -> None:
    doc = ["# head", "# more"] + DOC
    new = [DOC[0], "    return w * height", *DOC[2:]]
    assert region_edits(doc, 2, DOC, new) == [Replacement((3, 11), (3, 16), "w")]


def test_the_edit_shown_is_the_first_at_or_below_the_cursor() -> None:
    a, b, c = (
        Replacement((1, 0), (1, 1), "x"),
        Replacement((5, 0), (5, 1), "y"),
        Replacement((9, 0), (9, 0), "z"),
    )
    assert choose([a, b, c], 3) == b
    assert choose([a, b, c], 10) == c
    assert choose([a], 7) == a
    assert choose([], 0) is None


def test_an_edit_that_undoes_the_users_own_edit_is_refused() -> None:
    doc = ["def area(w, height):", "    return width * height"]
    hunk = Hunk(0, ["def area(width, height):"], ["def area(w, height):"])
    undo = Replacement((0, 9), (0, 10), "width")
    carry = Replacement((1, 11), (1, 16), "w")
    assert reverts(undo, doc, [hunk])
    assert not reverts(carry, doc, [hunk])


def test_the_region_takes_in_the_latest_edit_and_stays_bounded() -> None:
    lines = [f"x{i} = {i}" for i in range(200)]
    assert editable_region(lines, 100, None) == (95, 106)
    assert editable_region(lines, 100, Hunk(115, ["a"], ["b"])) == (95, 116)
    assert editable_region(lines, 100, Hunk(80, ["a"], ["b"])) == (79, 106)
    first, last = editable_region(lines, 100, Hunk(125, ["a"], ["b"]))  # over MAX_LINES
    assert last - first + 1 == MAX_LINES and first <= 100 and last >= 125
    assert editable_region(lines, 100, Hunk(150, ["a"], ["b"])) == (95, 106)  # too far
    first, last = editable_region(lines, 100, None, lambda _u, f, la, _r: (f - 30, la + 30))
    assert last - first + 1 == MAX_LINES and first <= 100 <= last
    assert editable_region(["only"], 0, None) == (0, 0)


def test_every_format_marks_the_region_and_copies_it() -> None:
    hunk = Hunk(0, ["def area(width, height):"], ["def area(w, height):"])
    ctx = EditContext("shapes.py", "python", ["import math"], DOC, ["# end"], [hunk], (0, 9), 0)
    for fmt in (QwenChat(), Sweep(), Zeta()):
        prompt = fmt.render(ctx)
        assert "    return width * height\n" in prompt.text
        assert prompt.reference[0].startswith("\n".join(DOC) + "\n")
        assert "def area(w, height):\n" in prompt.reference  # the inserted text, copied too
        assert prompt.stop
    assert Sweep().render(ctx).text.count("def area(width, height):") >= 2  # original/ and .diff
    assert "<|user_cursor_is_here|>" in Zeta().render(ctx).text
    assert region_lines("a\nb\n") == ["a", "b"] and region_lines("a") == ["a"]


def test_an_edit_that_only_moves_whitespace_is_cosmetic() -> None:
    from spec_lsp.nextedit.edits import cosmetic

    doc = ["x = 1", "", "y = 2  "]
    assert cosmetic(Replacement((0, 5), (1, 0), ""), doc)  # a blank line removed
    assert cosmetic(Replacement((2, 5), (2, 7), ""), doc)  # trailing spaces
    assert not cosmetic(Replacement((0, 4), (0, 5), "2"), doc)


def test_the_lines_above_start_on_a_step_so_the_prompts_start_holds() -> None:
    from spec_lsp.nextedit.region import STEP, context_lines

    lines = [f"v{i} = {i}" for i in range(200)]
    a, _ = context_lines(lines, 100, 110)
    b, _ = context_lines(lines, 97, 110)  # the region widened up by the latest edit
    assert a[0] == b[0] and int(a[0][1:].split()[0]) % STEP == 0
    assert editable_region(lines + [""], 199, None)[1] == 199  # no line after the final newline


def test_an_edit_is_settled_once_old_lines_follow_it() -> None:
    from spec_lsp.nextedit.early import complete_lines, settled_edits

    old = DOC
    assert complete_lines("def area(w") is None
    written = complete_lines("def area(w, height):\n    return w * height\n\n")
    assert written is not None
    # The changed line is followed by one old line only: not settled yet.
    assert settled_edits(DOC, 0, old, written[:3]) == []
    settled = settled_edits(DOC, 0, old, [*written, "def perimeter(width, height):"])
    assert settled == [Replacement((1, 11), (1, 16), "w")]


def test_an_edit_far_from_every_recent_edit_is_shown_only_when_it_carries_one_through() -> None:
    from spec_lsp.nextedit.edits import FAR, unrelated

    doc = ["def area(w, height):", *[f"x{i} = {i}" for i in range(80)], "print(width, y)"]
    hunks = [Hunk(0, ["def area(width, height):"], ["def area(w, height):"])]
    far = len(doc) - 1
    assert far > FAR
    rename = Replacement((far, 6), (far, 11), "w")  # the renamed name's other use
    tidy = Replacement((far, 13), (far, 14), "z")  # a change nobody asked for
    assert not unrelated(rename, doc, hunks)
    assert unrelated(tidy, doc, hunks)
    near = Replacement((5, 5), (5, 6), "9")
    assert not unrelated(near, doc, hunks)  # near the user's edit: the model's judgement
    assert unrelated(tidy, doc, [])  # no recent edit: nothing follows from one
