"""Imports resolved to files in each language the index reads, and names that are not imported
left alone (a same-named definition elsewhere is not this one)."""

from __future__ import annotations

from pathlib import Path

from spec_lsp.symbols import SymbolIndex, definitions_near
from spec_lsp.symbols.render import render_definitions


def indexed(root: Path, files: dict[str, str]) -> SymbolIndex:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    index = SymbolIndex()
    index.roots = (str(root),)
    index.build(index.roots)
    return index


def names_at_end(index: SymbolIndex, path: Path) -> list[str]:
    lines = path.read_text().split("\n")
    found = definitions_near(index, str(path), lines, len(lines) - 1, len(lines[-1]))
    return [d.tag.name for d in found]


def test_a_name_neither_defined_nor_imported_is_not_looked_up(tmp_path: Path) -> None:
    index = indexed(
        tmp_path,
        {"other.py": "class Chunk:\n    text: str\n", "main.py": "Chunk = tuple\nx = Chunk("},
    )
    assert names_at_end(index, tmp_path / "main.py") == []  # its own variable, not other.py's


def test_python_star_imports_and_module_constants(tmp_path: Path) -> None:
    index = indexed(
        tmp_path,
        {
            "limits.py": "MAX_ROWS: int = 64\nLIMIT = 3\n",
            "main.py": "from limits import *\nimport limits\nrows = limits.MAX_ROWS + min(LIMIT, ",
        },
    )
    found = definitions_near(
        index, str(tmp_path / "main.py"), (tmp_path / "main.py").read_text().split("\n"), 2, 60
    )
    assert [d.tag.name for d in found] == ["LIMIT", "MAX_ROWS"]
    assert render_definitions(found[0].path, found) == "LIMIT = 3\n\nMAX_ROWS: int = 64\n"


def test_typescript_relative_imports_resolve_with_their_extension(tmp_path: Path) -> None:
    index = indexed(
        tmp_path,
        {
            "src/geom/index.ts": "export function area(w: number): number { return 0 }\n",
            "src/app.ts": 'import { area } from "./geom";\nconst a = area(',
        },
    )
    assert names_at_end(index, tmp_path / "src" / "app.ts") == ["area"]


def test_go_package_paths_and_same_package_names(tmp_path: Path) -> None:
    index = indexed(
        tmp_path,
        {
            "go.mod": "module example.com/shop\n",
            "geom/rect.go": "package geom\n// Rect is a box.\ntype Rect struct { W int }\n",
            "main.go": 'package main\nimport "example.com/shop/geom"\nfunc f() { r := geom.Rect{',
            "util.go": "package main\nfunc helper(x int) int { return x }\n",
            "other/util.go": "package other\nfunc helper2() {}\n",
        },
    )
    assert names_at_end(index, tmp_path / "main.go") == ["Rect"]
    (tmp_path / "run.go").write_text("package main\nfunc g() { helper(helper2(")
    index.read(str(tmp_path / "run.go"))
    assert names_at_end(index, tmp_path / "run.go") == ["helper"]  # not another package's


def test_rust_crate_paths_and_modules(tmp_path: Path) -> None:
    index = indexed(
        tmp_path,
        {
            "Cargo.toml": '[package]\nname = "shop"\n',
            "src/geom.rs": "/// A point.\npub struct Point { pub x: i32 }\n",
            "src/main.rs": "mod geom;\nuse crate::geom::Point;\nfn main() { let p = Point {",
        },
    )
    assert names_at_end(index, tmp_path / "src" / "main.rs") == ["Point"]


def test_a_submodule_imported_from_its_package_resolves_its_members(tmp_path: Path) -> None:
    index = indexed(
        tmp_path,
        {
            "shop/__init__.py": "",
            "shop/prices.py": "def with_tax(amount: float) -> float:\n    'Adds VAT.'\n",
            "shop/cart.py": "from . import prices\n\ntotal = prices.with_tax(",
        },
    )
    assert names_at_end(index, tmp_path / "shop" / "cart.py") == ["with_tax"]


def test_self_resolves_to_the_enclosing_classs_bases_from_other_files(tmp_path: Path) -> None:
    index = indexed(
        tmp_path,
        {
            "base.py": "class Store:\n    def put(self, key: str) -> None:\n        pass\n",
            "disk.py": (
                "import abc\nfrom base import Store\n\n\n"
                "class DiskStore(Store, metaclass=abc.ABCMeta):\n    def save(self):\n        self."
            ),
            "web.ts": 'import { Widget } from "./widget";\nclass B extends Widget {\n  f() { this.',
            "widget.ts": "export class Widget { render(): void {} }\n",
        },
    )
    lines = (tmp_path / "disk.py").read_text().split("\n")
    found = definitions_near(index, str(tmp_path / "disk.py"), lines, 6, len(lines[6]))
    assert [d.tag.name for d in found] == ["Store"] and found[0].primary
    assert [m.name for m in found[0].members] == ["put"]
    assert names_at_end(index, tmp_path / "web.ts") == ["Widget"]
