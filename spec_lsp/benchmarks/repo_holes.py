"""The holes of `bench repo`: statements that use a name imported from another file of the same
package, found with tree-sitter, as CrossCodeEval and ExecRepoBench cut theirs.

For each file of a package's own code (`repo_packages.PackageTree.code`), its imports are resolved
to files of the package (`from .core import f`, `from pkg.core import f`, `from . import core`,
`import pkg.core as c`; relative to the file's folder, absolute from the package's root or its
`src/`); a name counts when it resolves to another file of the package. A candidate hole is a simple
statement (an expression, an assignment, `return`, `assert`, `raise`, `del`) of at most `MAX_LINES`
lines, not an import, in which such a name is used as a value (not the attribute of another object,
not a keyword argument's name): the hole starts at that name's first use and runs to the statement's
end, so what precedes it on the line stays as written (CrossCodeEval's cut). The document at the
hole is the file with that text removed, the cursor where it was.

Sampling is deterministic: per package, each file's candidates are shuffled with a generator
seeded by (seed, package, file), the files too, and holes are taken one file at a time in turn
until `limit`, so a package's holes spread over its files.

JavaScript and TypeScript files (`JS_SUFFIXES`, the npm set) are cut the same way by
`repo_holes_js`, with their own imports and statements; `mine` takes either kind of tree.

It knows nothing of servers, models or scores; it reads files and trees.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from tree_sitter import Node

from spec_lsp.benchmarks.repo_hole import MAX_LINES, RepoHole, args_cut, cut_hole
from spec_lsp.benchmarks.repo_holes_js import candidates as js_candidates
from spec_lsp.benchmarks.repo_packages import PackageTree
from spec_lsp.syntax.languages import new_parser, spec_for

JS_SUFFIXES = frozenset({".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx"})  # repo_holes_js's files
STATEMENTS = frozenset(
    {"expression_statement", "return_statement", "assert_statement"}
    | {"raise_statement", "delete_statement"}
)


def module_files(source: PackageTree) -> dict[str, str]:
    """Dotted module name -> file, for the package's code (`src/` is no part of a name)."""
    out: dict[str, str] = {}
    for path in source.code:
        names = _dotted(path)
        if names and names[-1] == "__init__":
            names.pop()
        if names:
            out.setdefault(".".join(names), path)
    return out


def _dotted(path: str) -> list[str]:
    parts = list(PurePosixPath(path).with_suffix("").parts)
    return parts[1:] if parts and parts[0] == "src" else parts


def _text(node: Node | None) -> str:
    return "" if node is None or node.text is None else node.text.decode("utf-8", "replace")


def _base(path: str, relative: str) -> str | None:
    """The dotted module that a relative import (`.`, `..core`) names from file `path`."""
    dots = len(relative) - len(relative.lstrip("."))
    package = _dotted(path)[:-1]  # the file's package (an __init__.py's: its own)
    if dots - 1 > len(package):
        return None
    package = package[: len(package) - (dots - 1)]
    rest = relative.lstrip(".")
    return ".".join([*package, *([rest] if rest else [])])


def imported_names(root: Node, path: str, modules: dict[str, str]) -> dict[str, str]:
    """Name bound in the file -> the other package file it comes from."""
    out: dict[str, str] = {}
    for node in _walk(root):
        if node.type == "import_from_statement":
            module = node.child_by_field_name("module_name")
            text = _text(module)
            base = _base(path, text) if text.startswith(".") else text
            if base is None:
                continue
            for name in node.children_by_field_name("name"):
                bound, real = _binding(name)
                target = modules.get(f"{base}.{real}" if base else real) or modules.get(base)
                if target is not None and target != path:
                    out[bound] = target
        elif node.type == "import_statement":
            for name in node.children_by_field_name("name"):
                bound, real = _binding(name)
                target = modules.get(real)
                if target is not None and target != path:
                    out[bound if name.type == "aliased_import" else real.split(".")[0]] = target
    return out


def _binding(name: Node) -> tuple[str, str]:
    """(the name bound, the dotted name imported) of an import's `name` child."""
    if name.type == "aliased_import":
        return _text(name.child_by_field_name("alias")), _text(name.child_by_field_name("name"))
    return _text(name).split(".")[-1], _text(name)


def _walk(node: Node) -> Iterator[Node]:
    yield node
    for child in node.children:
        yield from _walk(child)


def _is_value(node: Node) -> bool:
    """An identifier used as a value: not `x.<it>`, not `f(<it>=...)`, not a parameter."""
    parent = node.parent
    if parent is None:
        return True
    if parent.type == "attribute" and parent.child_by_field_name("attribute") == node:
        return False
    return not (parent.type == "keyword_argument" and parent.child_by_field_name("name") == node)


def candidates(source: PackageTree, path: str, text: str) -> list[RepoHole]:
    """Every hole of one file, in document order: a Python file's here, a JavaScript or
    TypeScript file's by `repo_holes_js`."""
    if PurePosixPath(path).suffix in JS_SUFFIXES:
        return js_candidates(source, path, text)
    parser = new_parser(spec_for("python"))
    if parser is None:
        return []
    data = text.encode("utf-8", "surrogatepass")
    root = parser.parse(data).root_node
    names = imported_names(root, path, module_files(source))
    holes: list[RepoHole] = []
    for node in _walk(root):
        if node.type not in STATEMENTS or node.end_point[0] - node.start_point[0] >= MAX_LINES:
            continue
        used = [
            n for n in _walk(node) if n.type == "identifier" and _text(n) in names and _is_value(n)
        ]
        if not used:
            continue
        span = (used[0].start_byte, node.end_byte)
        hole = cut_hole(source.label, path, text, data, span, [_text(n) for n in used], names)
        if hole is not None:
            holes.append(hole)
    return holes


def mine(source: PackageTree, limit: int, seed: int = 0, cut: str = "name") -> list[RepoHole]:
    """Up to `limit` holes of the package, spread over its files (see the module's doc); with
    `cut` "args", only the holes that begin with a call of their name, each cut after its `(`
    (`args_cut`)."""
    per_file: list[list[RepoHole]] = []
    for path in source.code:
        text = read(source.root, path)
        found = candidates(source, path, text)
        if cut == "args":
            found = [h for h in map(args_cut, found) if h is not None]
        random.Random(f"{seed}:{source.label}:{path}").shuffle(found)
        if found:
            per_file.append(found)
    random.Random(f"{seed}:{source.label}").shuffle(per_file)
    chosen: list[RepoHole] = []
    while per_file and len(chosen) < limit:
        for found in list(per_file):
            chosen.append(found.pop())
            if not found:
                per_file.remove(found)
            if len(chosen) == limit:
                break
    return chosen


def read(root: Path, path: str) -> str:
    return (root / path).read_text(encoding="utf-8", errors="replace")
