"""An import's file: where the module an `Import` names lives in the workspace, for the languages
where that is well defined from the files alone.

- Python: relative imports from the importing file's package; absolute ones from the workspace
  roots, their `src/`, and the folder above the importing file's top package.
- TypeScript/JavaScript: relative specifiers (`./x`, `../y`) with the usual extensions and
  `index` files; a package name or a path alias (tsconfig `paths`) is not resolved.
- Go: a package path under the module `go.mod` declares, as the package folder's files.
- Rust: `crate::`, `self::`, `super::` paths and `mod x;`, as `x.rs` or `x/mod.rs` under the
  crate's `src/` (the crate is the folder with `Cargo.toml`).

`exists(path)` says whether a file is known (the index: a file it does not hold, say a private
one, is never resolved to); `files_in(folder)` lists the known files of a folder (for Go).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import lru_cache

from spec_lsp.syntax.languages import spec_for
from spec_lsp.syntax.tags import Import

Exists = Callable[[str], bool]
FilesIn = Callable[[str], list[str]]
TS_EXTENSIONS = (".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs")


def module_files(
    imp: Import, source: str, roots: tuple[str, ...], exists: Exists, files_in: FilesIn
) -> list[str]:
    """The files of the module `imp` names, imported from the file `source`."""
    language = spec_for(source).name
    if language == "python":
        return _python(imp.source, source, roots, exists)
    if language in ("typescript", "tsx", "javascript"):
        return _typescript(imp.source, source, exists)
    if language == "go":
        return _go(imp.source, source, files_in)
    if language == "rust":
        return _rust(imp.source, source, exists)
    return []


def name_files(
    imp: Import, name: str, source: str, roots: tuple[str, ...], exists: Exists, files_in: FilesIn
) -> list[str]:
    """The files where `name` (imported by `imp`) may be defined: the module's, and the file of a
    submodule of that name (`from pkg import mod`, `use crate::geom::point`)."""
    files = module_files(imp, source, roots, exists, files_in)
    below = submodule_files(imp, name, source, roots, exists, files_in)
    return files + [f for f in below if f not in files]


def submodule_files(
    imp: Import, name: str, source: str, roots: tuple[str, ...], exists: Exists, files_in: FilesIn
) -> list[str]:
    """The files of the module `name` inside the module `imp` names (`from pkg import mod`)."""
    sep = "::" if spec_for(source).name == "rust" else "."
    base = imp.source.rstrip(".") if sep == "." else imp.source
    joined = f"{imp.source}{name}" if imp.source.endswith(".") else f"{base}{sep}{name}"
    return module_files(Import(joined), source, roots, exists, files_in)


def _python(module: str, source: str, roots: tuple[str, ...], exists: Exists) -> list[str]:
    if module.startswith("."):
        level = len(module) - len(module.lstrip("."))
        base = os.path.dirname(source)
        for _ in range(level - 1):
            base = os.path.dirname(base)
        bases, rest = [base], module[level:]
    else:
        bases, rest = python_roots(source, roots), module
    parts = rest.split(".") if rest else []
    out = []
    for base in bases:
        stem = os.path.join(base, *parts)
        candidates = [stem + ".py", stem + ".pyi", os.path.join(stem, "__init__.py")]
        found = next((c for c in (candidates if parts else candidates[2:]) if exists(c)), None)
        if found is not None and found not in out:
            out.append(found)
    return out


def python_roots(source: str, roots: tuple[str, ...]) -> list[str]:
    """Where absolute imports start: the folder above the importing file's top package, then
    each root and its `src/`."""
    top = os.path.dirname(source)
    while os.path.isfile(os.path.join(top, "__init__.py")) and os.path.dirname(top) != top:
        top = os.path.dirname(top)
    out = [top]
    for root in roots:
        out += [r for r in (root, os.path.join(root, "src")) if r not in out]
    return out


def _typescript(specifier: str, source: str, exists: Exists) -> list[str]:
    if not specifier.startswith("."):
        return []
    stem = os.path.normpath(os.path.join(os.path.dirname(source), specifier))
    if os.path.splitext(stem)[1] in (".js", ".mjs", ".cjs"):  # `./x.js` written for `./x.ts`
        stem = os.path.splitext(stem)[0]
    candidates = [stem, *(stem + e for e in TS_EXTENSIONS)]
    candidates += [os.path.join(stem, "index" + e) for e in TS_EXTENSIONS]
    return [c for c in candidates if exists(c)][:1]


@lru_cache(maxsize=256)
def _go_module(folder: str) -> tuple[str, str] | None:
    """(the module path, its folder) of the go.mod at or above `folder`."""
    while True:
        try:
            with open(os.path.join(folder, "go.mod"), encoding="utf-8") as f:
                for line in f:
                    if line.startswith("module "):
                        return line.split()[1].strip('"'), folder
            return None
        except OSError:
            parent = os.path.dirname(folder)
            if parent == folder:
                return None
            folder = parent


def _go(path: str, source: str, files_in: FilesIn) -> list[str]:
    module = _go_module(os.path.dirname(source))
    if module is None or not (path == module[0] or path.startswith(module[0] + "/")):
        return []
    folder = os.path.join(module[1], *path[len(module[0]) :].strip("/").split("/"))
    return [f for f in files_in(os.path.normpath(folder)) if not f.endswith("_test.go")]


def _rust(path: str, source: str, exists: Exists) -> list[str]:
    parts = path.split("::")
    if parts[0] == "crate":
        folder = _crate_src(os.path.dirname(source))
        if folder is None:
            return []
    elif parts[0] in ("self", "super"):
        folder = _rust_module_folder(source)
        if parts[0] == "super":
            folder = os.path.dirname(folder)
    else:
        return []
    rest = parts[1:]
    if not rest:
        name = os.path.join(folder, "mod.rs")
        return [name] if exists(name) else []
    stem = os.path.join(folder, *rest)
    return [c for c in (stem + ".rs", os.path.join(stem, "mod.rs")) if exists(c)][:1]


def _crate_src(folder: str) -> str | None:
    while not os.path.isfile(os.path.join(folder, "Cargo.toml")):
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent
    return os.path.join(folder, "src")


def _rust_module_folder(source: str) -> str:
    """The folder of the modules a file declares: its own folder for lib.rs, main.rs and mod.rs,
    else the folder named after it (`a/b.rs` -> `a/b/`)."""
    stem, name = os.path.splitext(source)[0], os.path.basename(source)
    return os.path.dirname(source) if name in ("lib.rs", "main.rs", "mod.rs") else stem
