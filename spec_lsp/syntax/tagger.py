"""`file_tags(language, text)`: parse a text once and read its tags with its language's reader.

A language without a reader (`READERS`: Python, TypeScript/TSX, JavaScript, Go, Rust) or without a
grammar gives no tags; text that does not parse gives what the tree still holds. It never raises
on odd input. `edited_tags` parses a new version of a text incrementally from the last one's tree
(`Parsed`): the changed span is where the two versions' bytes stop agreeing from either end, so the
parser reuses the rest of the tree (an open document's update at a pause).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node, Point, Tree

from spec_lsp.syntax import tags_curly
from spec_lsp.syntax.languages import EXTENSIONS, new_parser, spec_for
from spec_lsp.syntax.tags import FileTags, python_tags

READERS: dict[str, Callable[[Node], FileTags]] = {"python": python_tags, **tags_curly.READERS}


@dataclass(frozen=True)
class Parsed:
    """A text's tree, kept to parse the text's next version incrementally."""

    language: str  # the spec's name
    source: bytes
    tree: Tree


def file_tags(language: str, text: str) -> FileTags:
    """The tags of `text` in `language` (an LSP languageId, or a file name or extension)."""
    return edited_tags(language, text, None)[0]


def edited_tags(language: str, text: str, before: Parsed | None) -> tuple[FileTags, Parsed | None]:
    """The tags of `text`, parsed from `before` (the previous version's tree, same language)
    where there is one, and its tree for the next version (None: no reader or grammar)."""
    spec = spec_for(language)
    reader = READERS.get(spec.name)
    parser = new_parser(spec) if reader is not None else None
    if reader is None or parser is None:
        return FileTags(), None
    source = text.encode("utf-8", "surrogatepass")
    if before is not None and before.language == spec.name:
        tree = parser.parse(source, _edited(before, source))
    else:
        tree = parser.parse(source)
    return reader(tree.root_node), Parsed(spec.name, source, tree)


def _edited(before: Parsed, source: bytes) -> Tree:
    """`before`'s tree told of the one span where `source` differs from `before.source`."""
    old = before.source
    start = _common_prefix(old, source)
    tail = _common_prefix(old[start:][::-1], source[start:][::-1])
    old_end, new_end = len(old) - tail, len(source) - tail
    before.tree.edit(
        start_byte=start,
        old_end_byte=old_end,
        new_end_byte=new_end,
        start_point=_point(old, start),
        old_end_point=_point(old, old_end),
        new_end_point=_point(source, new_end),
    )
    return before.tree


def _common_prefix(a: bytes, b: bytes) -> int:
    """The length of the longest common prefix (a binary search of slice compares)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def _point(source: bytes, offset: int) -> Point:
    row = source.count(b"\n", 0, offset)
    return Point(row, offset - (source.rfind(b"\n", 0, offset) + 1))


def tagged_language(language: str) -> bool:
    """Whether `language` (a languageId or file name) has a reader."""
    return spec_for(language).name in READERS


def tagged_glob() -> str:
    """A glob of the files with a reader (`**/*.{go,js,py,...}`), as LSP file watchers take it."""
    extensions = sorted(ext.lstrip(".") for ext, name in EXTENSIONS.items() if name in READERS)
    return "**/*.{" + ",".join(extensions) + "}"
