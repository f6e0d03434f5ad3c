"""The workspace's symbols: an index of what each file defines and imports (tree-sitter tags),
built in the background and kept current from edits and file events, and the definitions of the
names near a cursor, rendered compactly for a prompt.

`index.py` owns the index (bounded in files, tags and time); `walk.py` which files a workspace
holds (`.gitignore`, private files); `resolve.py` an import's file; `lookup.py` the names near a
cursor and their definitions; `render.py` their text. This package knows nothing of LSP, models or
prompts' layout: the completion planner places what `lookup` returns.
"""

from spec_lsp.symbols.index import SymbolIndex
from spec_lsp.symbols.lookup import Definition, definitions_near

__all__ = ["Definition", "SymbolIndex", "definitions_near"]
