"""Each cut has a named reason, and the mode follows the text around the cursor: multi-line
unless the rest of the cursor's line is already there."""

from __future__ import annotations

import pytest

from spec_lsp.syntax import Trimmer, cutter_for, spec_for
from spec_lsp.syntax.units import Reason

CURSOR = "█"


def _explain(language: str, source: str, raw: str) -> tuple[str | None, Reason | None]:
    prefix, suffix = source.split(CURSOR)
    return Trimmer(spec_for(language), prefix, suffix).explain(raw)


# (language, source with █, raw completion, expected suggestion, reason)
RULES: list[tuple[str, str, str, str | None, Reason | None]] = [
    ("python", "def f(x):\n    █", "y = x * 2\n    return y", "y = x * 2\n    return y", None),
    ("c", "memset(buf█, 0);\n", ", len, 0);", ", len", "suffix-overlap"),
    ("javascript", "f(█);\n", "a, b);", "a, b", "suffix-overlap"),
    ("java", "list.add(█);\n", "item)", "item", "suffix-overlap"),
    ("python", "def f(r):█\n    return r\n", "\n    return r\n", None, "suffix-repeat"),
    (
        "python",
        "def f():\n    █",
        "a()\n    b()\n    b()\n    b()",
        "a()\n    b()",
        "repeated-line",
    ),
    ("python", "total = sum(█\n", "x for x in xs))\n", "x for x in xs)", "unbalanced-closer"),
    ("haskell", "f x = x█\n", ")\ng = 1", None, "unbalanced-closer"),
    ("python", "def f():\n    █", "return 1\nprint(f())", "return 1", "block-end"),
    ("go", "func f() int {\n\t█", "return 1\n}\n\nfunc g() {}", "return 1\n}", "block-end"),
    ("ruby", "def f\n  █", "1\nend\nputs f", "1\nend", "block-end"),
    ("python", "# sum the █\n", "values\nx = 1", "values", "unit-complete"),
    ("python", 'x = """█', 'text\n"""\ny = 1', 'text\n"""', "unit-complete"),
    ("python", "for x in xs:\n    █", "if x:\nprint(x)", None, "header-without-body"),
    ("python", "def f():\n    █", "x = 1\n    y = 2 +", "x = 1", "unit-complete"),
    ("python", "val█ue = 1\n", "id", None, "none-here"),
]


@pytest.mark.parametrize(("language", "source", "raw", "expected", "reason"), RULES)
def test_each_cut_names_its_reason(
    language: str, source: str, raw: str, expected: str | None, reason: Reason | None
) -> None:
    assert _explain(language, source, raw) == (expected, reason)


MODES: list[tuple[str, str, str]] = [
    ("python", "def f():\n    █\n", "multi"),
    ("python", "for x in xs:█\n", "multi"),
    ("python", "def f():\n    a = 1\n    █\n    b = 2\n", "multi"),
    ("python", "x = █\ny = 2\n", "multi"),  # the end of a line: the model may go on below
    ("python", "foo(█)\n", "multi"),  # only an auto-closed pair right of the cursor
    ("python", "foo(█a, b)\n", "single"),  # the rest of the line is there
    ("javascript", "if (user && █) {\n", "single"),
    ("python", "pri█nt(x)\n", "none"),
    ("python", 'def f():\n    """Ret█\n    """\n', "multi"),  # a multi-line string
    ("go", 'fmt.Println("hel█")\n', "single"),  # a one-line string
    ("python", "# a comment█\n", "single"),
    ("yaml", "key:█\n", "multi"),
    ("fsharp", "let f x =█\n", "multi"),
]


@pytest.mark.parametrize(("language", "source", "expected"), MODES)
def test_mode_is_single_only_where_the_rest_of_the_line_is_there(
    language: str, source: str, expected: str
) -> None:
    prefix, suffix = source.split(CURSOR)
    assert cutter_for(language, prefix, suffix).mode == expected


def test_comments_can_be_turned_off() -> None:
    assert cutter_for("rust", "// a comment ", "\n", comments=False).mode == "none"


def test_a_language_without_a_grammar_is_never_cut_by_a_parse() -> None:
    # Broken-looking Haskell: only text rules apply, so the whole completion stays.
    raw = "case x of\n    Just y -> y +\n    Nothing -> 0"
    assert cutter_for("haskell", "f x =\n  ", "\n").trim(raw) == raw


PADDING = {
    "python": "def pad_{i}(x):\n    return x + {i}\n\n\n",
    "javascript": "function pad_{i}(x) {{\n  return x + {i};\n}}\n\n",
    "go": "func pad_{i}(x int) int {{\n\treturn x + {i}\n}}\n\n",
}


@pytest.mark.parametrize(
    ("language", "prefix", "suffix", "raw", "expected"),
    [
        ("python", "def f():\n    ", "\n", "x = 1\n    y = 2 +", "x = 1"),
        (
            "python",
            "def add(a, b):\n    ",
            "\n\ndef g():\n    pass\n",
            "return a + b\n\ndef h",
            "return a + b",
        ),
        ("javascript", "function f() {\n  ", "\n}\n", "return 1;\n}\n", "return 1;"),
        ("go", "func f() int {\n\t", "\n}\n", "return 1\n}\n", "return 1"),
    ],
)
def test_large_file_trims_like_a_small_one(
    language: str, prefix: str, suffix: str, raw: str, expected: str
) -> None:
    # 40 KB of unrelated functions on both sides: the parse check then works on a window.
    pad = "".join(PADDING[language].format(i=i) for i in range(600))
    assert len(pad) > 20_000
    assert cutter_for(language, prefix, suffix).trim(raw) == expected
    assert cutter_for(language, pad + prefix, suffix + "\n" + pad).trim(raw) == expected


def test_a_repeat_of_the_next_line_is_decided_from_its_beginning() -> None:
    # The stop callback does not wait for the rest of a line that is already in the file.
    cutter = cutter_for("python", "def f(x):\n    ", "\n    return normalize(x, strict=True)\n")
    text = "x = clean(x)\n    return normaliz"
    assert cutter.stop(text) is None
    assert cutter.stop(text + "e") == len("x = clean(x)")
    assert cutter.trim(text + "e(x, strict=False)") == "x = clean(x)"


def test_the_cursor_line_is_not_cut_for_beginning_like_the_next_line() -> None:
    # A new argument line above a similar one: only an exact repeat drops the cursor's line.
    prefix, suffix = (
        "def setup(p):\n    ",
        '\n    p.add_argument("--verbose", action="store_true")\n',
    )
    raw = 'p.add_argument("--quiet", action="store_true")'
    assert cutter_for("python", prefix, suffix).trim(raw) == raw


def test_a_model_going_round_a_two_line_loop_is_cut_before_the_second_round() -> None:
    raw = (
        "for line in lines:\n        if not line:\n            continue\n"
        "        if not line:\n            continue\n        if not line:"
    )
    cutter = cutter_for("python", "def f(lines):\n    ", "\n")
    assert cutter.trim(raw) == "for line in lines:\n        if not line:\n            continue"


def test_a_bracket_open_after_a_docstring_longer_than_the_scan_window_is_still_seen() -> None:
    """The prefix scan window (8,000 characters) may begin inside a long docstring; the call
    opened at the cursor must still count as open, so the model's `)` is not cut as an
    unbalanced closer (found in statistics.py by a replay)."""
    lines = [f"Line {i} of a long module docstring." for i in range(400)]
    doc = '"""' + "\n".join(lines) + '"""'
    prefix = doc + "\n\n\ndef f(errmsg):\n    raise StatisticsError("
    assert len(prefix) > 9000
    for language in ("python", "text"):  # with a grammar and with the text rules only
        assert cutter_for(language, prefix, "\n").trim("errmsg)") == "errmsg)", language


# An early answer (`growing`: the complete lines of a generation that goes on) keeps last lines
# that open blocks: their bodies are on their way. (language, source, complete lines, expected)
GROWING: list[tuple[str, str, str, str | None]] = [
    ("python", "def f(xs):\n    █\n    return 0\n", "for x in xs:", "for x in xs:"),
    (
        "python",
        "def f(xs):\n    █\n    return 0\n",
        "for x in xs:\n        if x:",
        "for x in xs:\n        if x:",
    ),
    ("python", "def f(xs):\n    █", "y = 1\n    while y:", "y = 1\n    while y:"),
    ("javascript", "function f(xs) {\n  █\n}\n", "for (const x of xs) {", "for (const x of xs) {"),
    # not headers: the final rules, as without `growing`
    ("python", "def f():\n    █", "x = 1\n    y = 2 +", "x = 1"),
    # a header after lines that a rule cuts, or one that leaves the block: cut as before
    ("python", "def f():\n    █", "return 1\nfor x in xs:", "return 1"),
    ("python", "def f():\n    █", "a()\n    b()\n    b()\n    b()\n    if x:", "a()\n    b()"),
]


@pytest.mark.parametrize(("language", "source", "lines", "expected"), GROWING)
def test_an_early_answer_keeps_its_last_block_headers(
    language: str, source: str, lines: str, expected: str | None
) -> None:
    prefix, suffix = source.split(CURSOR)
    trimmer = Trimmer(spec_for(language), prefix, suffix)
    assert trimmer.trim(lines, growing=True) == expected


def test_a_growing_answer_with_no_header_is_the_final_trim() -> None:
    final = Trimmer(spec_for("python"), "def f(xs):\n    ", "\n    return 0\n")
    assert final.trim("for x in xs:") is None  # no body will come: header-without-body
    prefix, suffix = "def f():\n    ", "\n"
    # an open bracket is no block: `return g(` waits for its arguments
    for lines in ("x = 1\n    y = 2", "return g(\n        1,", "pass", "x = 1\n    return g("):
        trimmer = Trimmer(spec_for("python"), prefix, suffix)
        assert trimmer.trim(lines, growing=True) == trimmer.trim(lines)
