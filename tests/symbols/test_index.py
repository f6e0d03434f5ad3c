"""The workspace symbol index: tags from tree-sitter, imports resolved to files, .gitignore and
private files left out, updates replacing a file's entry, and definitions near a cursor."""

from __future__ import annotations

from pathlib import Path

from spec_lsp.symbols import SymbolIndex, definitions_near
from spec_lsp.symbols.render import render_definitions
from spec_lsp.syntax.tagger import file_tags

SHAPES = '''class Rectangle:
    """An axis-aligned rectangle."""
    def __init__(self, width: float, height: float):
        self.width = width
    def scaled(self, k: float) -> "Rectangle":
        return Rectangle(self.width * k, 1)

def area_of(rect: Rectangle) -> float:
    """The area."""
    return 0.0
'''
MAIN = (
    "from pkg import Rectangle\nfrom pkg.shapes import area_of\n\n"
    "def run():\n    r = Rectangle(2, 3)\n"
)


def workspace(tmp_path: Path) -> SymbolIndex:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from .shapes import Rectangle\n")
    (tmp_path / "pkg" / "shapes.py").write_text(SHAPES)
    (tmp_path / "main.py").write_text(MAIN)
    (tmp_path / ".gitignore").write_text("build/\n*.gen.py\n")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "copy.py").write_text("def copied(): pass\n")
    (tmp_path / "made.gen.py").write_text("def generated(): pass\n")
    (tmp_path / ".env.py").write_text("def token_value(): pass\n")
    index = SymbolIndex(admits=lambda path: not path.endswith(".env.py"))
    index.roots = (str(tmp_path),)
    index.build(index.roots)
    return index


def test_python_tags_have_signatures_docstrings_and_fields() -> None:
    tags = {t.name: t for t in file_tags("python", SHAPES).tags}
    assert tags["Rectangle"].doc == "An axis-aligned rectangle."
    assert tags["scaled"].signature == 'def scaled(self, k: float) -> "Rectangle":'
    assert tags["scaled"].container == "Rectangle" and tags["width"].kind == "field"
    assert tags["area_of"].doc == "The area." and tags["area_of"].kind == "function"


def test_python_fields_and_variables_keep_short_values() -> None:
    source = (
        "_Plugin: TypeAlias = object\n"
        f"TABLE: dict[str, int] = {{{', '.join(f'{chr(97 + i)!r}: {i}' for i in range(12))}}}\n"
        "class Hook:\n"
        "    retries: int = 3\n"
        "    def __init__(self, func, names):\n"
        "        self.__func = func\n"
        "        self.names: list[str] = names\n"
        f"        self.table = {{{', '.join(f'{chr(97 + i)!r}: {i}' for i in range(12))}}}\n"
    )
    tags = {t.name: t.signature for t in file_tags("python", source).tags}
    assert tags["_Plugin"] == "_Plugin: TypeAlias = object"  # the value was dropped before
    assert tags["TABLE"] == "TABLE: dict[str, int]"  # too long a value: the annotation alone
    assert tags["retries"] == "retries: int = 3"
    assert tags["__func"] == "__func = func"  # was a bare `__func` line in the class's stub
    assert tags["names"] == "names: list[str]" and tags["table"] == "table = ..."


def test_brace_languages_tag_classes_methods_and_imports() -> None:
    ts = file_tags(
        "typescript",
        'import { A as B } from "./a";\nexport class S { w: number; f(x: number): void {} }\n',
    )
    assert [(t.name, t.kind, t.container) for t in ts.tags] == [
        ("S", "class", ""),
        ("w", "field", "S"),
        ("f", "method", "S"),
    ]
    assert ts.imports[0].source == "./a" and ts.imports[0].names == (("A", "B"),)
    go = file_tags(
        "go", "package p\n// R is.\ntype R struct { W int }\nfunc (r *R) Area() int { return 0 }\n"
    )
    assert {(t.name, t.container) for t in go.tags} == {("R", ""), ("W", "R"), ("Area", "R")}
    rust = file_tags(
        "rust",
        "use crate::geom::Point;\n/// A.\npub struct A { x: i32 }\n"
        "impl A { fn new() -> Self { A { x: 0 } } }\n",
    )
    assert [t.name for t in rust.tags] == ["A", "x", "new"] and rust.tags[0].doc == "A."
    assert rust.imports[0].source == "crate::geom"


def test_the_build_leaves_out_ignored_and_private_files(tmp_path: Path) -> None:
    index = workspace(tmp_path)
    assert index.defining("area_of") == [str(tmp_path / "pkg" / "shapes.py")]
    assert index.defining("copied") == [] and index.defining("generated") == []
    assert index.defining("token_value") == []  # the private file is not read at all
    assert index.update(str(tmp_path / ".env.py"), "def token_value(): pass\n") is False


def test_an_update_replaces_the_files_entry_and_a_removal_forgets_it(tmp_path: Path) -> None:
    index = workspace(tmp_path)
    shapes = str(tmp_path / "pkg" / "shapes.py")
    index.update(shapes, "def perimeter_of(rect):\n    pass\n")
    assert index.defining("area_of") == [] and index.defining("perimeter_of") == [shapes]
    index.remove(str(tmp_path / "pkg"))
    assert index.defining("perimeter_of") == [] and not index.has(shapes)


def test_an_imported_call_and_a_receivers_type_resolve_through_a_reexport(tmp_path: Path) -> None:
    index = workspace(tmp_path)
    lines = [*MAIN.split("\n")[:-1], "    print(area_of("]
    found = definitions_near(index, str(tmp_path / "main.py"), lines, 5, len(lines[5]))
    assert [d.tag.name for d in found][:2] == ["area_of", "Rectangle"]
    lines[5] = "    r."
    found = definitions_near(index, str(tmp_path / "main.py"), lines, 5, 6)
    assert found[0].tag.name == "Rectangle" and {m.name for m in found[0].members} >= {"scaled"}
    text = render_definitions(found[0].path, [found[0]])
    assert text.startswith('class Rectangle:\n    """An axis-aligned rectangle."""\n')
    assert '    def scaled(self, k: float) -> "Rectangle": ...' in text


def test_a_name_of_the_file_itself_is_not_looked_up(tmp_path: Path) -> None:
    index = workspace(tmp_path)
    local = str(tmp_path / "local.py")
    text = "def area_of(x):\n    return x\n\narea_of("
    index.update(local, text)
    assert definitions_near(index, local, text.split("\n"), 3, 8) == []


def test_the_background_build_reports_its_files(tmp_path: Path) -> None:
    index = workspace(tmp_path)
    fresh = SymbolIndex()
    fresh.start([str(tmp_path)])
    assert fresh.built.wait(30)
    assert fresh.report.complete and fresh.report.files == len(index) + 1  # with the .env.py


def test_an_open_documents_update_from_its_kept_tree_tags_as_a_whole_parse(
    tmp_path: Path,
) -> None:
    index = workspace(tmp_path)
    shapes = str(tmp_path / "pkg" / "shapes.py")
    text = SHAPES
    index.update(shapes, text, keep_tree=True)
    for edit in ("\ndef perimeter_of(rect):\n    pass\n", "", "\nclass Square(Rectangle):\n"):
        text = text.replace("def area_of", edit + "def area_of", 1) if edit else text[:-20]
        index.update(shapes, text, keep_tree=True)
        assert index.tags(shapes) == file_tags("python", text)
    assert index.defining("Square") == [shapes]


def test_a_doc_comment_is_its_first_line_without_markers() -> None:
    ts = "/**\n * Makes one.\n * More.\n */\nexport function make() {}\n"
    ts += "// a\n// b\nfunction g() {}\n"
    assert [(t.name, t.doc) for t in file_tags("typescript", ts).tags] == [
        ("make", "Makes one."),
        ("g", "a"),
    ]
    go = (
        "package p\n\n// Area is w*h.\nfunc Area() int { return 0 }\n\n// far away\n\nfunc B() {}\n"
    )
    assert [(t.name, t.doc) for t in file_tags("go", go).tags] == [
        ("Area", "Area is w*h."),
        ("B", ""),
    ]
