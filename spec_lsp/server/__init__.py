"""The language server: the only package that imports pygls and lsprotocol.

- handlers.py: one module-level handler per LSP method, the table of them, and `build_server`,
  which registers it;
- convert.py: the `lsp_*` conversions between lsprotocol's types and ours;
- language_server.py: `SpecServer`, one client's server object (stdio, or one per client of a
  shared server: its protocol, options and session; status, loading the models with progress);
- host.py: what a process's clients share (one worker, so one model pair; who is connected);
- session.py: what `initialize` creates for a client (its completion service and next edits);
- pygls_internals.py: every override or read of pygls's non-public names, to re-check on each
  pygls upgrade.

What a client may choose (its options, a preset by name) is `spec_lsp.trust`'s; everything else
(scheduling, prompts, models) lives behind `CompletionService`.
"""

from spec_lsp.server.convert import lsp_completion_item, lsp_inline_item
from spec_lsp.server.handlers import build_server
from spec_lsp.server.language_server import VERSION, SpecServer

__all__ = ["VERSION", "SpecServer", "build_server", "lsp_completion_item", "lsp_inline_item"]
