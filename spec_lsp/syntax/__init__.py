"""Syntax-aware completion with tree-sitter: one `Cutter` per request (the mode at the cursor,
the engine's streaming stop callback, and trimming that keeps what the model wrote unless a named
rule cuts it), and prompt context.

Works on `str` text and (row, col) positions with col in Python characters. Imports tree-sitter
and its grammar packages only: nothing of torch, pygls or lsprotocol. An unknown language gets
the language-independent rules (`cutter.plain_cutter`); nothing here raises on odd input.
"""

from spec_lsp.syntax.block import Block
from spec_lsp.syntax.cutter import Cutter, cutter_for
from spec_lsp.syntax.languages import LanguageSpec, spec_for
from spec_lsp.syntax.service import SyntaxService
from spec_lsp.syntax.trim import Trimmer
from spec_lsp.syntax.units import Mode

__all__ = [
    "Block",
    "Cutter",
    "Mode",
    "LanguageSpec",
    "SyntaxService",
    "Trimmer",
    "cutter_for",
    "spec_for",
]
