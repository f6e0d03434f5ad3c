"""The holes of `bench repo` in JavaScript and TypeScript: `repo_holes`'s cut, for the npm set.

A file's imports are resolved to files of the package's own code (`PackageTree.code`): ES imports
(`import {a, b as c} from './x'`, `import d from './x'`, `import * as m from './x'`; type-only ones
bind no value and are left out) and CommonJS requires (`const {a, b: c} = require('./x')`,
`const m = require('./x')`, `const t = require('./x').t`). A specifier counts when it is relative
(`./`, `../`) and names a file of the package as written, with one of `EXTENSIONS` added, as an
`index.*` in that folder, or a `.js` written for a `.ts`/`.tsx` source (TypeScript's ES modules);
a bare name (`lodash`, `node:fs`) is another package.

A candidate hole is a simple statement (`STATEMENTS`: an expression, `return`, `throw`, a `const`/
`let`/`var` of one declarator) of at most `MAX_LINES` lines, not itself a require, in which such a
name is used as a value (not a binding: a declarator's or a parameter's name, a destructured
name): the hole starts at that name's first use and runs to the statement's end (a comment the
grammar folds into a statement with no `;` left out), exactly as in `repo_holes`. A statement
inside another (a callback's `return` in a one-line call) whose hole would start where the outer
one's does is left to the outer one, so keys stay unique.

It knows nothing of servers, models or scores; it reads files and trees.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator

from tree_sitter import Node

from spec_lsp.benchmarks.repo_hole import MAX_LINES, RepoHole, cut_hole
from spec_lsp.benchmarks.repo_packages import PackageTree
from spec_lsp.syntax.languages import new_parser, spec_for

EXTENSIONS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs")  # tried in this order
STATEMENTS = frozenset({"expression_statement", "return_statement", "throw_statement"})
DECLARATIONS = frozenset({"lexical_declaration", "variable_declaration"})
PARAMETERS = frozenset({"formal_parameters", "required_parameter", "optional_parameter"})
PATTERNS = frozenset({"pair_pattern", "array_pattern", "rest_pattern", "object_pattern"})
NAMED = frozenset({"function_declaration", "class_declaration", "function_expression", "class"})


def _text(node: Node | None) -> str:
    return "" if node is None or node.text is None else node.text.decode("utf-8", "replace")


def _walk(node: Node) -> Iterator[Node]:
    yield node
    for child in node.children:
        yield from _walk(child)


def grammar_for(path: str) -> str:
    """The `spec_for` language of a file: TSX for .tsx, TypeScript for .ts, else JavaScript."""
    if path.endswith(".tsx"):
        return "tsx"
    return "typescript" if path.endswith(".ts") else "javascript"


def resolve(path: str, specifier: str, code: frozenset[str]) -> str | None:
    """The package file that `specifier`, imported by file `path`, names; None when it is not
    relative or names no file of the package's code."""
    if not specifier.startswith(("./", "../")) and specifier not in (".", ".."):
        return None
    base = posixpath.normpath(posixpath.join(posixpath.dirname(path), specifier))
    stem, ext = posixpath.splitext(base)
    tried = [base, *(base + e for e in EXTENSIONS), *(f"{base}/index{e}" for e in EXTENSIONS)]
    if ext in (".js", ".jsx"):
        tried += [stem + ".ts", stem + ".tsx"]
    return next((t for t in tried if t in code and t != path), None)


def _required(node: Node | None) -> str | None:
    """The specifier of `require('x')` or of `require('x').name`; None for anything else."""
    if node is not None and node.type == "member_expression":
        node = node.child_by_field_name("object")
    if node is None or node.type != "call_expression":
        return None
    if _text(node.child_by_field_name("function")) != "require":
        return None
    arguments = [a for a in (node.child_by_field_name("arguments") or node).named_children]
    if len(arguments) != 1 or arguments[0].type != "string":
        return None
    return "".join(_text(c) for c in arguments[0].named_children)


def _es_bindings(node: Node) -> Iterator[str]:
    """The value names an `import ... from` binds (none for `import type`)."""
    if any(c.type == "type" for c in node.children):
        return
    for clause in (c for c in node.children if c.type == "import_clause"):
        for part in clause.named_children:
            if part.type == "identifier":  # import d from
                yield _text(part)
            elif part.type == "namespace_import":  # import * as m from
                yield from (_text(c) for c in part.named_children if c.type == "identifier")
            elif part.type == "named_imports":  # import {a, b as c} from
                for spec in part.named_children:
                    if spec.type != "import_specifier" or any(
                        c.type == "type" for c in spec.children
                    ):
                        continue
                    bound = spec.child_by_field_name("alias") or spec.child_by_field_name("name")
                    yield _text(bound)


def _require_bindings(declarator: Node) -> Iterator[str]:
    """The names `const <pattern> = require(...)` binds."""
    name = declarator.child_by_field_name("name")
    if name is None:
        return
    if name.type == "identifier":
        yield _text(name)
    elif name.type == "object_pattern":
        for part in name.named_children:
            if part.type == "shorthand_property_identifier_pattern":
                yield _text(part)
            elif part.type == "pair_pattern":
                value = part.child_by_field_name("value")
                if value is not None and value.type == "identifier":
                    yield _text(value)


def imported_names(root: Node, path: str, code: frozenset[str]) -> dict[str, str]:
    """Name bound in the file -> the other package file it comes from."""
    out: dict[str, str] = {}
    for node in _walk(root):
        if node.type == "import_statement":
            source = node.child_by_field_name("source")
            specifier = "".join(_text(c) for c in source.named_children) if source else ""
            target = resolve(path, specifier, code)
            if target is not None:
                out.update(dict.fromkeys(_es_bindings(node), target))
        elif node.type == "variable_declarator":
            required = _required(node.child_by_field_name("value"))
            target = None if required is None else resolve(path, required, code)
            if target is not None:
                out.update(dict.fromkeys(_require_bindings(node), target))
    return out


def _is_value(node: Node) -> bool:
    """An identifier used as a value: not a name being bound (a declarator's, a parameter's, a
    function's or class's, a destructured one)."""
    parent = node.parent
    if parent is None:
        return True
    if parent.type == "variable_declarator" and parent.child_by_field_name("name") == node:
        return False
    if parent.type == "arrow_function" and parent.child_by_field_name("parameter") == node:
        return False
    if parent.type in NAMED and parent.child_by_field_name("name") == node:
        return False
    if parent.type == "assignment_pattern" and parent.child_by_field_name("left") == node:
        return False
    return parent.type not in PARAMETERS and parent.type not in PATTERNS


def _is_statement(node: Node) -> bool:
    """A simple statement of at most `MAX_LINES` lines that is not a require."""
    if node.end_point[0] - node.start_point[0] >= MAX_LINES:
        return False
    if node.type in STATEMENTS:
        return True
    if node.type not in DECLARATIONS:
        return False
    declarators = [c for c in node.named_children if c.type == "variable_declarator"]
    return len(declarators) == 1 and _required(declarators[0].child_by_field_name("value")) is None


def _code_end(node: Node) -> int:
    """Where the statement's code ends: a comment the grammar folds into a statement with no
    `;` (`f(x) // why`) is no part of it."""
    return max(n.end_byte for n in _walk(node) if n.child_count == 0 and n.type != "comment")


def candidates(source: PackageTree, path: str, text: str) -> list[RepoHole]:
    """Every hole of one file, in document order."""
    parser = new_parser(spec_for(grammar_for(path)))
    if parser is None:
        return []
    data = text.encode("utf-8", "surrogatepass")
    root = parser.parse(data).root_node
    names = imported_names(root, path, frozenset(source.code))
    holes: list[RepoHole] = []
    starts: set[int] = set()
    for node in _walk(root):
        if not _is_statement(node):
            continue
        used = [
            n for n in _walk(node) if n.type == "identifier" and _text(n) in names and _is_value(n)
        ]
        if not used or used[0].start_byte in starts:
            continue
        starts.add(used[0].start_byte)
        span = (used[0].start_byte, _code_end(node))
        hole = cut_hole(source.label, path, text, data, span, [_text(n) for n in used], names)
        if hole is not None:
            holes.append(hole)
    return holes
