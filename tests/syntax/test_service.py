"""SyntaxService: incremental trees equal fresh parses, positions in characters, context, stop."""

from __future__ import annotations

import random

import pytest
from tree_sitter import Node

from spec_lsp.syntax import SyntaxService, cutter_for
from spec_lsp.syntax.document import ParsedDocument
from spec_lsp.syntax.languages import SPECS, grammar, new_parser, spec_for

PY = (
    'import os\nfrom typing import Any\n\n\nclass Cache:\n    """Ünïcödé docstring ✓."""\n\n'
    "    def get(self, key: str) -> Any:\n        value = self.data.get(key)\n        \n"
    "        return value\n"
)


def _sexp(node: Node) -> str:
    return str(node)


def _fresh(language: str, text: str) -> str:
    parser = new_parser(spec_for(language))
    assert parser is not None
    return _sexp(parser.parse(text.encode()).root_node)


def _pos(text: str, offset: int) -> tuple[int, int]:
    before = text[:offset]
    return before.count("\n"), offset - (before.rfind("\n") + 1)


@pytest.mark.parametrize("language", sorted(n for n, s in SPECS.items() if s.grammar is not None))
def test_every_listed_grammar_loads(language: str) -> None:
    assert grammar(spec_for(language)) is not None


def test_language_ids_and_extensions_map_to_grammars() -> None:
    assert spec_for("typescriptreact").name == "tsx"
    assert spec_for("javascriptreact").name == "javascript"
    assert spec_for("file:///src/lib.rs").name == "rust"
    assert spec_for("main.cpp").name == "cpp"
    assert spec_for(".hpp").name == "cpp"
    assert spec_for("fortran").name == "plain"


def test_random_incremental_edits_give_the_same_tree_as_a_fresh_parse() -> None:
    rng = random.Random(7)
    doc = ParsedDocument(spec_for("python"), PY)
    pieces = ["x", "é", "✓", "\n", "    ", "(", ")", ":", "def g():\n    pass\n", "", "😀"]
    for _ in range(200):
        start = rng.randrange(len(doc.text) + 1)
        end = min(len(doc.text), start + rng.choice([0, 0, 1, 3, 12]))
        new = rng.choice(pieces)
        doc.apply_edit(_pos(doc.text, start), _pos(doc.text, end), new)
        assert doc.tree is not None
        assert _sexp(doc.tree.root_node) == _fresh("python", doc.text)


def test_service_edits_use_character_columns_on_non_ascii_lines() -> None:
    svc = SyntaxService()
    svc.open("file:///a.py", "python", "s = 'ü'\nt = 1\n")
    svc.apply_edit("file:///a.py", (0, 6), (0, 6), "ber")  # after ü, inside the quotes
    svc.apply_edit("file:///a.py", (1, 4), (1, 5), "2")
    assert svc.text("file:///a.py") == "s = 'über'\nt = 2\n"


def test_edits_past_the_end_are_clamped_not_raised() -> None:
    svc = SyntaxService()
    svc.open("file:///a.go", "go", "package main\n")
    svc.apply_edit("file:///a.go", (40, 3), (50, 0), "\nfunc main() {}\n")
    assert svc.text("file:///a.go") == "package main\n\nfunc main() {}\n"


def test_unknown_documents_and_languages_give_answers_not_errors() -> None:
    svc = SyntaxService()
    assert svc.cutter("file:///nope.py", 0, 0).mode == "multi"
    assert svc.context("file:///nope.py", 0, 0) == ""
    assert svc.cutter("file:///nope.py", 0, 0).trim("abc\ndef") == "abc\ndef"
    svc.open("file:///x.zz", "zz-lang", "begin\n  \nend\n")
    cutter = svc.cutter("file:///x.zz", 1, 2)
    assert cutter.mode == "multi"
    assert cutter.trim("foo()\nend\n") == "foo()"  # `end` is the line after the cursor


def test_service_cutter_matches_the_text_only_cutter() -> None:
    text = "function f() {\n  \n}\n"
    svc = SyntaxService()
    svc.open("file:///f.js", "javascript", text)
    raw = "return 1;\n}\n\nfunction g() {}\n"
    cutter = svc.cutter("file:///f.js", 1, 2)
    assert cutter.mode == "multi"
    expected = cutter_for("javascript", text[:17], text[17:]).trim(raw)
    assert cutter.trim(raw) == expected == "return 1;"


def test_context_has_imports_and_enclosing_headers_outermost_first() -> None:
    svc = SyntaxService()
    svc.open("file:///c.py", "python", PY)
    context = svc.context("file:///c.py", 9, 8)  # the blank line in get()
    assert context == (
        "import os\nfrom typing import Any\nclass Cache:\n    def get(self, key: str) -> Any:"
    )


def test_context_is_stable_while_typing_inside_the_body() -> None:
    svc = SyntaxService()
    svc.open("file:///c.py", "python", PY)
    before = svc.context("file:///c.py", 9, 8)
    for i, ch in enumerate("if value is None:"):
        svc.apply_edit("file:///c.py", (9, 8 + i), (9, 8 + i), ch)
        assert svc.context("file:///c.py", 9, 9 + i) == before


def test_context_for_brace_languages_names_the_enclosing_function() -> None:
    svc = SyntaxService()
    text = 'package main\n\nimport "fmt"\n\nfunc main() {\n\tfmt.Println(1)\n\t\n}\n'
    svc.open("file:///m.go", "go", text)
    assert svc.context("file:///m.go", 6, 1) == 'package main\nimport "fmt"\nfunc main()'


def test_stop_callback_stops_single_line_mode_at_the_newline() -> None:
    svc = SyntaxService()
    svc.open("file:///s.py", "python", "x = foo(, 2)\n")
    stop = svc.cutter("file:///s.py", 0, 8).stop
    assert stop("compute(") is None
    assert stop("compute(1)") is None
    assert stop("compute(1)\ny") == len("compute(1)")


def test_stop_callback_waits_for_the_dedent_then_keeps_the_block() -> None:
    svc = SyntaxService()
    svc.open("file:///b.py", "python", "def f(x):\n    \n")
    stop = svc.cutter("file:///b.py", 1, 4).stop
    text = ""
    calls = []
    for piece in [
        "if",
        " x:",
        "\n",
        "        return",
        " 1",
        "\n",
        "    ",
        "return",
        " 2",
        "\n\n",
        "def",
    ]:
        text += piece
        calls.append(stop(text))
    assert calls[:-1] == [None] * (len(calls) - 1)
    assert text[: calls[-1] or 0] == "if x:\n        return 1\n    return 2"


def test_stop_callback_stops_before_a_closer_already_right_of_the_cursor() -> None:
    svc = SyntaxService()
    svc.open("file:///c.ts", "typescript", "const xs = [1, 2, ];\n")
    stop = svc.cutter("file:///c.ts", 0, 18).stop
    assert stop("3") is None
    assert stop("3]") == 1


def test_context_after_a_body_last_statement_still_names_the_function() -> None:
    svc = SyntaxService()
    text = (
        "import re\n\n\nclass Parser:\n    def parse(self, s):\n"
        "        out = re.split(',', s)\n        \n"
    )
    svc.open("file:///p.py", "python", text)
    assert svc.context("file:///p.py", 6, 8) == (
        "import re\nclass Parser:\n    def parse(self, s):"
    )
    assert svc.context("file:///p.py", 6, 4) == "import re\nclass Parser:"


def test_comments_can_be_configured_off() -> None:
    svc = SyntaxService(complete_in_comments=False)
    svc.open("file:///c.rs", "rust", "fn main() {\n    // explain \n}\n")
    assert svc.cutter("file:///c.rs", 1, 15).mode == "none"
    svc.complete_in_comments = True
    assert svc.cutter("file:///c.rs", 1, 15).mode == "single"


def test_stop_callback_on_a_blank_line_keeps_statements_until_the_next_line_repeats() -> None:
    svc = SyntaxService()
    svc.open("file:///n.py", "python", "def f(x):\n    y = 1\n    \n    return y\n")
    cutter = svc.cutter("file:///n.py", 2, 4)
    assert cutter.mode == "multi"
    assert cutter.stop("\n") is None
    assert cutter.stop("\n    y += x\n") is None
    assert cutter.stop("\n    y += x\n    z = 2\n    return y") is None  # may go on
    assert cutter.stop("\n    y += x\n    z = 2\n    return y\n") == len("\n    y += x\n    z = 2")
