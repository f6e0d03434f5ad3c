"""Each room's package map (its `__init__.py` docstring) names every module and sub-package in it
(issue 40 item 2: engine/__init__.py once mapped 9 of 30 files), so a newcomer reading the map
sees the whole room and a new module cannot land unmapped."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "spec_lsp"
MAPPED = [
    "engine",
    "engine/weights",
    "engine/sources",
    "completion",
    "nextedit",
    "server",
    "symbols",
]


def unmapped(folder: Path) -> list[str]:
    doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))) or ""
    names = [p.stem for p in folder.glob("*.py") if p.stem != "__init__"]
    names += [p.name for p in folder.iterdir() if (p / "__init__.py").is_file()]
    # a module is named as `name`, `name.attr` or name.py
    return sorted(n for n in names if not re.search(rf"`{n}[`.]|\b{n}\.py\b", doc))


@pytest.mark.parametrize("room", MAPPED)
def test_the_package_map_names_every_module(room: str) -> None:
    assert unmapped(PACKAGE / room) == []


def test_an_unmapped_module_is_found(tmp_path: Path) -> None:
    (tmp_path / "__init__.py").write_text('"""- `known`: mapped; also listed.py."""\n')
    for name in ("known", "listed", "forgotten"):
        (tmp_path / f"{name}.py").write_text("")
    assert unmapped(tmp_path) == ["forgotten"]
