"""`python -m spec_lsp`: the same command line as the `spec-lsp` script (`spec_lsp.cli.main`)."""

from __future__ import annotations

import sys

from spec_lsp.cli import main

if __name__ == "__main__":
    sys.exit(main())
