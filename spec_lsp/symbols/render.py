"""Definitions as compact text for a prompt: each file's as stubs in its own language.

A function is its signature and its doc's first line; a class is its header, doc, fields and
methods' signatures. Python gets stubs a model reads as code (`def f(x) -> int: ...` with the
docstring); the brace languages get the signatures, each doc as a `//` comment above it, a
class's members indented under its header. One file's definitions come out in the order given.
A definition the editor's language server sent (`Definition.text`) comes out as that text; a
class whose `Definition.shown` is set shows that many members.
"""

from __future__ import annotations

from spec_lsp.symbols.lookup import Definition
from spec_lsp.syntax.languages import spec_for
from spec_lsp.syntax.tags import Tag

MAX_MEMBERS = 16  # a class's members shown (fields first, then methods, in file order)


def render_definitions(path: str, definitions: list[Definition]) -> str:
    """The definitions (all of the file `path`) as text, one block each, ending with a newline."""
    python = spec_for(path).name == "python"
    blocks = [
        f"{d.text}\n" if d.text else _python(d) if python else _braces(d) for d in definitions
    ]
    return "\n".join(blocks)


def _members(definition: Definition) -> list[Tag]:
    fields = [t for t in definition.members if t.kind == "field"]
    methods = [t for t in definition.members if t.kind == "method"]
    most = MAX_MEMBERS if definition.shown < 0 else min(definition.shown, MAX_MEMBERS)
    return (fields + methods)[:most]


def _python(definition: Definition) -> str:
    tag = definition.tag
    if tag.kind == "variable":
        return f"{tag.signature}\n"
    if tag.kind != "class":
        body = f'\n    """{tag.doc}"""\n    ...' if tag.doc else " ..."
        return f"{tag.signature}{body}\n"
    lines = [tag.signature]
    if tag.doc:
        lines.append(f'    """{tag.doc}"""')
    for member in _members(definition):
        if member.kind == "field":
            lines.append(f"    {member.signature}")
        else:
            doc = f'\n        """{member.doc}"""\n        ...' if member.doc else " ..."
            lines.append(f"    {member.signature}{doc}")
    if len(lines) == 1:
        lines.append("    ...")
    return "\n".join(lines) + "\n"


def _braces(definition: Definition) -> str:
    tag = definition.tag
    lines = [f"// {tag.doc}"] if tag.doc else []
    lines.append(tag.signature)
    for member in _members(definition) if tag.kind == "class" else []:
        if member.doc:
            lines.append(f"  // {member.doc}")
        lines.append(f"  {member.signature}")
    return "\n".join(lines) + "\n"
