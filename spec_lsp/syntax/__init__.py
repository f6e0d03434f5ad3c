"""Syntax-aware completion with tree-sitter: the mode at the cursor, trimming at syntactic
boundaries, the engine's streaming stop callback, and prompt context.

Works on `str` text and (row, col) positions with col in Python characters. Imports tree-sitter
and its grammar packages only: nothing of torch, pygls or lsprotocol. An unknown language falls
back to line and indentation rules; nothing here raises on odd input.
"""

from spec_lsp.syntax.cutter import Cutter, cutter_for
from spec_lsp.syntax.languages import LanguageSpec, spec_for
from spec_lsp.syntax.service import SyntaxService
from spec_lsp.syntax.trim import Trimmer, completion_mode, trim_completion
from spec_lsp.syntax.units import Mode

__all__ = [
    "Cutter",
    "Mode",
    "LanguageSpec",
    "SyntaxService",
    "Trimmer",
    "completion_mode",
    "cutter_for",
    "spec_for",
    "trim_completion",
]
