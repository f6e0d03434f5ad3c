"""The whole-block rule (`syntax/block.py`): where it holds, where the block ends (the suffix's
first line's indentation, or that line written again), and a generation its cap stopped losing
its cut line and any header left without a body."""

from __future__ import annotations

from spec_lsp.syntax import cutter_for
from spec_lsp.syntax.block import unwritten
from spec_lsp.syntax.cursor import cursor_of
from spec_lsp.syntax.languages import spec_for

PY = spec_for("python")
# A HumanEval-style hole: the empty line open, the cursor at its start (column 0).
PREFIX = "def count(xs):\n    total = 0\n    for x in xs:\n"
SUFFIX = "\n    return total\n\n\nprint(count([1]))\n"


def test_a_blank_line_after_a_header_with_a_dedented_suffix_is_an_unwritten_block() -> None:
    assert unwritten(PY, cursor_of(PREFIX, SUFFIX))
    assert unwritten(PY, cursor_of(PREFIX + "        ", SUFFIX))  # the editor's indentation


def test_a_blank_line_whose_block_goes_on_below_is_not_unwritten() -> None:
    body_below = "\n        total += x\n    return total\n"
    assert not unwritten(PY, cursor_of(PREFIX, body_below))
    mid = "def f():\n    a = 1\n"
    assert not unwritten(PY, cursor_of(mid, "\n    return a\n"))  # same indentation below


def test_the_top_level_and_a_line_with_code_are_not_blocks_to_finish() -> None:
    assert not unwritten(PY, cursor_of("import os\n", "\nprint(os)\n"))
    assert not unwritten(PY, cursor_of(PREFIX + "        total", SUFFIX))


def test_an_unwritten_block_gets_the_rule_only_where_it_may_hold() -> None:
    assert cutter_for("python", PREFIX, SUFFIX, block="auto").block
    assert not cutter_for("python", PREFIX, SUFFIX).block  # "off": the default
    mid = "def f():\n    a = 1\n"
    assert not cutter_for("python", mid, "\n    return a\n", block="auto").block
    assert cutter_for("python", mid, "\n    return a\n", block="asked").block
    assert not cutter_for("python", "x = ", " + 1\n", block="asked").block  # single-line


def test_an_unwritten_block_ends_back_at_the_suffixs_indentation_at_column_0() -> None:
    """At column 0 nothing else says where the hole ends: without the rule the generation runs
    into what the suffix already holds (a statement beside its first line, the next `def`)."""
    prefix = PREFIX + "        total += x\n"
    raw = "        total *= 2\n    print(total)\nprint('done')\n"
    block = cutter_for("python", prefix, SUFFIX, block="auto")
    assert block.trim(raw) == "        total *= 2"
    assert block.stop(raw) == len("        total *= 2")
    plain = cutter_for("python", prefix, SUFFIX)
    assert plain.trim(raw) == raw.rstrip()


def test_the_next_method_ends_a_methods_unwritten_tail() -> None:
    prefix = "class A:\n    def f(self):\n        x = 1\n"
    suffix = "\n    def g(self):\n        return 2\n"
    raw = "        return x\n\n    def h(self):\n        return 3\n"
    assert cutter_for("python", prefix, suffix, block="auto").trim(raw) == "        return x"


def test_mid_block_the_hole_ends_below_the_suffixs_first_line() -> None:
    """Asked on a blank line with the block going on below: lines at the suffix's indentation
    are the hole's, a line indented less leaves it."""
    prefix, suffix = "def f(a):\n    b = a + 1\n", "\n    return b\n\nx = 1\n"
    raw = "    c = b * 2\n    b += c\nprint(b)\n"
    block = cutter_for("python", prefix, suffix, block="asked")
    assert block.trim(raw) == "    c = b * 2\n    b += c"


def test_after_a_header_the_block_is_its_body() -> None:
    """The line above opens a block: the hole is its body, ended by the first line back at the
    header's indentation (never looser than without the rule)."""
    raw = "        total += x\n    print(total)\n"
    assert cutter_for("python", PREFIX, SUFFIX, block="auto").trim(raw) == "        total += x"


def test_the_suffixs_first_line_written_again_ends_the_block_and_is_dropped() -> None:
    raw = "        total += x\n    return total\n\n\nprint(count([1]))\n"
    block = cutter_for("python", PREFIX, SUFFIX, block="auto")
    assert block.trim(raw) == "        total += x"


def test_a_deeper_cursor_keeps_its_own_block_end() -> None:
    """The editor's indentation says the cursor is in the loop's body: a dedent ends it, as
    without the rule."""
    prefix = PREFIX + "        "
    block = cutter_for("python", prefix, SUFFIX, block="auto")
    assert block.trim("total += x\n    print(total)\n") == "total += x"


def test_a_capped_generation_loses_its_cut_line_and_a_header_left_bare() -> None:
    raw = "        if x > 0:\n            total += x\n        if x < 0:\n            tot"
    block = cutter_for("python", PREFIX, SUFFIX, block="auto")
    assert block.trim(raw, capped=True) == "        if x > 0:\n            total += x"
    # Not capped (the model ended there): the text is judged as written.
    assert block.trim(raw) != block.trim(raw, capped=True)
    # Without the rule a capped text is trimmed as before.
    plain = cutter_for("python", PREFIX, SUFFIX)
    assert plain.trim(raw, capped=True) == plain.trim(raw)


def test_an_early_answer_keeps_its_open_header_under_the_rule() -> None:
    """The complete lines of a generation that goes on (`growing`) keep a last header: its body
    is on its way, as without the rule."""
    lines = "        if x > 0:"
    block = cutter_for("python", PREFIX, SUFFIX, block="auto")
    assert block.trim(lines, growing=True, capped=True) == lines


def test_braces_the_closing_line_of_the_suffix_ends_the_block() -> None:
    prefix, suffix = "function f(xs) {\n  for (const x of xs) {\n", "\n  }\n}\n"
    block = cutter_for("javascript", prefix, suffix, block="auto")
    assert block.block
    assert block.trim("    log(x);\n    y += x;\n  }\n}\n") == "    log(x);\n    y += x;"


def test_a_capped_first_line_is_judged_as_without_the_rule() -> None:
    """Only lines after a whole one go: a capped answer of one line is trimmed as before."""
    block = cutter_for("python", "def f(a):\n    return ", "\n", block="asked")
    assert block.block
    assert block.trim("a + 1", capped=True) == "a + 1"
