"""Tags of the brace languages: TypeScript/TSX and JavaScript, Go, Rust (`tags.py` has the types).

Each reader walks the top level of a tree (and the bodies of its classes, interfaces, structs,
traits and impls) and reads a definition's signature as its text up to its body, its doc as the
first line of the comment just above it (`/** */`, `//`, `///`). Imports keep the module as
written; resolving it to a file is spec_lsp/symbols's.
"""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from spec_lsp.syntax.tags import MAX_FIELDS, FileTags, Import, Tag, first_line, header, text_of

CLASSES_TS = ("class_declaration", "abstract_class_declaration", "interface_declaration")
FUNCTIONS_TS = ("function_declaration", "generator_function_declaration")
MEMBERS_TS = ("method_definition", "method_signature", "abstract_method_signature")
FIELDS_TS = ("public_field_definition", "property_signature", "field_definition")


def doc_above(node: Node) -> str:
    """The first line of the comments right above `node` (a run of `//` or `///` lines, or a
    `/** */` block), their markers taken off."""
    blocks: list[str] = []
    prev, below = node.prev_named_sibling, node.start_point[0]
    while prev is not None and "comment" in prev.type and below - prev.end_point[0] <= 1:
        blocks.insert(0, text_of(prev))
        below, prev = prev.start_point[0], prev.prev_named_sibling
    lines = (
        line.strip().lstrip("/*!").rstrip("*/").strip() for b in blocks for line in b.splitlines()
    )
    return first_line("\n".join(lines))


def _named(node: Node) -> str:
    return text_of(node.child_by_field_name("name"))


# -- TypeScript, JavaScript ----------------------------------------------------------------------
def ts_tags(root: Node) -> FileTags:
    tags: list[Tag] = []
    imports: list[Import] = []
    for node in root.named_children:
        if node.type == "import_statement":
            imports.append(_ts_import(node))
            continue
        outer = node
        if node.type == "export_statement":
            inner = node.child_by_field_name("declaration")
            if inner is None:
                continue
            node = inner
        _ts_definition(node, outer, tags)
    return FileTags(tuple(tags), tuple(imports))


def _ts_definition(node: Node, outer: Node, tags: list[Tag]) -> None:
    name, body = _named(node), node.child_by_field_name("body")
    line = node.start_point[0]
    if node.type in CLASSES_TS and name:
        tags.append(Tag(name, "class", header(node, body), doc_above(outer), "", line))
        members = body.named_children if body is not None else []
        tags.extend(_ts_members(members, name))
    elif node.type in FUNCTIONS_TS and name:
        tags.append(Tag(name, "function", header(node, body), doc_above(outer), "", line))
    elif node.type in ("type_alias_declaration", "enum_declaration") and name:
        tags.append(Tag(name, "class", header(node, None), doc_above(outer), "", line))
    elif node.type in ("lexical_declaration", "variable_declaration"):
        for declarator in node.named_children:
            value = declarator.child_by_field_name("value")
            if value is not None and value.type in ("arrow_function", "function_expression"):
                signature = header(node, value.child_by_field_name("body"))
                tags.append(Tag(_named(declarator), "function", signature, doc_above(outer)))


def _ts_members(members: list[Node], container: str) -> list[Tag]:
    out: list[Tag] = []
    fields = 0
    for member in members:
        name, line = _named(member), member.start_point[0]
        if member.type in MEMBERS_TS and name:
            body = member.child_by_field_name("body")
            doc = doc_above(member)
            out.append(Tag(name, "method", header(member, body), doc, container, line))
        elif member.type in FIELDS_TS and name and fields < MAX_FIELDS:
            value = member.child_by_field_name("value")
            signature = header(member, value).rstrip("= ;")
            out.append(Tag(name, "field", signature, doc_above(member), container, line))
            fields += 1
    return out


def _ts_import(node: Node) -> Import:
    source = text_of(node.child_by_field_name("source")).strip("'\"`")
    names: list[tuple[str, str]] = []
    alias = ""
    clause = next((c for c in node.named_children if c.type == "import_clause"), None)
    for part in clause.named_children if clause is not None else ():
        if part.type == "identifier":
            names.append(("default", text_of(part)))
        elif part.type == "namespace_import":
            alias = text_of(part.named_children[0]) if part.named_children else ""
        elif part.type == "named_imports":
            for spec in part.named_children:
                name = _named(spec)
                names.append((name, text_of(spec.child_by_field_name("alias")) or name))
    return Import(source, tuple(names), alias)


# -- Go -------------------------------------------------------------------------------------------
def go_tags(root: Node) -> FileTags:
    tags: list[Tag] = []
    imports: list[Import] = []
    for node in root.named_children:
        body, line = node.child_by_field_name("body"), node.start_point[0]
        if node.type == "import_declaration":
            imports.extend(_go_imports(node))
        elif node.type == "function_declaration":
            tags.append(
                Tag(_named(node), "function", header(node, body), doc_above(node), "", line)
            )
        elif node.type == "method_declaration":
            receiver = text_of(node.child_by_field_name("receiver"))
            owner = receiver.strip("()").split()[-1].lstrip("*") if receiver.strip("()") else ""
            owner = owner.split("[")[0]
            signature = header(node, body)
            tags.append(Tag(_named(node), "method", signature, doc_above(node), owner, line))
        elif node.type == "type_declaration":
            for spec in node.named_children:
                if spec.type == "type_spec":
                    tags.extend(_go_type(spec, doc_above(node)))
    return FileTags(tuple(tags), tuple(imports))


def _go_type(spec: Node, doc: str) -> list[Tag]:
    name, kind = _named(spec), spec.child_by_field_name("type")
    shape = kind.type if kind is not None else ""
    signature = f"type {name} {shape.replace('_type', '')}" if shape else f"type {name}"
    out = [Tag(name, "class", signature, doc, "", spec.start_point[0])]
    inner = kind.named_children[0] if kind is not None and kind.named_children else None
    members = inner.named_children if shape == "struct_type" and inner is not None else []
    if shape == "interface_type" and kind is not None:
        members = kind.named_children
    for member in members[:MAX_FIELDS]:
        if member.type == "field_declaration":
            out.append(Tag(text_of(member).split()[0].rstrip(","), "field", header(member, None)))
            out[-1] = Tag(out[-1].name, "field", out[-1].signature, doc_above(member), name)
        elif member.type == "method_elem":
            out.append(Tag(_named(member), "method", header(member, None), "", name))
    return out


def _go_imports(node: Node) -> list[Import]:
    out = []
    for spec in node.named_children:
        specs = spec.named_children if spec.type == "import_spec_list" else [spec]
        for item in specs:
            if item.type != "import_spec":
                continue
            path = text_of(item.child_by_field_name("path")).strip('"`')
            local = text_of(item.child_by_field_name("name")) or path.rsplit("/", 1)[-1]
            out.append(Import(path, (), local))
    return out


# -- Rust -----------------------------------------------------------------------------------------
def rust_tags(root: Node) -> FileTags:
    tags: list[Tag] = []
    imports: list[Import] = []
    for node in root.named_children:
        _rust_item(node, "", tags, imports)
    return FileTags(tuple(tags), tuple(imports))


def _rust_item(node: Node, container: str, tags: list[Tag], imports: list[Import]) -> None:
    name, body, line = _named(node), node.child_by_field_name("body"), node.start_point[0]
    doc = doc_above(node)
    if node.type in ("function_item", "function_signature_item") and name:
        kind = "method" if container else "function"
        tags.append(Tag(name, kind, header(node, body), doc, container, line))
    elif node.type in ("struct_item", "enum_item", "trait_item", "type_item") and name:
        tags.append(Tag(name, "class", header(node, body), doc, "", line))
        for member in body.named_children if body is not None else ():
            if member.type == "field_declaration":
                tags.append(Tag(_named(member), "field", header(member, None), "", name))
            else:
                _rust_item(member, name, tags, imports)
    elif node.type == "impl_item" and body is not None:
        owner = text_of(node.child_by_field_name("type")).split("<")[0]
        for member in body.named_children:
            _rust_item(member, owner, tags, imports)
    elif node.type == "use_declaration":
        imports.extend(_rust_use(node.child_by_field_name("argument"), ""))
    elif node.type == "mod_item" and body is None and name:
        imports.append(Import(f"self::{name}", (), name))


def _rust_use(node: Node | None, base: str) -> list[Import]:
    """`use a::b::{c, d as e}` as imports of module `a::b` (a name may be a module too)."""
    if node is None:
        return []

    def join(path: str) -> str:
        return f"{base}::{path}" if base and path else base or path

    if node.type == "scoped_use_list":
        inner = join(text_of(node.child_by_field_name("path")))
        items = node.child_by_field_name("list")
        return [i for c in (items.named_children if items else []) for i in _rust_use(c, inner)]
    if node.type == "use_as_clause":
        path = join(text_of(node.child_by_field_name("path")))
        module, _, name = path.rpartition("::")
        return [Import(module, ((name, text_of(node.child_by_field_name("alias"))),))]
    if node.type in ("scoped_identifier", "identifier", "self"):
        module, _, name = join(text_of(node)).rpartition("::")
        return [Import(module, ((name, name),))]
    return []


READERS: dict[str, Callable[[Node], FileTags]] = {
    "typescript": ts_tags,
    "tsx": ts_tags,
    "javascript": ts_tags,
    "go": go_tags,
    "rust": rust_tags,
}
