"""Subcommands of `spec-lsp`, one module each; see spec_lsp.cli."""
