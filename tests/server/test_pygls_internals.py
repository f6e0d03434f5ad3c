"""pygls's non-public names are reached in one module only, which lists them all, and pygls still
has each of them (a pygls upgrade that renames one fails here, not in an editor)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pygls.feature_manager
import pygls.lsp.server
import pygls.protocol.json_rpc
import pygls.protocol.language_server
import pygls.server
from pygls.protocol import LanguageServerProtocol

from spec_lsp.server import build_server, pygls_internals

PACKAGE = Path(__file__).resolve().parents[2] / "spec_lsp"
INTERNALS = Path(pygls_internals.__file__).resolve()
# The pygls classes the server is built on: their modules define the names we must not reach.
PYGLS_MODULES = (
    pygls.protocol.json_rpc,
    pygls.protocol.language_server,
    pygls.server,
    pygls.lsp.server,
    pygls.feature_manager,
)


def non_public(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def pygls_non_public_names() -> set[str]:
    """Every `_name` pygls's server classes define or read (methods and attributes)."""
    names: set[str] = set()
    for module in PYGLS_MODULES:
        for node in ast.walk(ast.parse(Path(str(module.__file__)).read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and non_public(node.attr):
                names.add(node.attr)
            if isinstance(node, ast.FunctionDef) and non_public(node.name):
                names.add(node.name)
    return names


def reached(tree: ast.Module, names: set[str]) -> set[str]:
    """The names of `names` a module reads, or defines as a class's methods (overrides)."""
    found = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr in names}
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        found |= {n.name for n in cls.body if isinstance(n, ast.FunctionDef) and n.name in names}
    return found


def listed() -> set[str]:
    """The names pygls_internals.py's docstring lists (its bullet list of `_names`)."""
    doc = pygls_internals.__doc__ or ""
    return set(re.findall(r"`(_[a-z_]+)`", doc))


def test_no_other_module_of_the_package_reaches_a_pygls_non_public_name() -> None:
    names = pygls_non_public_names()
    assert {"_handle_request", "_shutdown", "_request_futures"} <= names  # the scan sees them
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.resolve() == INTERNALS:
            continue
        found = reached(ast.parse(path.read_text(encoding="utf-8")), names)
        assert not found, f"{path}: {sorted(found)} belong in spec_lsp/server/pygls_internals.py"


def test_pygls_internals_lists_every_non_public_name_it_reaches() -> None:
    used = reached(ast.parse(INTERNALS.read_text(encoding="utf-8")), pygls_non_public_names())
    assert used == listed()


def test_pygls_still_has_every_name_overridden_or_read() -> None:
    protocol = build_server().protocol
    for name in sorted(listed()):
        # An override of a method pygls no longer has would never be called.
        assert hasattr(LanguageServerProtocol, name) or name in vars(protocol), name
