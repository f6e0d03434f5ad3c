"""Definitions the editor already knows: what the editor's other language servers (pyright,
gopls, tsserver...) answered for the names near the cursor (go-to-definition and hover), sent by
the plugins with `spec-lsp/definitions` and shown as the symbol index's answers are (repo.py).
They reach what the index cannot: a library outside the workspace, a type the language server
inferred, a language the index has no tags for.

Each document keeps the list its editor sent last (a newer version replaces it, an older one is
dropped), bounded: `MAX_SENT` definitions, each text cut to `MAX_TEXT_LINES` lines and
`MAX_TEXT_CHARS` characters, for at most `MAX_DOCUMENTS` documents (the one told least recently
is forgotten first). Nothing is kept for a private or excluded document, nor a definition of a
private or excluded file (`neighbours.private`; checked again when shown, as the options may have
changed). At a refresh only the definitions of names near the cursor (`lookup.references`) are
shown, most wanted first; the call being written and the receiver are `primary`, as the index's.

This module owns that store. It knows nothing of LSP (the server parses the params into `Sent`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from spec_lsp.completion.neighbours import private, uri_path
from spec_lsp.config import Options
from spec_lsp.symbols import Definition
from spec_lsp.symbols.lookup import references
from spec_lsp.syntax.tags import Tag

MAX_SENT = 16  # definitions kept of one notification (the first ones: the editor's nearest)
MAX_TEXT_LINES = 12  # of one definition's text: a signature and its doc's start, not a page
MAX_TEXT_CHARS = 800
MAX_NAME = 100
MAX_DOCUMENTS = 64


@dataclass(frozen=True)
class Sent:
    """One definition as the editor sent it: the name used near the cursor, the file that
    defines it (`uri`, `line`: the start of its range) and its hover text."""

    name: str
    uri: str
    line: int
    text: str


def clean_text(text: str) -> str:
    """Hover text for a prompt: markdown's code fences and rules dropped, blank runs and
    trailing blanks trimmed, cut to MAX_TEXT_LINES lines of MAX_TEXT_CHARS characters in all."""
    lines: list[str] = []
    for line in text.replace("\r\n", "\n").split("\n"):
        bare = line.strip()
        if bare.startswith("```") or bare in ("---", "***", "___"):
            continue
        if bare or (lines and lines[-1]):
            lines.append(line.rstrip())
    kept = "\n".join(lines[:MAX_TEXT_LINES]).strip("\n")
    return kept[:MAX_TEXT_CHARS].rstrip()


def _usable_name(name: str) -> bool:
    return 0 < len(name) <= MAX_NAME and not any(c.isspace() for c in name)


class EditorDefinitions:
    """What each document's editor said last (`receive`) and what of it a cursor wants (`near`)."""

    def __init__(self) -> None:
        # uri -> (version, its definitions in the order sent); dict order: least recently told
        self._docs: dict[str, tuple[int | None, tuple[Definition, ...]]] = {}

    def receive(self, uri: str, version: int | None, sent: list[Sent], options: Options) -> int:
        """Keeps what the editor sent for the document `uri` at `version` (None: unknown, taken
        as the newest); returns how many definitions were kept."""
        if not options.definitions or private(options, uri):
            self._docs.pop(uri, None)
            return 0
        told = self._docs.get(uri, (None, ()))[0]
        if version is not None and told is not None and version < told:
            return 0  # an answer about an older text arrived late
        kept: list[Definition] = []
        for item in sent[:MAX_SENT]:
            text = clean_text(item.text)
            if not text or not _usable_name(item.name) or private(options, item.uri):
                continue
            signature = text.split("\n", 1)[0]
            tag = Tag(item.name, "editor", signature, line=max(0, item.line))
            found = Definition(uri_path(item.uri), tag, text=text)
            if found not in kept:
                kept.append(found)
        self._docs.pop(uri, None)  # told now: the most recent
        self._docs[uri] = (version, tuple(kept))
        while len(self._docs) > MAX_DOCUMENTS:
            del self._docs[next(iter(self._docs))]
        return len(kept)

    def near(
        self, uri: str, lines: list[str], row: int, col: int, options: Options
    ) -> list[Definition]:
        """The definitions the editor sent for `uri` whose names are used near (row, col), most
        wanted first; none of `uri` itself (its text is in the prompt) or of a private file."""
        entry = self._docs.get(uri)
        if entry is None or private(options, uri):
            return []
        here = uri_path(uri)
        shown = [d for d in entry[1] if d.path != here and not private(options, d.path)]
        out: list[Definition] = []
        for ref in references(lines, row, col):
            for found in shown:
                if found.tag.name in (ref.name, ref.member) and found not in out:
                    out.append(replace(found, primary=ref.primary))
        return out

    def forget(self, uri: str) -> None:
        self._docs.pop(uri, None)
