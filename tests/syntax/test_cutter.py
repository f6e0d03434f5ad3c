"""`Cutter`: one object per request with the mode, the stop callback and the trim; never None,
never raises, and the same answers from the service and from text."""

from __future__ import annotations

from spec_lsp.syntax import Cutter, SyntaxService, cutter_for

SRC = "function add(a, b) {\n  \n}\n"


def test_service_cutter_agrees_with_the_text_only_cutter() -> None:
    svc = SyntaxService()
    svc.open("file:///f.js", "javascript", SRC)
    from_doc = svc.cutter("file:///f.js", 1, 2)
    from_text = cutter_for("javascript", SRC[:23], SRC[23:])
    raw = "return a + b;\n}\n"
    assert from_doc.mode == from_text.mode
    assert from_doc.trim(raw) == from_text.trim(raw) == "return a + b;"


def test_unknown_document_gets_a_cutter_with_the_plain_rules() -> None:
    cutter = SyntaxService().cutter("file:///nowhere.py", 3, 1)
    assert isinstance(cutter, Cutter)
    assert cutter.mode in ("single", "multi")
    assert cutter.trim("x = 1\n") == "x = 1"
    assert cutter.stop("x = 1") is None


def test_unknown_language_gets_a_cutter_with_the_plain_rules() -> None:
    cutter = cutter_for("no-such-language", "say(", ")\n")
    assert cutter.trim("hi)") == "hi"


def test_a_failing_rule_falls_back_instead_of_raising() -> None:
    cutter = cutter_for("python", "x = ", "\n")

    def boom(text: str) -> str | None:
        raise RuntimeError("bug")

    cutter._trimmer.trim = boom  # type: ignore[method-assign, assignment]
    assert cutter.trim("1\n") == "1"


def test_a_cutter_trims_against_the_text_it_was_built_on_after_later_edits() -> None:
    svc = SyntaxService()
    svc.open("file:///e.py", "python", "def f():\n    \n")
    cutter = svc.cutter("file:///e.py", 1, 4)
    svc.apply_edit("file:///e.py", (1, 4), (1, 4), "x = (")  # the user typed on meanwhile
    assert cutter.trim("y = 1\n    z = 2 +") == "y = 1"
