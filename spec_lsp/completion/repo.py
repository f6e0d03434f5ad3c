"""Repository context for a document's prompt: the definitions of the names near the cursor (the
workspace symbol index, `spec_lsp.symbols`) and the recent edits of other documents (`history.py`),
as chunks the planner places ahead of the file, with the ring's. The definitions the editor's
other language servers know (`editor_definitions.py`, sent with `spec-lsp/definitions`) come after
the index's, unless the index has the same one, and are shown and kept by the same rules.

Like the ring's chunks, they change only on a pause: `refresh` computes them at the cursor when
the ring settles (the service's idle points) and they stay frozen, byte for byte, until the next,
so typing keeps the prompt's start and its KV. Even at a pause a change costs the whole prompt
after it (the file's window, ~850 tokens with the `coder` preset: seconds on a CPU), so after a
document's first refresh the definitions change only when one the cursor itself wants (the call
being written, the receiver's type: `Definition.primary`) is not shown; names merely used nearby
come along then. A change keeps the definitions it had, in their order, and adds the new ones
after them; to fit (`MAX_DEFINITIONS`, the char budget) the most wanted are kept first (a
class too large for what is left shows fewer members, another definition is passed over), those
no longer wanted last, oldest dropped first.

Privacy: the index admits no private or excluded file (`neighbours.private`, checked again when
the options change), and an edit of one is never recorded nor shown. `definitions` off: no index
is built and no definition is shown; `editContext` off: no edit is.

This module owns the index's lifetime (built from the workspace roots, kept current by edits and
file events) and what each document's frozen context holds. It knows nothing of LSP or models.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace

from spec_lsp.completion.editor_definitions import EditorDefinitions
from spec_lsp.completion.history import EditHistory
from spec_lsp.completion.neighbours import private, uri_path
from spec_lsp.config import Options
from spec_lsp.symbols import Definition, SymbolIndex, definitions_near
from spec_lsp.symbols.lookup import MAX_DEFINITIONS
from spec_lsp.symbols.render import MAX_MEMBERS, render_definitions
from spec_lsp.symbols.walk import WATCHED_GLOB

__all__ = ["WATCHED_GLOB", "RepoContext"]

Chunk = tuple[str, str]  # (name, text), as the ring's
Source = Callable[[str], tuple[str, str] | None]  # uri -> (language id, text) of an open document
MAX_EDIT_DOCS = 3  # the documents edited last whose hunks are shown
MAX_EDIT_HUNKS = 4  # of each, its latest hunks


@dataclass(frozen=True)
class Frozen:
    definitions: tuple[Definition, ...] = ()
    chunks: tuple[Chunk, ...] = ()  # the definitions', one per file, then the edits'


class RepoContext:
    def __init__(self, history: EditHistory | None = None) -> None:
        self.history = history or EditHistory()
        self.options = Options()
        self.index = SymbolIndex(admits=lambda path: not private(self.options, path))
        self.source: Source = lambda _uri: None
        self.editor = EditorDefinitions()  # what the editor's other language servers sent
        self._frozen: dict[str, Frozen] = {}
        self._dirty: set[str] = set()  # open documents edited since they were indexed

    def configure(self, options: Options) -> None:
        was = self.options
        self.options = options
        if (was.private_files, was.exclude) != (options.private_files, options.exclude):
            self.index.refilter()
        if options.definitions and not was.definitions and self.index.roots:
            self.index.start(self.index.roots)
        elif not options.definitions:
            self.index.stop()
        self._frozen.clear()  # what is shown follows the options at the next pause

    # -- the index's inputs ---------------------------------------------------------------------
    def workspace(self, roots: list[str]) -> None:
        """The workspace's root folders: the index is built from them in the background."""
        self.index.roots = tuple(os.path.abspath(r) for r in roots)
        if self.options.definitions and roots:
            self.index.start(self.index.roots)

    def folders_changed(self, added: list[str], removed: list[str]) -> None:
        """`workspace/didChangeWorkspaceFolders`: a removed folder's files leave the index, an
        added one's are indexed in the background (what is indexed already stays)."""
        self.index.stop()  # a build still running must not index a removed folder again
        gone = {os.path.abspath(r) for r in removed}
        for folder in gone:
            self.index.remove(folder)
        roots = [r for r in self.index.roots if r not in gone]
        self.workspace(roots + [a for a in map(os.path.abspath, added) if a not in roots])

    def changed(self, uri: str) -> None:
        """An open document was opened or edited: indexed again at the next refresh (a file's
        only: an `untitled:` buffer is no file another one imports)."""
        if uri.startswith("file:"):
            self._dirty.add(uri)

    def saved_or_closed(self, uri: str) -> None:
        """`didSave` of an open document: its text is indexed again at the next refresh; a
        closed one: the file on disk counts again (its unsaved edits are gone)."""
        if self.source(uri) is not None:
            self.changed(uri)
            return
        self._frozen.pop(uri, None)
        if self.options.definitions and uri.startswith("file:"):
            self._dirty.discard(uri)
            self.index.read(uri_path(uri))

    def file_event(self, uri: str, deleted: bool) -> None:
        """`workspace/didChangeWatchedFiles`: a file created or changed on disk, or deleted (an
        open document's text counts over its file's)."""
        if not uri.startswith("file:"):
            return
        if deleted:
            self.index.remove(uri_path(uri))
        elif self.options.definitions and self.source(uri) is None:
            self.index.read(uri_path(uri))

    def stop(self) -> None:
        self.index.stop()

    # -- a document's context -------------------------------------------------------------------
    def chunks(self, uri: str) -> tuple[Chunk, ...]:
        frozen = self._frozen.get(uri)
        return () if frozen is None else frozen.chunks

    def refresh(self, uri: str, lines: list[str], row: int, col: int, budget: int) -> None:
        """Recomputes the document's context at (row, col) of `lines` (on a pause), within
        `budget` characters: definitions up to two thirds of it, edits the rest."""
        for dirty in sorted(self._dirty):
            opened = self.source(dirty)
            if opened is not None and self.options.definitions:
                self.index.update(uri_path(dirty), opened[1], opened[0], keep_tree=True)
        self._dirty.clear()
        before = self._frozen.get(uri)
        wanted = self._definitions(uri, lines, row, col)
        old = [] if before is None else list(before.definitions)
        kept = self._merge(old, wanted, budget * 2 // 3, first=before is None)
        chunks = self._definition_chunks(kept)
        used = sum(len(name) + len(text) for name, text in chunks)
        chunks += self._edit_chunks(uri, budget - used)
        self._frozen[uri] = Frozen(tuple(kept), tuple(chunks))

    def _definitions(self, uri: str, lines: list[str], row: int, col: int) -> list[Definition]:
        if not self.options.definitions or private(self.options, uri):
            return []
        found = definitions_near(self.index, uri_path(uri), lines, row, col)
        known = {(d.path, d.tag.name) for d in found}  # the index's answer, when it has one
        told = self.editor.near(uri, lines, row, col, self.options)
        found += [d for d in told if (d.path, d.tag.name) not in known]
        return [d for d in found if not private(self.options, d.path)]

    def _merge(
        self, old: list[Definition], new: list[Definition], chars: int, first: bool
    ) -> list[Definition]:
        """`old` as it is when it shows every definition the cursor wants (and this is not the
        document's `first` refresh); else `old` in its order with `new`'s others after it, the
        old ones not wanted again dropped first (oldest first) to fit MAX_DEFINITIONS and
        `chars`."""
        held = [d for d in old if d.text or self.index.has(d.path)]  # the editor's need no file
        valid = [d for d in held if not private(self.options, d.path)]
        if not first and valid == old and all(d in old for d in new if d.primary):
            return old
        old = valid
        out = old + [d for d in new if d not in old]
        # Kept most wanted first (`new`'s order: the call being written and the receiver's type
        # lead), then those no longer wanted, newest first; a class too large for what is left
        # shows fewer members, anything else too large is passed over for the next. What is
        # kept stays in `out`'s order (the old ones where they were).
        stale = [d for d in out if d not in new]
        kept: list[Definition] = []
        for d in [d for d in new if d in out] + stale[::-1]:
            if len(kept) >= MAX_DEFINITIONS:
                break
            fits = self._fitted(d, kept, chars)
            if fits is not None:
                kept.append(fits)
        return [next(k for k in kept if k == d) for d in out if d in kept]

    def _fitted(self, d: Definition, kept: list[Definition], chars: int) -> Definition | None:
        """`d` as it fits beside `kept` within `chars`: whole, or a class with fewer members (its
        header alone at the least), else None."""
        if self._size([*kept, d]) <= chars:
            return d
        for shown in range(min(len(d.members), MAX_MEMBERS) - 1, -1, -1):
            fewer = replace(d, shown=shown)
            if self._size([*kept, fewer]) <= chars:
                return fewer
        return None

    def _size(self, definitions: list[Definition]) -> int:
        return sum(len(name) + len(text) for name, text in self._definition_chunks(definitions))

    def _definition_chunks(self, definitions: list[Definition]) -> list[Chunk]:
        by_file: dict[str, list[Definition]] = {}
        for d in definitions:
            by_file.setdefault(d.path, []).append(d)
        return [(self._name(path), render_definitions(path, ds)) for path, ds in by_file.items()]

    def _name(self, path: str) -> str:
        """The path relative to the workspace root that holds it, else its file name."""
        for root in self.index.roots:
            if path.startswith(root.rstrip("/") + "/"):
                return os.path.relpath(path, root).replace(os.sep, "/")
        return os.path.basename(path)

    def _edit_chunks(self, uri: str, chars: int) -> list[Chunk]:
        """Other documents' latest hunks as diffs, the document edited last at the end."""
        if not self.options.edit_context or chars <= 0:
            return []
        others = [u for u in self.history.documents() if u != uri and not private(self.options, u)]
        out: list[Chunk] = []
        for other in reversed(others[-MAX_EDIT_DOCS:]):
            name = self._name(uri_path(other))
            hunks = self.history.hunks(other)[-MAX_EDIT_HUNKS:]
            text = f"--- a/{name}\n+++ b/{name}\n" + "".join(h.diff() for h in hunks)
            if len(text) + len(name) + 5 > chars:
                break
            chars -= len(text) + len(name) + 5
            out.insert(0, (f"{name}.diff", text.rstrip("\n")))
        return out
