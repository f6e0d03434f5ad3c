"""The next-edit prompts: what a keystroke changes in them comes last, so the rewrite's cached KV
holds the rest; the file excerpt and the recent edits bounded so the prompt fits the window."""

from __future__ import annotations

from spec_lsp.completion.history import Hunk
from spec_lsp.config import Options
from spec_lsp.nextedit.formats import EditContext, QwenChat
from spec_lsp.nextedit.region import DIFF_CHARS, STEP, context_lines, recent_hunks
from spec_lsp.nextedit.service import rewrite_request

ABOVE = ["import math", "", "UNIT = 1"]
REGION = ["def area(w, height):", "    return width * height", ""]
BELOW = ["def perimeter(width, height):", "    return 2 * (width + height)"]
OLDER = Hunk(0, ["import maths"], ["import math"])
RENAME = Hunk(3, ["def area(width, height):"], ["def area(w, height):"])


def context(region: list[str], hunks: list[Hunk]) -> EditContext:
    return EditContext("shapes.py", "python", ABOVE, region, BELOW, hunks, (0, 9), 3)


def common_prefix(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def test_a_keystroke_in_the_region_changes_the_prompt_only_from_the_newest_diff_on() -> None:
    before = QwenChat().render(context(REGION, [OLDER, RENAME])).text
    typed = Hunk(3, ["def area(width, height):"], ["def area(wi, height):"])
    after = QwenChat().render(context(["def area(wi, height):", *REGION[1:]], [OLDER, typed]))
    kept = common_prefix(before, after.text)
    # the instruction, the whole excerpt (above and below the region) and the older edit stay
    assert before.index(OLDER.diff()) + len(OLDER.diff()) <= kept
    assert before.index(BELOW[-1]) < kept
    assert kept < before.rindex("<region>\n")  # the newest diff differs


def test_the_excerpt_marks_the_regions_place_and_the_region_comes_after_the_edits() -> None:
    text = QwenChat().render(context(REGION, [RENAME])).text
    assert text.count("    return width * height\n") == 1  # the region's lines once, not twice
    place = text.index("\n" + QwenChat.PLACE + "\n")
    assert text.index("UNIT = 1") < place < text.index(BELOW[0])
    assert text.index(RENAME.diff()) < text.rindex("<region>\n" + REGION[0])
    assert text.endswith("<|im_start|>assistant\n<region>\n")


def test_the_excerpt_starts_on_the_same_line_while_the_region_moves_within_a_step() -> None:
    lines = [f"value_{i} = compute({i}, 'a string of some length here')" for i in range(300)]
    starts = {context_lines(lines, first, first + 12)[0][0] for first in range(161, 161 + STEP)}
    assert len(starts) == 1  # 161..176 share the anchor 176: the cut of characters too
    above, _ = context_lines(lines, 161, 173)
    assert int(above[0].split("_")[1].split()[0]) % STEP == 0


def test_the_recent_edits_keep_the_newest_within_their_budget_and_leave_in_whole() -> None:
    hunks = [Hunk(i * 10, [f"x{i} = {'a' * 90}"], [f"x{i} = {'b' * 90}"]) for i in range(30)]
    kept = recent_hunks(hunks)
    assert kept and kept[-1] is hunks[-1] and kept == hunks[-len(kept) :]
    assert sum(len(h.diff()) for h in kept) <= DIFF_CHARS < sum(len(h.diff()) for h in hunks)
    huge = Hunk(0, ["a" * (DIFF_CHARS * 2)], ["b"])
    assert recent_hunks([hunks[0], huge]) == [huge]  # the newest always, however long


def test_a_rewrite_carries_its_references_with_speculation_off_too() -> None:
    prompt = QwenChat().render(context(REGION, [OLDER, RENAME]))
    on = rewrite_request(prompt, "file:///shapes.py", Options(speculation="ngram"))
    off = rewrite_request(prompt, "file:///shapes.py", Options(speculation="off"))
    assert on.method == "ngram" and off.method == "off"  # nothing copied from them when off
    # the engine still finds the departures from the references (the confidence gated on)
    assert off.reference == on.reference == prompt.reference and off.reference
