"""Prompt context at the cursor: the file's imports and the headers of the enclosing scopes.

A header is the text of a class or function from the start of its line up to its body, so it
does not change while the user types inside the body: the prompt builder can put it at the top of
the prompt and keep the model's cached prefix valid across keystrokes. Without a tree (unknown
language) or when the tree is too broken to find scopes, the same is read from indentation.
"""

from __future__ import annotations

from tree_sitter import Node, Tree

from spec_lsp.syntax.cursor import opens_block
from spec_lsp.syntax.languages import LanguageSpec
from spec_lsp.syntax.lexer import indent_width

MAX_IMPORTS = 60
MAX_HEADER_CHARS = 400


def build_context(spec: LanguageSpec, text: str, tree: Tree | None, at_byte: int, at: int) -> str:
    """Imports, then the scope headers from the outermost in, one per line block."""
    source = text.encode("utf-8", "surrogatepass")
    imports: list[str] = []
    headers: list[str] = []
    if tree is not None:
        imports = _tree_imports(spec, tree, source)
        headers = _tree_headers(spec, tree, source, at_byte)
    if tree is None or not imports:
        imports = imports or _text_imports(spec, text)
    if not headers and (tree is None or tree.root_node.has_error):
        headers = _text_headers(spec, text, at)
    return "\n".join(imports[:MAX_IMPORTS] + headers)


def _tree_imports(spec: LanguageSpec, tree: Tree, source: bytes) -> list[str]:
    found = []
    for node in tree.root_node.children:
        if node.type in spec.import_types:
            found.append(_text(source, node.start_byte, node.end_byte).strip())
    return found


def _tree_headers(spec: LanguageSpec, tree: Tree, source: bytes, at_byte: int) -> list[str]:
    # In the whitespace after a body's last statement the cursor is in no body's range: start
    # from the last code before it, and for indentation languages accept a scope when the
    # cursor's line is indented deeper than the scope's header.
    anchor = len(source[:at_byte].rstrip()) - 1 if at_byte else 0
    anchor = max(anchor, 0)
    line_start = source.rfind(b"\n", 0, at_byte) + 1
    cursor_indent = indent_width(source[line_start:at_byte].decode("utf-8", "replace"))
    node: Node | None = tree.root_node.descendant_for_byte_range(anchor, anchor)
    headers: list[str] = []
    while node is not None:
        if node.type in spec.scope_types:
            body = node.child_by_field_name("body")
            if (
                body is not None
                and body.start_byte <= at_byte
                and _body_holds(spec, source, node, body, at_byte, cursor_indent)
            ):
                headers.append(_header(source, node, body))
        node = node.parent
    return headers[::-1]


def _body_holds(
    spec: LanguageSpec, source: bytes, node: Node, body: Node, at_byte: int, cursor_indent: int
) -> bool:
    if at_byte < body.end_byte or (at_byte == body.end_byte and not spec.indent_blocks):
        return body.start_byte < at_byte
    if not spec.indent_blocks:
        return False
    header_start = source.rfind(b"\n", 0, node.start_byte) + 1
    header_indent = indent_width(source[header_start : node.start_byte].decode("utf-8", "replace"))
    return cursor_indent > header_indent


def _header(source: bytes, node: Node, body: Node) -> str:
    line_start = source.rfind(b"\n", 0, node.start_byte) + 1
    header = _text(source, line_start, body.start_byte).rstrip()
    if len(header) > MAX_HEADER_CHARS:
        header = header[:MAX_HEADER_CHARS].rstrip()
    return header


def _text(source: bytes, start: int, end: int) -> str:
    return source[start:end].decode("utf-8", "replace")


def _text_imports(spec: LanguageSpec, text: str) -> list[str]:
    if not spec.import_prefixes:
        return []
    found = []
    for line in text.splitlines():
        if line.startswith(spec.import_prefixes):
            found.append(line.rstrip())
            if len(found) >= MAX_IMPORTS:
                break
    return found


def _text_headers(spec: LanguageSpec, text: str, at: int) -> list[str]:
    """Lines above the cursor that open a block, each less indented than the one below it."""
    lines = text[:at].split("\n")
    current = lines[-1]
    limit = indent_width(current) if current.strip() else indent_width(current) + 1
    headers: list[str] = []
    for line in reversed(lines[:-1]):
        if not line.strip():
            continue
        width = indent_width(line)
        if width < limit:
            if opens_block(line, spec):
                headers.append(line.rstrip())
            limit = width
            if width == 0:
                break
    return headers[::-1]
