"""The definitions of the names near a cursor, from the index: what the model needs to know of the
code the line being written calls.

The names, most wanted first (`references`): the call being written (`shapes.area(` -> `shapes`,
`area`), the receiver before a `.` at the cursor and its type where an assignment or annotation in
the enclosing function says it (`r = Rectangle(...)`, `r: Rectangle`, `r := geom.Rect{`; for
`self`, `this` and `cls`, the bases of the enclosing class: its own body is in the file), then the
names used in the enclosing function (read from the text: the lines up to the header above the
cursor that is indented less), nearest first. (The file's other imported names were tried as a fill
for the room left, and cost exact matches on `bench repo`: docs/benchmarks.md.) Each resolves
through the file's imports (`resolve.py`) to a top-level definition of the imported module (a
submodule too), or of a module imported with `*`; in Go, to a definition in another file of the
same package (folder), which needs no import. A name the file defines itself is left out: it is in
the file already; a name it neither defines nor imports is not looked up elsewhere (a same-named
definition in some other file is more often wrong than right).

A class's `Definition` carries its fields and methods. Nothing here reads a file the index does not
hold, so a private file's definitions are never returned.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace

from spec_lsp.symbols.index import SymbolIndex
from spec_lsp.symbols.resolve import name_files, submodule_files
from spec_lsp.syntax.languages import spec_for
from spec_lsp.syntax.tags import FileTags, Import, Tag

IDENT = re.compile(r"[A-Za-z_]\w*")
HEADER = re.compile(r"\s*(?:async\s+def|def|class|func|fn|pub\s+fn|function|impl)\b")
IMPORT = re.compile(r"\s*(?:import|from|use|package)\s")  # names imported are not names used
REGION_LINES = 60  # at most this many lines above the cursor are the enclosing function's
MAX_REFERENCES = 40
MAX_DEFINITIONS = 8
_WORDS = (  # keywords and builtins of the tagged languages: never looked up
    "self cls this super None True False null true false nil def class return if else elif "
    "for while in is not and or import from as with try except finally raise pass break "
    "continue lambda yield await async new let const var function fn func pub impl use mod "
    "struct enum type interface package go defer range map chan mut ref match where trait "
    "crate static export default extends implements typeof instanceof void int str float "
    "bool dict list string number boolean any print len"
)
KEYWORDS = frozenset(_WORDS.split())
SELF = frozenset({"self", "this", "cls"})  # a receiver whose type is the enclosing class
CLASS_HEADER = re.compile(
    r"(\s*)(?:export\s+)?(?:abstract\s+)?class\s+\w+\s*(?:\(([^)]*)\)|extends\s+([\w.]+))"
)


@dataclass(frozen=True)
class Definition:
    path: str
    tag: Tag
    members: tuple[Tag, ...] = ()  # a class's fields and methods
    # The definition as the editor's own language server shows it (hover text, tag kind
    # "editor": completion/editor_definitions.py), rendered as it is; "": from the index.
    text: str = ""
    # Wanted at the cursor itself (the call being written, the receiver's type), not only used
    # nearby; not part of what the definition is (equal definitions compare equal).
    primary: bool = field(default=False, compare=False)
    # How many of `members` a prompt shows (-1: as many as `render.MAX_MEMBERS`): fewer where the
    # whole class does not fit the context's budget (`RepoContext`). Not part of what it is.
    shown: int = field(default=-1, compare=False)


@dataclass(frozen=True)
class Reference:
    name: str
    member: str = ""  # `name.member`: the attribute or module member used
    primary: bool = field(default=False, compare=False)  # the call being written, the receiver


def references(lines: list[str], row: int, col: int) -> list[Reference]:
    """The names near (row, col), most wanted first, each once."""
    line = lines[row][:col] if row < len(lines) else ""
    refs: list[Reference] = []
    before = "\n".join(lines[max(0, row - 3) : row] + [line])
    call = _open_call(before)
    if call:
        refs.append(replace(_chain(call), primary=True))
    receiver = re.search(r"([A-Za-z_]\w*)\s*(?:\.|::|->)\s*\w*$", line)
    if receiver:
        refs.append(Reference(receiver.group(1), primary=True))
    start = row
    indent = len(line) - len(line.lstrip())
    while start > 0 and row - start < REGION_LINES:
        start -= 1
        text = lines[start]
        if text.strip() and len(text) - len(text.lstrip()) < indent and HEADER.match(text):
            break
    region = [t for t in lines[start:row] if not IMPORT.match(t)] + [line]
    for text in reversed(region):
        for match in reversed(list(re.finditer(r"[A-Za-z_][\w]*(?:(?:\.|::)[A-Za-z_]\w*)?", text))):
            refs.append(_chain(match.group(0)))
    seen, out = set(), []
    for ref in refs:
        if (ref.name not in KEYWORDS or ref.name in SELF) and ref not in seen:
            seen.add(ref)
            out.append(ref)
    return out[:MAX_REFERENCES]


def _open_call(text: str) -> str:
    """The callee of the innermost call still open at the end of `text` ("" for none)."""
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        if text[i] == ")":
            depth += 1
        elif text[i] == "(":
            if depth == 0:
                found = re.search(r"([A-Za-z_][\w.:]*)\s*$", text[:i])
                return found.group(1) if found else ""
            depth -= 1
    return ""


def _chain(text: str) -> Reference:
    parts = [p for p in re.split(r"\.|::", text) if p]
    return Reference(parts[0], parts[1] if len(parts) > 1 else "") if parts else Reference("")


def receiver_type(name: str, lines: list[str], row: int) -> str:
    """The type `name` holds where the lines above `row` assign or annotate it ("" if unknown)."""
    pattern = re.compile(
        rf"\b{re.escape(name)}\s*(?::\s*&?(?:mut\s+)?([A-Za-z_][\w.:]*)"
        rf"|:?=\s*(?:new\s+|&)?([A-Za-z_][\w.:]*)\s*[({{])"
    )
    for text in reversed(lines[max(0, row - REGION_LINES) : row + 1]):
        found = pattern.search(text)
        if found:
            chain = found.group(1) or found.group(2)
            return re.split(r"\.|::", chain)[-1] if chain else ""
    return ""


def enclosing_bases(lines: list[str], row: int) -> list[Reference]:
    """The base classes of the class around `row` (Python's `class C(A, m.B):`, TypeScript's and
    JavaScript's `class C extends A`): the first class header above indented less."""
    indent = len(lines[row]) - len(lines[row].lstrip()) if row < len(lines) else 0
    for text in reversed(lines[max(0, row - 10 * REGION_LINES) : row]):
        found = CLASS_HEADER.match(text)
        if found and len(found.group(1)) < max(indent, 1):
            names = (found.group(2) or found.group(3) or "").split(",")
            chains = [n.split("[")[0].strip() for n in names if "=" not in n]  # no metaclass=
            return [_chain(c) for c in chains if IDENT.fullmatch(c.replace(".", "_"))]
    return []


class Resolver:
    """Resolves a file's references through its imports and the index."""

    def __init__(self, index: SymbolIndex, path: str, tags: FileTags) -> None:
        self.index, self.path, self.tags = index, path, tags
        self.local = {t.name for t in tags.tags if not t.container}
        self.names: dict[str, tuple[Import, str]] = {}  # local name -> (import, name in module)
        self.modules: dict[str, Import] = {}  # local name of a module -> its import
        self.stars = [imp for imp in tags.imports if ("*", "*") in imp.names]
        for imp in tags.imports:
            if imp.alias:
                self.modules[imp.alias] = imp
            for name, local in imp.names:
                self.names[local] = (imp, name)

    def files(self, imp: Import, name: str) -> list[str]:
        idx = self.index
        return name_files(imp, name, self.path, idx.roots, idx.has, idx.files_in)

    def resolve(self, ref: Reference, lines: list[str], row: int) -> list[Definition]:
        if ref.name in self.modules and ref.member:
            imp = self.modules[ref.name]
            return self._defined(ref.member, self.files(imp, ""), follow=True)
        if ref.name in self.names:
            imp, name = self.names[ref.name]
            found = self._defined(name, self.files(imp, name), follow=True)
            if found or not ref.member:
                return found
            idx = self.index  # `from pkg import mod` then `mod.member`
            below = submodule_files(imp, name, self.path, idx.roots, idx.has, idx.files_in)
            return self._defined(ref.member, below, follow=True)
        if ref.name in SELF:  # the enclosing class's bases (its own body is in the file)
            bases = enclosing_bases(lines, row)
            return [
                d
                for base in bases
                for d in self.resolve(replace(base, primary=ref.primary), lines, row)
            ]
        if ref.name in self.local:
            return []
        typ = receiver_type(ref.name, lines, row)
        if typ and typ != ref.name:
            return self.resolve(Reference(typ, primary=ref.primary), lines, row)
        for imp in self.stars:
            found = self._defined(ref.name, self.files(imp, ""), follow=True)
            if found:
                return found
        if spec_for(self.path).name != "go":
            return []
        folder = os.path.dirname(self.path)  # a Go package: its folder's files
        holders = self.index.defining(ref.name)
        return self._defined(ref.name, [p for p in holders if os.path.dirname(p) == folder], False)

    def _defined(self, name: str, files: list[str], follow: bool) -> list[Definition]:
        for path in files:
            tags = self.index.tags(path)
            if tags is None:
                continue
            for tag in tags.tags:
                if tag.name == name and not tag.container:
                    return [_definition(path, tag, tags)]
            if follow:  # a package's __init__ that imports it from a module of its own
                again = Resolver(self.index, path, tags)
                if name in again.names:
                    imp, inner = again.names[name]
                    found = again._defined(inner, again.files(imp, inner), follow=False)
                    if found:
                        return found
        return []


def _definition(path: str, tag: Tag, tags: FileTags) -> Definition:
    members = tuple(t for t in tags.tags if t.container == tag.name) if tag.kind == "class" else ()
    return Definition(path, tag, members)


def definitions_near(
    index: SymbolIndex, path: str, lines: list[str], row: int, col: int
) -> list[Definition]:
    """The definitions of the names near (row, col) of the file `path` (its text: `lines`), most
    wanted first, at most MAX_DEFINITIONS."""
    tags = index.tags(path) or FileTags()
    resolver = Resolver(index, os.path.abspath(path), tags)
    out: list[Definition] = []
    for ref in references(lines, row, col):
        for found in resolver.resolve(ref, lines, row):
            if found.path != path and all(d.tag != found.tag for d in out):
                out.append(replace(found, primary=ref.primary))
        if len(out) >= MAX_DEFINITIONS:
            break
    return out[:MAX_DEFINITIONS]
