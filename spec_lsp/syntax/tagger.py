"""`file_tags(language, text)`: parse a text once and read its tags with its language's reader.

A language without a reader (`READERS`: Python, TypeScript/TSX, JavaScript, Go, Rust) or without a
grammar gives no tags; text that does not parse gives what the tree still holds. It never raises
on odd input.
"""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from spec_lsp.syntax import tags_curly
from spec_lsp.syntax.languages import EXTENSIONS, new_parser, spec_for
from spec_lsp.syntax.tags import FileTags, python_tags

READERS: dict[str, Callable[[Node], FileTags]] = {"python": python_tags, **tags_curly.READERS}


def file_tags(language: str, text: str) -> FileTags:
    """The tags of `text` in `language` (an LSP languageId, or a file name or extension)."""
    spec = spec_for(language)
    reader = READERS.get(spec.name)
    parser = new_parser(spec) if reader is not None else None
    if reader is None or parser is None:
        return FileTags()
    tree = parser.parse(text.encode("utf-8", "surrogatepass"))
    return reader(tree.root_node)


def tagged_language(language: str) -> bool:
    """Whether `language` (a languageId or file name) has a reader."""
    return spec_for(language).name in READERS


def tagged_glob() -> str:
    """A glob of the files with a reader (`**/*.{go,js,py,...}`), as LSP file watchers take it."""
    extensions = sorted(ext.lstrip(".") for ext, name in EXTENSIONS.items() if name in READERS)
    return "**/*.{" + ",".join(extensions) + "}"
