"""Next-edit suggestions: the edit a user makes next, near the cursor, from their recent edits.

- `service.py`: the pipeline (`NextEdits.suggest`): a region, a prompt, a rewrite, the edits.
- `region.py`: the editable region around the cursor and the file's lines around it.
- `formats.py`: prompt formats per model family (qwen-chat, sweep, zeta).
- `edits.py`: old and new region to the smallest document edits; which one to show.
- `early.py`: the first edit answered while the rewrite goes on, once the rewrite is back on the
  old text after it.
- `stats.py`: the counters `spec-lsp/stats` reports as `nextEdit`.
- `wire.py`: Copilot's `textDocument/copilotInlineEdit` shape, parsed and written as JSON.

The edit history it reads is `completion/history.py`'s (completion prompts may read it too); the
rewrite's draft is the old region (the engine's copy drafter). Like `completion/`, it imports no
pygls, lsprotocol, torch or tree-sitter: the server converts, the worker runs the model, the
completion service's syntax port asks the grammar.
"""
