"""`bench repo`'s holes and the editor state at each: mined with tree-sitter from a synthetic
package written by the test (tests/benchmarks/repo_fixture.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from spec_lsp.benchmarks.repo_editor import (
    context_files,
    definition_line,
    edit_plan,
    opened,
    previous_line,
    ring_chunks,
)
from spec_lsp.benchmarks.repo_hole import RepoHole, args_cut
from spec_lsp.benchmarks.repo_holes import candidates, mine, module_files, read
from spec_lsp.benchmarks.repo_packages import local
from tests.benchmarks.repo_fixture import REPORT_HOLES, write_package

REPORT = "src/mathy/report.py"


def test_the_package_splits_into_code_and_tests_and_leaves_setup_out(tmp_path: Path) -> None:
    source = local(write_package(tmp_path))
    assert source.code == (
        "src/mathy/__init__.py",
        "src/mathy/report.py",
        "src/mathy/shapes.py",
        "src/mathy/units.py",
    )
    assert source.tests == ("tests/test_report.py",)
    assert module_files(source)["mathy"] == "src/mathy/__init__.py"
    assert module_files(source)["mathy.units"] == "src/mathy/units.py"


def test_holes_start_at_a_name_imported_from_another_file_and_run_to_the_statement_end(
    tmp_path: Path,
) -> None:
    source = local(write_package(tmp_path))
    text = read(source.root, REPORT)
    holes = candidates(source, REPORT, text)
    assert [(h.expected, h.names) for h in holes] == REPORT_HOLES
    for hole in holes:
        assert text[hole.start : hole.end] == hole.expected
        assert hole.filled(text, hole.expected) == text
        assert hole.document(text) + "" == text[: hole.start] + text[hole.end :]
    # relative, absolute, aliased and submodule imports all resolve to their files
    assert holes[0].imports == ("src/mathy/shapes.py",)  # from mathy.shapes import Box
    assert holes[1].imports == ("src/mathy/shapes.py",)  # from .shapes import area as surface
    assert holes[3].imports == ("src/mathy/units.py",)  # from . import units
    assert holes[0].file_imports == ("src/mathy/shapes.py", "src/mathy/units.py")
    # files that import nothing of the package have no holes; __init__'s string is no use
    for path in ("src/mathy/shapes.py", "src/mathy/units.py", "src/mathy/__init__.py"):
        assert candidates(source, path, read(source.root, path)) == []


def test_sampling_is_deterministic_for_a_seed_and_capped(tmp_path: Path) -> None:
    source = local(write_package(tmp_path))
    first = mine(source, 4, seed=1)
    assert len(first) == 4 and first == mine(source, 4, seed=1)
    assert len(set(first)) == 4
    every = [h.expected for h in mine(source, 100, seed=1)]
    assert sorted(every) == sorted(e for e, _ in REPORT_HOLES)
    orders = {tuple(h.key for h in mine(source, 6, seed=s)) for s in range(6)}
    assert len(orders) > 1  # the seed changes the draw


def test_the_args_cut_starts_after_the_calls_parenthesis(tmp_path: Path) -> None:
    source = local(write_package(tmp_path))
    text = read(source.root, REPORT)
    holes = mine(source, 100, seed=1, cut="args")
    # every hole that begins with a call of its name, the name and `(` typed; `Box(width,
    # height)` too, `units.fmt(...)` through the module's attribute
    assert sorted(h.expected for h in holes) == sorted(
        [
            "width, height)",
            "box.width, box.height)",
            "width, height)",
            "size, power=2) + ', ' + units.fmt(edge)",
            "b.width, b.height) for b in boxes]",
            "sum(sizes), power=2)",
        ]
    )
    for hole in holes:
        assert text[hole.start : hole.end] == hole.expected
        assert text[: hole.start].endswith("(")
    short = RepoHole("p", "a.py", 0, 5, "fn(x)", ("fn",), ())
    assert args_cut(short) is None  # `x)`: too little left to write
    assert args_cut(RepoHole("p", "a.py", 0, 9, "VALUE + 1", ("VALUE",), ())) is None


def test_the_files_open_at_a_hole_put_the_names_sources_last(tmp_path: Path) -> None:
    source = local(write_package(tmp_path))
    holes = candidates(source, REPORT, read(source.root, REPORT))
    units_hole = holes[3]
    files = context_files(source, units_hole, open_files=8)
    assert REPORT not in files
    assert files[-1] == "src/mathy/units.py"  # the hole's name comes from there: newest
    assert set(files) == {"src/mathy/__init__.py", "src/mathy/shapes.py", "src/mathy/units.py"}
    assert context_files(source, units_hole, open_files=1) == ["src/mathy/units.py"]
    texts = {p: read(source.root, p) for p in source.code}
    chunks = ring_chunks(files, texts)
    assert [c["filename"] for c in chunks] == files
    assert chunks[-1]["text"] == texts["src/mathy/units.py"] + "\n"


def test_the_recent_edits_type_the_definition_and_the_line_above_back_in(tmp_path: Path) -> None:
    source = local(write_package(tmp_path))
    texts = {p: read(source.root, p) for p in source.code}
    hole = candidates(source, REPORT, texts[REPORT])[2]  # perimeter(width, height)
    document = hole.document(texts[REPORT])
    edits = edit_plan(hole, texts, document)
    assert [(e.path, e.line, e.text) for e in edits] == [
        ("src/mathy/shapes.py", 4, "def perimeter(width, height):"),
        (REPORT, 7, "    size = surface(box.width, box.height)"),
    ]
    docs = opened(context_files(source, hole, 8), texts, hole, document, edits)
    assert docs[-1].path == REPORT
    shapes = next(d for d in docs if d.path == "src/mathy/shapes.py")
    assert shapes.text.split("\n")[4] == "" and shapes.text.count("\n") == texts[
        "src/mathy/shapes.py"
    ].count("\n")
    assert docs[-1].text.split("\n")[7] == ""
    assert definition_line(texts["src/mathy/shapes.py"], "Box") == 8
    assert definition_line(texts["src/mathy/units.py"], "UNIT") == 0
    assert definition_line(texts["src/mathy/units.py"], "nothing") is None
    assert previous_line("a\n\n\nb", 6) == 0
    assert previous_line("a", 0) is None


@pytest.mark.parametrize(
    "line, found",
    [
        ("export function area(w, h) {", True),
        ("export default async function area() {", True),
        ("function* area() {", True),
        ("export const area = (w, h) => w * h;", True),
        ("let area = 1", True),
        ("export class area {}", True),
        ("export interface area { w: number }", True),
        ("export type area = number;", True),
        ("exports.area = function () {};", True),
        ("module.exports.area = 1;", True),
        ("const areaOf = 1;", False),
        ("return area(1, 2);", False),
    ],
)
def test_the_definition_line_of_javascript_and_typescript_names(line: str, found: bool) -> None:
    text = f"// header\n{line}\n"
    assert definition_line(text, "area", "typescript") == (1 if found else None)
    assert definition_line(text, "area", "javascript") == (1 if found else None)
    assert definition_line("def area():\n", "area", "javascript") is None
    assert definition_line("def area():\n", "area") == 0
