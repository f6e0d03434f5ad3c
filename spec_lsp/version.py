"""The installed distribution's version, from its package metadata (none in a bare checkout).

`spec-lsp --version`, `spec-lsp doctor` and the server's `serverInfo` read it here.
"""

from __future__ import annotations

from importlib import metadata


def installed_version() -> str | None:
    """The version of the installed `spec-lsp` distribution; None when it is not installed."""
    try:
        return metadata.version("spec-lsp")
    except metadata.PackageNotFoundError:
        return None


def version() -> str:
    """The installed version, or "unknown" (and how to install it) in a bare checkout."""
    return installed_version() or "unknown (not installed: pip install -e .)"
