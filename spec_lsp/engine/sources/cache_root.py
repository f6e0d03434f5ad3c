"""Where the user's model cache lives: one definition, torch-free and import-free.

Everything spec-lsp keeps between runs sits under this folder: fetched GGUF files (`fetch`),
converted bundled models and tokenizers (`cache_entry`), the compiled kernels (`weights.native`) and
KV blocks on disk (`kvdisk`). Who may write it is `ownership`'s question, not this module's.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """`SPEC_LSP_CACHE`, else $XDG_CACHE_HOME/spec-lsp or ~/.cache/spec-lsp."""
    env = os.environ.get("SPEC_LSP_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "spec-lsp"
