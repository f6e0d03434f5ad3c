"""Finding a language: LSP languageIds and file extensions to specs (`catalog`), and grammars.

A `LanguageSpec` carries what the text rules need (comment and quote syntax, whether blocks are
delimited by indentation) and the tree-sitter node types the context builder looks for. Grammars
load lazily from the maintained `tree-sitter-<lang>` packages; a language whose grammar is missing
or fails to load keeps its text rules and simply has no parser.
"""

from __future__ import annotations

import importlib
import os
import threading

from tree_sitter import Language, Parser

from spec_lsp.syntax.catalog import PLAIN, SPECS
from spec_lsp.syntax.langspec import LanguageSpec

__all__ = ["PLAIN", "SPECS", "LanguageSpec", "grammar", "new_parser", "spec_for"]


# LSP languageIds (and a few common aliases) to spec names.
LANGUAGE_IDS: dict[str, str] = {
    "python": "python",
    "py": "python",
    "javascript": "javascript",
    "javascriptreact": "javascript",  # the JavaScript grammar parses JSX
    "js": "javascript",
    "jsx": "javascript",
    "typescript": "typescript",
    "ts": "typescript",
    "typescriptreact": "tsx",
    "tsx": "tsx",
    "rust": "rust",
    "go": "go",
    "java": "java",
    "c": "c",
    "cpp": "cpp",
    "c++": "cpp",
    "cuda-cpp": "cpp",
    "csharp": "csharp",
    "c#": "csharp",
    "kotlin": "kotlin",
    "php": "php",
    "ruby": "ruby",
    "lua": "lua",
    "shellscript": "bash",
    "bash": "bash",
    "sh": "bash",
    "zsh": "bash",
    "css": "css",
    "html": "html",
    "json": "json",
    "jsonc": "json",
    "yaml": "yaml",
    "yml": "yaml",
    "toml": "toml",
    "sql": "sql",
    "markdown": "markdown",
    "haskell": "haskell",
    "fsharp": "fsharp",
    "f#": "fsharp",
    "ocaml": "ocaml",
    "r": "r",
    "scala": "scala",
    "swift": "swift",
    "dart": "dart",
    "julia": "julia",
    "elixir": "elixir",
    "perl": "perl",
    "clojure": "clojure",
    "zig": "zig",
    "powershell": "powershell",
}

EXTENSIONS: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".rs": "rust",
    ".go": "go",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".hxx": "cpp",
    ".cs": "csharp",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".php": "php",
    ".rb": "ruby",
    ".lua": "lua",
    ".sh": "bash",
    ".bash": "bash",
    ".css": "css",
    ".html": "html",
    ".htm": "html",
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".sql": "sql",
    ".md": "markdown",
    ".hs": "haskell",
    ".fs": "fsharp",
    ".fsx": "fsharp",
    ".ml": "ocaml",
    ".r": "r",
    ".scala": "scala",
    ".swift": "swift",
    ".dart": "dart",
    ".jl": "julia",
    ".ex": "elixir",
    ".exs": "elixir",
    ".pl": "perl",
    ".clj": "clojure",
    ".zig": "zig",
    ".ps1": "powershell",
}


def spec_for(language: str | None) -> LanguageSpec:
    """The spec for an LSP languageId, a file name/extension or a URI; PLAIN when unknown."""
    if not language:
        return PLAIN
    key = language.strip().lower()
    if key in LANGUAGE_IDS:
        return SPECS[LANGUAGE_IDS[key]]
    ext = os.path.splitext(key)[1] or (key if key.startswith(".") else "." + key)
    if ext in EXTENSIONS:
        return SPECS[EXTENSIONS[ext]]
    return PLAIN


_languages: dict[str, Language | None] = {}
_lock = threading.Lock()


def grammar(spec: LanguageSpec) -> Language | None:
    """The tree-sitter Language for a spec, loaded once; None when it has none or it fails."""
    if spec.grammar is None:
        return None
    with _lock:
        if spec.name not in _languages:
            try:
                module = importlib.import_module(spec.grammar[0])
                _languages[spec.name] = Language(getattr(module, spec.grammar[1])())
            except Exception:  # a broken or missing grammar package: fall back to text rules
                _languages[spec.name] = None
        return _languages[spec.name]


def new_parser(spec: LanguageSpec) -> Parser | None:
    """A fresh parser (parsers are not thread-safe, so each owner keeps its own)."""
    language = grammar(spec)
    return Parser(language) if language is not None else None
