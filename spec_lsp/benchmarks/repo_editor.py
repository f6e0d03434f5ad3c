"""The editor's state at a hole of `bench repo`: which files are open, with what text, and which
recent edits are sent before the request. Pure data from a package's files; no server here.

Open files (`context_files`): up to `open_files` other files of the package's code, as a person
working on the hole's file would have them: first the files the hole's names come from, then the
file's other imports from the package, then the files of its folder, then the rest, in path
order. They are opened least wanted first, so the most wanted are the newest in the server's
ring (and the last chunks kept when the ring is cut to its budget); the hole's file is opened
last, at the hole (the statement's rest removed, the cursor where it began).

Recent edits (`edit_plan`, the `definitions + edits` row), two plausible ones, each a line the
person has just typed: (1) in the file the hole's first name comes from, the line that defines
it (`def name`, `class name`, `name =`), and (2) in the hole's file, the nearest non-blank line
above the hole's line. Each file is opened without that line's text (the line itself left empty)
and a didChange then types it back in, so the server's edit history holds exactly these two
insertions and the document reaches the same text as in the other rows. A name with no such
line in its file (a re-export) has no first edit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from spec_lsp.benchmarks.repo_holes import RepoHole
from spec_lsp.benchmarks.repo_packages import PackageTree

OPEN_FILES = 8
CHUNK_LINES = 64  # llama.vscode's ring chunk: a file's first lines, as the server notes at open
LANGUAGE_IDS = {  # a file's suffix -> the languageId an editor opens it with (VS Code's)
    ".py": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascriptreact",
    ".ts": "typescript",
    ".tsx": "typescriptreact",
}


@dataclass(frozen=True)
class LineEdit:
    """Line `line` of `path` (0-based) is empty when opened; `text` is then typed into it."""

    path: str
    line: int
    text: str


@dataclass(frozen=True)
class Opened:
    """A file as opened: its path and text (with a pending edit's line emptied)."""

    path: str
    text: str


def language_id(path: str) -> str:
    """The languageId of a file opened at `path` (python for a suffix not in the table)."""
    return LANGUAGE_IDS.get(PurePosixPath(path).suffix, "python")


def context_files(source: PackageTree, hole: RepoHole, open_files: int = OPEN_FILES) -> list[str]:
    """The other files to open, in opening order (the most wanted last)."""
    folder = str(PurePosixPath(hole.path).parent)
    ranked = [*hole.imports, *hole.file_imports]
    ranked += [p for p in source.code if str(PurePosixPath(p).parent) == folder]
    ranked += list(source.code)
    chosen = [p for p in dict.fromkeys(ranked) if p != hole.path][:open_files]
    return chosen[::-1]


def definition_line(text: str, name: str, language: str = "python") -> int | None:
    """The line that defines top-level or class-level `name` in `text`, if one does. Python:
    `def`, `class`, `name =` or `name:` at the top; JavaScript and TypeScript (`language` one of
    their ids): a function, class, interface, type, enum or const/let/var declaration (exported
    or not), or `exports.name =` / `module.exports.name =`."""
    name = re.escape(name)
    if language == "python":
        header = rf"^[ \t]*(?:(?:async[ \t]+)?def|class)[ \t]+{name}\b"
        pattern = re.compile(rf"{header}|^{name}[ \t]*[:=]", re.M)
    else:
        words = r"(?:(?:export|default|declare|abstract|async)[ \t]+)*"
        kinds = r"(?:function[ \t]*\*?|class|interface|type|enum|const|let|var)"
        header = rf"^[ \t]*{words}{kinds}[ \t]+{name}\b"
        pattern = re.compile(rf"{header}|^(?:module\.)?exports\.{name}[ \t]*=", re.M)
    match = pattern.search(text)
    return None if match is None else text.count("\n", 0, match.start())


def previous_line(document: str, offset: int) -> int | None:
    """The nearest non-blank line above the line of `offset` in `document`."""
    lines = document.split("\n")
    for row in range(document.count("\n", 0, offset) - 1, -1, -1):
        if lines[row].strip():
            return row
    return None


def edit_plan(hole: RepoHole, texts: dict[str, str], document: str) -> list[LineEdit]:
    """The recent edits sent before the request (see the module's doc), in the order sent."""
    edits: list[LineEdit] = []
    source = hole.imports[0] if hole.imports else None
    if source is not None and source in texts:
        row = definition_line(texts[source], hole.names[0], language_id(source))
        if row is not None:
            edits.append(LineEdit(source, row, texts[source].split("\n")[row]))
    row = previous_line(document, hole.start)
    if row is not None:
        edits.append(LineEdit(hole.path, row, document.split("\n")[row]))
    return edits


def without_line(text: str, row: int) -> str:
    """`text` with line `row`'s characters removed (the line break kept)."""
    lines = text.split("\n")
    lines[row] = ""
    return "\n".join(lines)


def opened(
    files: list[str], texts: dict[str, str], hole: RepoHole, document: str, edits: list[LineEdit]
) -> list[Opened]:
    """The files as opened, the hole's last: a file with a pending edit has its line emptied."""
    out: list[Opened] = []
    for path in [*files, hole.path]:
        text = document if path == hole.path else texts[path]
        for edit in edits:
            if edit.path == path:
                text = without_line(text, edit.line)
        out.append(Opened(path, text))
    return out


def ring_chunks(files: list[str], texts: dict[str, str]) -> list[dict[str, str]]:
    """llama.vscode's `input_extra`: each open file's first `CHUNK_LINES` lines, oldest first."""
    return [
        {"filename": path, "text": "\n".join(texts[path].split("\n")[:CHUNK_LINES]) + "\n"}
        for path in files
    ]
