"""`SyntaxService`: open documents with incrementally updated trees, and the per-cursor questions
the completion side asks: `context` (for the prompt) and `cutter` (mode, stop callback, trim).

Thread-safe: edits arrive on the server's event loop while trims run on worker threads, so every
document operation holds one lock, and so does a cutter's trim (its parse check uses the document's
parser). The stop callback holds no lock and touches no tree: it works on the completion text with
a plan computed when the cutter was built.
"""

from __future__ import annotations

import logging
import threading

from spec_lsp.syntax.block import Block
from spec_lsp.syntax.context import build_context
from spec_lsp.syntax.cutter import Cutter, plain_cutter
from spec_lsp.syntax.document import ParsedDocument
from spec_lsp.syntax.languages import spec_for
from spec_lsp.syntax.region import snap_rows
from spec_lsp.syntax.trim import Trimmer

log = logging.getLogger(__name__)


class SyntaxService:
    def __init__(self, *, complete_in_comments: bool = True) -> None:
        self._docs: dict[str, ParsedDocument] = {}
        self._lock = threading.RLock()
        self.complete_in_comments = complete_in_comments

    # -- documents ----------------------------------------------------------------------------

    def open(self, uri: str, language_id: str, text: str) -> None:
        spec = spec_for(language_id)
        if spec.name == "plain":
            spec = spec_for(uri)  # an unknown languageId: try the file's extension
        with self._lock:
            self._docs[uri] = ParsedDocument(spec, text)

    def apply_edit(
        self, uri: str, start: tuple[int, int], end: tuple[int, int], new_text: str
    ) -> None:
        with self._lock:
            doc = self._docs.get(uri)
            if doc is not None:
                doc.apply_edit(start, end, new_text)

    def replace(self, uri: str, text: str) -> None:
        with self._lock:
            doc = self._docs.get(uri)
            if doc is None:
                self._docs[uri] = ParsedDocument(spec_for(uri), text)
            else:
                doc.replace(text)

    def close(self, uri: str) -> None:
        with self._lock:
            self._docs.pop(uri, None)

    def text(self, uri: str) -> str | None:
        with self._lock:
            doc = self._docs.get(uri)
            return doc.text if doc is not None else None

    def tree(self, uri: str) -> object | None:
        """The document's current tree-sitter Tree (None: unknown document or no grammar)."""
        with self._lock:
            doc = self._docs.get(uri)
            return doc.tree if doc is not None else None

    # -- questions at a cursor ------------------------------------------------------------------

    def cutter(self, uri: str, row: int, col: int, block: Block = "off") -> Cutter:
        """The mode, stop callback and trim at a cursor, built once per request; never None: an
        unknown document gets the language-independent rules. `block`: whether the whole-block
        rule may hold (`block.py`)."""
        with self._lock:
            doc = self._docs.get(uri)
            if doc is None:
                return plain_cutter()
            prefix, suffix = doc.split(row, col)
            fallback = plain_cutter(prefix, suffix, block=block)
            if doc.parser is None and doc.spec.name == "plain":
                return fallback
            try:
                trimmer = Trimmer(
                    doc.spec,
                    prefix,
                    suffix,
                    tree=doc.tree.copy() if doc.tree is not None else None,  # edits mutate
                    parser=doc.parser,
                    comments=self.complete_in_comments,
                    block=block,
                )
            except Exception:
                log.exception("syntax rules failed at %s:%d:%d", uri, row, col)
                return fallback
            return Cutter(trimmer, self._lock, fallback=fallback)

    def region(self, uri: str, first: int, last: int, reach: int) -> tuple[int, int]:
        """Lines first..last widened to syntax boundaries within `reach` lines (`region.py`);
        as given for an unknown document or one without a grammar."""
        with self._lock:
            doc = self._docs.get(uri)
            if doc is None or doc.tree is None:
                return first, last
            return snap_rows(doc.tree, first, last, reach)

    def context(self, uri: str, row: int, col: int) -> str:
        with self._lock:
            doc = self._docs.get(uri)
            if doc is None:
                return ""
            at = doc.offset(row, col)
            at_byte = doc.byte_offset(at)
            return build_context(doc.spec, doc.text, doc.tree, at_byte, at)
