"""A file's tags: the classes, functions, methods and fields it defines, and what it imports.

A `FileTags` holds each definition as a `Tag` (its name, kind, one-line signature, the first line
of its docstring or doc comment, the class or type it belongs to) and each import as an `Import`
(the module as written, and the names it binds). Python's tree is read here; TypeScript,
JavaScript, Go and Rust in `tags_curly.py`; `tagger.file_tags` parses a text and picks the reader.

This module owns what a tag is and how Python's is read from a tree. It knows nothing of files on
disk, of resolving an import to a file, or of prompts (spec_lsp/symbols does those).
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

MAX_SIGNATURE = 200  # characters of a signature kept (a long parameter list is cut)
SHORT_VALUE = 40  # characters of a field's value shown beside its annotation, or of `self.x = v`
MAX_FIELDS = 24  # fields of one class kept (a data table of a class is not its shape)


@dataclass(frozen=True, slots=True)
class Tag:
    name: str
    # "class" (a struct, interface, trait, enum too), "function", "method", "field", "variable"
    # (a module's top-level assignment, Python's)
    kind: str
    signature: str  # the header on one line, without the body (`def area(self) -> float:`)
    doc: str = ""  # the first line of its docstring or doc comment
    container: str = ""  # the class or type a method or field belongs to
    line: int = 0


@dataclass(frozen=True, slots=True)
class Import:
    """`source` as written (`a.b`, `..pkg`, `./foo`, `example.com/m/geom`, `crate::geom`); the
    names it binds as (name in the module, local name); `alias`: the local name of the module
    itself when it binds the module (`import os.path as osp`, `import * as ns from "./x"`)."""

    source: str
    names: tuple[tuple[str, str], ...] = ()
    alias: str = ""


@dataclass(frozen=True, slots=True)
class FileTags:
    tags: tuple[Tag, ...] = ()
    imports: tuple[Import, ...] = ()


def text_of(node: Node | None) -> str:
    return "" if node is None or node.text is None else node.text.decode("utf-8", "replace")


def one_line(text: str) -> str:
    """`text` with its whitespace runs made single spaces, cut to MAX_SIGNATURE characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_SIGNATURE else flat[: MAX_SIGNATURE - 3] + "..."


def header(node: Node, body: Node | None) -> str:
    """The text of `node` up to its body, on one line."""
    source = node.text or b""
    end = (body.start_byte - node.start_byte) if body is not None else len(source)
    return one_line(source[:end].decode("utf-8", "replace"))


def first_line(text: str) -> str:
    for line in text.strip().splitlines():
        if line.strip():
            return line.strip()
    return ""


# -- Python ---------------------------------------------------------------------------------------
def python_tags(root: Node) -> FileTags:
    tags: list[Tag] = []
    imports: list[Import] = []
    for node in root.named_children:
        if node.type in ("import_statement", "import_from_statement"):
            imports.extend(_py_imports(node))
        else:
            _py_definition(_undecorated(node), "", tags)
    return FileTags(tuple(tags), tuple(imports))


def _undecorated(node: Node) -> Node:
    if node.type == "decorated_definition":
        inner = node.child_by_field_name("definition")
        return inner if inner is not None else node
    return node


def _py_definition(node: Node, container: str, tags: list[Tag]) -> None:
    name = text_of(node.child_by_field_name("name"))
    body = node.child_by_field_name("body")
    line = node.start_point[0]
    if node.type == "function_definition" and name:
        kind = "method" if container else "function"
        tags.append(Tag(name, kind, header(node, body), _py_doc(body), container, line))
        if container and name == "__init__" and body is not None:
            tags.extend(_py_self_fields(body, container))
    elif node.type == "class_definition" and name:
        tags.append(Tag(name, "class", header(node, body), _py_doc(body), container, line))
        for child in body.named_children if body is not None else ():
            _py_definition(_undecorated(child), name, tags)
    elif node.type == "expression_statement":
        tags.extend(_py_fields(node, container, "field" if container else "variable"))


def _py_doc(body: Node | None) -> str:
    first = body.named_children[0] if body is not None and body.named_children else None
    if first is None or first.type != "expression_statement" or not first.named_children:
        return ""
    string = first.named_children[0]
    if string.type != "string":
        return ""
    content = "".join(text_of(c) for c in string.named_children if c.type == "string_content")
    return first_line(content)


def _py_fields(statement: Node, container: str, kind: str) -> list[Tag]:
    """A class body's `name: T = v` / `name = v` as fields, a module's as variables (`name: T`,
    or `name = v` cut)."""
    out = []
    for node in statement.named_children:
        target = node.child_by_field_name("left") if node.type == "assignment" else None
        if target is None or target.type != "identifier":
            continue
        annotation = node.child_by_field_name("type")
        value = node.child_by_field_name("right")
        if annotation is None:
            shown = f" = {text_of(value)}"
        else:  # `name: T = v` keeps a short value (a default, a constant): `name: T` otherwise
            short = one_line(text_of(value))
            shown = f": {text_of(annotation)}" + (
                f" = {short}" if short and len(short) <= SHORT_VALUE else ""
            )
        line = node.start_point[0]
        signature = one_line(text_of(target) + shown)
        out.append(Tag(text_of(target), kind, signature, "", container, line))
    return out[:MAX_FIELDS]


def _py_self_fields(body: Node, container: str) -> list[Tag]:
    """`self.name = ...` (and `self.name: T = ...`) at the top level of `__init__`'s body."""
    out: dict[str, Tag] = {}
    for statement in body.named_children:
        for node in statement.named_children if statement.type == "expression_statement" else ():
            target = node.child_by_field_name("left") if node.type == "assignment" else None
            if target is None or target.type != "attribute" or text_of(target)[:5] != "self.":
                continue
            name = text_of(target.child_by_field_name("attribute"))
            kind = node.child_by_field_name("type")
            if kind is not None:
                shown = f"{name}: {text_of(kind)}"
            else:  # `self.name = v` as `name = v` when v is short, else `name = ...`
                value = one_line(text_of(node.child_by_field_name("right")))
                shown = f"{name} = {value if value and len(value) <= SHORT_VALUE else '...'}"
            out.setdefault(name, Tag(name, "field", one_line(shown), "", container))
    return list(out.values())[:MAX_FIELDS]


def _py_imports(node: Node) -> list[Import]:
    if node.type == "import_statement":
        out = []
        for child in node.named_children:
            if child.type == "aliased_import":
                module = text_of(child.child_by_field_name("name"))
                out.append(Import(module, (), text_of(child.child_by_field_name("alias"))))
            elif child.type == "dotted_name":  # `import a.b` binds `a`
                out.append(Import(text_of(child), (), text_of(child).split(".")[0]))
        return out
    module = text_of(node.child_by_field_name("module_name"))
    names: list[tuple[str, str]] = []
    for child in node.children_by_field_name("name"):
        if child.type == "aliased_import":
            name = text_of(child.child_by_field_name("name"))
            names.append((name, text_of(child.child_by_field_name("alias"))))
        else:
            names.append((text_of(child), text_of(child)))
    if any(c.type == "wildcard_import" for c in node.named_children):
        names.append(("*", "*"))
    return [Import(module, tuple(names))]
